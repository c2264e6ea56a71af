"""Regression cases as properties over random scripts, settings, overrides and round caps: any run the scripted
model can replay, saved as a case, replays to a pass against the same settings and sends the model's own
argument strings again; turning a restriction off fails the case first on the first round it had rejected."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import run_agent
from engine.cases import case_from_run, check_case, replay_overrides, replay_refusal, validate_case
from engine.types import ModelResponse, ToolCall
from tests import strategies
from tests.doubles import ModelDouble
from tests.unit.unit_helpers import ARGUMENT_KINDS, RecordingTools, arguments_for

NAMES = ("alpha", "alpha", "beta", "gamma", "ghost")
CASE_SETTINGS = settings(max_examples=150, deadline=None)

tool_settings = strategies.tool_settings(optional=strategies.LOOP_SETTINGS)
call_spec = st.tuples(st.sampled_from(NAMES), st.sampled_from(ARGUMENT_KINDS), st.integers(0, 5), st.booleans())
script_item = st.one_of(
    st.builds(lambda text: ("answer", text), st.sampled_from(["Done.", "", "Maybe."])),
    st.builds(
        lambda calls, text: ("calls", calls, text), st.lists(call_spec, max_size=6), st.sampled_from([None, "On it."])
    ),
)


@st.composite
def agents(draw):
    return {
        "id": "prop",
        "label": "Property",
        "tools": draw(st.dictionaries(st.sampled_from(("alpha", "beta", "gamma")), tool_settings)),
        "max_rounds": draw(st.integers(0, 5)),
        "on_round_cap": draw(st.sampled_from(["final_answer", "message"])),
    }


overrides = st.one_of(
    st.just({}),
    st.builds(lambda cap: {"max_rounds": cap}, st.integers(0, 5)),
    st.builds(lambda flag: {"tools": {"alpha": {"restrict_multiple_calls": flag}}}, st.booleans()),
)


def build_script(items):
    """The script from drawn items: every call gets its own `n`; some calls carry an id of their own."""
    script, number = [], 0
    for item in items:
        if item[0] == "answer":
            script.append({"content": item[1]})
            continue
        calls = []
        for name, kind, variant, own_id in item[1]:
            number += 1
            calls.append({"name": name, "arguments": arguments_for(kind, variant, number)})
            if own_id:
                calls[-1]["id"] = f"mine_{number}"
        script.append({"tool_calls": calls, **({"content": item[2]} if item[2] else {})})
    return script


def assistant_messages(run):
    return [message for message in run["messages"] if message["role"] == "assistant"]


@CASE_SETTINGS
@given(agents(), st.lists(script_item, max_size=6), overrides)
def test_any_scripted_run_saved_as_a_case_replays_to_a_pass_and_plays_the_same_responses(agent, items, extra):
    tools = RecordingTools()
    agent = {**agent, "script": build_script(items)}
    run = run_agent(agent, "Go.", extra, registry=tools.registry)
    assert replay_refusal(run) is None  # the scripted model never plays a run it could not replay

    case = validate_case(case_from_run(run, "random"))
    replay = run_agent(agent, "Go.", replay_overrides(case), registry=tools.registry)
    result = check_case(agent, case, registry=tools.registry)

    assert result["passed"], result["differences"]
    assert assistant_messages(replay) == assistant_messages(run)


# What a real model may send: JSON in any spacing, malformed text, ids of its own.
raw_arguments = st.one_of(
    st.builds(lambda n: json.dumps({"n": n}, separators=(",", ":")), st.integers(0, 9)),
    st.builds(lambda n: json.dumps({"n": n}, indent=1), st.integers(0, 9)),
    st.text(st.characters(blacklist_characters="{}", blacklist_categories=("Cs",)), max_size=12),
    st.sampled_from(['{"n": 1', "[1]", "null", '{"n": "one"}', '{"n":1,"n":2}']),
)
real_call = st.tuples(st.sampled_from(NAMES), raw_arguments, st.text("abcdef0123456789", min_size=1, max_size=6))
real_response = st.tuples(st.one_of(st.none(), st.just("Thinking.")), st.lists(real_call, max_size=4))


def recorded_model(responses):
    """A real model as the loop sees it: it answers from a list, and without tools it only ever answers."""
    answers = [
        ModelResponse(content, tuple(ToolCall(f"id_{tag}", name, raw) for name, raw, tag in calls))
        for content, calls in responses
    ]
    return ModelDouble(*answers, then="Done.")


@CASE_SETTINGS
@given(agents(), st.lists(real_response, max_size=5))
def test_a_real_models_run_replays_with_its_argument_strings_byte_for_byte(agent, responses):
    tools = RecordingTools()
    run = run_agent(agent, "Go.", registry=tools.registry, model=recorded_model(responses))

    case = case_from_run(run, "recorded")
    replay = run_agent(agent, "Go.", {"script": case["script"]}, registry=tools.registry)

    sent = [call["function"]["arguments"] for m in assistant_messages(run) for call in m.get("tool_calls") or []]
    replayed = [call["function"]["arguments"] for m in assistant_messages(replay) for call in m.get("tool_calls") or []]
    assert replayed == sent
    assert check_case(agent, case, registry=tools.registry)["passed"]


def first_repeated_alpha_round(run):
    for round_ in run["rounds"]:
        if round_["tools_offered"] and sum(call["name"] == "alpha" for call in round_["calls"]) > 1:
            return round_["number"]
    return None


@CASE_SETTINGS
@given(agents(), st.lists(script_item, max_size=6))
def test_turning_a_restriction_off_fails_the_case_first_on_the_first_round_it_rejected(agent, items):
    tools = RecordingTools()
    restricted = {**agent, "tools": {**agent["tools"], "alpha": {"restrict_multiple_calls": True}}}
    restricted["script"] = build_script(items)
    run = run_agent(restricted, "Go.", registry=tools.registry)
    case = case_from_run(run, "restricted")
    unrestricted = {**restricted, "tools": {**restricted["tools"], "alpha": {}}}

    result = check_case(unrestricted, case, registry=tools.registry)

    repeated = first_repeated_alpha_round(run)
    if repeated is None:
        assert result["passed"], result["differences"]
    else:
        assert not result["passed"]
        assert next(round_["number"] for round_ in result["rounds"] if round_["differs"]) == repeated
