"""Text a model, a tool or a client sends may hold a NUL character, which PostgreSQL refuses in text: it is stored
and read back unchanged on both engines, and so is every other character, the escape PostgreSQL's copy uses
(store/db.py) included."""

import pytest

from store import documents as document_store
from store import runs as run_store
from store.nul_text import NUL_ESCAPE

pytestmark = pytest.mark.both_engines

AWKWARD = [
    "before\x00after",
    "\x00",
    f"{NUL_ESCAPE}0 is not a NUL",
    f"{NUL_ESCAPE}{NUL_ESCAPE}\x00{NUL_ESCAPE}",
    "plain text, é, 日本語, 🙂",
]


@pytest.mark.parametrize("text", AWKWARD)
def test_a_run_with_a_nul_in_its_message_and_answer_reads_back_unchanged(client, database, text):
    client.put("/api/agents/echo", json={"label": "Echo", "script": [{"content": f"Answer: {text}"}]})
    run = client.post("/api/agents/echo/runs", json={"message": text}).json
    stored = run_store.get_run(database, run["id"])
    assert stored["message"] == text and stored["answer"] == f"Answer: {text}"
    assert client.get(f"/api/runs/{run['id']}").json == run
    assert client.get("/api/runs").json["runs"][0]["message"] == text


@pytest.mark.parametrize("text", AWKWARD)
def test_a_document_with_a_nul_reads_back_unchanged_and_is_found(database, text):
    document_store.create_document(database, {"id": "odd", "title": "Odd kettle", "body": text})
    assert document_store.get_document(database, "odd")["body"] == text
    assert [hit["body"] for hit in document_store.DocumentTable(database).search("kettle")] == [text]
