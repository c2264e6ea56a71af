"""Logging in through the login page, in headless Chromium, against a live server of its own with the
administrator password set (the other browser tests run open on 127.0.0.1). The pages work under the
Content-Security-Policy: the browser reports no violation."""

import re
import threading

import pytest
from playwright.sync_api import expect
from werkzeug.serving import make_server

from app import create_app

pytestmark = pytest.mark.e2e

PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="module")
def locked_url(tmp_path_factory):
    instance = tmp_path_factory.mktemp("locked_instance")
    app = create_app(
        {"DATABASE": str(instance / "toolgate.db"), "ADMIN_PASSWORD": PASSWORD}, instance_path=str(instance)
    )
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(timeout=5)


@pytest.fixture
def policy_violations(page):
    """What the browser refused under the Content-Security-Policy, as console messages."""
    violations = []
    page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
    return violations


def expect_login_page(page, next_path):
    """The login page, asked to come back to `next_path` afterwards (its slashes escaped or not)."""
    escaped = re.escape(next_path).replace("/", "(/|%2F)")
    expect(page).to_have_url(re.compile(rf"/login\?next={escaped}$"))


def log_in(page, password):
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()


def test_a_visitor_logs_in_works_and_logs_out(page, locked_url, policy_violations):
    page.goto(f"{locked_url}/runs")
    expect_login_page(page, "/runs")
    expect(page.get_by_role("navigation", name="Main")).to_have_count(0)

    log_in(page, "not the password")
    expect(page.get_by_text("Password is not right.")).to_be_visible()

    log_in(page, PASSWORD)
    expect(page).to_have_url(f"{locked_url}/runs")
    page.get_by_role("link", name="Agents").click()
    page.get_by_role("link", name="New agent").click()
    expect(page).to_have_url(f"{locked_url}/agents/new")
    page.wait_for_load_state()  # htmx (a deferred script) has set up the form: typing now asks for the fragment
    page.get_by_label("Label", exact=True).fill("Behind the login")
    expect(page.get_by_label("Machine name", exact=True)).to_have_value("behind_the_login")  # htmx, under the CSP

    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(re.compile(r"/login$"))
    page.goto(f"{locked_url}/agents")
    expect_login_page(page, "/agents")
    assert policy_violations == []


def test_an_htmx_request_after_the_session_ended_goes_to_the_login_page_and_back(page, locked_url, policy_violations):
    page.goto(f"{locked_url}/login?next=/agents/new")
    log_in(page, PASSWORD)
    expect(page).to_have_url(f"{locked_url}/agents/new")
    page.wait_for_load_state()  # htmx (a deferred script) has set up the form: typing now asks for the fragment

    page.context.clear_cookies()  # the session ends while the form is open
    page.get_by_label("Label", exact=True).fill("Too late")  # the machine-name fragment is asked for: a 401

    expect_login_page(page, "/agents/new")
    log_in(page, PASSWORD)
    expect(page).to_have_url(f"{locked_url}/agents/new")
    assert policy_violations == []
