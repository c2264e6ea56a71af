"""Runs driven step by step, as the live run page drives them: what a state carries across a cut (counts, artifacts,
documents in context, the canvas), Stop, and approvals of tool calls, with the errors a caller can make."""

import json

import pytest

from engine import ValidationError, advance_run, decide_run, run_agent, start_run, stop_run
from tests.unit.unit_helpers import SpyRegistry, answer, call, make_agent, tool_round

REJECTED_BY_REVIEWER = "Error: A reviewer rejected this tool call."
STOPPED_CALL = "Error: This tool call was not executed, because a person stopped the run."


def cut(state):
    return json.loads(json.dumps(state))


def step_to_the_end(state, **options):
    while state["run"]["state"] == "running":
        state = advance_run(cut(state), **options)
    return state


def start(tools, script, message="Go.", **options):
    return start_run(make_agent(tools, script), message, **options)


def tool_messages(run):
    return {message["tool_call_id"]: message["content"] for message in run["messages"] if message["role"] == "tool"}


def all_calls(run):
    return [call for round_ in run["rounds"] for call in round_["calls"]]


def statuses(run):
    return [[(c["id"], c["status"], c["reason"]) for c in round_["calls"]] for round_ in run["rounds"]]


# --- What a state carries from one step to the next ------------------------------------------------------------


def test_a_started_run_has_asked_nothing_yet_and_is_plain_json():
    state = start({"list_bundles": {}}, [answer("Hi.")])

    assert state == cut(state)
    assert state["run"]["state"] == "running" and state["run"]["stop_reason"] is None
    assert state["run"]["rounds"] == [] and state["run"]["model_requests"] == 0


def test_a_start_with_bad_input_names_the_field():
    with pytest.raises(ValidationError) as error:
        start_run(make_agent({"no_such_tool": {}}), "Go.")
    assert error.value.field == "tools.no_such_tool"
    with pytest.raises(ValidationError, match="message"):
        start_run(make_agent(), "  ")


def test_identical_calls_that_ran_before_a_cut_still_count_after_it():
    script = [tool_round(call("list_bundles", {"entity_type": "node"}))] * 2 + [answer("Done.")]

    run = step_to_the_end(start({"list_bundles": {"max_identical_calls": 1}}, script))["run"]

    assert statuses(run) == [[("call_1_1", "executed", None)], [("call_2_1", "rejected", "repeated_call")], []]


def test_artifacts_kept_before_a_cut_are_numbered_on_and_resolved_after_it():
    script = [
        tool_round(call("list_bundles", {"entity_type": "node"})),
        tool_round(call("list_bundles", {"entity_type": "media"})),
        tool_round(call("place_component", {"component": "text"}, call_id="text")),
        tool_round(call("edit_component", {"uuid": "{{text}}", "props": {"body": "{{artifact:list_bundles:1}}"}})),
        answer("Done."),
    ]
    tools = {"list_bundles": {"use_artifacts": True}, "place_component": {}, "edit_component": {}}

    run = step_to_the_end(start(tools, script))["run"]

    assert [artifact["placeholder"] for artifact in run["artifacts"]] == [
        "{{artifact:list_bundles:1}}",
        "{{artifact:list_bundles:2}}",
    ]
    assert run["layout"][0]["props"]["body"].startswith('{"entity_type": "node"')


def test_documents_in_context_before_a_cut_are_still_in_context_after_it(documents):
    script = [tool_round(call("read_document", {"doc_id": "refund-policy"})), answer("Done.")]

    state = start({"read_document": {}}, script, message="How do refunds work?", documents=documents)
    run = step_to_the_end(state, documents=documents)["run"]

    assert tool_messages(run) == {"call_1_1": "Already in your context."}
    assert [source["id"] for source in run["sources"]] == ["refund-policy"]


def test_a_component_placed_before_a_cut_is_found_after_it():
    script = [
        tool_round(call("place_component", {"component": "hero"}, call_id="hero")),
        tool_round(call("place_component", {"component": "text", "below_uuid": "{{hero}}"})),
        answer("Done."),
    ]

    run = step_to_the_end(start({"place_component": {}}, script))["run"]

    assert [node["component"] for node in run["layout"]] == ["hero", "text"]
    assert statuses(run)[1] == [("call_2_1", "executed", None)]


def test_a_step_on_a_run_that_has_ended_is_refused_naming_the_state():
    state = step_to_the_end(start({}, [answer("Hi.")]))

    with pytest.raises(ValidationError) as error:
        advance_run(state)
    assert error.value.field == "state" and "finished" in str(error.value)
    with pytest.raises(ValidationError, match="already ended"):
        stop_run(state)


