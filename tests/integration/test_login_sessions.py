"""Sessions live on the server: the cookie only names one. Log out ends every copy of that cookie (one taken before,
in another browser or by someone who stole it), a password change ends every session even if the password is later
changed back, and a session unused for the idle time (SESSION_IDLE_MINUTES) ends by itself while one in use goes
on. Another person's session is not touched by one's Log out."""

import time

import pytest

from tests.database import Database
from tests.support import make_app

PASSWORD = "correct horse battery staple"
IDLE_MINUTES = 30

# What a request with an ended session gets: a page is sent to the login page, an htmx fragment gets a 401.
ENDED = [
    ("/agents", {}, 303),
    ("/runs", {}, 303),
    ("/tokens", {}, 303),
    ("/agents/new/machine-name?label=Hi", {"HX-Request": "true"}, 401),
]


@pytest.fixture
def locked(tmp_path):
    return make_app(tmp_path, ADMIN_PASSWORD=PASSWORD, SESSION_IDLE_MINUTES=IDLE_MINUTES)


@pytest.fixture
def database(locked):
    connection = Database(locked.config["DATABASE_URL"])
    yield connection
    connection.close()


def signed_in_client(app):
    client = app.test_client()
    assert client.post("/login", data={"password": PASSWORD}).status_code == 303
    assert client.get("/agents").status_code == 200
    return client


def copy_of(app, client):
    """Another browser holding the same session cookie (copied, or stolen)."""
    copy = app.test_client()
    cookie = client.get_cookie("session")
    copy.set_cookie(cookie.key, cookie.value)
    return copy


def assert_ended(client):
    for path, headers, status in ENDED:
        assert client.get(path, headers=headers).status_code == status, path


def test_a_copy_of_the_cookie_taken_before_log_out_opens_nothing_after_it(locked):
    client = signed_in_client(locked)
    copy = copy_of(locked, client)
    assert copy.get("/agents").status_code == 200
    assert client.post("/logout").status_code == 303
    assert_ended(copy)
    assert_ended(client)
    assert copy.post("/agents/new", data={"label": "After log out"}).headers["Location"].startswith("/login")


def test_log_out_ends_only_that_session(locked):
    leaving, staying = signed_in_client(locked), signed_in_client(locked)
    leaving.post("/logout")
    assert leaving.get("/agents").status_code == 303
    assert staying.get("/agents").status_code == 200


def test_a_password_changed_while_the_app_runs_ends_every_session_even_when_changed_back(locked):
    first, second = signed_in_client(locked), signed_in_client(locked)
    locked.config["ADMIN_PASSWORD"] = "a new passphrase"
    assert first.get("/agents").status_code == 303
    locked.config["ADMIN_PASSWORD"] = PASSWORD
    assert_ended(first)
    assert_ended(second)
    assert signed_in_client(locked).get("/runs").status_code == 200


@pytest.mark.parametrize(
    "meanwhile", [{"ADMIN_PASSWORD": "a new passphrase"}, {"ADMIN_PASSWORD": None}], ids=["new password", "login off"]
)
def test_a_restart_with_another_password_ends_every_session_even_when_changed_back(tmp_path, locked, meanwhile):
    first, second = signed_in_client(locked), signed_in_client(locked)
    make_app(tmp_path, **meanwhile)  # the app restarted with another password, then with the first one again
    restarted = make_app(tmp_path, ADMIN_PASSWORD=PASSWORD, SESSION_IDLE_MINUTES=IDLE_MINUTES)
    assert_ended(copy_of(restarted, first))
    assert_ended(copy_of(restarted, second))
    assert signed_in_client(restarted).get("/runs").status_code == 200


def test_a_restart_with_the_same_password_keeps_the_sessions(tmp_path, locked):
    client = signed_in_client(locked)
    restarted = make_app(tmp_path, ADMIN_PASSWORD=PASSWORD, SESSION_IDLE_MINUTES=IDLE_MINUTES)
    assert copy_of(restarted, client).get("/agents").status_code == 200


def last_used(database, seconds_ago):
    database.execute("UPDATE login_sessions SET last_used_at = :moment", {"moment": time.time() - seconds_ago})


@pytest.mark.parametrize("idle_seconds", [IDLE_MINUTES * 60 + 5, 24 * 3600, 31 * 24 * 3600])
def test_a_session_unused_for_the_idle_time_ends(locked, database, idle_seconds):
    client = signed_in_client(locked)
    last_used(database, idle_seconds)
    assert_ended(client)
    assert database["login_sessions"].count == 0


def test_a_session_in_use_goes_on_past_the_idle_time(locked, database):
    client = signed_in_client(locked)
    for _ in range(3):  # three uses, each within the idle time of the one before: 1.5 idle times in all
        last_used(database, IDLE_MINUTES * 60 / 2)
        assert client.get("/agents").status_code == 200


def test_the_cookie_holds_no_session_the_database_could_give_away(locked, database):
    client = signed_in_client(locked)
    cookie = client.get_cookie("session").value
    (stored,) = database.execute("SELECT id_hash, password_mark FROM login_sessions").fetchall()
    assert stored[0] not in cookie and PASSWORD not in str(stored)


@pytest.mark.parametrize("idle", [0, 0.5, -5, "soon", True, None, 10**9])
def test_an_idle_time_that_is_not_a_number_of_minutes_stops_the_start(tmp_path, idle):
    with pytest.raises(ValueError, match="TOOLGATE_SESSION_IDLE_MINUTES must be a number of minutes from 1 to"):
        make_app(tmp_path, ADMIN_PASSWORD=PASSWORD, SESSION_IDLE_MINUTES=idle)
