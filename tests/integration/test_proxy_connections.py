"""A proxied request spends most of its life waiting for its model, and holds no database connection meanwhile: on
PostgreSQL each connection is a server process, and a thousand requests in flight holding one each would pass any
`max_connections`. Twenty requests are held at the model, streamed and not, while the database is asked how many
connections the app has open."""

from concurrent.futures import ThreadPoolExecutor

import httpx2
import pytest

from store import select_value
from store.db import engine_for
from tests.database import Database
from tests.live_http import serving
from tests.proxy_support import PLACE, USER, FakeUpstream, add_upstream, completion

pytestmark = pytest.mark.both_engines

HELD = 20
BOUND = 60  # seconds any one step may take before the test fails instead of hanging


def open_connections(url):
    """The connections the app has open to its database: checked out of its pool, and on PostgreSQL every server
    process of the test's database (idle ones kept by the pool included), less the one asking."""
    checked_out = engine_for(url).pool.checkedout()
    if not url.startswith("postgresql"):
        return checked_out
    db = Database(url)
    try:
        server_side = select_value(
            db, "SELECT count(*) - 1 FROM pg_stat_activity WHERE datname = current_database()", {}
        )
    finally:
        db.close()
    return checked_out, server_side


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_requests_waiting_for_their_model_hold_no_database_connection(app, client, stream):
    upstream = FakeUpstream(*[(200, completion(content="Placed."))] * HELD)
    upstream.hold()
    with serving(upstream) as upstream_url:
        add_upstream(app, upstream_url)
        assert client.put("/api/agents/held", json={"label": "Held", "provider": "upstream"}).status_code == 201
        url = app.config["DATABASE_URL"]
        body = {"model": "gpt-x", "messages": [USER], "tools": [PLACE], "stream": stream}
        with serving(app) as base_url, ThreadPoolExecutor(HELD) as pool:
            asked = [
                pool.submit(httpx2.post, f"{base_url}/proxy/held/v1/chat/completions", json=body, timeout=BOUND)
                for _ in range(HELD)
            ]
            upstream.wait_for_request(HELD, timeout=BOUND)
            while_held = open_connections(url)
            upstream.release()
            answers = [future.result(timeout=BOUND) for future in asked]

    assert [answer.status_code for answer in answers] == [200] * HELD
    if url.startswith("postgresql"):
        checked_out, server_side = while_held
        assert checked_out == 0
        assert server_side < HELD // 2, f"{server_side} connections open while {HELD} requests waited"
    else:
        assert while_held == 0
    runs = client.get("/api/runs?agent_id=held").get_json()["runs"]
    assert len(runs) == HELD
