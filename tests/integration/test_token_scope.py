"""Credentials with the login on: an API token limited to the proxy of named agents (what a client app should hold)
reaches only /proxy/<one of them>/…, and is refused with a 403 in the caller's API shape anywhere else; a response
the Responses API kept is read and continued only with the token that created it. With the login off everything
stays open, as before."""

import anthropic
import openai
import pytest

from store import agents as agent_store
from store import tokens as token_store
from store.db import open_db
from tests.bad_input_support import assert_json_error
from tests.database import Database
from tests.html_reader import page_of
from tests.proxy_support import proxy_client
from tests.support import make_app

USER = {"role": "user", "content": "Hello."}
PASSWORD = "a long admin password"


pytestmark = pytest.mark.both_engines


@pytest.fixture
def locked_app(tmp_path, database_settings):
    app = make_app(tmp_path, **database_settings, ADMIN_PASSWORD=PASSWORD)
    db = open_db(app.config["DATABASE_URL"])
    try:
        for agent_id in ("chat", "other"):
            script = [{"content": "Hi."}, {"content": "Again."}]
            agent_store.save_agent(db, {"id": agent_id, "label": agent_id.title(), "script": script}, known_tools=None)
    finally:
        db.close()
    return app


def new_token(app, name, agents=()):
    db = open_db(app.config["DATABASE_URL"])
    try:
        return token_store.create_token(db, {"name": name, "agents": list(agents)})[1]
    finally:
        db.close()


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def test_a_token_limited_to_an_agent_reaches_its_proxy_and_nothing_else(locked_app):
    token = new_token(locked_app, "chat app", ["chat"])
    client = locked_app.test_client()

    with proxy_client(locked_app, "chat") as sdk:
        allowed = sdk.with_options(api_key=token).chat.completions.create(model="m", messages=[USER])
        models = sdk.with_options(api_key=token).models.list()
        run_id = (
            sdk.with_options(api_key=token)
            .chat.completions.with_raw_response.create(model="m", messages=[USER])
            .headers["X-Toolgate-Run"]
        )
        other = sdk.with_options(api_key=token, base_url=f"{sdk.toolgate_url}/proxy/other/v1")
        with pytest.raises(openai.PermissionDeniedError) as refused:
            other.chat.completions.create(model="m", messages=[USER])
        anthropic_client = anthropic.Anthropic(base_url=f"{sdk.toolgate_url}/proxy/other", api_key=token, max_retries=0)
        with pytest.raises(anthropic.PermissionDeniedError) as refused_messages:
            anthropic_client.messages.create(model="m", max_tokens=50, messages=[USER])

    assert allowed.choices[0].message.content == "Hi."
    assert [model.id for model in models.data] == ["scripted"]
    message = "This API token may only reach the policy proxy of the agent(s) chat (/proxy/<agent>/v1)."
    assert refused.value.status_code == 403
    assert refused.value.body == {"message": message, "type": "invalid_request_error", "param": None,
                                  "code": "permission_denied"}  # fmt: skip
    assert refused_messages.value.body == {"type": "error", "error": {"type": "permission_error", "message": message}}
    for path in ("/api/agents", f"/api/runs/{run_id}", "/api/runs", "/api/agents/chat/runs"):
        body = assert_json_error(client.get(path, headers=bearer(token)), 403, "Authorization")
        assert body["error"] == f"Authorization: {message}"
    written = client.post("/api/agents/chat/runs", json={"message": "Hi"}, headers=bearer(token))
    assert_json_error(written, 403, "Authorization")


def test_a_token_limited_to_several_agents_reaches_each_of_their_proxies(locked_app):
    token = new_token(locked_app, "both", ["chat", "other"])
    with proxy_client(locked_app, "chat") as sdk:
        for agent_id in ("chat", "other"):
            proxied = sdk.with_options(api_key=token, base_url=f"{sdk.toolgate_url}/proxy/{agent_id}/v1")
            assert proxied.chat.completions.create(model="m", messages=[USER]).choices[0].message.content == "Hi."


def test_a_token_for_everything_still_opens_the_api_and_every_proxy(locked_app):
    token = new_token(locked_app, "admin script")
    client = locked_app.test_client()

    assert client.get("/api/agents", headers=bearer(token)).status_code == 200
    with proxy_client(locked_app, "other") as sdk:
        assert sdk.with_options(api_key=token).chat.completions.create(model="m", messages=[USER]).choices


def test_a_kept_response_is_read_and_continued_only_with_the_token_that_created_it(locked_app):
    first_app, second_app = new_token(locked_app, "first app", ["chat"]), new_token(locked_app, "second app", ["chat"])
    admin = new_token(locked_app, "admin")

    with proxy_client(locked_app, "chat") as sdk:
        created = sdk.with_options(api_key=first_app).responses.create(model="m", input="Hello")
        read = sdk.with_options(api_key=first_app).responses.retrieve(created.id)
        continued = sdk.with_options(api_key=first_app).responses.create(
            model="m", input="And?", previous_response_id=created.id
        )
        for other in (second_app, admin):
            with pytest.raises(openai.NotFoundError) as not_read:
                sdk.with_options(api_key=other).responses.retrieve(created.id)
            with pytest.raises(openai.NotFoundError) as not_continued:
                sdk.with_options(api_key=other).responses.create(
                    model="m", input="And?", previous_response_id=created.id
                )
            assert not_read.value.body["message"] == f"Response with id '{created.id}' not found."
            assert not_continued.value.body["code"] == "previous_response_not_found"

    assert read.model_dump() == created.model_dump()
    assert continued.output_text == "Again." and continued.previous_response_id == created.id


