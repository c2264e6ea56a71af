"""The CLI: init-db, load-demo, export-agent, import-agent (the API's validation; a bad file changes nothing). The
policy files' commands, export-agents and apply: test_policy_files.py."""

import json
from pathlib import Path

import pytest

from services.demo import DEMO_AGENTS
from services.policy_format import file_form, read_policy
from store import migrations
from tests.database import Database
from tests.support import make_app


def test_init_db_says_it_created_a_new_database(tmp_path):
    app = make_app(tmp_path)
    result = app.test_cli_runner().invoke(args=["init-db"])
    assert result.exit_code == 0
    database = Database(app.config["DATABASE_URL"])
    steps = migrations.applied_migrations(database)
    database.close()
    assert steps == migrations.every_step()
    assert f"Created the database at {app.config['DATABASE']} ({len(steps)} migration steps: {', '.join(steps)})" in (
        result.output
    )


def test_init_db_reports_an_up_to_date_database(tmp_path):
    app = make_app(tmp_path)
    database = Database(app.config["DATABASE_URL"])
    database.execute("UPDATE schema_history SET applied_at = '2026-01-02 03:04:05.000000+00:00'")
    database.close()
    result = make_app(tmp_path).test_cli_runner().invoke(args=["init-db"])
    assert result.exit_code == 0
    assert "is up to date: no migration step was pending." in result.output


def test_load_demo_loads_the_agents_and_the_sample_documents(runner, client, database):
    result = runner.invoke(args=["load-demo"])
    assert result.exit_code == 0, result.output
    assert "canvas_builder, catalog_explorer, docs_assistant, catalog_page, canvas_reviewed" in result.output
    ids = {agent["id"] for agent in client.get("/api/agents").get_json()["agents"]}
    assert ids == {
        "canvas_builder",
        "catalog_explorer",
        "docs_assistant",
        "catalog_page",
        "canvas_reviewed",
        "browser_canvas",
    }
    assert database["documents"].count >= 2
    assert {"refund-policy", "shipping-times"} <= {row["id"] for row in database["documents"].rows}


def test_load_demo_twice_keeps_what_is_there_unless_replace(runner, client, actions):
    runner.invoke(args=["load-demo"])
    actions.edit("canvas_builder", label="Mine now")
    result = runner.invoke(args=["load-demo"])
    assert result.exit_code == 0 and "Kept as they are: canvas_builder" in result.output
    assert actions.get("canvas_builder")["label"] == "Mine now"
    result = runner.invoke(args=["load-demo", "--replace"])
    assert result.exit_code == 0
    agent = actions.get("canvas_builder")
    assert agent["label"] == DEMO_AGENTS[0]["label"] and agent["revision"] == 3


def test_load_demo_if_empty_fills_an_empty_database_and_leaves_a_used_one_alone(runner, client, actions):
    result = runner.invoke(args=["load-demo", "--if-empty"])
    assert (
        result.exit_code == 0
        and "canvas_builder, catalog_explorer, docs_assistant, catalog_page, canvas_reviewed" in result.output
    )
    client.delete("/api/agents/canvas_builder")

    result = runner.invoke(args=["load-demo", "--if-empty"])

    assert result.exit_code == 0 and "demo not loaded" in result.output
    ids = {agent["id"] for agent in client.get("/api/agents").get_json()["agents"]}
    assert ids == {"catalog_explorer", "docs_assistant", "catalog_page", "canvas_reviewed", "browser_canvas"}


def test_import_of_json_nested_too_deeply_is_refused_and_changes_nothing(runner, client, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)

    result = runner.invoke(args=["import-agent", str(path)])

    assert result.exit_code == 2
    assert "is nested too deeply; nothing was imported." in result.output
    assert client.get("/api/agents").get_json()["agents"] == []


def test_export_prints_the_agent_as_its_policy_file(runner, client):
    runner.invoke(args=["load-demo"])
    result = runner.invoke(args=["export-agent", "canvas_builder"])
    assert result.exit_code == 0, result.output
    agent = client.get("/api/agents/canvas_builder").get_json()
    assert read_policy(result.output.encode())[0] == file_form(agent)


