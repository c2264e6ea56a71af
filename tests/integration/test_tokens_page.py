"""The Tokens page: a named token is created and shown once (only its digest is stored), listed by name with the
first characters of it, and revoked after a confirmation. A bad name is refused beside the field and changes
nothing."""

import re

import pytest

from tests.bad_input_support import database_state
from tests.html_reader import page_of

pytestmark = pytest.mark.both_engines


def create(client, name):
    return client.post("/tokens", data={"name": name})


def secret_in(response):
    return re.search(r'<code class="secret"[^>]*>(tg_[\w-]+)</code>', response.get_data(as_text=True)).group(1)


def test_a_new_token_is_shown_once_and_only_its_digest_is_stored(client, database):
    response = create(client, "CI pipeline")
    assert response.status_code == 201
    secret = secret_in(response)
    assert "it is shown this once" in response.get_data(as_text=True)
    row = next(iter(database["api_tokens"].rows))
    assert row["name"] == "CI pipeline" and secret not in str(row)
    listing = client.get("/tokens").get_data(as_text=True)
    assert secret not in listing
    assert "CI pipeline" in listing and f"<code>{secret[:7]}…</code>" in listing


def test_the_token_opens_the_api_once_the_login_is_on(app, client):
    secret = secret_in(create(client, "Script"))
    app.config["ADMIN_PASSWORD"] = "a long passphrase"
    assert client.get("/api/agents").status_code == 401
    assert client.get("/api/agents", headers={"Authorization": f"Bearer {secret}"}).status_code == 200


def test_revoking_asks_then_the_token_stops_working(app, client, database):
    secret = secret_in(create(client, "Old laptop"))
    token_id = next(iter(database["api_tokens"].rows))["id"]
    confirm = client.get(f"/tokens/{token_id}/revoke").get_data(as_text=True)
    assert "Revoke the token <q>Old laptop</q>?" in confirm
    response = client.post(f"/tokens/{token_id}/revoke")
    assert response.status_code == 303 and response.headers["Location"] == "/tokens"
    assert "Revoked the token" in client.get("/tokens").get_data(as_text=True)
    assert database["api_tokens"].count == 0
    app.config["ADMIN_PASSWORD"] = "a long passphrase"
    assert client.get("/api/agents", headers={"Authorization": f"Bearer {secret}"}).status_code == 401


def test_an_unknown_token_is_a_404(client):
    assert client.get("/tokens/99/revoke").status_code == 404
    assert client.post("/tokens/99/revoke").status_code == 404


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Name is required."),
        ("   ", "Name is required."),
        ("x" * 101, "Name must be at most 100 characters (got 101)."),
        ("Deploy", 'Name is already the name of another token ("Deploy").'),
    ],
)
def test_a_bad_name_is_refused_beside_the_field_and_changes_nothing(client, database, name, message):
    create(client, "Deploy")
    before = database_state(database)
    response = create(client, name)
    assert response.status_code == 400
    assert page_of(response).errors("name") == [message]
    assert 'class="secret"' not in response.get_data(as_text=True)
    assert database_state(database) == before


def test_creating_a_token_needs_the_csrf_token(csrf_app):
    client = csrf_app.test_client()
    assert create(client, "No token").status_code == 400
    assert "No tokens yet." in client.get("/tokens").get_data(as_text=True)
