"""A process keeps what its proxied requests read of an agent's settings (services/proxy.py), under the settings'
generation: a number every write to the agents, their tools, the provider connections and the tool servers changes,
by a trigger, whoever writes. So a change made anywhere — the API, or SQL from another process or replica that never
calls this one — is what the very next request uses."""

import httpx2
import pytest

from store import settings_generation
from tests.live_http import serving
from tests.proxy_support import USER, FakeUpstream, add_upstream, completion, streamed_text

pytestmark = pytest.mark.both_engines

SETTINGS_WRITES = {
    "agents": (
        "INSERT INTO agents (id, label, data, revision) VALUES ('other', 'Other', '{}', 1)",
        "UPDATE agents SET label = 'Renamed' WHERE id = 'other'",
        "DELETE FROM agents WHERE id = 'other'",
    ),
    "agent_tools": (
        "INSERT INTO agent_tools (agent_id, tool_name, position, settings) VALUES ('canvas', 'search', 0, '{}')",
        "UPDATE agent_tools SET settings = '{\"max_calls\": 2}' WHERE agent_id = 'canvas'",
        "DELETE FROM agent_tools WHERE agent_id = 'canvas'",
    ),
    "providers": (
        "INSERT INTO providers (id, label, base_url) VALUES ('other', 'Other', 'http://127.0.0.1:9/v1')",
        "UPDATE providers SET label = 'Renamed' WHERE id = 'other'",
        "DELETE FROM providers WHERE id = 'other'",
    ),
    "tool_servers": (
        "INSERT INTO tool_servers (id, label, url, headers, tools, vanished) "
        "VALUES ('other', 'Other', 'http://127.0.0.1:9/mcp', '{}', '[]', '[]')",
        "UPDATE tool_servers SET label = 'Renamed' WHERE id = 'other'",
        "DELETE FROM tool_servers WHERE id = 'other'",
    ),
}


def _put_agent(client, **fields):
    response = client.put("/api/agents/canvas", json={"label": "Canvas", "provider": "upstream", **fields})
    assert response.status_code in (200, 201), response.json


def _ask(client):
    return client.post("/proxy/canvas/v1/chat/completions", json={"model": "client-model", "messages": [USER]})


@pytest.mark.parametrize("table", SETTINGS_WRITES)
def test_every_write_to_a_settings_table_changes_the_generation(client, database, table):
    assert client.put("/api/agents/canvas", json={"label": "Canvas"}).status_code == 201
    for statement in SETTINGS_WRITES[table]:
        before = settings_generation.current(database)
        database.execute(statement)
        assert settings_generation.current(database) > before, statement


def test_recording_runs_leaves_the_generation_as_it_was(app, client, database):
    upstream = FakeUpstream(completion(content="Done."))
    with serving(upstream) as upstream_url:
        add_upstream(app, upstream_url)
        _put_agent(client)
        before = settings_generation.current(database)
        answers = [_ask(client) for _ in range(3)]

    assert [answer.status_code for answer in answers] == [200] * 3
    assert settings_generation.current(database) == before


def test_an_agent_saved_between_two_requests_is_what_the_second_one_uses(app, client):
    upstream = FakeUpstream(completion(content="Done."))
    with serving(upstream) as upstream_url:
        add_upstream(app, upstream_url)
        _put_agent(client, model="model-a")
        first = _ask(client)
        _put_agent(client, model="model-b", revision=1)
        second = _ask(client)

    assert (first.status_code, second.status_code) == (200, 200)
    assert [body["model"] for body in upstream.bodies] == ["model-a", "model-b"]


def test_a_connection_changed_by_sql_from_elsewhere_is_what_the_next_request_reaches(app, client, database):
    first_upstream, second_upstream = FakeUpstream(completion(content="One.")), FakeUpstream(completion(content="Two."))
    with serving(first_upstream) as first_url, serving(second_upstream) as second_url:
        add_upstream(app, first_url)
        _put_agent(client)
        first = _ask(client)
        database.execute("UPDATE providers SET base_url = :url WHERE id = 'upstream'", {"url": f"{second_url}/v1"})
        second = _ask(client)

    assert [answer.json["choices"][0]["message"]["content"] for answer in (first, second)] == ["One.", "Two."]
    assert (len(first_upstream.requests), len(second_upstream.requests)) == (1, 1)


def test_an_agent_deleted_by_sql_from_elsewhere_is_refused_at_the_next_request(app, client, database):
    upstream = FakeUpstream(completion(content="Done."))
    with serving(upstream) as upstream_url:
        add_upstream(app, upstream_url)
        _put_agent(client)
        first = _ask(client)
        database.execute("DELETE FROM agents WHERE id = 'canvas'")
        second = _ask(client)

    assert first.status_code == 200
    assert second.status_code == 404
    assert second.json["error"]["message"] == 'No agent with id "canvas".'
    assert len(upstream.requests) == 1


def _streamed_text(http, messages):
    body = {"model": "m", "messages": messages, "stream": True}
    return streamed_text(http.post("/proxy/canvas/v1/chat/completions", json=body))


def test_an_agent_saved_between_two_streamed_requests_is_what_the_second_one_streams(app, client, database):
    """The second request goes on under the generation its process saw last; its look-up finds the one the save
    made, and it is served again under the new settings before anything is streamed or stored."""
    assert (
        client.put("/api/agents/canvas", json={"label": "Canvas", "script": [{"content": "One."}]}).status_code == 201
    )
    with serving(app) as base_url, httpx2.Client(base_url=base_url, timeout=30) as http:
        first = _streamed_text(http, [USER])
        saved = client.put(
            "/api/agents/canvas", json={"label": "Canvas", "script": [{"content": "Two."}], "revision": 1}
        )
        second = _streamed_text(http, [USER])

    assert saved.status_code == 200
    assert (first, second) == ("One.", "Two.")
    assert database["runs"].count == 2
