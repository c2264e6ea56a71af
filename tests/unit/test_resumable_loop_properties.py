"""A run driven step by step, its state cut between steps (through JSON, as storage keeps it) and resumed, is the
run `run_agent` makes in one go, and keeps every invariant of SPEC §4 at every step."""

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import run_agent, start_run, stop_run
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
from tests.unit.unit_helpers import RecordingTools, all_calls, build_script

PROPERTY_SETTINGS = settings(max_examples=120, deadline=None)


def drive_with_cuts(agent, script, cuts, tools):
    """Start, then advance until the run stops, cutting the state before the steps `cuts` picks."""
    model = counting(script)
    state = start_run({**agent, "script": []}, "Go.", registry=tools.registry)
    steps = 0
    while state["run"]["state"] == "running":
        state = advance(state, model, tools, cut_here=cuts.draw(st.booleans(), label=f"cut before step {steps}"))
        steps += 1
        assert_every_call_answered_once_in_order(state["run"])
    return state, model


@PROPERTY_SETTINGS
@given(agents(approvals=False), scripts, st.data())
def test_a_run_cut_at_random_steps_and_resumed_is_the_run_made_in_one_go(agent, items, cuts):
    script = build_script(items)
    whole_tools, cut_tools = RecordingTools(), RecordingTools()
    whole = run_agent({**agent, "script": []}, "Go.", registry=whole_tools.registry, model=counting(script))

    state, model = drive_with_cuts(agent, script, cuts, cut_tools)

    assert without_timing(state["run"]) == without_timing(whole)
    assert cut_tools.executed == whole_tools.executed
    assert_spec_invariants(state["run"], agent, model, cut_tools)
    ran = [(call["name"], call["arguments"]["n"]) for call in all_calls(state["run"]) if call["status"] != "rejected"]
    assert cut_tools.executed == ran


@PROPERTY_SETTINGS
@given(agents(approvals=False), scripts, st.data())
def test_each_step_makes_exactly_one_model_request(agent, items, data):
    script = build_script(items)
    tools = RecordingTools()
    model = counting(script)
    state = start_run({**agent, "script": []}, "Go.", registry=tools.registry)
    assert state["run"]["rounds"] == [] and model.requests == []
    while state["run"]["state"] == "running":
        before = len(model.requests)
        state = advance(state, model, tools, cut_here=data.draw(st.booleans()))
        assert len(model.requests) == before + 1
        assert len(state["run"]["rounds"]) == len(model.requests)
    assert state["run"]["stop_reason"] is not None and state["loop"]["pending"] is None


@PROPERTY_SETTINGS
@given(agents(approvals=False), scripts, st.integers(0, 6))
def test_a_run_stopped_after_any_step_has_every_call_it_received_answered(agent, items, stop_after):
    script = build_script(items)
    tools = RecordingTools()
    model = counting(script)
    state = start_run({**agent, "script": []}, "Go.", registry=tools.registry)
    while state["run"]["state"] == "running" and len(model.requests) < stop_after:
        state = advance(state, model, tools, cut_here=True)
    if state["run"]["state"] != "running":
        return
    executed = list(tools.executed)

    stopped = stop_run(cut(state), registry=tools.registry)["run"]

    assert stopped["state"] == "finished" and stopped["stop_reason"] == "stopped"
    assert stopped["rounds"] == state["run"]["rounds"] and tools.executed == executed
    assert len(model.requests) == stop_after
    assert_every_call_answered_once_in_order(stopped)
