"""A proxied request spends most of its life waiting for its model, and holds no database connection meanwhile: on
PostgreSQL each connection is a server process, and a thousand requests in flight holding one each would pass any
`max_connections`. Twenty requests are held at the model, streamed and not, while the app's pool says how many of
its connections are in use."""

from concurrent.futures import ThreadPoolExecutor

import httpx2
import pytest

from store.db import engine_for
from tests.live_http import serving
from tests.proxy_support import PLACE, USER, FakeUpstream, add_upstream, completion

pytestmark = pytest.mark.both_engines

HELD = 20
BOUND = 60  # seconds any one step may take before the test fails instead of hanging


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
            in_use = engine_for(url).pool.checkedout()
            upstream.release()
            answers = [future.result(timeout=BOUND) for future in asked]

    assert [answer.status_code for answer in answers] == [200] * HELD
    assert in_use == 0, f"{in_use} database connections in use while {HELD} requests waited for their model"
    runs = client.get("/api/runs?agent_id=held").get_json()["runs"]
    assert len(runs) == HELD
