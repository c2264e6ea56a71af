"""`flask copy-database --to postgresql://…`: everything of a SQLite database copied into an empty PostgreSQL
database, which the app then serves as it served the SQLite one; a database that holds rows is refused."""

import pytest

from tests.run_scenarios import BUNDLES_MESSAGE, bundles_agent
from tests.support import make_app


@pytest.fixture
def target(postgresql_template):
    cluster, _ = postgresql_template
    return cluster.create_database()  # empty: copy-database creates the schema


def test_a_sqlite_database_is_copied_whole_and_served_the_same_from_postgresql(app, client, runner, target, tmp_path):
    assert runner.invoke(args=["load-demo"]).exit_code == 0
    client.put("/api/agents/bundles", json=bundles_agent())
    runs = [client.post("/api/agents/bundles/runs", json={"message": f"{BUNDLES_MESSAGE}\x00 {n}"}).json for n in "12"]
    client.post("/api/tokens", json={"name": "ci"})

    result = runner.invoke(args=["copy-database", "--to", target])

    assert result.exit_code == 0, result.output
    assert "runs: 2\n" in result.output and "log: 2\n" in result.output and "agents: 7\n" in result.output
    assert result.output.rstrip().endswith("every count matches.")
    copied = make_app(tmp_path / "replica", DATABASE_URL=target).test_client()
    for path in (
        "/api/agents",
        "/api/runs",
        f"/api/runs/{runs[1]['id']}",
        "/api/runs?agent=bundles&stop_reason=answered",
    ):
        assert copied.get(path).json == client.get(path).json, path
    assert copied.get("/runs").get_data(as_text=True).count("list_bundles") >= 1
    new = copied.post("/api/agents/bundles/runs", json={"message": BUNDLES_MESSAGE}).json
    assert new["id"] > runs[1]["id"]  # the ids go on after the copied ones


def test_a_target_that_holds_rows_is_refused_and_left_as_it_was(app, client, runner, target, tmp_path):
    client.put("/api/agents/bundles", json=bundles_agent())
    replica = make_app(tmp_path / "replica", DATABASE_URL=target).test_client()
    replica.put("/api/agents/other", json={"label": "Other"})

    result = runner.invoke(args=["copy-database", "--to", target])

    assert result.exit_code == 2
    assert "is not empty: agents hold rows. Nothing was copied." in result.output
    assert [agent["id"] for agent in replica.get("/api/agents").json["agents"]] == ["other"]


def test_a_target_that_cannot_be_reached_is_a_clear_error(runner):
    result = runner.invoke(args=["copy-database", "--to", "postgresql://nobody@127.0.0.1:1/none"])
    assert result.exit_code == 2 and "could not be reached" in result.output
    result = runner.invoke(args=["copy-database", "--to", "toolgate.db"])
    assert result.exit_code == 2 and "--to takes a database URL" in result.output
