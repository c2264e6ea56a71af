"""Builders for the tests of runs driven step by step: random agents and scripts over the recording tools, a driver
that cuts a run between steps (its state through json.dumps and json.loads, as storage keeps it) and SPEC §4's
invariants as checks on a run's transcript and rounds."""

import json
from collections import Counter

from hypothesis import strategies as st

from engine import advance_run
from tests import strategies
from tests.doubles import ModelDouble
from tests.unit.unit_helpers import ARGUMENT_KINDS, all_calls

ENABLEABLE = ("alpha", "beta", "gamma")
NAMES = ("alpha", "alpha", "beta", "gamma", "delta")

tool_settings = strategies.tool_settings(optional=strategies.SETTINGS)
# "repeat": a small `n` that other calls share, so that identical calls happen.
call_spec = st.tuples(st.sampled_from(NAMES), st.sampled_from((*ARGUMENT_KINDS, "repeat")), st.integers(0, 5))
script_item = st.one_of(
    st.builds(lambda text: ("answer", text), st.sampled_from(["Done.", "", "Maybe."])),
    st.builds(lambda specs: ("calls", specs), st.lists(call_spec, max_size=8)),
)
scripts = st.lists(script_item, max_size=6)


@st.composite
def agents(draw, approvals=True):
    settings = draw(st.dictionaries(st.sampled_from(ENABLEABLE), tool_settings))
    if not approvals:
        settings = {name: {k: v for k, v in tool.items() if k != "require_approval"} for name, tool in settings.items()}
    return {
        "id": "prop",
        "label": "Property",
        "tools": settings,
        "max_rounds": draw(st.integers(0, 5)),
        "on_round_cap": draw(st.sampled_from(["final_answer", "message"])),
    }


def counting(script):
    return ModelDouble(script=script)


def cut(state):
    """The state as a process that reads it back from storage has it."""
    return json.loads(json.dumps(state))


def advance(state, model, tools, cut_here):
    """One step, from a state cut there or not; the next process builds its own model client."""
    return advance_run(cut(state) if cut_here else state, registry=tools.registry, model=model)


def _call_without_timing(call):
    if call.get("review") is None:
        return call
    return {**call, "review": {key: value for key, value in call["review"].items() if key != "decided_at"}}


def without_timing(run):
    """The run without what the clock decides: its duration, each request's latency and start, and when each
    decision was taken."""
    rounds = [
        {
            **{key: value for key, value in round_.items() if key not in ("latency_ms", "started_at")},
            "calls": [_call_without_timing(call) for call in round_["calls"]],
        }
        for round_ in run["rounds"]
    ]
    return {**{key: value for key, value in run.items() if key != "duration_ms"}, "rounds": rounds}


def assert_every_call_answered_once_in_order(run):
    """Each assistant message's call ids are answered by one tool message each, right after it, in its order."""
    messages = run["messages"]
    position, answered = 0, []
    while position < len(messages):
        message = messages[position]
        position += 1
        assert message["role"] != "tool", f"a tool message outside its assistant message's group: {message}"
        if message["role"] == "assistant" and message.get("tool_calls"):
            ids = [call["id"] for call in message["tool_calls"]]
            group = messages[position : position + len(ids)]
            assert [(m["role"], m["tool_call_id"]) for m in group] == [("tool", call_id) for call_id in ids]
            assert all(isinstance(m["content"], str) for m in group)
            answered.extend(ids)
            position += len(ids)
    assert answered == [call["id"] for call in all_calls(run)]
    assert len(set(answered)) == len(answered)


def assert_spec_invariants(run, agent, model, tools):
    """SPEC §4's invariants on a finished run, against what the tools and the model really saw."""
    assert_every_call_answered_once_in_order(run)
    ran = [(call["name"], call["arguments"]["n"]) for call in all_calls(run) if call["status"] != "rejected"]
    ran_with = [(name, n) for name, n in tools.executed]
    assert len(ran_with) == len(ran)  # a rejected call never executes, every other call runs once
    restricted = {name for name, tool in agent["tools"].items() if tool.get("restrict_multiple_calls")}
    for round_ in run["rounds"]:
        ran_here = Counter(call["name"] for call in round_["calls"] if call["status"] != "rejected")
        assert all(ran_here[name] <= 1 for name in restricted)
    assert len(model.requests) <= agent["max_rounds"] + 1
    assert len(model.requests) == run["model_requests"]
    if agent["max_rounds"] == 0:
        assert len(model.requests) == 1 and model.bodies[0]["tools"] is None
