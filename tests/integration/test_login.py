"""With TOOLGATE_ADMIN_PASSWORD (or a hash of it) set, every page and fragment needs the session: pages redirect to
the login page, htmx requests get a 401 the page turns into that redirect, and the JSON API needs an API token.
The session cookie is HttpOnly, SameSite=Lax, and Secure over HTTPS; logging out ends it. Without a password the
app stays open, as on one's own machine."""

import pytest
from werkzeug.security import generate_password_hash

from app import create_app
from store import tokens as token_store
from tests.bad_input_support import AGENT_ID, database_state, store_agent
from tests.database import Database
from tests.html_reader import page_of
from tests.support import make_app

PASSWORD = "correct horse battery staple"


@pytest.fixture
def locked(tmp_path):
    return make_app(tmp_path, ADMIN_PASSWORD=PASSWORD)


@pytest.fixture
def visitor(locked):
    return locked.test_client()


@pytest.fixture
def locked_database(locked):
    connection = Database(locked.config["DATABASE_URL"])
    yield connection
    connection.close()


def log_in(client, password=PASSWORD, next_url=None):
    path = "/login" if next_url is None else f"/login?next={next_url}"
    return client.post(path, data={"password": password})


@pytest.mark.parametrize(
    "path", ["/", "/agents", "/agents/new", "/runs", "/log", "/documents", "/providers", "/tokens", "/agents/nobody"]
)
def test_every_page_sends_a_visitor_to_the_login_page(visitor, path):
    response = visitor.get(path)
    assert response.status_code == 303
    assert response.headers["Location"].startswith("/login?next=")


def test_a_form_post_without_the_session_changes_nothing(visitor, locked_database):
    before = database_state(locked_database)
    response = visitor.post("/agents/new", data={"label": "Sneaky", "id": "sneaky"})
    assert response.status_code == 303 and response.headers["Location"].startswith("/login")
    assert database_state(locked_database) == before


def test_an_htmx_request_gets_a_401_naming_the_login_page(visitor):
    response = visitor.get("/agents/new/machine-name?label=Hi", headers={"HX-Request": "true"})
    assert response.status_code == 401
    assert response.headers["X-Login-URL"] == "/login"
    assert "log in again" in response.get_data(as_text=True)


def test_the_login_page_works_and_sends_the_visitor_on(visitor):
    page = visitor.get("/login?next=/runs")
    assert page.status_code == 200 and 'type="password"' in page.get_data(as_text=True)
    response = log_in(visitor, next_url="/runs")
    assert response.status_code == 303 and response.headers["Location"] == "/runs"
    assert visitor.get("/runs").status_code == 200
    assert visitor.get("/login").headers["Location"] == "/agents"  # signed in already


@pytest.mark.parametrize("password", ["wrong", "", PASSWORD.upper(), PASSWORD + " "])
def test_a_wrong_password_is_refused_beside_the_field(visitor, password):
    response = log_in(visitor, password)
    assert response.status_code == 400
    assert page_of(response).errors("password") == ["Password is not right."]
    assert visitor.get("/agents").status_code == 303


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/",
        "//evil.example/x",
        "/%5Cevil.example",
        "javascript:x",
        "/%09/evil.example",
        "/x%0d%0aSet-Cookie:%20a=b",
    ],
)
def test_after_login_the_visitor_never_leaves_the_site(visitor, target):
    assert log_in(visitor, next_url=target).headers["Location"] == "/agents"


def test_the_session_cookie_is_httponly_and_samesite_lax_and_secure_over_https(locked):
    plain = log_in(locked.test_client())
    cookie = plain.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    secure = locked.test_client().post("/login", data={"password": PASSWORD}, base_url="https://localhost")
    assert "Secure" in secure.headers["Set-Cookie"]


def test_logging_out_ends_the_session(visitor):
    log_in(visitor)
    assert 'action="/logout"' in visitor.get("/agents").get_data(as_text=True)
    response = visitor.post("/logout")
    assert response.status_code == 303 and response.headers["Location"] == "/login"
    assert visitor.get("/agents").status_code == 303