def test_the_duration_adds_up_the_steps():
    state = step_to_the_end(start({"list_bundles": {}}, [tool_round(call("list_bundles", {"entity_type": "node"}))]))

    assert state["run"]["duration_ms"] > 0


# --- Stop ------------------------------------------------------------------------------------------------------


def test_stopping_between_steps_keeps_every_round_and_asks_nothing_more():
    script = [tool_round(call("list_bundles", {"entity_type": "node"})), answer("Done.")]
    state = advance_run(start({"list_bundles": {}}, script))

    run = stop_run(cut(state))["run"]

    assert run["stop_reason"] == "stopped" and run["state"] == "finished" and run["answer"] is None
    assert statuses(run) == [[("call_1_1", "executed", None)]]
    assert run["model_requests"] == 1


# --- Approvals -------------------------------------------------------------------------------------------------

APPROVAL_TOOLS = {"list_bundles": {"require_approval": True}, "list_entity_types": {}}
MIXED_RESPONSE = tool_round(
    call("list_bundles", {"entity_type": "node"}),
    call("list_entity_types"),
    call("list_bundles", {"entity_type": "media"}),
    call("list_bundles", {"entity_type": 3}),
)


MIXED_SCRIPT = (MIXED_RESPONSE, answer("Done."))


def waiting(spy, script=MIXED_SCRIPT, tools=APPROVAL_TOOLS):
    return advance_run(start(tools, list(script), registry=spy.registry), registry=spy.registry)


def test_a_response_with_a_call_that_requires_approval_waits_and_nothing_of_it_runs():
    spy = SpyRegistry()

    state = waiting(spy)

    run = state["run"]
    assert run["state"] == "awaiting_approval" and run["stop_reason"] is None
    assert spy.executed == [] and run["rounds"] == []
    assert [(c["id"], c["status"], c["reason"]) for c in run["pending_round"]["calls"]] == [
        ("call_1_1", "awaiting_approval", None),
        ("call_1_2", "allowed", None),
        ("call_1_3", "awaiting_approval", None),
        ("call_1_4", "rejected", "invalid_arguments"),  # the gate decides first: no approval asked
    ]
    assert not [message for message in run["messages"] if message["role"] == "tool"]
    with pytest.raises(ValidationError, match="awaiting approval"):
        advance_run(state, registry=spy.registry)


def test_once_every_call_is_decided_the_round_runs_in_response_order_and_the_run_goes_on():
    spy = SpyRegistry()
    state = waiting(spy)

    state = decide_run(
        cut(state),
        {"call_1_1": {"reject": "Not the nodes."}, "call_1_3": {"approve": True}},
        now=1_800_000_000.25,
        registry=spy.registry,
    )

    run = state["run"]
    assert run["state"] == "running" and run["pending_round"] is None
    assert spy.executed == [("list_entity_types", {}), ("list_bundles", {"entity_type": "media"})]
    assert statuses(run) == [
        [
            ("call_1_1", "rejected", "reviewer_rejected"),
            ("call_1_2", "executed", None),
            ("call_1_3", "executed", None),
            ("call_1_4", "rejected", "invalid_arguments"),
        ]
    ]
    assert tool_messages(run)["call_1_1"] == f"{REJECTED_BY_REVIEWER} Not the nodes."
    reviews = [c.get("review") for c in run["rounds"][0]["calls"]]
    assert reviews == [
        {
            "decision": "rejected",
            "by": "a reviewer",
            "reason": "Not the nodes.",
            "arguments": None,
            "decided_at": 1_800_000_000.25,
        },
        None,
        {"decision": "approved", "by": "a reviewer", "reason": None, "arguments": None, "decided_at": 1_800_000_000.25},
        None,
    ]
    assert step_to_the_end(state, registry=spy.registry)["run"]["answer"] == "Done."


def test_a_rejection_without_a_reason_sends_the_text_alone():
    spy = SpyRegistry()
    decisions = {"call_1_1": {"reject": ""}, "call_1_3": {"reject": "  "}}

    run = decide_run(waiting(spy), decisions, registry=spy.registry)["run"]

    assert tool_messages(run)["call_1_1"] == REJECTED_BY_REVIEWER
    assert tool_messages(run)["call_1_3"] == REJECTED_BY_REVIEWER


def test_edited_arguments_run_in_place_of_the_model_s_and_the_round_shows_both():
    spy = SpyRegistry()
    decisions = {"call_1_1": {"approve": True, "arguments": {"entity_type": "user"}}, "call_1_3": {"approve": True}}

    run = decide_run(waiting(spy), decisions, registry=spy.registry)["run"]

    assert ("list_bundles", {"entity_type": "user"}) in spy.executed
    edited = run["rounds"][0]["calls"][0]
    assert edited["arguments"] == {"entity_type": "node"}  # what the model sent
    assert edited["review"]["arguments"] == {"entity_type": "user"}
    assert '"user"' in edited["output"]


