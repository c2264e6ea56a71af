"""On PostgreSQL a process opens TOOLGATE_DATABASE_POOL_SIZE connections to its database at most (store/db.py): a
request waits for one to be given back instead of opening one past the cap, which the server would refuse past its
max_connections ("too many clients"), and one that waits longer than TOOLGATE_DATABASE_POOL_TIMEOUT is answered 503
in its caller's shape, never 500. Under `make run` (gunicorn's gevent workers) a request waiting for a connection
lets the others run, so a burst of proxied requests far beyond the cap is answered in full. SQLite keeps no cap."""

import asyncio
import threading
import time

import httpx2
import pytest

from app import create_app
from store.db import engine_for, open_db
from tests.async_model_server import held_and_running, run_in_a_thread
from tests.database import Database
from tests.live_http import MAKE_RUN, AppProcess
from tests.proxy_support import PLACE, USER, add_held_agent
from tests.support import make_app

KEY_VARIABLE = "HELD_UPSTREAM_API_KEY"
BURST = 300
POOL = 2
WORKERS = 2  # `make run`'s
BOUND = 60  # seconds any one step may take before the test fails instead of hanging
BUSY = (
    "The database is busy: every connection this process may open to it (1) stayed in use for 0.2 seconds. "
    "Try again in a moment."
)


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("DATABASE_POOL_SIZE", 0, "TOOLGATE_DATABASE_POOL_SIZE must be a whole number, 1 or more (got 0)."),
        ("DATABASE_POOL_SIZE", 2.5, "TOOLGATE_DATABASE_POOL_SIZE must be a whole number, 1 or more (got 2.5)."),
        ("DATABASE_POOL_SIZE", "ten", "TOOLGATE_DATABASE_POOL_SIZE must be a whole number, 1 or more (got 'ten')."),
        ("DATABASE_POOL_SIZE", True, "TOOLGATE_DATABASE_POOL_SIZE must be a whole number, 1 or more (got True)."),
        ("DATABASE_POOL_TIMEOUT", 0, "TOOLGATE_DATABASE_POOL_TIMEOUT must be a number of seconds above 0 (got 0)."),
        ("DATABASE_POOL_TIMEOUT", "", "TOOLGATE_DATABASE_POOL_TIMEOUT must be a number of seconds above 0 (got '')."),
    ],
)
def test_a_pool_setting_out_of_range_stops_the_start_saying_why(tmp_path, setting, value, message):
    with pytest.raises(ValueError) as refused:
        make_app(tmp_path, **{setting: value})

    assert str(refused.value) == message


def test_sqlite_keeps_opening_connections_past_the_pool_size(tmp_path):
    """A SQLite file has no limit on connections: its pool has no cap, whatever the setting."""
    app = make_app(tmp_path, DATABASE_POOL_SIZE=1, DATABASE_POOL_TIMEOUT=0.2)
    held = [open_db(app.config["DATABASE_URL"]) for _ in range(3)]
    try:
        assert app.test_client().get("/api/agents").status_code == 200
    finally:
        for db in held:
            db.close()


def one_connection_app(tmp_path, postgresql_template, wait):
    """The app on a new PostgreSQL database with a pool of one connection, a request waiting `wait` seconds for it."""
    cluster, template = postgresql_template
    database = cluster.create_database(template=template)
    return make_app(tmp_path, DATABASE_URL=database, DATABASE_POOL_SIZE=1, DATABASE_POOL_TIMEOUT=wait)


@pytest.fixture
def busy_app(tmp_path, postgresql_template):
    """The app on PostgreSQL with a pool of one connection, held by the test: a request waits 0.2 s for it."""
    app = one_connection_app(tmp_path, postgresql_template, wait=0.2)
    held = open_db(app.config["DATABASE_URL"])
    yield app
    held.close()


def test_a_request_that_waits_too_long_for_a_connection_is_answered_503_in_its_callers_shape(busy_app):
    client = busy_app.test_client()
    body = {"model": "m", "messages": [USER]}

    chat = client.post("/proxy/canvas/v1/chat/completions", json=body)
    messages = client.post("/proxy/canvas/v1/messages", json={**body, "max_tokens": 10})
    api = client.get("/api/agents")
    page = client.get("/agents")

    assert [answer.status_code for answer in (chat, messages, api, page)] == [503] * 4
    assert {answer.headers["Retry-After"] for answer in (chat, messages, api, page)} == {"1"}
    assert chat.get_json() == {"error": {"message": BUSY, "type": "server_error", "param": None, "code": None}}
    assert messages.get_json() == {"type": "error", "error": {"type": "api_error", "message": BUSY}}
    assert api.get_json() == {"error": BUSY, "field": None, "errors": {}}
    assert BUSY in page.get_data(as_text=True)


