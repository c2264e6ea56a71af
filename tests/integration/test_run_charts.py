"""The run charts atop /runs and on an agent's page, drawn from counts the triggers keep in step with the runs, and
the runs list's filters by state (running, awaiting approval, interrupted, abandoned)."""

import re
import time

import pytest

import engine
from engine import STOP_REASONS
from services import run_texts
from services.demo import CATALOG_EXPLORER, CATALOG_PAGE, DEMO_CLIENTS
from store import run_charts
from store import runs as run_store
from tests.html_reader import form_fields

pytestmark = pytest.mark.both_engines


HTMX = {"HX-Request": "true"}


@pytest.fixture
def agents(client):
    for agent in (CATALOG_EXPLORER, CATALOG_PAGE):
        assert client.put(f"/api/agents/{agent['id']}", json=agent).status_code == 201


def api_run(client, agent_id, **overrides):
    response = client.post(f"/api/agents/{agent_id}/runs", json={"message": "Go.", "overrides": overrides})
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def recount(database):
    """The charts' numbers counted again from the stored runs themselves."""
    days, rounds, rejected = {}, {}, {}
    for row in database.query("SELECT id FROM runs"):
        run = run_store.get_run(database, row["id"])
        day = days.setdefault(run["created_at"][:10], {})
        day[run["stop_reason"] or ""] = day.get(run["stop_reason"] or "", 0) + 1
        rounds[run["rounds_used"]] = rounds.get(run["rounds_used"], 0) + 1
        for round_ in run["rounds"]:
            for call in round_["calls"]:
                if call["status"] == "rejected":
                    key = (call["name"], call["reason"])
                    rejected[key] = rejected.get(key, 0) + 1
    return days, rounds, rejected


def counted(database, **filters):
    charts = run_charts.run_charts(database, **filters)
    rejections = {(tool, reason): calls for tool, reason, calls in charts["rejections"]}
    return dict(charts["days"]), dict(charts["rounds"]), rejections


def test_the_counts_follow_every_run_stored_stepped_and_pruned(client, agents, database):
    api_run(client, "catalog_explorer")
    api_run(client, "catalog_page")
    api_run(client, "catalog_explorer", max_rounds=1)
    live = client.post(
        "/agents/catalog_explorer/run",
        data={
            **form_fields(client.get("/agents/catalog_explorer/run").get_data(as_text=True)),
            "message": "Go.",
            "live": "1",
        },
        headers=HTMX,
    )
    run_id = int(re.search(r'id="run-(\d+)"', live.get_data(as_text=True)).group(1))
    assert counted(database) == recount(database)  # a live run counted as not ended

    client.post(f"/runs/{run_id}/step", headers=HTMX)
    while run_store.get_run(database, run_id)["state"] == "running":
        client.post(f"/runs/{run_id}/step", headers=HTMX)

    assert counted(database) == recount(database)
    days, rounds, rejected = counted(database)
    assert list(days.values()) == [{"answered": 3, "round_cap": 1}]
    assert rejected == {
        ("list_bundles", "restricted_repeat"): 6,
        ("list_bundles", "argument_not_allowed"): 1,
        ("list_bundles", "repeated_call"): 1,
    }
    assert counted(database, agent_id="catalog_page")[2] == {
        ("list_bundles", "argument_not_allowed"): 1,
        ("list_bundles", "repeated_call"): 1,
    }
    run_store.prune_runs(database, "9999")
    assert counted(database) == ({}, {}, {})
    assert database["run_chart_counts"].count == database["rejection_counts"].count == 0


def test_runs_and_the_agent_page_show_the_three_charts_under_the_filters(client, agents):
    api_run(client, "catalog_explorer")
    api_run(client, "catalog_page")

    everything = client.get("/runs").get_data(as_text=True)
    one_agent = client.get("/runs?agent=catalog_page").get_data(as_text=True)
    agent_page = client.get("/agents/catalog_page").get_data(as_text=True)

    for html in (everything, one_agent, agent_page):
        assert html.count('<svg viewBox="') == 3 and "Runs per day, by stop reason" in html
    assert "list_bundles, Restricted tool called more than once: 2" in everything
    assert "Restricted tool called more than once" not in one_agent
    assert "list_bundles, Value not allowed: 1" in one_agent and "list_bundles, Value not allowed: 1" in agent_page
    assert re.search(
        r"Runs by tool rounds used: 0 rounds: 0, 1 rounds: 0, 2 rounds: 0, 3 rounds: 1, 4 rounds: 0, 5 rounds: 1<",
        everything,
    )
    assert "No runs." in client.get("/runs?agent=nobody").get_data(as_text=True)


