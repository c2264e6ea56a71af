"""`flask run-agent ID MESSAGE [--json]` and `flask import-documents FOLDER`."""

import json

import pytest

from store import documents as document_store
from store import runs as run_store
from store.documents import DocumentTable
from tests.run_scenarios import BUNDLES_ANSWER, BUNDLES_MESSAGE, bundles_agent


@pytest.fixture
def bundles(client):
    client.put("/api/agents/bundles", json=bundles_agent())


def test_run_agent_prints_each_round_its_rejections_and_the_answer(runner, bundles, database):
    result = runner.invoke(args=["run-agent", "bundles", BUNDLES_MESSAGE])
    assert result.exit_code == 0, result.output
    output = result.output
    assert "Round 1 — tools offered: list_bundles, list_entity_types" in output
    assert "All 2 call(s) rejected — nothing executed" in output
    assert output.count("[REJECTED] call_1_") == 2
    assert output.count("(Restricted tool called more than once)") == 2
    assert '[EXECUTED] call_2_1 list_bundles {"entity_type": "node"}' in output
    assert f"Answer: {BUNDLES_ANSWER}" in output
    assert "Stop reason: Answered" in output
    assert 'Log (error): The agent "bundles" called the single-call tool(s)' in output
    assert database["runs"].count == 1


def test_run_agent_json_prints_the_run_as_the_api_returns_it(client, runner, bundles):
    result = runner.invoke(args=["run-agent", "bundles", BUNDLES_MESSAGE, "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed == client.get(f"/api/runs/{printed['id']}").json


def test_run_agent_with_overrides(runner, bundles, database):
    overrides = '{"tools": {"list_bundles": {"restrict_multiple_calls": false}}}'
    result = runner.invoke(args=["run-agent", "bundles", "Hi", "--overrides", overrides])
    assert result.exit_code == 0, result.output
    assert "[REJECTED]" not in result.output
    assert run_store.get_run(database, 1)["overrides"] == json.loads(overrides)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run-agent", "nobody", "Hi"], 'No agent with id "nobody"'),
        (["run-agent", "bundles", " "], "message: must be a non-empty string"),
        (["run-agent", "bundles", "Hi", "--overrides", "{"], "--overrides is not valid JSON"),
        (["run-agent", "bundles", "Hi", "--overrides", '{"max_rounds": -1}'], "max_rounds: must be from 0 to 100"),
    ],
)
def test_run_agent_refuses_bad_input_and_stores_nothing(runner, bundles, database, args, message):
    result = runner.invoke(args=args)
    assert result.exit_code != 0
    assert message in result.output
    assert database["runs"].count == 0


def test_run_agent_exits_non_zero_when_the_provider_fails(app, client, runner, database):
    from store import providers as provider_store

    app.config["MODEL_ENVIRON"] = {}
    provider_store.create_provider(
        database, {"id": "remote", "label": "Remote", "base_url": "https://models.invalid/v1", "default_model": "m"}
    )
    client.put("/api/agents/remote_agent", json={"label": "Remote", "provider": "remote"})
    result = runner.invoke(args=["run-agent", "remote_agent", "Hi"])
    assert result.exit_code == 1
    assert "Error: The environment variable" in result.output


def test_import_documents_from_a_folder(runner, database, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "opening-hours.md").write_text("# Opening hours\n\nWe open at nine.\n")
    (folder / "parking.txt").write_text("Parking\nBehind the shop.\n")
    (folder / "notes.pdf").write_text("ignored")
    result = runner.invoke(args=["import-documents", str(folder)])
    assert result.exit_code == 0, result.output
    assert "Imported 2 document(s)" in result.output
    assert document_store.get_document(database, "opening-hours")["title"] == "Opening hours"
    assert [hit["id"] for hit in _search(database, "nine")] == ["opening-hours"]

    (folder / "parking.txt").write_text("Parking\nBicycles only.\n")
    kept = runner.invoke(args=["import-documents", str(folder)])
    assert "kept 2 existing" in kept.output
    replaced = runner.invoke(args=["import-documents", str(folder), "--replace"])
    assert "Imported 2 document(s)" in replaced.output
    assert document_store.get_document(database, "parking")["body"] == "Bicycles only."


def test_import_documents_refuses_a_bad_file_and_imports_nothing(runner, database, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nText.\n")
    (folder / "Bad Name.md").write_text("# Bad\n\nText.\n")
    result = runner.invoke(args=["import-documents", str(folder)])
    assert result.exit_code != 0
    assert "Bad Name" in result.output and "nothing was imported" in result.output
    assert database["documents"].count == 0


def test_import_documents_refuses_a_file_that_is_not_utf8_and_imports_nothing(runner, database, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nText.\n")
    (folder / "latin.txt").write_bytes(b"Caf\xe9 menu\n\nCr\xe8me br\xfbl\xe9e.\n")
    result = runner.invoke(args=["import-documents", str(folder)])
    assert result.exit_code == 2
    assert 'The file "latin.txt" is not UTF-8 text. Nothing was imported.' in result.output
    assert database["documents"].count == 0


def test_import_documents_of_an_empty_folder(runner, tmp_path):
    result = runner.invoke(args=["import-documents", str(tmp_path)])
    assert result.exit_code != 0
    assert "no non-empty .md or .txt file" in result.output


def _search(database, query):
    return DocumentTable(database).search(query)


def test_run_agent_shows_the_first_300_characters_of_a_long_tool_output(client, runner, database):
    document_store.import_documents(database, [{"id": "long", "title": "Long", "body": "Lorem ipsum. " * 60}])
    script = [{"tool_calls": [{"name": "read_document", "arguments": {"doc_id": "long"}}]}, {"content": "Read."}]
    agent = {"label": "Docs", "tools": {"read_document": {}}, "script": script}
    assert client.put("/api/agents/docs", json=agent).status_code == 201

    result = runner.invoke(args=["run-agent", "docs", "Hi"])

    assert result.exit_code == 0, result.output
    [shown] = [line.strip() for line in result.output.splitlines() if line.strip().startswith("→")]
    output = client.get("/api/runs/1").json["rounds"][0]["calls"][0]["output"]
    assert len(" ".join(output.split())) > 300
    assert shown == "→ " + " ".join(output.split())[:299] + "…"
