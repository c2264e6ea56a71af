"""What one proxied request asks the database, on either engine, once its agent's settings (and, with the login on,
its token) are kept: on PostgreSQL each statement is a round trip (docs/performance.md, "One proxied request on
PostgreSQL"). One look-up — of the runs its conversation continues and of one held for approval, with the settings'
generation that confirms what the request went on under — and its run written by one statement that commits by
itself: no BEGIN, and no COMMIT, which the driver in autocommit never sends."""

import pytest
from sqlalchemy import event

from store import tokens as token_store
from store.db import engine_for, open_db
from tests.support import make_app

pytestmark = pytest.mark.both_engines

CHAT = "/proxy/scripted/v1/chat/completions"
OPENING = [{"role": "user", "content": "Hi"}]
SCRIPTED = {"label": "Scripted", "script": [{"content": "Hello."}, {"content": "Hello again."}]}


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
    if "UNION ALL" in statement and "settings_generation" in statement:
        return "look-up of two keys and the generation"
    if words[0] == "SELECT" and "conversation_key" in statement and "settings_generation" in statement:
        return "look-up of one key and the generation"
    if "settings_generation" in statement:
        return "generation"
    return " ".join(words[:3]).replace('"', "")


@pytest.fixture
def scripted(client):
    assert client.put("/api/agents/scripted", json=SCRIPTED).status_code == 201
    assert client.post(CHAT, json={"model": "scripted", "messages": OPENING}).status_code == 200  # settings kept


def test_an_opening_request_reads_once_and_writes_its_run_in_one_statement(app, client, scripted):
    answered, statements = _statements(app, lambda: client.post(CHAT, json={"model": "scripted", "messages": OPENING}))

    assert [_kind(statement) for statement in statements] == [
        "look-up of one key and the generation",
        "INSERT INTO runs",
    ]
    run = client.get(f"/api/runs/{answered.headers['X-Toolgate-Run']}").get_json()
    assert (run["message"], run["stop_reason"], run["source"]) == ("Hi", "answered", "proxy")


def test_a_continuing_request_looks_up_both_its_keys_at_once(app, client, scripted):
    conversation = [*OPENING, {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "And?"}]

    answered, statements = _statements(
        app, lambda: client.post(CHAT, json={"model": "scripted", "messages": conversation})
    )

    assert [_kind(statement) for statement in statements][:1] == ["look-up of two keys and the generation"]
    assert len(statements) == 2 and statements[1].split()[0] in ("INSERT", "UPDATE"), statements
    assert answered.get_json()["choices"][0]["message"]["content"] == "Hello again."


def test_with_the_login_on_the_token_is_checked_without_a_statement_of_its_own(tmp_path, database_settings):
    app = make_app(tmp_path, **database_settings, ADMIN_PASSWORD="a long admin password")
    db = open_db(app.config["DATABASE_URL"])
    try:
        token = token_store.create_token(db, {"name": "chat app", "agents": []})[1]
    finally:
        db.close()
    client = app.test_client()
    headers = {"Authorization": f"Bearer {token}"}
    assert client.put("/api/agents/scripted", json=SCRIPTED, headers=headers).status_code == 201
    body = {"model": "scripted", "messages": OPENING}
    assert client.post(CHAT, json=body, headers=headers).status_code == 200  # the token and the settings kept

    answered, statements = _statements(app, lambda: client.post(CHAT, json=body, headers=headers))

    assert [_kind(statement) for statement in statements] == [
        "look-up of one key and the generation",
        "INSERT INTO runs",
    ]
    assert answered.get_json()["choices"][0]["message"]["content"] == "Hello."
