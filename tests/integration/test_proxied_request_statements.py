"""What one proxied request asks the database, on either engine, once its agent's settings are kept: on PostgreSQL
each statement is a round trip (docs/performance.md, "One proxied request on PostgreSQL"). The settings' generation,
one look-up of the runs its conversation continues and of one held for approval, and its run written by one
statement that commits by itself: no BEGIN, and no COMMIT, which the driver in autocommit never sends."""

import pytest
from sqlalchemy import event

from store.db import engine_for

pytestmark = pytest.mark.both_engines

CHAT = "/proxy/scripted/v1/chat/completions"
OPENING = [{"role": "user", "content": "Hi"}]


def _statements(app, send):
    statements = []

    def listen(_connection, _cursor, statement, *_):
        statements.append(statement)

    engine = engine_for(app.config["DATABASE_URL"])
    event.listen(engine, "before_cursor_execute", listen)
    try:
        answered = send()
    finally:
        event.remove(engine, "before_cursor_execute", listen)
    assert answered.status_code == 200, answered.get_json()
    return answered, statements


def _kind(statement):
    words = statement.split()
    if "settings_generation" in statement:
        return "generation"
    if "UNION ALL" in statement:
        return "look-up of two keys"
    if words[0] == "SELECT" and "conversation_key" in statement:
        return "look-up of one key"
    return " ".join(words[:3]).replace('"', "")


@pytest.fixture
def scripted(client):
    agent = {"label": "Scripted", "script": [{"content": "Hello."}, {"content": "Hello again."}]}
    assert client.put("/api/agents/scripted", json=agent).status_code == 201
    assert client.post(CHAT, json={"model": "scripted", "messages": OPENING}).status_code == 200  # settings kept


def test_an_opening_request_reads_twice_and_writes_its_run_in_one_statement(app, client, scripted):
    answered, statements = _statements(app, lambda: client.post(CHAT, json={"model": "scripted", "messages": OPENING}))

    assert [_kind(statement) for statement in statements] == ["generation", "look-up of one key", "INSERT INTO runs"]
    run = client.get(f"/api/runs/{answered.headers['X-Toolgate-Run']}").get_json()
    assert (run["message"], run["stop_reason"], run["source"]) == ("Hi", "answered", "proxy")


def test_a_continuing_request_looks_up_both_its_keys_at_once(app, client, scripted):
    conversation = [*OPENING, {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "And?"}]

    answered, statements = _statements(
        app, lambda: client.post(CHAT, json={"model": "scripted", "messages": conversation})
    )

    assert [_kind(statement) for statement in statements][:2] == ["generation", "look-up of two keys"]
    assert len(statements) == 3 and statements[2].split()[0] in ("INSERT", "UPDATE"), statements
    assert answered.get_json()["choices"][0]["message"]["content"] == "Hello again."
