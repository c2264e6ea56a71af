"""The app's connections to PostgreSQL (store/db.py). When PostgreSQL restarts, or ends the app's connections, the
pools reconnect by themselves (README, "Running it for a team"): every request once the database is back succeeds,
though each connection a pool held is dead; a pooled connection is checked at checkout without a round trip
(store.postgresql_driver.hung_up). After a burst, requests one at a time keep to the server process used last."""

import os
import signal
import time

import psycopg
import pytest

from store.db import engine_for
from tests.database import Database
from tests.postgresql import Cluster
from tests.support import make_app

CHAT = "/proxy/scripted/v1/chat/completions"
HELD = 4  # connections the pool holds when the database goes away: more than one request checks out
OTHERS = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"


@pytest.fixture(scope="module")
def cluster():
    """A cluster of the module's own, so that restarting it stops no other test's; one that waits for the disk, as a
    real one does, so that a crash loses no commit."""
    cluster = Cluster(durable=True)
    yield cluster
    cluster.stop()


def _restart(cluster, _url):
    cluster.restart()


def _end_every_connection(_cluster, url):
    """What an administrator, or a pooler failing over, does to the app's connections: the server ends each one."""
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"SELECT pg_terminate_backend(pid) {OTHERS}")
    _wait_until_every_connection_ended(url)


def _crash_one_server_process(_cluster, url):
    """A server process killed (`kill -9`): PostgreSQL ends every other one and recovers before it accepts again."""
    with psycopg.connect(url, autocommit=True) as admin:
        [pid] = admin.execute(f"SELECT pid {OTHERS} LIMIT 1").fetchone()
    os.kill(pid, signal.SIGKILL)
    _wait_until_every_connection_ended(url)


def _wait_until_every_connection_ended(url):
    """Each server process ends once it has told its client; a new connection is refused while PostgreSQL recovers
    from a crash."""
    while True:
        try:
            with psycopg.connect(url, autocommit=True) as admin:
                if not admin.execute(f"SELECT count(*) {OTHERS}").fetchone()[0]:
                    return
        except psycopg.OperationalError:
            pass
        time.sleep(0.02)


@pytest.mark.parametrize(
    "goes_away",
    [_restart, _end_every_connection, _crash_one_server_process],
    ids=["restarted", "connections ended", "a server process crashed"],
)
def test_every_request_succeeds_once_the_database_is_back(tmp_path, cluster, goes_away):
    url = cluster.create_database()
    app = make_app(tmp_path, DATABASE_URL=url)
    client = app.test_client()
    agent = {"label": "Scripted", "script": [{"content": "Hello."}]}
    assert client.put("/api/agents/scripted", json=agent).status_code == 201
    held = [engine_for(url).connect() for _ in range(HELD)]
    for connection in held:
        connection.exec_driver_sql("SELECT 1")
        connection.close()

    goes_away(cluster, url)

    chat = {"model": "scripted", "messages": [{"role": "user", "content": "Hi"}]}
    for _ in range(HELD):
        answered = client.post(CHAT, json=chat)
        assert answered.status_code == 200, answered.get_data(as_text=True)
        assert answered.get_json()["choices"][0]["message"]["content"] == "Hello."
        assert client.get("/agents").status_code == 200
    runs = Database(url)
    try:
        assert runs["runs"].count == HELD
    finally:
        runs.close()


def test_after_a_burst_requests_one_at_a_time_keep_to_the_server_process_used_last(cluster):
    """The pool hands out the connection given back last: one request at a time does not go round every server
    process a burst left idle (bench.gateway, "one at a time")."""
    engine = engine_for(cluster.create_database())
    burst = [engine.connect() for _ in range(HELD)]
    for connection in burst:
        connection.exec_driver_sql("SELECT 1")
        connection.close()
    served_by = set()
    for _ in range(HELD * 2):
        with engine.connect() as connection:
            served_by.add(connection.exec_driver_sql("SELECT pg_backend_pid()").scalar())
    assert len(served_by) == 1
