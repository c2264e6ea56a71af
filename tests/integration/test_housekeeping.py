"""`flask backup FILE` (SQLite's online backup, safe while the app writes) and `flask prune-runs --older-than DAYS
[--agent ID]` (runs and their log entries, in one transaction)."""

import sqlite3
import threading
from datetime import UTC, datetime, timedelta

import pytest

from store import runs as run_store
from tests.database import Database
from tests.run_scenarios import BUNDLES_MESSAGE, bundles_agent

pytestmark = pytest.mark.both_engines


@pytest.fixture
def stored_run(client):
    """A run of the bundles agent (restricted tool called twice: one log entry), as save_run takes it."""
    client.put("/api/agents/bundles", json=bundles_agent())
    run = client.post("/api/agents/bundles/runs", json={"message": BUNDLES_MESSAGE}).json
    return {key: value for key, value in run.items() if key not in ("id", "created_at")}


@pytest.mark.sqlite_only
def test_a_backup_taken_while_runs_are_written_is_a_whole_database(runner, database, stored_run, tmp_path, app):
    writing = threading.Event()

    def write_runs():
        writer = Database(app.config["DATABASE_URL"])
        for number in range(150):
            run_store.save_run(writer, stored_run)
            if number == 10:
                writing.set()
        writer.close()

    writer = threading.Thread(target=write_runs)
    writer.start()
    writing.wait(timeout=30)
    result = runner.invoke(args=["backup", str(tmp_path / "copy.db")])
    writer.join(timeout=60)
    assert result.exit_code == 0, result.output
    copy = sqlite3.connect(tmp_path / "copy.db")
    assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert copy.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    runs = copy.execute("SELECT count(*) FROM runs").fetchone()[0]
    assert 12 <= runs <= database["runs"].count == 151
    assert copy.execute("SELECT count(*) FROM log").fetchone()[0] == runs  # each run wrote with its entry
    assert f"1 agent, {runs} runs," in result.output
    assert not (tmp_path / "copy.db.partial").exists()


@pytest.mark.sqlite_only
def test_backup_refuses_to_overwrite_unless_asked(runner, app, tmp_path):
    target = tmp_path / "copy.db"
    target.write_text("keep me")
    result = runner.invoke(args=["backup", str(target)])
    assert result.exit_code == 2 and "exists; nothing was written (use --replace" in result.output
    assert target.read_text() == "keep me"
    assert runner.invoke(args=["backup", str(target), "--replace"]).exit_code == 0
    assert sqlite3.connect(target).execute("SELECT count(*) FROM agents").fetchone() == (0,)


@pytest.mark.sqlite_only
@pytest.mark.parametrize(
    ("target", "message"),
    [("DATABASE", "is the database itself"), ("missing/copy.db", "The folder")],
)
def test_backup_refuses_a_target_it_cannot_write(runner, app, tmp_path, target, message):
    path = app.config["DATABASE"] if target == "DATABASE" else str(tmp_path / target)
    result = runner.invoke(args=["backup", path, "--replace"])
    assert result.exit_code == 2 and message in result.output


def test_backup_on_postgresql_says_to_use_pg_dump_and_writes_nothing(runner, app, tmp_path, engine):
    result = runner.invoke(args=["backup", str(tmp_path / "copy.db")])
    if engine == "sqlite":
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2
    assert "backup copies a SQLite database" in result.output and "pg_dump --format=custom" in result.output
    assert "postgres@127.0.0.1" in result.output and not (tmp_path / "copy.db").exists()


def age(database, run_id, days):
    created_at = (datetime.now(UTC) - timedelta(days=days)).isoformat(timespec="seconds")
    database["runs"].update(run_id, {"created_at": created_at})


def test_prune_deletes_old_runs_and_their_log_entries_only(runner, client, database, stored_run):
    ids = [run_store.save_run(database, {**stored_run, "agent_id": agent})["id"] for agent in ("a", "b", "a", "b")]
    for run_id, days in zip(ids, (40, 40, 10, 0), strict=True):
        age(database, run_id, days)
    client.post("/api/agents/bundles/gate", json={"tool_calls": stored_run["rounds"][0]["assistant"]["tool_calls"]})
    entries = database["log"].count

    result = runner.invoke(args=["prune-runs", "--older-than", "30", "--agent", "a"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith('Deleted 1 run of the agent "a" created before ')
    assert result.output.endswith(", with their 1 log entry.\n")
    assert [run["id"] for run in client.get("/api/runs").json["runs"]] == [ids[3], ids[2], ids[1], 1]

    result = runner.invoke(args=["prune-runs", "--older-than", "5"])
    assert "Deleted 2 runs created before" in result.output and "with their 2 log entries." in result.output
    assert [run["id"] for run in client.get("/api/runs").json["runs"]] == [ids[3], 1]
    assert database["log"].count == entries - 3  # the gate API's entry has no run: it stays
    html = client.get("/runs").get_data(as_text=True)
    assert "2 runs, newest first." in html and '<option value="a">' not in html


def test_prune_with_nothing_old_enough_deletes_nothing(runner, database, stored_run):
    result = runner.invoke(args=["prune-runs", "--older-than", "1"])
    assert result.exit_code == 0 and "Deleted 0 runs created before" in result.output
    assert database["runs"].count == 1


@pytest.mark.parametrize(
    "arguments", [["--older-than", "-1"], ["--older-than", "soon"], [], ["--older-than", "1", "--agent", " "]]
)
def test_prune_refuses_what_is_not_a_number_of_days_or_an_agent(runner, database, stored_run, arguments):
    result = runner.invoke(args=["prune-runs", *arguments])
    assert result.exit_code == 2 and ("--older-than" in result.output or "--agent" in result.output)
    assert database["runs"].count == 1
