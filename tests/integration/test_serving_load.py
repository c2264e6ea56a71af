"""The app served as `make run` serves it (a process of its own), under the load a gateway meets: hundreds of proxied
requests waiting on their model at once while a person loads a page, and idle keep-alive connections beyond the
old server's limit of 100 while another client asks. Nothing here is timed: the assertions are on the order in
which things happen (the page answered while every request was still held upstream); bench.gateway measures speed.
"""

import asyncio
import re
import socket
import time

import httpx2
import pytest

from app import create_app
from tests.async_model_server import held_and_running, run_in_a_thread
from tests.database import Database
from tests.live_http import MAKE_RUN, AppProcess
from tests.proxy_support import PLACE, add_held_agent

HELD = 200
IDLE = 110
KEY_VARIABLE = "HELD_UPSTREAM_API_KEY"
BOUND = 60  # seconds any one step may take before the test fails instead of hanging
BODY = {"model": "held-model", "messages": [{"role": "user", "content": "Place a hero."}], "tools": [PLACE]}


@pytest.fixture(scope="module")
def upstream():
    with held_and_running() as model:
        yield model


@pytest.fixture(scope="module")
def served(tmp_path_factory, upstream):
    """(the base URL of the app as `make run` serves it, its database file), with an agent whose provider connection
    is the held upstream."""
    folder = tmp_path_factory.mktemp("served")
    database = str(folder / "toolgate.db")
    create_app({"DATABASE": database, "SECRET_KEY": "serving load"}, instance_path=str(folder))
    add_held_agent(database, upstream.url, KEY_VARIABLE)
    app = AppProcess(MAKE_RUN, database, folder / "server.log", **{KEY_VARIABLE: "sk-held"})
    try:
        yield app.ready(), database
        assert app.process.poll() is None, "the server exited under load"
    finally:
        app.stop()


async def _until(condition, what):
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, f"after {BOUND} s: {what}"
        await asyncio.sleep(0.05)


async def _held_requests_and_a_page(base_url, upstream):
    limits = httpx2.Limits(max_connections=None)
    async with httpx2.AsyncClient(base_url=base_url, limits=limits, timeout=BOUND) as client:
        proxied = [
            asyncio.ensure_future(client.post("/proxy/held/v1/chat/completions", json=BODY)) for _ in range(HELD)
        ]
        await _until(lambda: upstream.arrived >= HELD, f"{upstream.arrived} of {HELD} requests reached the upstream")
        async with httpx2.AsyncClient(base_url=base_url, timeout=BOUND) as person:
            page = await person.get("/agents")
        waiting = sum(not request.done() for request in proxied)
        upstream.release()
        answers = await asyncio.gather(*proxied)
    return page, waiting, answers


def test_hundreds_of_requests_waiting_on_their_model_leave_the_pages_answering(served, upstream):
    base_url, database = served
    page, waiting, answers = run_in_a_thread(_held_requests_and_a_page(base_url, upstream))

    assert page.status_code == 200 and "Held" in page.text
    assert waiting == HELD  # the page was answered while every proxied request was still held upstream
    assert [answer.status_code for answer in answers] == [200] * HELD
    assert {answer.json()["choices"][0]["message"]["tool_calls"][0]["id"] for answer in answers} == {"call_1"}
    # Answered together, recorded together (store.db.write_together): each answer names a run of its own, stored.
    run_ids = {int(answer.headers["X-Toolgate-Run"]) for answer in answers}
    assert len(run_ids) == HELD
    db = Database(database)
    try:
        stored = {row["id"]: row for row in db.query("SELECT id, source, agent_id FROM runs")}
    finally:
        db.close()
    assert {run_id: (stored[run_id]["source"], stored[run_id]["agent_id"]) for run_id in run_ids} == {
        run_id: ("proxy", "held") for run_id in run_ids
    }


def _open_idle(base_url, count):
    """`count` connections that each load a page once, keep-alive, then stay open saying nothing."""
    host, port = base_url.removeprefix("http://").split(":")
    request = f"GET /agents HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    held = []
    for _ in range(count):
        connection = socket.create_connection((host, int(port)), timeout=BOUND)
        connection.sendall(request)
        assert _read_response(connection).startswith(b"HTTP/1.1 200")
        held.append(connection)
    return held


def _read_response(connection):
    """One whole response (its head and the Content-Length bytes of its body), nothing past it."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += connection.recv(65536)
    head, body = received.split(b"\r\n\r\n", 1)
    length = int(re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)[1])
    while len(body) < length:
        body += connection.recv(65536)
    return head


def _still_open(connection):
    """Whether the server has left it open: nothing to read and no end of stream (b"") or reset."""
    connection.setblocking(False)
    try:
        connection.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return True
    except OSError:
        pass
    return False


def test_idle_keep_alive_connections_beyond_a_hundred_do_not_keep_another_client_out(served):
    base_url, _ = served
    idle = _open_idle(base_url, IDLE)
    try:
        with httpx2.Client(base_url=base_url, timeout=BOUND) as other:
            answer = other.get("/agents")
        assert answer.status_code == 200
        open_still = sum(_still_open(connection) for connection in idle)
    finally:
        for connection in idle:
            connection.close()
    assert open_still == IDLE  # answered while every idle connection was still held open