def test_export_of_an_unknown_agent_fails(runner):
    result = runner.invoke(args=["export-agent", "ghost"])
    assert result.exit_code == 2 and 'No agent with id "ghost".' in result.output


def test_import_creates_an_agent(runner, tmp_path, actions):
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({"id": "imported", "label": "Imported", "tools": {"list_bundles": {}}}))
    result = runner.invoke(args=["import-agent", str(path)])
    assert result.exit_code == 0, result.output
    assert 'Imported the agent "imported" (revision 1).' in result.output
    assert actions.get("imported")["tools"]["list_bundles"]["restrict_multiple_calls"] is False


def test_export_then_import_round_trips(runner, tmp_path, actions):
    runner.invoke(args=["load-demo"])
    path = tmp_path / "agent.json"
    path.write_text(runner.invoke(args=["export-agent", "catalog_explorer"]).output)
    assert runner.invoke(args=["import-agent", str(path)]).exit_code == 0
    assert actions.get("catalog_explorer")["revision"] == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON"),
        ("[]", "agent: must be a JSON object"),
        ('{"id": "canvas_builder", "label": "", "max_rounds": 1000}', "label: is required"),
        (
            '{"id": "canvas_builder", "label": "X", "tools": {"nope": {}}}',
            'tools.nope: "nope" is not a registered tool',
        ),
        ('{"id": "canvas_builder", "label": "Stale", "revision": 1}', "Nothing was saved. Use --replace"),
    ],
)
def test_a_bad_file_changes_nothing(runner, tmp_path, client, content, message):
    runner.invoke(args=["load-demo"])
    runner.invoke(args=["import-agent", "-"], input=runner.invoke(args=["export-agent", "canvas_builder"]).output)
    before = client.get("/api/agents").get_json()
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = runner.invoke(args=["import-agent", str(path)])
    assert result.exit_code == 2
    assert message in result.output
    assert client.get("/api/agents").get_json() == before


def test_a_file_that_is_not_utf8_is_refused_with_a_message(runner, tmp_path, client):
    path = tmp_path / "agent.json"
    path.write_bytes(b'\xff\xfe{"id": "latin", "label": "Caf\xe9"}')
    result = runner.invoke(args=["import-agent", str(path)])
    assert result.exit_code == 2
    assert "is not UTF-8 text; nothing was imported" in result.output
    assert client.get("/api/agents/latin").status_code == 404


def test_import_replace_goes_over_any_revision(runner, tmp_path, actions):
    runner.invoke(args=["load-demo"])
    actions.edit("canvas_builder", label="Edited")
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({**DEMO_AGENTS[0], "revision": 1}))
    assert runner.invoke(args=["import-agent", str(path)]).exit_code == 2
    assert runner.invoke(args=["import-agent", "--replace", str(path)]).exit_code == 0
    assert actions.get("canvas_builder")["label"] == DEMO_AGENTS[0]["label"]


def test_import_reads_standard_input(runner, actions):
    result = runner.invoke(args=["import-agent", "-"], input='{"id": "piped", "label": "Piped"}')
    assert result.exit_code == 0, result.output
    assert actions.get("piped")["label"] == "Piped"


def test_make_run_on_a_fresh_machine_says_it_created_the_database(tmp_path):
    """`make run`'s flask commands, each in a process of its own as make runs them, in the Makefile's order."""
    recipe = Path("Makefile").read_text().split("\nrun:", 1)[1].split("\n\n", 1)[0]
    commands = [
        line.split("flask --app app ", 1)[1].split() for line in recipe.splitlines() if "flask --app app " in line
    ]
    outputs = []
    for command in commands:
        arguments = [{"$(HOST)": "127.0.0.1"}.get(argument, argument) for argument in command]
        result = make_app(tmp_path).test_cli_runner().invoke(args=arguments)
        assert result.exit_code == 0, result.output
        outputs.append(result.output)

    assert [command[0] for command in commands] == ["check-host", "init-db", "load-demo"]
    assert outputs[1].startswith("Created the database at ") and "moments ago" in outputs[1]
