"""The live run page when its server goes away in the middle of a step, in the browser: the page says the server could
not be reached (no answer at all, or a gateway's 502), stops the clock, offers no Resume while the server is gone,
offers Resume once it answers again, and Resume finishes the run. The app runs in a process of its own under waitress,
as `make run` serves it, and is killed for real."""

import json
from contextlib import contextmanager

import httpx2
import pytest
from playwright.sync_api import expect

from tests.e2e.run_page import fact, round_section, start_run
from tests.e2e.slow_model import API_KEY_VARIABLE, slow_model
from tests.e2e.test_live_runs import ANSWER, SCRIPT, SLOW, answer_region, slow_agent
from tests.live_http import AppProcess, free_port, make_run_server, serving

pytestmark = pytest.mark.e2e

LOST = ", so this page cannot tell how the run goes on. The clock is stopped; checking every few seconds whether the"
BACK = "The server answers again. Resume to follow the run from where this page left it."
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-encoding", "content-length", "host"}


def serve(database, log_name, port=0):
    """The app in a process of its own, served as `make run` serves it, on `port` (0: any): (process, base URL)."""
    arguments = make_run_server(port=port)
    process = AppProcess(arguments, database, database.parent / log_name, TOOLGATE_RUN_LEASE_SECONDS="1")
    return process, process.ready()


class Gateway:
    """A reverse proxy in front of the app, as nginx would be: a request it cannot forward is a 502."""

    def __init__(self):
        self.backend = None

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "") + (f"?{environ['QUERY_STRING']}" if environ.get("QUERY_STRING") else "")
        headers = {
            key[5:].replace("_", "-").lower(): value for key, value in environ.items() if key.startswith("HTTP_")
        }
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = environ["CONTENT_TYPE"]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        headers = {key: value for key, value in headers.items() if key not in HOP_BY_HOP}
        try:
            with httpx2.Client(timeout=30) as client:
                answer = client.request(environ["REQUEST_METHOD"], self.backend + path, headers=headers, content=body)
        except httpx2.HTTPError:
            start_response("502 Bad Gateway", [("Content-Type", "text/plain")])
            return [b"Bad gateway: the app does not answer."]
        kept = [(key, value) for key, value in answer.headers.multi_items() if key.lower() not in HOP_BY_HOP]
        start_response(f"{answer.status_code} {answer.reason_phrase}", kept)
        return [answer.content]


@contextmanager
def run_in_the_middle_of_step_2(page, database, base, monkeypatch):
    """A live run of the slow agent on the page at `base`, its step 2 under way (the model holds its answer)."""
    with slow_model(database, "slow", SCRIPT, delay=0.2, timeout=2, monkeypatch=monkeypatch) as model:
        model.hold(from_request=2)
        agent = {**slow_agent("slow"), "label": "Server lost"}
        response = page.request.put(
            f"{base}/api/agents/lost", data=json.dumps(agent), headers={"Content-Type": "application/json"}
        )
        assert response.status == 201, response.text()
        page.goto(f"{base}/agents/lost/run")
        start_run(page, "Which bundles does content have?")
        expect(round_section(page, 1)).to_be_visible(timeout=SLOW)
        model.wait_for_request(2)
        yield model


def expect_lost_then_back_then_resumed(page, restart, why=""):
    """The page after its server went away: lost (`why`: what it answered), the clock stopped and no Resume;
    `restart()`; Resume offered and the run finished by it."""
    notice = page.get_by_role("alert").filter(has_text="The server could not be reached")
    expect(notice).to_contain_text(f"The server could not be reached{why}{LOST}", timeout=SLOW)
    clock = page.locator(".run-state .elapsed")
    stopped_at = clock.inner_text()
    expect(page.get_by_role("button", name="Resume")).to_have_count(0)
    expect(answer_region(page)).to_contain_text("Not yet")

    restart()

    expect(page.get_by_text(BACK)).to_be_visible(timeout=SLOW)
    expect(clock).to_have_text(stopped_at)  # seconds later, the clock has not moved
    page.get_by_role("button", name="Resume").click()
    expect(answer_region(page)).to_contain_text(ANSWER, timeout=SLOW)
    expect(fact(page, "Stop reason")).to_have_text("Answered")
    expect(round_section(page, 2)).to_contain_text('"article"')
    expect(page.get_by_text(BACK)).to_have_count(0)


def test_a_server_killed_mid_step_is_said_the_clock_stops_and_resume_finishes_the_run_once_it_is_back(
    page, tmp_path, monkeypatch
):
    database = tmp_path / "toolgate.db"
    monkeypatch.setenv(API_KEY_VARIABLE, "not-a-real-key")  # before the app's process starts: it reads it
    port = free_port()
    servers = [serve(database, "first.log", port)[0]]
    try:
        with run_in_the_middle_of_step_2(page, database, f"http://127.0.0.1:{port}", monkeypatch) as model:
            servers[0].process.kill()  # no answer at all to the step in flight
            servers[0].stop()
            model.release()
            expect_lost_then_back_then_resumed(page, lambda: servers.append(serve(database, "again.log", port)[0]))
    finally:
        servers[-1].stop()


def test_a_gateway_s_502_while_the_app_is_down_is_said_too(page, tmp_path, monkeypatch):
    database = tmp_path / "toolgate.db"
    monkeypatch.setenv(API_KEY_VARIABLE, "not-a-real-key")
    gateway = Gateway()
    server, gateway.backend = serve(database, "first.log")
    servers = [server]

    def restart():
        server, gateway.backend = serve(database, "again.log")
        servers.append(server)

    try:
        with serving(gateway) as base, run_in_the_middle_of_step_2(page, database, base, monkeypatch) as model:
            servers[0].process.kill()
            servers[0].stop()
            model.release()
            expect_lost_then_back_then_resumed(page, restart, why=" (it answered 502)")
    finally:
        servers[-1].stop()
