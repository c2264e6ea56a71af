"""Who may use the policy proxy: with the login on, an OpenAI client's API key must be an API token (a 401 in
OpenAI's shape otherwise); on 127.0.0.1 without it, any key; a Host that is not ours is refused like elsewhere."""

import openai
import pytest

from store import agents as agent_store
from store import tokens as token_store
from tests.database import Database
from tests.proxy_support import proxy_client
from tests.support import make_app

USER = {"role": "user", "content": "Hello."}


@pytest.fixture
def locked_app(tmp_path):
    return make_app(tmp_path, ADMIN_PASSWORD="a long admin password")


def put_chat_agent(app):
    db = Database(app.config["DATABASE_URL"])
    try:
        agent_store.save_agent(db, {"id": "chat", "label": "Chat", "script": [{"content": "Hi."}]}, known_tools=None)
    finally:
        db.close()


def new_token(app):
    db = Database(app.config["DATABASE_URL"])
    try:
        return token_store.create_token(db, {"name": "canvas app"})[1]
    finally:
        db.close()


def test_with_the_login_on_an_api_token_is_the_key(locked_app):
    put_chat_agent(locked_app)
    token = new_token(locked_app)
    with proxy_client(locked_app, "chat") as sdk:
        allowed = sdk.with_options(api_key=token).chat.completions.create(model="m", messages=[USER])
        with pytest.raises(openai.AuthenticationError) as refused:
            sdk.with_options(api_key="tg_not-a-token").chat.completions.create(model="m", messages=[USER])
        with pytest.raises(openai.AuthenticationError):
            sdk.models.list()

    assert allowed.choices[0].message.content == "Hi."
    assert refused.value.status_code == 401
    assert refused.value.body["code"] == "invalid_api_key" and "API token" in refused.value.body["message"]
    assert refused.value.response.headers["WWW-Authenticate"].startswith("Bearer")


def test_a_request_for_another_host_is_refused_in_openais_shape(client):
    response = client.post(
        "/proxy/chat/v1/chat/completions", json={"model": "m", "messages": [USER]}, headers={"Host": "evil.example"}
    )
    assert response.status_code == 400 and "TOOLGATE_ALLOWED_HOSTS" in response.json["error"]["message"]


# What Claude Code 2.1.197 sends before it starts (captured, tests/fixtures/clients/README.md): a HEAD to its base URL,
# without its key; earlier releases probed api/hello under it too.
PROBE_HEADERS = {"User-Agent": "Bun/1.4.0", "Accept": "*/*", "Accept-Encoding": "gzip, deflate, br, zstd"}


@pytest.mark.parametrize("path", ["/proxy/chat", "/proxy/chat/", "/proxy/chat/api/hello"])
def test_a_clients_head_probe_of_the_proxys_base_is_answered_as_an_api_server_and_not_logged(app, client, path):
    put_chat_agent(app)
    probe = client.head(path, headers=PROBE_HEADERS)
    refused = client.get(path)  # what no client sends, refused and logged, so the log below is the one that would say
    assert (probe.status_code, probe.get_data()) == (200, b"")
    assert refused.status_code in (404, 405)
    log = client.get("/log?agent=chat").get_data(as_text=True)
    assert log.count(">Proxy request refused</a>") == 1
    assert f"GET {path} was refused" in log and f"HEAD {path}" not in log


def test_with_the_login_on_a_head_probe_needs_no_key(locked_app):
    put_chat_agent(locked_app)
    for path in ("/proxy/chat", "/proxy/chat/api/hello"):
        assert locked_app.test_client().head(path, headers=PROBE_HEADERS).status_code == 200
