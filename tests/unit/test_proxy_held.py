"""A proxied response held for approval, without a database: kept in memory, as a replay keeps runs, where no one
waits and each held call is decided at once by the decisions given, or else is not decided in time."""

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.approvals import PendingRound
from engine.config import load_agent
from engine.proxy.request import read_request
from engine.proxy.serve import RunsInMemory, answer_and_record
from engine.proxy.upstream import upstream_for_agent

PLACE = {
    "type": "function",
    "function": {
        "name": "place",
        "parameters": {"type": "object", "properties": {"component": {"type": "string"}}, "required": ["component"]},
    },
}
AGENT = {
    "id": "canvas",
    "label": "Canvas",
    "client_tools": {"place": {"require_approval": True}},
    "approval_timeout_seconds": 30,
    "script": [
        {"content": "Placing.", "tool_calls": [{"id": "hero", "name": "place", "arguments": {"component": "hero"}}]},
        {"content": "Not placed."},
    ],
}


def answer(decisions, agent=AGENT):
    config, merged = load_agent(agent)
    request = read_request({"model": "scripted", "messages": [{"role": "user", "content": "Build."}], "tools": [PLACE]})
    runs = RunsInMemory(decisions)
    exchange, run = answer_and_record(config, merged, request, upstream_for_agent(config), runs)
    return exchange.completion["choices"][0]["message"], run, runs


@pytest.mark.parametrize(
    ("decision", "arguments"),
    [
        ({"approve": True}, {"component": "hero"}),
        ({"approve": True, "arguments": {"component": "text"}}, {"component": "text"}),
    ],
    ids=["approved", "edited"],
)
def test_an_approved_call_reaches_the_client_with_the_approved_arguments(decision, arguments):
    message, run, runs = answer({"hero": decision})

    assert [(call["id"], json.loads(call["function"]["arguments"])) for call in message["tool_calls"]] == [
        ("hero", arguments)
    ]
    assert run["stop_reason"] == "awaiting_client" and run["model_requests"] == 1 and len(runs.runs) == 1


def test_a_call_not_decided_in_time_is_answered_upstream_and_the_model_asked_again():
    message, run, _runs = answer({})

    assert message["content"] == "Not placed." and "tool_calls" not in message
    call = run["rounds"][0]["calls"][0]
    assert (call["status"], call["reason"], call["review"]["decision"]) == ("rejected", "approval_timeout", "timed_out")
    assert call["message"] == (
        "Error: This tool call was not executed: it requires approval, and no one decided on it within 30 seconds."
    )
    assert run["messages"][2] == {"role": "tool", "tool_call_id": "hero", "content": call["message"]}


decision = st.one_of(
    st.none(),  # no one decides in time
    st.just({"approve": True}),
    st.builds(lambda component: {"approve": True, "arguments": {"component": component}}, st.sampled_from("ab")),
    st.builds(lambda reason: {"reject": reason}, st.sampled_from(["", "No."])),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(decision, min_size=1, max_size=4))
def test_each_held_call_reaches_the_client_once_as_decided_or_is_answered_upstream_once(decisions):
    calls = [{"id": f"c{index}", "name": "place", "arguments": {"component": "x"}} for index in range(len(decisions))]
    agent = {**AGENT, "script": [{"tool_calls": calls}, {"content": "Not placed."}]}
    chosen = {call["id"]: choice for call, choice in zip(calls, decisions, strict=True) if choice is not None}

    message, run, runs = answer(chosen, agent)

    approved = all(choice is not None and "approve" in choice for choice in decisions)
    sent_upstream = [item["tool_call_id"] for item in run["messages"] if item.get("role") == "tool"]
    if approved:  # every call reaches the client once, with the arguments it was approved with
        assert [call["id"] for call in message["tool_calls"]] == [call["id"] for call in calls]
        for call, choice in zip(message["tool_calls"], decisions, strict=True):
            assert json.loads(call["function"]["arguments"]) == choice.get("arguments", {"component": "x"})
        assert sent_upstream == [] and run["model_requests"] == 1
    else:  # none reaches the client; each is answered upstream exactly once, and the model is asked again
        assert "tool_calls" not in message and message["content"] == "Not placed."
        assert sent_upstream == [call["id"] for call in calls] and run["model_requests"] == 2
    assert len(runs.runs) == 1 and run["state"] == "finished"


def test_a_decision_and_a_timeout_record_when_they_were_taken():
    before = time.time()
    _message, approved, _runs = answer({"hero": {"approve": True}})
    _message, timed_out, _runs = answer({})

    approved_at = approved["rounds"][0]["calls"][0]["review"]["decided_at"]
    timed_out_at = timed_out["rounds"][0]["calls"][0]["review"]["decided_at"]
    assert before - 0.001 <= approved_at <= timed_out_at <= time.time()


def test_a_held_round_stored_before_decisions_had_a_time_loads_without_one():
    config, merged = load_agent(AGENT)
    request = read_request({"model": "scripted", "messages": [{"role": "user", "content": "Build."}], "tools": [PLACE]})
    runs = RunsInMemory({"hero": {"approve": True}})
    answer_and_record(config, merged, request, upstream_for_agent(config), runs)
    [held] = runs.loops.values()
    stored = held["proxy"]["pending"]
    assert stored["decisions"]["hero"]["decided_at"] > 0
    before = {**stored, "decisions": {"hero": {"approve": True}}}  # as a held round was kept before

    pending = PendingRound.from_state(before)

    assert pending.decisions["hero"].review() == {
        "decision": "approved",
        "by": "a reviewer",
        "reason": None,
        "arguments": None,
        "decided_at": None,
    }
