"""Regression cases in the engine: a run of every kind becomes a case that replays to a pass against the same
settings; a changed setting makes it fail and says what changed; the script keeps what the model sent."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine import ValidationError, run_agent
from engine.cases import case_from_run, check_case, replay_refusal, script_from_run, validate_case
from engine.types import ModelResponse, ToolCall
from tests.doubles import ModelDouble
from tests.unit.unit_helpers import RESTRICTED_LIST_BUNDLES, answer, call, make_agent, tool_round

RESTRICTED = {"restrict_multiple_calls": True}
NODE = {"entity_type": "node"}
TAXONOMY = {"entity_type": "taxonomy_term"}
TWO_BUNDLE_CALLS = tool_round(call("list_bundles", NODE), call("list_bundles", TAXONOMY))
CATALOG = {"list_bundles": RESTRICTED, "list_entity_types": {}}
CANVAS = {"place_component": RESTRICTED, "edit_component": {}, "get_layout": {}}


def bundles_agent(**fields):
    script = [TWO_BUNDLE_CALLS, tool_round(call("list_bundles", NODE)), answer("Articles and pages.")]
    return make_agent(**{"tools": dict(CATALOG), "script": script, **fields})


# One agent per kind of run (tools, script, other fields), with the message and overrides the run had.
RUN_KINDS = {
    "restricted": (CATALOG, bundles_agent()["script"], {}),
    "collateral": (
        CATALOG,
        [tool_round(call("list_bundles", NODE), call("list_bundles", TAXONOMY), call("list_entity_types")), answer("")],
        {},
    ),
    "invalid arguments": (CATALOG, [tool_round(call("list_bundles", {})), answer("Sorry.")], {}),
    "malformed JSON": (CATALOG, [tool_round(call("list_bundles", '{"entity_type": "node"')), answer("Oops.")], {}),
    "not an object": (CATALOG, [tool_round(call("list_bundles", "[1, 2]")), answer("Oops.")], {}),
    "unknown tool": (CATALOG, [tool_round(call("delete_everything")), answer("No.")], {}),
    "round cap, forced answer": (
        CATALOG,
        [tool_round(call("list_entity_types")), tool_round(call("list_entity_types")), answer("Capped.")],
        {"max_rounds": 1},
    ),
    "round cap, message": (
        CATALOG,
        [tool_round(call("list_entity_types")), tool_round(call("list_entity_types"))],
        {"max_rounds": 1, "on_round_cap": "message"},
    ),
    "return directly": (
        {"list_entity_types": {"return_directly": True}},
        [tool_round(call("list_entity_types")), answer("Never said.")],
        {},
    ),
    "call limit": (
        {"list_entity_types": {"max_calls_per_run": 1}},
        [tool_round(call("list_entity_types"), call("list_entity_types")), answer("Done.")],
        {},
    ),
    "require usage reminder": (
        {"list_entity_types": {"require_usage": True}},
        [answer("Too early."), tool_round(call("list_entity_types")), answer("Now.")],
        {},
    ),
    "tool error": (CANVAS, [tool_round(call("edit_component", {"uuid": "nowhere", "props": {}})), answer("")], {}),
    "script exhausted": (CATALOG, [tool_round(call("list_entity_types"))], {}),
    "tools off": (CATALOG, [answer("No tools for me.")], {"max_rounds": 0}),
    "repaired ids": (
        {"list_entity_types": {}},
        [
            tool_round(call("list_entity_types", call_id="same"), call("list_entity_types", call_id="same")),
            tool_round(call("list_entity_types", call_id="same")),
            answer("Listed."),
        ],
        {},
    ),
}


@pytest.mark.parametrize("kind", RUN_KINDS)
def test_a_run_saved_as_a_case_replays_to_a_pass_against_the_same_settings(kind):
    tools, script, fields = RUN_KINDS[kind]
    agent = make_agent(tools=tools, script=script, **fields)
    run = run_agent(agent, "Go.")

    case = validate_case(case_from_run(run, kind))
    result = check_case(agent, case)

    assert result["passed"], result["differences"]
    assert result["stop_reason"]["actual"] == run["stop_reason"]


def test_a_case_keeps_the_runs_overrides_and_replays_with_them():
    agent = bundles_agent(tools={"list_bundles": {}, "list_entity_types": {}})
    run = run_agent(agent, "Go.", {"tools": {"list_bundles": RESTRICTED}})
    case = case_from_run(run, "restricted for this run")

    assert case["overrides"] == {"tools": {"list_bundles": RESTRICTED}}
    assert check_case(agent, case)["passed"]


def test_a_case_expects_each_calls_verdict_per_round_and_the_stop_reason():
    case = case_from_run(run_agent(bundles_agent(), "Go."), "bundles")

    assert case["expected"]["stop_reason"] == "answered"
    assert case["expected"]["answer"] == "Articles and pages."
    assert case["expected"]["rounds"] == [
        {
            "number": 1,
            "calls": [
                {"id": "call_1_1", "name": "list_bundles", "status": "rejected", "reason": "restricted_repeat",
                 "message": RESTRICTED_LIST_BUNDLES},
                {"id": "call_1_2", "name": "list_bundles", "status": "rejected", "reason": "restricted_repeat",
                 "message": RESTRICTED_LIST_BUNDLES},
            ],
        },
        {"number": 2, "calls": [
            {"id": "call_2_1", "name": "list_bundles", "status": "executed", "reason": None, "message": None}
        ]},
    ]  # fmt: skip


def test_turning_the_restriction_off_fails_the_case_on_the_round_that_was_rejected():
    agent = bundles_agent()
    case = case_from_run(run_agent(agent, "Go."), "bundles")

    result = check_case(bundles_agent(tools={"list_bundles": {}, "list_entity_types": {}}), case)

    assert not result["passed"]
    assert result["differences"] == [
        "round 1, call_1_1 (list_bundles): expected rejected (restricted_repeat), got executed",
        "round 1, call_1_2 (list_bundles): expected rejected (restricted_repeat), got executed",
    ]
    first, second = result["rounds"]
    assert first["differs"] and [call["differs"] for call in first["calls"]] == [["status", "reason", "message"]] * 2
    assert [call["actual"]["status"] for call in first["calls"]] == ["executed", "executed"]
    assert not second["differs"]


def test_a_changed_error_message_fails_the_case_unless_the_messages_are_unpinned():
    case = case_from_run(run_agent(bundles_agent(), "Go."), "bundles")
    custom = {"restrict_multiple_calls": True, "multiple_call_error_message": "Error: one at a time."}
    changed = bundles_agent(tools={"list_bundles": custom, "list_entity_types": {}})

    failed = check_case(changed, case)
    unpinned = check_case(changed, {**case, "unpinned": ["rounds/1/1/message", "rounds/1/2/message"]})

    assert failed["differences"][0] == (
        f"round 1, call_1_1 (list_bundles): message expected {json.dumps(RESTRICTED_LIST_BUNDLES)}, "
        'got "Error: one at a time."'
    )
    assert unpinned["passed"], unpinned["differences"]


def test_a_lower_round_cap_fails_the_case_the_later_calls_are_not_made():
    case = case_from_run(run_agent(bundles_agent(), "Go."), "bundles")

    result = check_case(bundles_agent(max_rounds=1), case)

    assert result["differences"] == [
        'stop reason: expected "answered", got "round_cap"',
        "round 2, call_2_1 (list_bundles): expected executed, but not made",
    ]
    assert result["rounds"][1]["calls"][0]["actual"] is None


def test_a_call_the_case_does_not_expect_fails_it_even_with_everything_unpinned():
    agent = make_agent(
        tools={"list_entity_types": {"return_directly": True}}, script=[tool_round(call("list_entity_types"))]
    )
    case = case_from_run(run_agent(agent, "Go."), "direct")
    case["script"] += [tool_round(call("list_entity_types")), answer("Two.")]  # a case file edited by hand
    everything = ["stop_reason", "answer", "rounds/1/1/status", "rounds/1/1/reason", "rounds/1/1/message"]

    result = check_case({**agent, "tools": {"list_entity_types": {}}}, {**case, "unpinned": everything})

    assert result["differences"] == ["round 2, call_2_1 (list_entity_types): made, but not expected (executed)"]


def test_an_answer_returned_directly_is_not_pinned_a_fresh_uuid_does_not_fail_the_case():
    agent = make_agent(
        tools={"place_component": {"return_directly": True}},
        script=[tool_round(call("place_component", {"component": "hero"}))],
    )
    case = case_from_run(run_agent(agent, "Go."), "placed")

    result = check_case(agent, case)

    assert case["unpinned"] == ["answer"]
    assert result["passed"] and result["answer"]["differs"] is False
    assert result["answer"]["actual"] != result["answer"]["expected"]  # another UUID


def test_a_call_that_used_an_earlier_uuid_becomes_a_reference_so_the_replay_chains_on_the_new_one():
    script = [
        tool_round(call("place_component", {"component": "hero"}, call_id="hero")),
        tool_round(call("place_component", {"component": "text", "below_uuid": "{{hero}}"})),
        tool_round(call("edit_component", {"uuid": "{{hero}}", "props": {"title": "Hi"}})),
        answer("Built."),
    ]
    agent = make_agent(tools=CANVAS, script=script)
    run = run_agent(agent, "Go.")

    case = case_from_run(run, "chained")

    assert case["script"][1]["tool_calls"][0]["arguments"] == {"component": "text", "below_uuid": "{{hero}}"}
    assert case["script"][2]["tool_calls"][0]["arguments"] == {"uuid": "{{hero}}", "props": {"title": "Hi"}}
    result = check_case(agent, case)
    assert result["passed"], result["differences"]


def test_the_script_keeps_the_argument_strings_a_real_model_sent_byte_for_byte():
    sent = ['{"entity_type":"node"}', '{"entity_type": "taxonomy_term"', '{"entity_type": "node"}']
    model = ModelDouble(  # a real model, as far as the loop can tell: it answers from a list, whatever the request
        ModelResponse("Looking.", (ToolCall("a1", "list_bundles", sent[0]), ToolCall("a2", "list_bundles", sent[1]))),
        ModelResponse(None, (ToolCall("b1", "list_bundles", sent[2]),)),
        ModelResponse("Articles and pages.", ()),
        then="Done.",
        ignores_tools=True,
    )
    agent = bundles_agent(provider="openai_main", model="gpt-test")
    run = run_agent({**agent, "provider": "scripted"}, "Go.", model=model)

    case = case_from_run({**run, "agent": agent}, "from a real model")

    assert case["script"] == [
        {"content": "Looking.", "tool_calls": [
            {"id": "a1", "name": "list_bundles", "arguments": sent[0]},
            {"id": "a2", "name": "list_bundles", "arguments": sent[1]},
        ]},
        {"tool_calls": [{"id": "b1", "name": "list_bundles", "arguments": {"entity_type": "node"}}]},
        {"content": "Articles and pages."},
    ]  # fmt: skip
    replay = run_agent(agent, "Go.", {"provider": "scripted", "script": case["script"]})
    replayed = [
        call["function"]["arguments"] for message in replay["messages"] for call in message.get("tool_calls") or []
    ]
    assert replayed == sent
    assert check_case(agent, case)["passed"]


def test_the_script_keeps_the_ids_the_model_sent_so_the_replay_repairs_them_again():
    tools, script, fields = RUN_KINDS["repaired ids"]
    run = run_agent(make_agent(tools=tools, script=script, **fields), "Go.")
    assert [[call["id"] for call in round_["calls"]] for round_ in run["rounds"][:2]] == [
        ["same", "repaired_1_2"],
        ["repaired_2_1"],
    ]

    case = case_from_run(run, "ids")

    assert [[call["id"] for call in item["tool_calls"]] for item in case["script"][:2]] == [["same", "same"], ["same"]]


def test_a_script_is_rebuilt_from_the_transcript_one_item_per_model_response():
    run = run_agent(bundles_agent(max_rounds=1), "Go.")

    assert script_from_run(run) == [
        {"tool_calls": [
            {"id": "call_1_1", "name": "list_bundles", "arguments": NODE},
            {"id": "call_1_2", "name": "list_bundles", "arguments": TAXONOMY},
        ]},
        {"content": "Articles and pages."},  # the forced answer without tools
    ]  # fmt: skip


def test_a_run_the_scripted_model_cannot_replay_cannot_become_a_case():
    failed = {"stop_reason": "error", "agent_id": "t", "message": "Go.", "rounds": [], "messages": []}
    calls_without_tools = run_agent(
        make_agent(tools=CATALOG, max_rounds=0),
        "Go.",
        model=ModelDouble(
            ModelResponse(None, (ToolCall("x", "list_entity_types", "{}"),)), then="Done.", ignores_tools=True
        ),
    )

    with pytest.raises(ValidationError) as error:
        case_from_run(failed, "broken")

    assert (
        str(error.value)
        == "run: cannot become a case: it stopped on a provider error, and the scripted model never fails"
    )
    assert calls_without_tools["stop_reason"] == "tools_disabled"
    assert "offered none" in replay_refusal(calls_without_tools)


def test_a_proxied_run_kept_without_the_clients_part_or_left_waiting_for_it_cannot_become_a_case():
    before = {"source": "proxy", "stop_reason": "answered", "agent_id": "t", "message": "Go.", "rounds": []}
    waiting = {**before, "stop_reason": "awaiting_client", "client": {"tools": [], "opening_length": 1}}

    assert replay_refusal(before) == "it came through the policy proxy before proxied runs kept what the client sent"
    assert replay_refusal(waiting) == "the client never sent back the results of the calls it was handed last"


def test_a_case_the_agent_can_no_longer_run_fails_with_the_reason():
    case = case_from_run(run_agent(bundles_agent(), "Go."), "bundles")

    result = check_case(bundles_agent(), {**case, "overrides": {"max_rounds": 500}})

    assert not result["passed"]
    assert result["error"] == (
        "The case cannot run against the agent as it is now: max_rounds: must be from 0 to 100 (got 500)"
    )


def valid_case():
    return case_from_run(run_agent(bundles_agent(), "Go."), "bundles")


def changed(path, value):
    """A valid case with the value at `path` (keys and list indexes) replaced, or removed when value is ..."""
    case = valid_case()
    target = case
    for key in path[:-1]:
        target = target[key]
    if value is ...:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return case


@pytest.mark.parametrize(
    ("case", "field", "message"),
    [
        ([], "case", "must be a JSON object"),
        (changed(["name"], " "), "name", "is required"),
        (changed(["name"], "x" * 201), "name", "must be at most 200 characters (got 201)"),
        (changed(["message"], ...), "message", "is required"),
        (changed(["agent_id"], "Bad id"), "agent_id", "must start with a lowercase letter"),
        (changed(["colour"], "red"), "colour", "is not a case field"),
        (changed(["overrides"], []), "overrides", "must be an object of agent fields and tool settings"),
        (changed(["script"], [{"tool_calls": [{"id": "x"}]}]), "script", 'response 1, tool call 1 needs a "name"'),
        (changed(["expected"], "answered"), "expected", "must be an object with stop_reason, answer and rounds"),
        (changed(["expected", "stop_reason"], "error"), "expected.stop_reason", "must be one of: answered,"),
        (changed(["expected", "answer"], 3), "expected.answer", "must be a string or null"),
        (changed(["expected", "rounds"], {}), "expected.rounds", "must be a list of rounds"),
        (changed(["expected", "rounds", 1, "number"], 1), "expected.rounds.2.number", "greater than 1"),
        (changed(["expected", "rounds", 0, "calls"], []), "expected.rounds.1.calls", "must be a non-empty list"),
        (
            changed(["expected", "rounds", 0, "calls", 1, "status"], "skipped"),
            "expected.rounds.1.calls.2.status",
            "must be one of: executed, rejected, error",
        ),
        (
            changed(["expected", "rounds", 1, "calls", 0, "reason"], ...),
            "expected.rounds.2.calls.1.reason",
            "is required",
        ),
        (changed(["client"], []), "client", "must be an object with messages, tools, results"),
        (changed(["client"], {"messages": [], "tools": []}), "client", "must be an object with messages, tools"),
        (
            changed(["client"], {"messages": [{"role": "robot"}], "tools": [], "results": {}}),
            "client.messages[0].role",
            "must be one of: ",
        ),
        (
            changed(["client"], {"messages": [{"role": "user", "content": "Go."}], "tools": [{}], "results": {}}),
            "client.tools[0]",
            "the proxy takes function tools",
        ),
        (
            changed(["client"], {"messages": [{"role": "user", "content": "Go."}], "tools": [], "results": {"a": 1}}),
            "client.results",
            "must be an object mapping call ids to the text the client sent back",
        ),
        (changed(["unpinned"], "answer"), "unpinned", "must be a list of expectation keys"),
        (changed(["unpinned"], ["rounds/9/1/status"]), "unpinned", '"rounds/9/1/status" is not an expectation'),
    ],
)
def test_a_bad_case_is_refused_naming_the_field(case, field, message):
    with pytest.raises(ValidationError) as error:
        validate_case(case)

    assert error.value.field == field
    assert message in error.value.errors[field]


def test_a_case_without_overrides_or_unpinned_keys_gets_them_empty():
    case = valid_case()
    del case["overrides"], case["unpinned"]

    assert validate_case(case)["overrides"] == {} and validate_case(case)["unpinned"] == []


PROBE = """
import json, sys
import engine.cases, engine.run_diff
print(json.dumps(sorted(name.split(".")[0] for name in sys.modules)))
"""


def test_the_case_and_comparison_modules_load_no_web_or_storage_package():
    completed = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip

    loaded = set(json.loads(completed.stdout.strip().splitlines()[-1]))
    assert loaded.isdisjoint({"flask", "flask_wtf", "sqlite_utils", "werkzeug", "wtforms"})
