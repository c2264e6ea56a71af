"""The demo agent whose edits need approval: a run of it waits before any edit is made, and its regression case
replays the reviewer's decisions."""

from engine.tools import default_registry
from services import cases as case_service
from services import runs as run_service
from services.demo import load_demo
from store import agents as agent_store
from store import cases as case_store


def test_the_reviewed_canvas_demo_waits_for_a_decision_on_each_edit_before_anything_of_the_response_runs(app, database):
    load_demo(database, default_registry().names())

    run = run_service.execute_and_store_run(
        app.config["DATABASE_URL"], "canvas_reviewed", "Build a landing page with a hero.", source="cli"
    )

    assert run["state"] == "awaiting_approval" and len(run["rounds"]) == 1
    pending = run["pending_round"]
    assert [(call["name"], call["status"]) for call in pending["calls"]] == [
        ("edit_component", "awaiting_approval"),
        ("edit_component", "awaiting_approval"),
        ("get_layout", "allowed"),
    ]
    assert run["layout"][0]["props"] == {}  # no edit made yet


def test_the_reviewed_canvas_demo_case_replays_its_decisions_and_fails_once_edits_need_no_approval(database):
    load_demo(database, default_registry().names())
    [case] = case_store.list_cases(database, "canvas_reviewed")
    assert case["decisions"] == {
        "call_2_1": {"approve": True},
        "call_2_2": {"reject": "No prices on the landing page."},
    }

    [checked] = case_service.check_agent_cases(database, "canvas_reviewed")
    assert checked["last_check"]["passed"], checked["last_check"]["differences"]

    agent = agent_store.get_agent(database, "canvas_reviewed")
    agent["tools"]["edit_component"]["require_approval"] = False
    agent_store.save_agent(database, agent, default_registry().names())
    [checked] = case_service.check_agent_cases(database, "canvas_reviewed")
    assert not checked["last_check"]["passed"]
    assert (
        "round 2, call_2_2 (edit_component): expected rejected (reviewer_rejected), got executed"
        in (checked["last_check"]["differences"])
    )
