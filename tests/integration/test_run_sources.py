"""Every run records where it came from (SPEC §8 `source`): the run page, the API, the command line, the policy
proxy; the runs list and /api/runs filter by it, through an index, with the totals the counts table keeps."""

import re

import pytest

from store import runs as run_store
from tests.html_reader import form_fields
from tests.proxy_support import PLACE
from tests.run_scenarios import BUNDLES_MESSAGE, bundles_agent

pytestmark = pytest.mark.both_engines


USER = {"role": "user", "content": "Hello."}
HTMX = {"HX-Request": "true"}


@pytest.fixture
def one_run_per_source(client, runner):
    client.put("/api/agents/bundles", json=bundles_agent())
    client.put("/api/agents/chat", json={"label": "Chat", "script": [{"content": "Hi."}]})
    page = client.post("/agents/bundles/run", data={"message": BUNDLES_MESSAGE, "max_rounds": "10"})
    assert page.status_code == 200
    assert client.post("/api/agents/bundles/runs", json={"message": BUNDLES_MESSAGE}).status_code == 201
    assert runner.invoke(args=["run-agent", "bundles", BUNDLES_MESSAGE]).exit_code == 0
    proxied = client.post("/proxy/chat/v1/chat/completions", json={"model": "m", "messages": [USER], "tools": [PLACE]})
    assert proxied.status_code == 200
    return {"page": 1, "api": 2, "cli": 3, "proxy": 4}


def test_each_path_records_its_source(client, one_run_per_source):
    for source, run_id in one_run_per_source.items():
        assert client.get(f"/api/runs/{run_id}").json["source"] == source
    again = client.post("/runs/1/again")
    assert client.get(again.headers["Location"].replace("/runs/", "/api/runs/")).json["source"] == "page"


def test_a_live_run_records_its_source_from_its_start_to_its_end(client, one_run_per_source):
    fields = {**form_fields(client.get("/agents/bundles/run").get_data(as_text=True)), "live": "1"}
    started = client.post("/agents/bundles/run", data={**fields, "message": BUNDLES_MESSAGE}, headers=HTMX)
    run_id = int(re.search(r'<article class="run" id="run-(\d+)"', started.get_data(as_text=True)).group(1))
    assert client.get(f"/api/runs/{run_id}").json["state"] == "running"
    assert client.get(f"/api/runs/{run_id}").json["source"] == "page"
    for _ in range(10):  # one step per request, as the page asks for them
        run = client.get(f"/api/runs/{run_id}").json
        if run["state"] != "running":
            break
        client.post(f"/runs/{run_id}/step", data={"after": len(run["rounds"])}, headers=HTMX)
    assert run["state"] == "finished" and run["source"] == "page"
    assert run_id in [run["id"] for run in client.get("/api/runs?source=page").json["runs"]]


def test_the_runs_list_and_the_api_filter_by_source(client, one_run_per_source):
    html = client.get("/runs?source=proxy").get_data(as_text=True)
    assert "1 run, newest first." in html and '<a href="/runs/4">#4</a>' in html
    assert '<option value="proxy" selected>Policy proxy</option>' in html
    assert "<td>Command line</td>" in client.get("/runs").get_data(as_text=True)
    listed = client.get("/api/runs?source=cli").json
    assert [run["id"] for run in listed["runs"]] == [3] and listed["total"] == 1
    assert listed["runs"][0]["source"] == "cli"
    assert client.get("/api/runs?agent=bundles&source=proxy").json["total"] == 0


def test_an_unknown_source_is_a_400_on_the_api_and_no_filter_on_the_page(client, one_run_per_source):
    response = client.get("/api/runs?source=robot")
    assert response.status_code == 400 and response.json["field"] == "source"
    assert "4 runs, newest first." in client.get("/runs?source=robot").get_data(as_text=True)


@pytest.mark.sqlite_only
@pytest.mark.parametrize("filters", [{"source": "proxy"}, {"agent_id": "chat", "source": "proxy"}])
def test_a_source_filter_walks_an_index_and_counts_from_the_counts_table(database, one_run_per_source, filters):
    statements = []
    with database.tracer(lambda sql, parameters: statements.append((sql, parameters or []))):
        page = run_store.list_runs(database, **filters, before=10)
    assert [row["id"] for row in page.rows] == [4] and page.total == 1
    for sql, parameters in statements:
        if sql.lstrip().upper().startswith("SELECT") and " FROM runs" in sql:
            plan = " / ".join(row[3] for row in database.execute(f"EXPLAIN QUERY PLAN {sql}", parameters))
            assert plan.startswith("SEARCH runs USING") and "TEMP B-TREE" not in plan, (sql, plan)
