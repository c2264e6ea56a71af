"""The README's walk-through with examples/mcp_server.py, as a new user does it: the notes server started as its own
process (here with its bearer key on), added on the Tool servers page with the key read from a variable, an agent
whose delete needs approval as its hints propose, and a run whose delete reaches the server only once approved."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.html_reader import form_fields, html_of, text_of
from tests.live_http import free_port
from tests.support import agent_form_data, make_app

ROOT = Path(__file__).resolve().parents[2]
KEY = "notes-key-for-the-walk-through"
START_SECONDS = 20


@pytest.fixture(scope="module")
def notes_url():
    port = free_port()
    environment = {**os.environ, "NOTES_PORT": str(port), "NOTES_API_KEY": KEY}
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "mcp_server.py")],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"The notes server did not start: {process.stdout.read()}") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()


def test_the_readme_walk_through_with_the_notes_server(tmp_path, migrated_database, notes_url):
    app = make_app(tmp_path, database_from=migrated_database, MODEL_ENVIRON={"NOTES_API_KEY": KEY})
    client = app.test_client()

    refused = client.post("/tool-servers/new", data={"label": "Notes", "url": notes_url, "timeout": "30"})
    assert refused.status_code == 400 and "refused the credentials (HTTP 401)" in refused.get_data(as_text=True)

    headers = '{"Authorization": {"env": "NOTES_API_KEY", "prefix": "Bearer "}}'
    added = client.post("/tool-servers/new", data={"label": "Notes", "url": notes_url, "headers": headers})
    assert added.status_code == 303
    page = client.get("/tool-servers/notes").get_data(as_text=True)
    for name in ("notes__list_notes", "notes__read_note", "notes__create_note", "notes__delete_note"):
        assert name in page

    script = [
        {"tool_calls": [{"name": "notes__list_notes", "arguments": {}}]},
        {"tool_calls": [{"name": "notes__delete_note", "arguments": {"note_id": "n1"}}]},
        {"content": "Deleted the groceries note."},
    ]
    agent = {"label": "Note keeper", "script": script}
    agent["tools"] = {"notes__list_notes": {}, "notes__create_note": {}, "notes__delete_note": {}}
    form = agent_form_data(agent)
    accepted = client.post("/agents/new", data={**form, "accept_hints": "notes__delete_note"})
    assert "Filled in the settings proposed for notes__delete_note" in accepted.get_data(as_text=True)
    form |= {"tools-notes__delete_note-require_approval": "y", "from_hint": "notes__delete_note:require_approval"}
    assert client.post("/agents/new", data=form).status_code == 303
    assert "(from the server's hints)" in client.get("/agents/note_keeper").get_data(as_text=True)

    run = client.post("/api/agents/note_keeper/runs", json={"message": "Delete the groceries note."}).get_json()
    listed = run["rounds"][0]["calls"][0]
    assert listed["status"] == "executed" and '"title": "Groceries"' in listed["output"]
    assert run["state"] == "awaiting_approval"
    waiting = run["pending_round"]["calls"][0]["id"]

    decided = client.post(f"/api/runs/{run['id']}/decisions", json={"decisions": {waiting: {"approve": True}}})

    finished = decided.get_json()
    assert finished["rounds"][1]["calls"][0]["output"] == "Deleted n1."
    assert finished["answer"] == "Deleted the groceries note."


def test_accepting_the_notes_servers_proposals_for_create_note_saves_max_identical_calls_1(
    tmp_path, migrated_database, notes_url
):
    app = make_app(tmp_path, database_from=migrated_database, MODEL_ENVIRON={"NOTES_API_KEY": KEY})
    client = app.test_client()
    headers = '{"Authorization": {"env": "NOTES_API_KEY", "prefix": "Bearer "}}'
    added = client.post("/tool-servers/new", data={"label": "Notes", "url": notes_url, "headers": headers})
    assert added.status_code == 303
    form = agent_form_data({"label": "Note taker", "tools": {"notes__create_note": {}}})

    accepted = client.post("/agents/new", data={**form, "accept_hints": "notes__create_note"})

    page = html_of(accepted, 200)
    assert "Filled in the settings proposed for notes__create_note by its server's hints: Max identical calls 1." in (
        text_of(page)
    )
    assert client.post("/agents/new", data=form_fields(page, "agent-form")).status_code == 303
    assert client.get("/api/agents/note_taker").get_json()["tools"]["notes__create_note"]["max_identical_calls"] == 1
