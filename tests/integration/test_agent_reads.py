"""What reading an agent asks the database, on either engine: every proxied request and most pages read one, and on
PostgreSQL each statement is a round trip (docs/performance.md, "One proxied request on PostgreSQL")."""

import pytest
from sqlalchemy import event

from store.db import engine_for

pytestmark = pytest.mark.both_engines

CHAT = "/proxy/scripted/v1/chat/completions"


def test_a_proxied_request_reads_its_agent_and_the_agents_tools_in_one_statement(app, client):
    agent = {
        "label": "Scripted",
        "script": [{"content": "Hello."}],
        "tools": {"list_bundles": {}, "get_layout": {}},
    }
    assert client.put("/api/agents/scripted", json=agent).status_code == 201
    statements = []

    def listen(_connection, _cursor, statement, _parameters, _context, _executemany):
        statements.append(statement)

    engine = engine_for(app.config["DATABASE_URL"])
    event.listen(engine, "before_cursor_execute", listen)
    try:
        answered = client.post(CHAT, json={"model": "scripted", "messages": [{"role": "user", "content": "Hi"}]})
    finally:
        event.remove(engine, "before_cursor_execute", listen)
    assert answered.status_code == 200
    reads = [statement for statement in statements if "agents" in statement or "agent_tools" in statement]
    assert len(reads) == 1, reads
    assert client.get("/api/agents/scripted").get_json()["tools"].keys() == {"list_bundles", "get_layout"}
