"""The loop's invariants (SPEC §4) as properties over random scripts, settings and round caps.

Every run uses instrumented tools (each records the `n` of the call it ran) and a model that counts requests, so
"a rejected call never executes" and "at most max_rounds + 1 requests" are checked against what really happened.
Most properties talk to the scripted model in-process for speed; one also goes through the SDK path.
"""

import json
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import STOP_REASONS, run_agent
from tests import strategies
from tests.doubles import ModelDouble
from tests.unit.unit_helpers import ARGUMENT_KINDS, RecordingTools, all_calls, build_script

ENABLEABLE = ("alpha", "beta", "gamma")
NAMES = ("alpha", "alpha", "beta", "gamma", "delta", "ghost")
PROPERTY_SETTINGS = settings(max_examples=150, deadline=None)

tool_settings = strategies.tool_settings(optional=strategies.LOOP_SETTINGS)
call_spec = st.tuples(st.sampled_from(NAMES), st.sampled_from(ARGUMENT_KINDS), st.integers(0, 5))
script_item = st.one_of(
    st.builds(lambda text: ("answer", text), st.sampled_from(["Done.", "", "Maybe."])),
    st.builds(lambda specs: ("calls", specs), st.lists(call_spec, max_size=20)),
)
scripts = st.lists(script_item, max_size=7)


@st.composite
def agents(draw, with_settings=True):
    tools = (
        draw(st.dictionaries(st.sampled_from(ENABLEABLE), tool_settings))
        if with_settings
        else {name: {} for name in ENABLEABLE}
    )
    return {
        "id": "prop",
        "label": "Property",
        "tools": tools,
        "max_rounds": draw(st.integers(0, 5)),
        "on_round_cap": draw(st.sampled_from(["final_answer", "message"])) if with_settings else "final_answer",
        "parallel_tool_calls": draw(st.sampled_from([None, True, False])),
    }


def run(agent, items, fails=(), through_sdk=False, ignores_tools=False):
    """`ignores_tools`: a model that answers every request as if tools were offered, so it may call tools on a
    request without any."""
    tools = RecordingTools(fails=fails)
    model = ModelDouble(script=build_script(items), ignores_tools=ignores_tools)
    if through_sdk:
        model.through_sdk()
    result = run_agent({**agent, "script": []}, "Go.", registry=tools.registry, model=model)
    return result, model, tools


@PROPERTY_SETTINGS
@given(agents(), scripts, st.sampled_from([(), ("beta",)]))
def test_every_call_id_gets_exactly_one_tool_message_in_response_order(agent, items, fails):
    result, _model, _tools = run(agent, items, fails)

    messages = result["messages"]
    position = 0
    answered_ids = []
    while position < len(messages):
        message = messages[position]
        position += 1
        if message["role"] == "tool":
            raise AssertionError(f"a tool message outside its assistant message's group: {message}")
        if message["role"] == "assistant" and message.get("tool_calls"):
            ids = [call["id"] for call in message["tool_calls"]]
            group = messages[position : position + len(ids)]
            assert [(m["role"], m["tool_call_id"]) for m in group] == [("tool", call_id) for call_id in ids]
            assert all(isinstance(m["content"], str) for m in group)
            answered_ids.extend(ids)
            position += len(ids)
    assert answered_ids == [call["id"] for call in all_calls(result)]
    assert len(set(answered_ids)) == len(answered_ids)


@PROPERTY_SETTINGS
@given(agents(), scripts, st.sampled_from([(), ("beta",)]))
def test_a_rejected_call_never_executes_and_every_other_call_runs_once_in_order(agent, items, fails):
    result, _model, tools = run(agent, items, fails)

    ran = [(call["name"], call["arguments"]["n"]) for call in all_calls(result) if call["status"] != "rejected"]
    assert tools.executed == ran
    for call in all_calls(result):
        if call["status"] == "rejected":
            assert call["output"] is None and call["message"]


