"""A run Toolgate drives spends most of a step waiting for its model (or its tools), and holds no database connection
meanwhile, as a proxied request does (test_proxy_connections.py): on PostgreSQL the pool has a cap a process, and runs
holding their connections while their models answer would leave every other request of the process waiting for one,
then answered 503. With the pool capped at POOL connections, more live runs' steps and API runs than that wait on a
held model while a page and a proxied request are answered at once; then every run ends and is stored."""

import re
import time
from concurrent.futures import ThreadPoolExecutor

import httpx2
import pytest

from store.db import engine_for
from tests.html_reader import form_fields, html_of
from tests.live_http import serving
from tests.proxy_support import USER, FakeUpstream, add_upstream, completion
from tests.support import make_app

pytestmark = pytest.mark.both_engines

POOL = 2
POOL_TIMEOUT = 5  # seconds a request waits for a connection before it is answered 503
LIVE, API = 3, 2  # live runs stepped by their pages, runs of the API: together more than the pool's connections
BOUND = 60  # seconds any one step may take before the test fails instead of hanging
HTMX = {"HX-Request": "true"}


@pytest.fixture
def app(tmp_path, database_settings):
    return make_app(tmp_path, **database_settings, DATABASE_POOL_SIZE=POOL, DATABASE_POOL_TIMEOUT=POOL_TIMEOUT)


def start_live(client, agent_id):
    """Press Run with JavaScript: the run is stored, its steps to come one request each."""
    fields = {**form_fields(html_of(client.get(f"/agents/{agent_id}/run"))), "message": "Place a hero.", "live": "1"}
    response = client.post(f"/agents/{agent_id}/run", data=fields, headers=HTMX)
    assert response.status_code == 200, html_of(response)
    return int(re.search(r'<article class="run" id="run-(\d+)"', html_of(response)).group(1))


def _wait_for_requests(model, number, requests):
    """Until `number` requests wait for the model; a request answered meanwhile fails the test at once."""
    deadline = time.monotonic() + BOUND
    while len(model.requests) < number:
        answered = [future.result() for future in requests if future.done()]
        assert not answered, f"answered before the model was: {[answer.status_code for answer in answered]}"
        assert time.monotonic() < deadline, f"{len(model.requests)} of {number} runs reached the model"
        time.sleep(0.05)


def test_runs_waiting_for_their_model_hold_no_connection_and_the_other_requests_are_answered_at_once(app, client):
    held = FakeUpstream(*[(200, completion(content="Placed."))] * (LIVE + API))
    held.hold()
    quick = FakeUpstream((200, completion(content="Quick.")))
    with serving(held) as held_url, serving(quick) as quick_url:
        add_upstream(app, held_url, "held")
        add_upstream(app, quick_url, "quick")
        for agent_id in ("held", "quick"):
            agent = {"label": agent_id.title(), "provider": agent_id, "model": "m"}
            assert client.put(f"/api/agents/{agent_id}", json=agent).status_code == 201
        live_ids = [start_live(client, "held") for _ in range(LIVE)]
        with serving(app) as base_url, ThreadPoolExecutor(LIVE + API) as pool:
            try:
                steps = [
                    pool.submit(
                        httpx2.post, f"{base_url}/runs/{run_id}/step", data={"after": 0}, headers=HTMX, timeout=BOUND
                    )
                    for run_id in live_ids
                ]
                api_runs = [
                    pool.submit(httpx2.post, f"{base_url}/api/agents/held/runs", json={"message": "Hi"}, timeout=BOUND)
                    for _ in range(API)
                ]
                _wait_for_requests(held, LIVE + API, steps + api_runs)
                in_use = engine_for(app.config["DATABASE_URL"]).pool.checkedout()
                started = time.monotonic()
                page = httpx2.get(f"{base_url}/agents", timeout=BOUND)
                body = {"model": "m", "messages": [USER]}
                proxied = httpx2.post(f"{base_url}/proxy/quick/v1/chat/completions", json=body, timeout=BOUND)
                waited = time.monotonic() - started
            finally:
                held.release()
            stepped = [future.result(timeout=BOUND) for future in steps]
            ran = [future.result(timeout=BOUND) for future in api_runs]

    assert in_use == 0, f"{in_use} database connections in use while {LIVE + API} runs waited for their model"
    assert (page.status_code, proxied.status_code) == (200, 200)
    assert proxied.json()["choices"][0]["message"]["content"] == "Quick."
    assert waited < POOL_TIMEOUT, f"a page and a proxied request took {waited:.1f} s while the runs waited"
    assert [response.status_code for response in stepped] == [200] * LIVE
    assert [response.status_code for response in ran] == [201] * API
    runs = [client.get(f"/api/runs/{run_id}").get_json() for run_id in live_ids]
    runs += [client.get(response.headers["Location"]).get_json() for response in ran]
    assert [(run["state"], run["stop_reason"], run["answer"]) for run in runs] == [
        ("finished", "answered", "Placed.")
    ] * (LIVE + API)
