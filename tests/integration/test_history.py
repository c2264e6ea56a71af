"""The history lists page by id: following Older from the newest page shows every matching run once, newest first,
and Newer comes back; the API offers the same by `?before=` / `?after=` and keeps `?page=` for its first pages.
However many runs there are, no page scans or sorts the runs: each filter combination has its index, and the
totals and filter choices come from the counts the database keeps."""

import re

import pytest

from store import log as log_store
from store import runs as run_store
from store.db import write_transaction

pytestmark = pytest.mark.both_engines


AGENTS = ("alpha", "beta")
REASONS = ("answered", "round_cap", "error")
RUNS = 130


@pytest.fixture
def many_runs(client, database):
    """RUNS runs through the store's own insert path, cycling through the agents and the stop reasons."""
    client.put("/api/agents/alpha", json={"label": "Alpha", "script": [{"content": "Hi"}]})
    run = client.post("/api/agents/alpha/runs", json={"message": "Hi"}).json
    run = {key: value for key, value in run.items() if key not in ("id", "created_at")}
    database["runs"].delete_where()
    stored = {}
    for number in range(RUNS):
        agent_id, reason = AGENTS[number % 2], REASONS[number % 3]
        saved = {**run, "agent_id": agent_id, "stop_reason": reason, "message": f"Run {number}"}
        stored[run_store.save_run(database, saved)["id"]] = (agent_id, reason)
    return stored


def ids_on(html):
    return [int(found) for found in re.findall(r'<td><a href="/runs/(\d+)">', html)]


def link(html, rel):
    found = re.search(rf'<a rel="{rel}" href="([^"]+)">', html)
    return found.group(1).replace("&amp;", "&") if found else None


@pytest.mark.parametrize("query", ["", "?agent=beta", "?stop_reason=error", "?agent=alpha&stop_reason=round_cap"])
def test_older_then_newer_walks_every_matching_run_once(client, many_runs, query):
    filters = dict(part.split("=") for part in query.lstrip("?").split("&") if part)
    expected = [
        run_id
        for run_id, (agent_id, reason) in sorted(many_runs.items(), reverse=True)
        if filters.get("agent", agent_id) == agent_id and filters.get("stop_reason", reason) == reason
    ]
    pages, address = [], f"/runs{query}"
    while address:
        html = client.get(address).get_data(as_text=True)
        assert f"{len(expected)} runs, newest first." in html
        pages.append(ids_on(html))
        address = link(html, "next")
    assert [run_id for page in pages for run_id in page] == expected
    assert all(len(page) == run_store.PER_PAGE for page in pages[:-1])
    back, address = [], link(html, "prev")
    while address:
        html = client.get(address).get_data(as_text=True)
        back.append(ids_on(html))
        address = link(html, "prev")
    assert back == pages[-2::-1]


def test_the_api_pages_by_id_and_by_number(client, many_runs):
    first = client.get("/api/runs?agent=alpha").json
    assert (first["total"], first["page"], first["pages"], first["newer"]) == (65, 1, 4, None)
    ids = [run["id"] for run in first["runs"]]
    assert first["older"] == f"/api/runs?agent=alpha&before={ids[-1]}"
    second = client.get(first["older"]).json
    assert second["page"] is None and second["runs"][0]["id"] == ids[-1] - 2
    assert client.get("/api/runs?agent=alpha&page=2").json["runs"] == second["runs"]
    assert client.get(second["newer"]).json["runs"] == first["runs"]
    assert client.get("/api/runs?page=9").json["page"] == 7  # past the last page: the last page


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("before=abc", "before"),
        ("after=0", "after"),
        ("before=99999999999999999999", "before"),
        ("before=5&after=2", "after"),
        ("page=2&before=5", "page"),
        ("page=51", "page"),
        ("page=-1", "page"),
        ("page=²", "page"),
        ("before=²", "before"),
        ("after=" + "9" * 5000, "after"),
    ],
)
def test_a_bad_position_is_a_400_naming_it(client, many_runs, query, field):
    response = client.get(f"/api/runs?{query}")
    assert response.status_code == 400 and response.json["field"] == field
    if field != "page":
        page = client.get(f"/runs?{query}")
        assert page.status_code == 400 and f"{field}: " in page.get_data(as_text=True)
        assert client.get(f"/log?{query}").status_code == 400


def test_the_agent_filter_keeps_a_deleted_agent_that_has_runs(client, many_runs):
    client.delete("/api/agents/alpha")
    html = client.get("/runs").get_data(as_text=True)
    assert '<option value="alpha">alpha</option>' in html and '<option value="beta">beta</option>' in html


def query_plans(database, read):
    """What SQLite does for each statement `read(database)` runs."""
    statements = []
    with database.tracer(lambda sql, parameters: statements.append((sql, parameters or []))):
        read(database)
    return {
        sql: " / ".join(row[3] for row in database.execute(f"EXPLAIN QUERY PLAN {sql}", parameters))
        for sql, parameters in statements
        if sql.lstrip().upper().startswith("SELECT")
    }


FILTERS = [{}, {"agent_id": "beta"}, {"stop_reason": "error"}, {"agent_id": "beta", "stop_reason": "error"}]


@pytest.mark.sqlite_only
@pytest.mark.parametrize("filters", FILTERS)
@pytest.mark.parametrize("position", [{}, {"before": 60}, {"after": 30}])
def test_no_runs_page_scans_or_sorts_the_runs(database, many_runs, filters, position):
    def read(db):
        run_store.list_runs(db, **filters, **position)
        run_store.run_agent_ids(db)

    for sql, plan in query_plans(database, read).items():
        assert "TEMP B-TREE" not in plan, (sql, plan)
        if " FROM runs" in sql and filters:
            assert plan.startswith("SEARCH runs USING"), (sql, plan)
        elif " FROM runs" in sql:
            assert plan in (
                "SCAN runs",
                "SEARCH runs USING INTEGER PRIMARY KEY (rowid<?)",
                "SEARCH runs USING INTEGER PRIMARY KEY (rowid>?)",
            ), (sql, plan)


@pytest.mark.sqlite_only
@pytest.mark.parametrize("filters", [{}, {"agent_id": "a"}, {"level": "error"}, {"agent_id": "a", "level": "error"}])
def test_no_log_page_scans_or_sorts_the_log(database, filters):
    entry = {"level": "error", "kind": "policy_violation", "agent_id": "a", "message": "Entry."}
    with write_transaction(database):
        log_store.add_entries(database, [entry] * 120)

    def read(db):
        log_store.list_entries(db, **filters, before=70)
        log_store.log_agent_ids(db)

    for sql, plan in query_plans(database, read).items():
        assert "TEMP B-TREE" not in plan, (sql, plan)
        if " FROM log " in sql and filters:
            assert plan.startswith("SEARCH log USING"), (sql, plan)