def test_changing_the_password_ends_every_session(locked):
    client = locked.test_client()
    log_in(client)
    locked.config["ADMIN_PASSWORD"] = "a new passphrase"
    assert client.get("/agents").status_code == 303


def test_a_password_hash_works_instead_of_the_password(tmp_path):
    client = make_app(tmp_path, ADMIN_PASSWORD_HASH=generate_password_hash(PASSWORD)).test_client()
    assert client.get("/agents").status_code == 303
    assert log_in(client, "wrong").status_code == 400
    assert log_in(client).status_code == 303 and client.get("/agents").status_code == 200


@pytest.mark.parametrize("bad_hash", ["not a hash", "scrypt:1:2:3$salt$hash"])
def test_a_hash_no_password_could_match_stops_the_start(tmp_path, bad_hash):
    with pytest.raises(ValueError, match="TOOLGATE_ADMIN_PASSWORD_HASH is not a password hash"):
        make_app(tmp_path, ADMIN_PASSWORD_HASH=bad_hash)


def test_the_password_of_digits_from_the_environment_is_kept_as_text(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLGATE_ADMIN_PASSWORD", "0123456789")
    client = create_app(instance_path=str(tmp_path)).test_client()
    client.application.config["WTF_CSRF_ENABLED"] = False
    assert log_in(client, "0123456789").status_code == 303


def test_the_login_form_needs_its_csrf_token(tmp_path):
    client = make_app(tmp_path, ADMIN_PASSWORD=PASSWORD, WTF_CSRF_ENABLED=True).test_client()
    assert log_in(client).status_code == 400
    assert client.get("/agents").status_code == 303


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/agents"),
        ("get", f"/api/agents/{AGENT_ID}"),
        ("get", "/api/runs"),
        ("delete", f"/api/agents/{AGENT_ID}"),
    ],
)
def test_the_api_needs_a_token(visitor, locked_database, method, path):
    token_store.create_token(locked_database, {"name": "setup"})
    before = database_state(locked_database)
    response = getattr(visitor, method)(path)
    assert response.status_code == 401
    assert response.get_json()["field"] == "Authorization"
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    for header in ("Bearer tg_wrong", "Basic dXNlcjpwYXNz", "Bearer ", "tg_x"):
        assert getattr(visitor, method)(path, headers={"Authorization": header}).status_code == 401
    assert database_state(locked_database) == before


def test_a_session_does_not_open_the_api(visitor):
    log_in(visitor)
    assert visitor.get("/api/agents").status_code == 401


def test_a_token_opens_the_api_until_it_is_revoked(visitor, locked_database):
    token, secret = token_store.create_token(locked_database, {"name": "ci"})
    bearer = {"Authorization": f"Bearer {secret}"}
    assert visitor.put(f"/api/agents/{AGENT_ID}", json={"label": "Via token"}, headers=bearer).status_code == 201
    assert visitor.get(f"/api/agents/{AGENT_ID}", headers=bearer).get_json()["label"] == "Via token"
    token_store.revoke_token(locked_database, token["id"])
    assert visitor.get(f"/api/agents/{AGENT_ID}", headers=bearer).status_code == 401


def test_without_a_password_everything_stays_open(client):
    store_agent(client)
    assert client.get("/agents").status_code == 200
    assert client.get("/api/agents").status_code == 200
    assert client.get("/login").headers["Location"] == "/agents"
    assert 'action="/logout"' not in client.get("/agents").get_data(as_text=True)


def test_static_files_and_the_login_page_need_no_session(visitor):
    for path in ("/static/site.css", "/static/login-redirect.js"):
        with visitor.get(path) as response:  # a static file stays open until its response is closed
            assert response.status_code == 200
    login = visitor.get("/login").get_data(as_text=True)
    assert 'href="/runs"' not in login  # no navigation before logging in
