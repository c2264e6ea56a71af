"""Under load, no write is lost: people and scripts writing at the same moment, through a live server with a thread
per request, and two app processes on one database file. Every request must succeed and every write be stored.
Nothing here is timed: the benchmark measures speed."""

import pytest

from app import create_app
from store import providers as provider_store
from tests.database import Database
from tests.live_http import MAKE_RUN, AppProcess, SlowModel, all_at_once, browser, post_form, post_json, serving
from tests.support import agent_form_data

BURST = 50
RUNS = 20
MODEL_KEY = "SLOW_MODEL_API_KEY"


def live_app(tmp_path, **config):
    settings = {"DATABASE": str(tmp_path / "toolgate.db"), "SECRET_KEY": "concurrency tests", **config}
    return create_app(settings, instance_path=str(tmp_path))


@pytest.fixture
def app(tmp_path):
    return live_app(tmp_path)


@pytest.fixture
def base_url(app):
    with serving(app) as url:
        yield url


def agent_ids(base_url):
    with browser(base_url) as client:
        return {agent["id"] for agent in client.get("/api/agents").json()["agents"]}


def test_fifty_agents_created_through_the_form_at_once_are_all_stored(base_url):
    def create(number):
        with browser(base_url) as client:
            data = agent_form_data({"label": f"Form agent {number}", "id": f"form_agent_{number}"})
            return post_form(client, "/agents/new", data)

    responses = all_at_once(create, range(BURST))
    assert [response.status_code for response in responses] == [303] * BURST
    assert agent_ids(base_url) == {f"form_agent_{number}" for number in range(BURST)}


def test_fifty_agents_put_through_the_api_at_once_are_all_stored(base_url):
    def put(number):
        with browser(base_url) as client:
            return post_json(client, f"/api/agents/api_agent_{number}", {"label": f"API agent {number}"}, "PUT")

    responses = all_at_once(put, range(BURST))
    assert [response.status_code for response in responses] == [201] * BURST
    assert agent_ids(base_url) == {f"api_agent_{number}" for number in range(BURST)}


def test_fifty_documents_created_then_edited_at_once_are_all_stored(app, base_url):
    def create(number):
        with browser(base_url) as client:
            data = {"title": f"Note {number}", "id": f"note-{number}", "body": f"First text of note {number}."}
            return post_form(client, "/documents/new", data)

    def edit(number):
        with browser(base_url) as client:
            data = {"title": f"Note {number}", "body": f"Second text of note {number}."}
            return post_form(client, f"/documents/note-{number}/edit", data)

    assert [response.status_code for response in all_at_once(create, range(BURST))] == [303] * BURST
    assert [response.status_code for response in all_at_once(edit, range(BURST))] == [303] * BURST
    db = Database(app.config["DATABASE_URL"])
    bodies = {row["id"]: row["body"] for row in db["documents"].rows}
    assert bodies == {f"note-{number}": f"Second text of note {number}." for number in range(BURST)}
    # The search index followed every write: each note is found by its own words.
    matches = db.execute("SELECT count(*) FROM documents_fts WHERE documents_fts MATCH 'second'").fetchone()[0]
    assert matches == BURST


SLOW_AGENT_SCRIPT = [
    {"tool_calls": [{"name": "list_entity_types", "arguments": {}}]},
    {"content": "There are four entity types."},
]


def test_twenty_runs_against_a_slow_model_at_once_are_all_stored(tmp_path):
    app = live_app(tmp_path, MODEL_ENVIRON={MODEL_KEY: "not a real key"})
    with serving(SlowModel(SLOW_AGENT_SCRIPT)) as model_url, serving(app) as base_url:
        provider_store.create_provider(
            Database(app.config["DATABASE_URL"]),
            {"id": "slow", "label": "Slow model", "base_url": f"{model_url}/v1", "api_key_env": MODEL_KEY},
        )
        with browser(base_url) as client:
            agent = {"label": "Slow", "provider": "slow", "model": "slow-1", "tools": {"list_entity_types": {}}}
            assert post_json(client, "/api/agents/slow_agent", agent, "PUT").status_code == 201

        def run(number):
            with browser(base_url) as client:
                return post_json(client, "/api/agents/slow_agent/runs", {"message": f"Question {number}"})

        responses = all_at_once(run, range(RUNS))
        assert [response.status_code for response in responses] == [201] * RUNS
        assert {response.json()["stop_reason"] for response in responses} == {"answered"}
        with browser(base_url) as client:
            listed = client.get("/api/runs").json()
            assert listed["total"] == RUNS
            stored = [client.get(f"/api/runs/{response.json()['id']}").json() for response in responses]
    assert sorted(run["message"] for run in stored) == sorted(f"Question {number}" for number in range(RUNS))
    assert all(run["answer"] == "There are four entity types." and run["tool_calls"] == 1 for run in stored)


def test_two_app_processes_on_one_database_file_lose_no_write(tmp_path):
    # Both start on a database file that does not exist yet: both migrate it at once.
    database = tmp_path / "shared.db"
    processes = [AppProcess(MAKE_RUN, database, tmp_path / f"{name}.log") for name in ("first", "second")]
    try:
        urls = [process.ready() for process in processes]

        def write(number):
            url = urls[number % 2]
            with browser(url) as client:
                if number % 3 == 0:
                    data = {"title": f"Shared note {number}", "id": f"shared-{number}", "body": "Written."}
                    return post_form(client, "/documents/new", data)
                return post_json(client, f"/api/agents/shared_{number}", {"label": f"Shared {number}"}, "PUT")

        responses = all_at_once(write, range(60))
        assert [response.status_code for response in responses] == [
            303 if number % 3 == 0 else 201 for number in range(60)
        ]
        for url in urls:
            assert agent_ids(url) == {f"shared_{number}" for number in range(60) if number % 3}
        db = Database(str(database))
        assert {row["id"] for row in db["documents"].rows} == {f"shared-{number}" for number in range(0, 60, 3)}
    finally:
        for process in processes:
            process.stop()