def test_a_response_kept_with_the_login_off_stays_open_until_the_login_is_turned_on(app, client):
    client.put("/api/agents/chat", json={"label": "Chat", "script": [{"content": "Hi."}]})
    with proxy_client(app, "chat") as sdk:
        created = sdk.responses.create(model="m", input="Hello")
        assert sdk.responses.retrieve(created.id).id == created.id
        assert sdk.with_options(api_key="another key").responses.retrieve(created.id).id == created.id
        token = new_token(app, "later app")
        app.config["ADMIN_PASSWORD"] = PASSWORD
        with pytest.raises(openai.NotFoundError):  # created by no token: no token reaches it
            sdk.with_options(api_key=token).responses.retrieve(created.id)


def test_the_tokens_page_makes_a_token_limited_to_chosen_agents(client):
    for agent_id in ("chat", "notes"):
        client.put(f"/api/agents/{agent_id}", json={"label": agent_id.title()})
    form = client.get("/tokens").get_data(as_text=True)

    created = client.post("/tokens", data={"name": "Chat app", "agents": ["chat"]})
    refused = client.post("/tokens", data={"name": "Ghost app", "agents": ["chat", "ghost"]})

    assert (
        '<option value="chat">Chat (chat)</option>' in form and '<option value="notes">Notes (notes)</option>' in form
    )
    assert created.status_code == 201
    listing = client.get("/tokens").get_data(as_text=True)
    assert "<td>Chat app</td>" in listing and "<td>only the proxy of <code>chat</code></td>" in listing
    assert refused.status_code == 400
    assert page_of(refused).errors("agents") == ["Only the proxy of names no agent with the id ghost."]
    assert "Ghost app" not in client.get("/tokens").get_data(as_text=True)


@pytest.mark.parametrize("revoked_by", ["tokens_page", "sql"])
def test_a_token_revoked_between_two_proxied_requests_is_refused_at_the_second(locked_app, revoked_by):
    """A process keeps the tokens it checked under the settings' generation: a token revoked (as the Tokens page
    revokes it), or deleted by SQL from another process or replica, changes it, and the next request is refused."""
    token = new_token(locked_app, "chat app", ["chat"])
    client = locked_app.test_client()
    body = {"model": "m", "messages": [USER]}
    first = client.post("/proxy/chat/v1/chat/completions", json=body, headers=bearer(token))
    database = Database(locked_app.config["DATABASE_URL"])
    try:
        token_id = database.execute("SELECT id FROM api_tokens WHERE name = 'chat app'").scalar()
        if revoked_by == "tokens_page":
            token_store.revoke_token(database, token_id)
        else:
            database.execute("DELETE FROM api_tokens WHERE id = :id", {"id": token_id})
    finally:
        database.close()
    second = client.post("/proxy/chat/v1/chat/completions", json=body, headers=bearer(token))

    assert first.status_code == 200 and first.json["choices"][0]["message"]["content"] == "Hi."
    assert second.status_code == 401
    assert (
        second.json["error"]["message"] == "The policy proxy needs an API token as the API key (see the Tokens page)."
    )


def _from_elsewhere(app, statement, parameters):
    """SQL another process or replica runs: this one hears of it only through the settings' generation."""
    database = Database(app.config["DATABASE_URL"])
    try:
        database.execute(statement, parameters)
    finally:
        database.close()


def test_a_token_revoked_elsewhere_is_refused_as_such_before_what_else_is_wrong_with_its_request(locked_app):
    """A request the proxy answers goes on under the settings' generation its process saw last, which its look-up
    confirms; refused before that look-up (here a body that is not an object), its token is checked again first."""
    token = new_token(locked_app, "chat app", ["chat"])
    client = locked_app.test_client()
    chat = "/proxy/chat/v1/chat/completions"
    first = client.post(chat, json={"model": "m", "messages": [USER]}, headers=bearer(token))
    before_revoking = client.post(chat, json=["not", "an", "object"], headers=bearer(token))
    _from_elsewhere(locked_app, "DELETE FROM api_tokens WHERE name = :name", {"name": "chat app"})
    after_revoking = client.post(chat, json=["not", "an", "object"], headers=bearer(token))

    assert first.status_code == 200
    assert (before_revoking.status_code, before_revoking.json["error"]["message"]) == (
        400,
        "The body must be a JSON object.",
    )
    assert (after_revoking.status_code, after_revoking.json["error"]["code"]) == (401, "invalid_api_key")
    assert after_revoking.headers["WWW-Authenticate"] == 'Bearer realm="Toolgate policy proxy"'
    assert after_revoking.headers["X-Content-Type-Options"] == "nosniff"  # the app's headers on the refusal it sends


def test_a_token_widened_elsewhere_reaches_the_new_agent_at_the_next_request(locked_app):
    """Refused under the generation its process saw last, a token is checked again under the current one."""
    token = new_token(locked_app, "chat app", ["chat"])
    client = locked_app.test_client()
    body = {"model": "m", "messages": [USER]}
    assert client.post("/proxy/chat/v1/chat/completions", json=body, headers=bearer(token)).status_code == 200
    refused = client.post("/proxy/other/v1/chat/completions", json=body, headers=bearer(token))
    _from_elsewhere(
        locked_app, "UPDATE api_tokens SET agents = :agents WHERE name = 'chat app'", {"agents": '["chat", "other"]'}
    )
    allowed = client.post("/proxy/other/v1/chat/completions", json=body, headers=bearer(token))

    assert refused.status_code == 403
    assert (allowed.status_code, allowed.json["choices"][0]["message"]["content"]) == (200, "Hi.")