@pytest.mark.parametrize(
    ("decisions", "field", "message"),
    [
        ({"call_1_1": {"approve": True}}, "decisions.call_1_3", "needs a decision"),
        ({"call_1_2": {"approve": True}}, "decisions.call_1_2", "is not a call awaiting approval"),
        ({"nope": {"approve": True}}, "decisions.nope", "awaiting: call_1_1, call_1_3"),
        ({"call_1_1": {"approve": False}, "call_1_3": {"approve": True}}, "decisions.call_1_1", "must be"),
        ({"call_1_1": {"approve": True, "reject": "x"}}, "decisions.call_1_1", "must be"),
        ({"call_1_1": "yes"}, "decisions.call_1_1", "must be"),
        ({"call_1_1": {"reject": 3}}, "decisions.call_1_1", "must be a string"),
        ({"call_1_1": {"approve": True, "arguments": "{}"}}, "decisions.call_1_1.arguments", "JSON object"),
        (
            {"call_1_1": {"approve": True, "arguments": {}}, "call_1_3": {"approve": True}},
            "decisions.call_1_1.arguments",
            "Error: invalid arguments for list_bundles: 'entity_type' is a required property",
        ),
        ([], "decisions", "must be an object"),
    ],
)
def test_a_bad_decision_is_refused_naming_the_call_and_changes_nothing(decisions, field, message):
    spy = SpyRegistry()
    state = waiting(spy)

    with pytest.raises(ValidationError) as error:
        decide_run(state, decisions, registry=spy.registry)

    assert error.value.field == field and message in str(error.value)
    assert spy.executed == []


def test_decisions_may_come_one_at_a_time_and_the_round_runs_with_the_last():
    spy = SpyRegistry()
    state = decide_run(waiting(spy), {"call_1_1": {"approve": True}}, complete=False, registry=spy.registry)

    assert state["run"]["state"] == "awaiting_approval" and spy.executed == []
    assert state["run"]["pending_round"]["calls"][0]["review"]["decision"] == "approved"

    state = decide_run(cut(state), {"call_1_3": {"reject": "No."}}, complete=False, registry=spy.registry)

    assert state["run"]["state"] == "running"
    assert [name for name, _arguments in spy.executed] == ["list_bundles", "list_entity_types"]


def test_a_restricted_tool_called_twice_is_rejected_by_the_gate_before_any_approval_is_asked():
    spy = SpyRegistry()
    tools = {"list_bundles": {"require_approval": True, "restrict_multiple_calls": True}}
    script = [tool_round(call("list_bundles", {"entity_type": "node"}), call("list_bundles", {"entity_type": "user"}))]

    run = waiting(spy, script, tools)["run"]

    assert run["state"] == "running" and run["pending_round"] is None
    assert [c["reason"] for c in run["rounds"][0]["calls"]] == ["restricted_repeat", "restricted_repeat"]


def test_stopping_a_run_that_waits_answers_every_call_and_runs_none():
    spy = SpyRegistry()

    run = stop_run(cut(waiting(spy)), registry=spy.registry)["run"]

    assert run["stop_reason"] == "stopped" and spy.executed == []
    assert statuses(run) == [
        [
            ("call_1_1", "rejected", "stopped"),
            ("call_1_2", "rejected", "stopped"),
            ("call_1_3", "rejected", "stopped"),
            ("call_1_4", "rejected", "invalid_arguments"),
        ]
    ]
    assert tool_messages(run)["call_1_2"] == STOPPED_CALL


def test_run_agent_takes_the_decisions_it_is_given_and_waits_for_those_it_lacks():
    agent = make_agent(APPROVAL_TOOLS, [MIXED_RESPONSE, answer("Done.")])
    decisions = {"call_1_1": {"approve": True}, "call_1_3": {"reject": "No."}}

    decided = run_agent(agent, "Go.", decisions=decisions)
    waiting_run = run_agent(agent, "Go.", decisions={"call_1_1": {"approve": True}})

    assert decided["stop_reason"] == "answered" and decided["state"] == "finished"
    assert waiting_run["state"] == "awaiting_approval" and waiting_run["stop_reason"] is None
    assert waiting_run["model_requests"] == 1


def test_a_call_id_used_before_a_cut_is_repaired_after_it():
    script = [tool_round(call("list_entity_types", call_id="same"))] * 2 + [answer("Done.")]

    run = step_to_the_end(start({"list_entity_types": {}}, script))["run"]

    assert [(c["id"], c["original_id"]) for c in all_calls(run)] == [("same", None), ("repaired_2_1", "same")]