@PROPERTY_SETTINGS
@given(agents(), scripts)
def test_no_restricted_tool_executes_twice_from_one_response(agent, items):
    result, _model, _tools = run(agent, items)

    restricted = {name for name, tool in agent["tools"].items() if tool.get("restrict_multiple_calls")}
    for round_ in result["rounds"]:
        names = Counter(call["name"] for call in round_["calls"])
        ran = Counter(call["name"] for call in round_["calls"] if call["status"] != "rejected")
        assert all(ran[name] <= 1 for name in restricted)
        if any(names[name] > 1 for name in restricted):
            assert not ran


@PROPERTY_SETTINGS
@given(agents(), scripts)
def test_the_model_is_asked_at_most_max_rounds_plus_one_times(agent, items):
    result, model, _tools = run(agent, items)

    assert len(model.requests) <= agent["max_rounds"] + 1
    assert len(model.requests) == result["model_requests"] == len(result["rounds"])
    assert sum(1 for request in model.bodies if request.get("tools")) <= agent["max_rounds"]
    assert result["rounds_used"] <= agent["max_rounds"]


@settings(max_examples=40, deadline=None)
@given(agents(), scripts)
def test_the_model_is_asked_at_most_max_rounds_plus_one_times_through_the_sdk(agent, items):
    result, model, _tools = run(agent, items, through_sdk=True)

    assert len(model.requests) <= agent["max_rounds"] + 1
    assert len(model.requests) == result["model_requests"] == len(result["rounds"])
    assert sum(1 for request in model.bodies if request.get("tools")) <= agent["max_rounds"]
    assert result["rounds_used"] <= agent["max_rounds"]


@PROPERTY_SETTINGS
@given(agents(), scripts)
def test_a_model_that_calls_tools_without_being_offered_any_is_still_bounded(agent, items):
    result, model, tools = run(agent, items, ignores_tools=True)

    assert len(model.requests) <= agent["max_rounds"] + 1
    for round_, request in zip(result["rounds"], model.bodies, strict=True):
        if request["tools"] is None:
            assert all(call["reason"] == "tools_disabled" for call in round_["calls"])
    ran = [(call["name"], call["arguments"]["n"]) for call in all_calls(result) if call["status"] != "rejected"]
    assert tools.executed == ran
    assert len([m for m in result["messages"] if m["role"] == "tool"]) == len(all_calls(result))


@PROPERTY_SETTINGS
@given(agents(), scripts)
def test_max_rounds_zero_makes_exactly_one_request_without_tools(agent, items):
    result, model, tools = run({**agent, "max_rounds": 0}, items)

    assert len(model.requests) == 1
    assert model.bodies[0].get("tools") is None
    assert tools.executed == []
    assert result["stop_reason"] in {"answered", "tools_disabled"}


def is_valid(call):
    arguments = call["arguments"]
    return (
        call["name"] in ENABLEABLE
        and isinstance(arguments, dict)
        and set(arguments) == {"n"}
        and (type(arguments["n"]) is int)
    )


@PROPERTY_SETTINGS
@given(agents(with_settings=False), scripts)
def test_with_no_settings_every_valid_call_executes(agent, items):
    result, _model, _tools = run(agent, items)

    for round_ in result["rounds"]:
        for call in round_["calls"]:
            if round_["tools_offered"] is None:
                assert call["reason"] == "tools_disabled"
            else:
                assert (call["status"] == "executed") == is_valid(call)
                assert call["reason"] in {None, "unknown_tool", "invalid_arguments"}


@PROPERTY_SETTINGS
@given(agents(), scripts)
def test_every_run_ends_with_a_known_stop_reason_and_plain_data(agent, items):
    result, _model, _tools = run(agent, items)

    assert result["stop_reason"] in STOP_REASONS
    assert result["stop_reason"] != "error"
    assert isinstance(result["answer"], str)
    assert json.loads(json.dumps(result)) == result
    assert result["tool_calls"] + result["rejected_calls"] == len(all_calls(result))
