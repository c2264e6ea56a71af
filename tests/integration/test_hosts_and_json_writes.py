"""Against DNS rebinding and cross-site forms: a request whose Host is not an allowed host name is refused with a
400 before anything reads it (127.0.0.1, localhost and [::1] on any port, plus TOOLGATE_ALLOWED_HOSTS); writes to
the JSON API must be `application/json` (415 otherwise). Nothing changes on a refusal."""

import pytest

from app import create_app
from tests.bad_input_support import AGENT_ID, assert_json_error, database_state, store_agent
from tests.run_scenarios import BUNDLES_MESSAGE
from tests.support import make_app


@pytest.mark.parametrize("host", ["localhost", "localhost:5000", "127.0.0.1:8080", "[::1]:5000", "[::1]", "LOCALHOST"])
def test_this_machines_names_are_served_on_any_port(client, host):
    assert client.get("/api/agents", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:5000", "127.0.0.1.evil.example", "localhost.evil.example", "10.0.0.5", ""]
)
def test_another_host_name_is_refused_on_pages_and_the_api(client, host):
    assert client.get("/agents", headers={"Host": host}).status_code == 400
    response = client.get("/api/agents", headers={"Host": host})
    assert response.status_code == 400 and "TOOLGATE_ALLOWED_HOSTS" in response.get_json()["error"]


def test_a_rebound_page_cannot_write_through_the_api(client, database):
    store_agent(client)
    before = database_state(database)
    evil = {"Host": "attacker.example:5000"}
    assert client.put(f"/api/agents/{AGENT_ID}", json={"label": "Owned"}, headers=evil).status_code == 400
    assert client.post(f"/api/agents/{AGENT_ID}/runs", json={"message": "Hi"}, headers=evil).status_code == 400
    assert client.delete(f"/api/agents/{AGENT_ID}", headers=evil).status_code == 400
    assert database_state(database) == before


def test_allowed_hosts_adds_names_to_the_list(tmp_path):
    client = make_app(tmp_path, ALLOWED_HOSTS="toolgate.example.org, 10.0.0.5 fe80::1").test_client()
    for host in ("toolgate.example.org", "TOOLGATE.example.org:443", "10.0.0.5:5000", "[fe80::1]:80", "localhost"):
        assert client.get("/api/agents", headers={"Host": host}).status_code == 200, host
    assert client.get("/api/agents", headers={"Host": "other.example.org"}).status_code == 400


def test_allowed_hosts_is_read_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLGATE_ALLOWED_HOSTS", "team.example.net")
    client = create_app(instance_path=str(tmp_path)).test_client()
    assert client.get("/api/agents", headers={"Host": "team.example.net"}).status_code == 200
    assert client.get("/api/agents", headers={"Host": "evil.example"}).status_code == 400


@pytest.mark.parametrize(
    ("method", "path", "send"),
    [
        ("put", f"/api/agents/{AGENT_ID}", {"data": {"label": "From a form"}}),
        ("put", f"/api/agents/{AGENT_ID}", {"data": '{"label": "JSON as text"}', "content_type": "text/plain"}),
        ("post", f"/api/agents/{AGENT_ID}/runs", {"data": {"message": BUNDLES_MESSAGE}}),
        ("post", f"/api/agents/{AGENT_ID}/runs", {"data": f'{{"message": "{BUNDLES_MESSAGE}"}}'}),
        ("post", f"/api/agents/{AGENT_ID}/gate", {"data": '{"tool_calls": []}', "content_type": "text/plain"}),
    ],
)
def test_api_writes_that_are_not_json_are_a_415(client, database, method, path, send):
    store_agent(client)
    before = database_state(database)
    response = getattr(client, method)(path, headers={"Origin": "https://elsewhere.example"}, **send)
    body = assert_json_error(response, 415, "body")
    assert "Content-Type: application/json" in body["error"]
    assert database_state(database) == before


def test_a_json_content_type_with_parameters_is_json(client):
    response = client.put(
        "/api/agents/typed", data='{"label": "Typed"}', content_type="application/json; charset=utf-8"
    )
    assert response.status_code == 201


def test_deleting_needs_no_body(client):
    store_agent(client)
    assert client.delete(f"/api/agents/{AGENT_ID}").status_code == 204
