"""Wrong passwords slow the next login down: each client (address) may get 5 wrong, then waits
LOGIN_THROTTLE_SECONDS, twice as long after each further failure (429 with Retry-After and a message beside the
password); all clients together may get 50 wrong before everyone waits. The right password is refused too while
the wait lasts, and works after it; it also forgets the client's failures. Attempts sent at once are counted one
after the other: forty at once get no more passwords checked than forty in a row."""

import time

import pytest

from blueprints import login_throttle
from store.login_failures import Failures
from tests.html_reader import page_of
from tests.live_http import all_at_once, browser, serving
from tests.support import make_app

PASSWORD = "correct horse battery staple"
FIRST_WAIT = 0.5
WRONG = "Password is not right."
OWN_WAIT = "Too many wrong passwords from your address. Wait 1 second, then try again."


@pytest.fixture
def locked(tmp_path):
    return make_app(tmp_path, ADMIN_PASSWORD=PASSWORD, LOGIN_THROTTLE_SECONDS=FIRST_WAIT)


def from_address(app, address):
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return client


def attempt(client, password):
    response = client.post("/login", data={"password": password})
    errors = page_of(response).errors("password") if response.status_code != 303 else []
    return response, errors


def test_forty_wrong_passwords_meet_the_throttle_then_the_right_one_works_after_the_wait(locked):
    guesser = from_address(locked, "203.0.113.7")
    answers = [attempt(guesser, f"guess {number}") for number in range(40)]
    assert [errors for _, errors in answers[:5]] == [[WRONG]] * 5
    throttled = [response for response, _ in answers if response.status_code == 429]
    checked = [response for response, _ in answers if response.status_code == 400]
    assert len(throttled) + len(checked) == 40 and len(checked) <= 7  # a slow machine may see a wait run out
    assert answers[5][0].status_code == 429 and answers[5][1] == [OWN_WAIT]
    assert answers[5][0].headers["Retry-After"] == "1"

    refused, errors = attempt(guesser, PASSWORD)  # the right password, before the wait is over
    assert refused.status_code == 429 and errors == [OWN_WAIT]
    assert guesser.get("/agents").status_code == 303
    time.sleep(int(refused.headers["Retry-After"]))
    assert attempt(guesser, PASSWORD)[0].status_code == 303
    assert guesser.get("/agents").status_code == 200


def test_another_address_is_not_slowed_by_one_client_guessing(locked):
    guesser, colleague = from_address(locked, "203.0.113.9"), from_address(locked, "198.51.100.4")
    for number in range(10):
        attempt(guesser, f"guess {number}")
    assert attempt(guesser, PASSWORD)[0].status_code == 429
    assert attempt(colleague, "typo")[1] == [WRONG]
    assert attempt(colleague, PASSWORD)[0].status_code == 303


def test_the_right_password_forgets_the_clients_failures(locked):
    client = from_address(locked, "198.51.100.5")
    for number in range(4):
        attempt(client, f"typo {number}")
    assert attempt(client, PASSWORD)[0].status_code == 303
    client.post("/logout")
    assert [attempt(client, f"typo {number}")[1] for number in range(5)] == [[WRONG]] * 5


def test_many_addresses_guessing_slow_down_everyone(locked):
    for number in range(login_throttle.FREE_OVERALL):
        assert attempt(from_address(locked, f"10.0.{number}.1"), "guess")[1] == [WRONG]
    response, errors = attempt(from_address(locked, "192.0.2.200"), PASSWORD)
    assert response.status_code == 429 and response.headers["Retry-After"] == "1"
    everyone = "Too many wrong passwords were tried lately, so logging in is paused for everyone."
    assert errors == [f"{everyone} Wait 1 second, then try again."]


def test_forty_wrong_passwords_at_once_get_five_checked(tmp_path):
    app = make_app(tmp_path, ADMIN_PASSWORD=PASSWORD, LOGIN_THROTTLE_SECONDS=60)
    with serving(app) as base_url:

        def guess(number):
            with browser(base_url) as client:
                return client.post("/login", data={"password": f"guess {number}"}).status_code

        statuses = all_at_once(guess, range(40), timeout=60)
    assert sorted(statuses) == [400] * 5 + [429] * 35


@pytest.mark.parametrize(
    ("failures", "expected"),
    [
        (Failures(4, 100.0, 4, 100.0), None),
        (Failures(5, 100.0, 5, 100.0), 1.0),
        (Failures(6, 100.0, 6, 100.0), 2.0),
        (Failures(9, 100.0, 9, 100.0), 16.0),
        (Failures(400, 100.0, 400, 100.0), login_throttle.MAX_WAIT_SECONDS),
        (Failures(0, None, 50, 100.0), 1.0),
        (Failures(5, 90.0, 5, 90.0), None),  # the wait is over
    ],
)
def test_the_wait_doubles_with_each_failure_up_to_its_cap(failures, expected):
    wait = login_throttle.wait_rule(1.0)(failures, 100.0)
    assert (wait and wait.seconds) == expected


@pytest.mark.parametrize("seconds", [0, -1, "soon", True, 10**6])
def test_a_wait_that_is_not_a_number_of_seconds_stops_the_start(tmp_path, seconds):
    with pytest.raises(ValueError, match="TOOLGATE_LOGIN_THROTTLE_SECONDS must be a number of seconds above 0"):
        make_app(tmp_path, ADMIN_PASSWORD=PASSWORD, LOGIN_THROTTLE_SECONDS=seconds)


def test_wait_messages_read_in_seconds_then_minutes():
    assert login_throttle.message(login_throttle.Wait(0.2, False)) == OWN_WAIT
    assert "Wait 119 seconds" in login_throttle.message(login_throttle.Wait(118.5, False))
    assert "Wait 15 minutes" in login_throttle.message(login_throttle.Wait(login_throttle.MAX_WAIT_SECONDS, True))