def test_a_run_waiting_for_approval_is_found_by_its_state_in_the_list_and_the_api(client):
    agent = {**CATALOG_EXPLORER, "id": "reviewed", "tools": {"list_bundles": {"require_approval": True}}}
    client.put("/api/agents/reviewed", json=agent)
    waiting = api_run(client, "reviewed")
    api_run(client, "reviewed", max_rounds=0)

    listed = client.get("/runs?state=awaiting_approval").get_data(as_text=True)
    answer = client.get("/api/runs?state=awaiting_approval").get_json()

    assert f'href="/runs/{waiting["id"]}"' in listed and "1 run awaiting approval, newest first." in listed
    assert [run["id"] for run in answer["runs"]] == [waiting["id"]] and answer["total"] == 1
    assert client.get("/api/runs?state=interrupted").get_json()["runs"] == []
    refused = client.get("/api/runs?state=sleeping")
    assert refused.status_code == 400 and refused.get_json()["field"] == "state"


def test_a_proxied_run_whose_client_never_came_back_reads_abandoned_everywhere(client, database):
    client.put(
        "/api/agents/browser_canvas",
        json={
            "label": "Client",
            "client_tools": {"place_block": {}},
            "script": [{"tool_calls": [{"name": "place_block", "arguments": {"block": "hero"}}]}, {"content": "Done."}],
        },
    )
    request = {
        "model": "m",
        "messages": [{"role": "user", "content": "Hi."}],
        "tools": DEMO_CLIENTS["browser_canvas"]["tools"],
    }
    run_id = int(client.post("/proxy/browser_canvas/v1/chat/completions", json=request).headers["X-Toolgate-Run"])
    waiting = client.get(f"/runs/{run_id}").get_data(as_text=True)
    assert "Went to the client: waiting for its result." in waiting
    assert "If none comes within 30 minutes, the run reads abandoned." in waiting
    assert client.get(f"/api/runs/{run_id}").get_json()["state"] == "finished"
    assert client.get("/api/runs?state=abandoned").get_json()["runs"] == []

    lease = database.value("SELECT lease_until FROM runs WHERE id = :id", {"id": run_id})
    assert lease == pytest.approx(time.time() + run_store.ABANDONED_AFTER_SECONDS, abs=60)
    database.execute("UPDATE runs SET lease_until = :lease WHERE id = :id", {"lease": time.time() - 1, "id": run_id})

    assert client.get(f"/api/runs/{run_id}").get_json()["state"] == "abandoned"
    assert [run["id"] for run in client.get("/api/runs?state=abandoned").get_json()["runs"]] == [run_id]
    assert "Abandoned: its client never came back" in client.get("/runs?state=abandoned").get_data(as_text=True)
    page = client.get(f"/runs/{run_id}").get_data(as_text=True)
    assert "Abandoned: its client never came back" in page
    assert "Went to the client, which never sent its result." in page
    assert "sent no request for 30 minutes." in page


@pytest.mark.parametrize("reason", STOP_REASONS)
def test_a_stop_reason_reads_on_a_run_as_in_the_list_then_what_it_means(reason):
    run = {"stop_reason": reason, "rounds": [{"tools_offered": None}]}

    assert run_texts.stop_reason_text(run).startswith(run_texts.stop_reason_label(reason))


def test_the_runs_list_its_charts_and_the_api_filter_by_the_api_a_proxied_client_spoke(client, agents, database):
    spoken = {}
    for api, agent in (("messages", CATALOG_EXPLORER), ("responses", CATALOG_PAGE)):
        run = {**engine.run_agent(agent, "Go."), "source": "proxy", "api": api}
        spoken[api] = run_store.save_run(database, run)["id"]
    api_run(client, "catalog_explorer")

    listed = client.get("/runs?api=messages").get_data(as_text=True)
    answer = client.get("/api/runs?api=responses").get_json()

    assert run_store.get_run(database, spoken["messages"])["api"] == "messages"
    assert re.findall(r'href="/runs/(\d+)">#', listed) == [str(spoken["messages"])]
    assert 'Policy proxy <span class="muted">· Messages</span>' in listed
    assert "list_bundles, Restricted tool called more than once: 2" in listed
    assert "Value not allowed" not in listed
    assert [run["id"] for run in answer["runs"]] == [spoken["responses"]] and answer["runs"][0]["api"] == "responses"
    assert client.get("/api/runs?api=smoke").status_code == 400
