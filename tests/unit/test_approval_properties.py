"""Approvals over random mixes: approved, edited, rejected (with and without a reason), restricted, limited and
capped calls in random runs cut between steps. Every call id gets exactly one tool message, in response order; no
call of a waiting response runs before every decision on it is taken; each decision does what it says."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import ValidationError, decide_run, run_agent, start_run
from tests.unit.live_helpers import (
    advance,
    agents,
    assert_every_call_answered_once_in_order,
    assert_spec_invariants,
    counting,
    cut,
    scripts,
    without_timing,
)
from tests.unit.unit_helpers import RecordingTools, build_script

REJECTED_BY_REVIEWER = "Error: A reviewer rejected this tool call."
CHOICES = ("approve", "edit", "bad_edit", "reject", "reject_without_reason")


def decision_for(choice, number):
    if choice in ("approve", "bad_edit"):  # a refused edit is followed by a plain approval
        return {"approve": True}
    if choice == "edit":
        return {"approve": True, "arguments": {"n": 1000 + number}}
    return {"reject": f"Reason {number}." if choice == "reject" else ""}


def take_decisions(state, data, tools, taken):
    """Decide on every waiting call, in one or several requests, the state cut in between."""
    pending = state["run"]["pending_round"]
    awaiting = [c["id"] for c in pending["calls"] if c["status"] == "awaiting_approval"]
    choices = {call_id: data.draw(st.sampled_from(CHOICES), label=call_id) for call_id in awaiting}
    for number, call_id in enumerate(awaiting):
        if choices[call_id] == "bad_edit":
            with pytest.raises(ValidationError) as error:
                decide_run(state, {call_id: {"approve": True, "arguments": {"n": "one"}}}, registry=tools.registry)
            assert error.value.field == f"decisions.{call_id}.arguments"
        taken[call_id] = decision_for(choices[call_id], number)
    split = data.draw(st.integers(0, len(awaiting)), label="decided in the first request")
    if split:
        first = {call_id: taken[call_id] for call_id in awaiting[:split]}
        state = decide_run(cut(state), first, complete=False, registry=tools.registry)
        assert (state["run"]["state"] == "awaiting_approval") == (split < len(awaiting))
    rest = {call_id: taken[call_id] for call_id in awaiting[split:]}
    if rest:
        state = decide_run(cut(state), rest, registry=tools.registry)
    return state, pending, choices


def expected_executions(pending, taken):
    """What runs once the round is decided, in response order: allowed calls, approved ones with their arguments."""
    runs = []
    for call in pending["calls"]:
        decision = taken.get(call["id"])
        if call["status"] == "allowed" or (call["status"] == "awaiting_approval" and "approve" in decision):
            arguments = (decision or {}).get("arguments") or call["arguments"]
            runs.append((call["name"], arguments["n"]))
    return runs


def assert_decided_as_taken(round_, taken):
    for call in round_["calls"]:
        decision = taken.get(call["id"])
        if decision is None:
            assert "review" not in call
        elif "reject" in decision:
            assert (call["status"], call["reason"]) == ("rejected", "reviewer_rejected")
            reason = decision["reject"]
            assert call["message"] == (f"{REJECTED_BY_REVIEWER} {reason}" if reason else REJECTED_BY_REVIEWER)
            assert call["review"]["decision"] == "rejected"
        else:
            assert call["status"] == "executed" and call["review"]["decision"] == "approved"
            assert call["review"]["arguments"] == decision.get("arguments")


@settings(max_examples=150, deadline=None)
@given(agents(), scripts, st.data())
def test_every_mix_of_decisions_answers_every_call_once_and_runs_nothing_before_its_decision(agent, items, data):
    script = build_script(items)
    tools = RecordingTools()
    model = counting(script)
    taken = {}
    state = start_run({**agent, "script": []}, "Go.", registry=tools.registry)
    while state["run"]["state"] != "finished":
        if state["run"]["state"] == "running":
            ran_before = len(tools.executed)
            state = advance(state, model, tools, cut_here=data.draw(st.booleans(), label="cut"))
            if state["run"]["state"] == "awaiting_approval":
                assert len(tools.executed) == ran_before  # nothing of the waiting response has run
            continue
        ran_before = len(tools.executed)
        state, pending, _choices = take_decisions(state, data, tools, taken)
        assert tools.executed[ran_before:] == expected_executions(pending, taken)
        decided = state["run"]["rounds"][-1]
        assert decided["number"] == pending["number"]
        assert [c["id"] for c in decided["calls"]] == [c["id"] for c in pending["calls"]]
        assert_decided_as_taken(decided, taken)
        assert_every_call_answered_once_in_order(state["run"])

    assert_spec_invariants(state["run"], agent, model, tools)
    whole_tools = RecordingTools()
    whole = run_agent(
        {**agent, "script": []}, "Go.", decisions=taken, registry=whole_tools.registry, model=counting(script)
    )
    assert without_timing(whole) == without_timing(state["run"])
    assert whole_tools.executed == tools.executed
