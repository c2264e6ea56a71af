"""A stored run reads back exactly as it was answered, however it is stored: `GET /api/runs/<id>` is byte for byte
what the runs API answered before runs were stored with each fact once, and what `POST` answers today.

tests/fixtures/runs-before-0007.json holds ten runs of every kind (a restriction, collateral rejections, retrieved
documents, the canvas, overrides, a reminder and the round cap, return_directly, malformed and unknown calls,
no tools, a provider error) as the code before step 0007 stored them, with the exact text that code answered."""

import json
from pathlib import Path

import pytest
import sqlite_utils

from store import documents as document_store
from store import legacy_migrations, run_format
from store import providers as provider_store
from tests.database import Database
from tests.run_scenarios import DOCUMENTS
from tests.support import make_app

RECORDED = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "runs-before-0007.json").read_text())
RUN_AGENTS = {row["agent_id"]: row for row in RECORDED["runs"]}
# The agent snapshot a run keeps grows with the agent's fields (approval_timeout_seconds and approval_webhook added
# 50 bytes to it).
MAX_STORED_BYTES = 6_250


def stored_bytes(db, run_id):
    """The bytes of every value of a run's row."""
    total = " + ".join(f"coalesce(length(CAST({column} AS BLOB)), 0)" for column in db["runs"].column_names)
    return db.value(f"SELECT {total} FROM runs WHERE id = :id", {"id": run_id})


@pytest.fixture
def upgraded_app(tmp_path):
    """A database holding the recorded runs as the previous code stored them, then the app started on it."""
    old = sqlite_utils.Database(tmp_path / "toolgate.db")
    legacy_migrations.migrations.apply(old, stop_before="0007_store_each_run_fact_once")
    old["runs"].insert_all(RECORDED["runs"])
    old["log"].insert_all(RECORDED["log"])
    old.close()
    return make_app(tmp_path)


def test_runs_stored_by_the_previous_code_read_back_byte_for_byte(upgraded_app):
    client = upgraded_app.test_client()
    for run_id, expected in RECORDED["api"].items():
        assert client.get(f"/api/runs/{run_id}").get_data(as_text=True) == expected, f"run {run_id}"


def test_the_upgrade_shrinks_the_stored_runs(upgraded_app):
    db = Database(upgraded_app.config["DATABASE_URL"])
    before = sum(len(json.dumps(value)) for row in RECORDED["runs"] for value in row.values())
    after = sum(stored_bytes(db, row["id"]) for row in RECORDED["runs"])
    assert after < 0.6 * before


def test_a_three_round_run_of_three_calls_takes_at_most_6_25_kb(client, database):
    agent = {
        key: value for key, value in json.loads(RUN_AGENTS["three"]["agent_snapshot"]).items() if key != "revision"
    }
    client.put("/api/agents/three", json=agent)
    run = client.post("/api/agents/three/runs", json={"message": RUN_AGENTS["three"]["message"]}).json
    assert [len(round_["calls"]) for round_ in run["rounds"]] == [3, 3, 3, 0]
    assert stored_bytes(database, run["id"]) <= MAX_STORED_BYTES


@pytest.mark.parametrize("agent_id", list(RUN_AGENTS))
def test_a_new_run_reads_back_as_the_api_answered_it(app, client, database, agent_id):
    document_store.import_documents(database, DOCUMENTS)
    provider_store.create_provider(
        database, {"id": "remote", "label": "Remote", "base_url": "https://models.invalid/v1", "default_model": "m"}
    )
    app.config["MODEL_ENVIRON"] = {}
    recorded = RUN_AGENTS[agent_id]
    agent = {key: value for key, value in json.loads(recorded["agent_snapshot"]).items() if key != "revision"}
    assert client.put(f"/api/agents/{agent_id}", json=agent).status_code == 201
    body = {"message": recorded["message"], "overrides": json.loads(recorded["overrides"])}
    answered = client.post(f"/api/agents/{agent_id}/runs", json=body)
    assert answered.status_code == 201
    assert client.get(answered.headers["Location"]).data == answered.data


def test_a_run_in_a_shape_the_store_does_not_know_is_kept_as_it_is():
    """What cannot be rebuilt exactly is stored as it came: a tool message that differs from its call's output (as
    artifacts would make it), a round with a field of its own, a count that is not an integer."""
    run = json.loads(RECORDED["api"][str(RUN_AGENTS["three"]["id"])])
    run["messages"][3]["content"] = "{{artifact:list_bundles:1}}"
    run["rounds"][0]["assistant"]["tool_calls"][0]["arguments"] = {"entity_type": "user"}
    run["rounds"][1]["latency_ms"] = 12.5  # the rounds' keys differ: no table of rounds
    run["rounds"][2]["calls"][1]["note"] = "a field of its own"  # nor of this round's calls
    run["rounds"][2]["tools_sent"] = [{"type": "function", "function": {"name": "list_bundles"}}]
    run["rounds"][3]["tools_sent"] = run["rounds"][2]["tools_sent"]
    run["tool_calls"] = 9.0
    run["answer"] = {"text": "not a string"}
    stored = {**run_format.stored_row(run), "id": run["id"], "created_at": run["created_at"]}
    assert json.dumps(run_format.run_from_row(stored)) == json.dumps(run)


def test_step_0007_keeps_writing_its_own_form_while_new_runs_are_written_in_the_latest_and_both_read_back(client):
    agent = {
        key: value for key, value in json.loads(RUN_AGENTS["three"]["agent_snapshot"]).items() if key != "revision"
    }
    client.put("/api/agents/three", json=agent)
    run = client.post("/api/agents/three/runs", json={"message": RUN_AGENTS["three"]["message"]}).json
    run = {key: value for key, value in run.items() if key not in ("id", "created_at")}

    of_0007, latest = run_format.stored_row(run, form=1), run_format.stored_row(run)

    offered = [json.loads(row["result"])["rounds"]["rows"][0][1] for row in (of_0007, latest)]
    assert offered == [["list_bundles", "list_entity_types"], True]
    for row in (of_0007, latest):
        read = run_format.run_from_row({**row, "id": 1, "created_at": "2026-12-03T00:00:00Z"})
        assert {key: value for key, value in read.items() if key not in ("id", "created_at")} == run