def test_a_request_waiting_for_a_connection_takes_the_one_given_back(tmp_path, postgresql_template):
    app = one_connection_app(tmp_path, postgresql_template, wait=20)
    held = open_db(app.config["DATABASE_URL"])
    started = time.monotonic()  # before the timer starts, so the wait measured is never shorter than its 0.3 s
    threading.Timer(0.3, held.close).start()

    answer = app.test_client().get("/api/agents")

    assert answer.status_code == 200
    assert 0.3 <= time.monotonic() - started < 10


@pytest.fixture(scope="module")
def upstream():
    with held_and_running() as model:
        yield model


@pytest.fixture(scope="module")
def served(postgresql_template, tmp_path_factory, upstream):
    """(the base URL of the app as `make run` serves it on PostgreSQL, with a pool of POOL connections a process, its
    database's URL), with an agent whose provider connection is the held upstream."""
    cluster, template = postgresql_template
    folder = tmp_path_factory.mktemp("pool")
    url = cluster.create_database(template=template)
    create_app({"DATABASE_URL": url, "SECRET_KEY": "pool"}, instance_path=str(folder))
    add_held_agent(url, upstream.url, KEY_VARIABLE)
    engine_for(url).dispose()  # the test's own connections closed: those left are the server's
    environment = {
        KEY_VARIABLE: "sk-held",
        "TOOLGATE_DATABASE_URL": url,
        "TOOLGATE_DATABASE_POOL_SIZE": str(POOL),
        "TOOLGATE_DATABASE_POOL_TIMEOUT": "20",
    }
    app = AppProcess(MAKE_RUN, folder / "unused.db", folder / "server.log", **environment)
    try:
        yield app.ready(), url
        assert app.process.poll() is None, "the server exited under load"
    finally:
        app.stop()


class _ServerConnections:
    """The most connections to the database PostgreSQL counted at once (pg_stat_activity), sampled while the block
    runs, on a connection of the test's own."""

    def __init__(self, url):
        self.url = url
        self.most = 0
        self._stop = threading.Event()

    def _sample(self):
        db = Database(self.url)
        try:
            while not self._stop.is_set():
                count = db.value(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid != pg_backend_pid()"
                )
                self.most = max(self.most, count)
                time.sleep(0.01)
        finally:
            db.close()

    def __enter__(self):
        self._thread = threading.Thread(target=self._sample)
        self._thread.start()
        return self

    def __exit__(self, *_):
        self._stop.set()
        self._thread.join(timeout=BOUND)


async def _burst(base_url, upstream):
    body = {"model": "held-model", "messages": [USER], "tools": [PLACE]}
    limits = httpx2.Limits(max_connections=None)
    async with httpx2.AsyncClient(base_url=base_url, limits=limits, timeout=BOUND) as client:
        proxied = [
            asyncio.ensure_future(client.post("/proxy/held/v1/chat/completions", json=body)) for _ in range(BURST)
        ]
        deadline = time.monotonic() + BOUND
        while upstream.arrived < BURST and not any(request.done() for request in proxied):
            assert time.monotonic() < deadline, f"{upstream.arrived} of {BURST} requests reached the upstream"
            await asyncio.sleep(0.05)
        upstream.release()  # every answer at once: every run recorded at once
        return await asyncio.gather(*proxied)


def test_a_burst_far_beyond_the_pool_is_answered_in_full_on_the_cap_under_make_run(served, upstream):
    """300 proxied requests at once, 2 connections a process: each request's checks and agent read, then every run
    recorded at the same moment, wait for a connection; none is refused, and PostgreSQL never counts more
    connections than the cap of both workers. A wait that held up the worker (a lock gevent had not made its own)
    would stop the requests holding the connections from giving them back: they would be answered 503 after 20 s."""
    base_url, url = served
    with _ServerConnections(url) as connections:
        answers = run_in_a_thread(_burst(base_url, upstream))

    assert [answer.status_code for answer in answers] == [200] * BURST
    run_ids = {int(answer.headers["X-Toolgate-Run"]) for answer in answers}
    db = Database(url)
    try:
        assert db.value("SELECT count(*) FROM runs WHERE agent_id = 'held'") == len(run_ids) == BURST
    finally:
        db.close()
    assert 0 < connections.most <= POOL * WORKERS
