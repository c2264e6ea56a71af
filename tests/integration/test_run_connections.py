"""A run Toolgate drives spends most of a step waiting for its model (or its tools), and holds no database connection
meanwhile, as a proxied request does (test_proxy_connections.py): on PostgreSQL the pool has a cap a process, and runs
holding their connections while their models answer would leave every other request of the process waiting for one,
then answered 503. With the pool capped at POOL connections, more runs than that wait on a held model — live runs'
steps, API runs, decisions whose run goes on — while a page and a proxied request are answered at once; then every
run ends and is stored."""

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
LIVE, API, DECIDED = 3, 2, 3  # each more runs than the pool has connections, with the others of its test
BOUND = 60  # seconds any one step may take before the test fails instead of hanging
HTMX = {"HX-Request": "true"}
ANSWER = "Placed."


@pytest.fixture
def app(tmp_path, database_settings):
    return make_app(tmp_path, **database_settings, DATABASE_POOL_SIZE=POOL, DATABASE_POOL_TIMEOUT=POOL_TIMEOUT)


@pytest.fixture
def quick(app, client):
    """The agent "quick", whose proxied requests its model answers at once."""
    model = FakeUpstream((200, completion(content="Quick.")))
    with serving(model) as url:
        add_upstream(app, url, "quick")
        assert (
            client.put("/api/agents/quick", json={"label": "Quick", "provider": "quick", "model": "m"}).status_code
            == 201
        )
        yield


def add_held_agent(app, client, url, **agent):
    add_upstream(app, url, "held")
    agent = {"label": "Held", "provider": "held", "model": "m", **agent}
    assert client.put("/api/agents/held", json=agent).status_code == 201


def start_live(client, agent_id):
    """Press Run with JavaScript: the run is stored, its steps to come one request each."""
    fields = {**form_fields(html_of(client.get(f"/agents/{agent_id}/run"))), "message": "Place a hero.", "live": "1"}
    response = client.post(f"/agents/{agent_id}/run", data=fields, headers=HTMX)
    assert response.status_code == 200, html_of(response)
    return int(re.search(r'<article class="run" id="run-(\d+)"', html_of(response)).group(1))


def answered_while_held(app, held, number, send):
    """Send the requests `send(base_url, pool)` lists to the app served on 127.0.0.1, wait until `number` requests
    wait at the `held` model, then ask for a page and a proxied request to "quick"; the held model let go. (the
    connections of the pool in use while the requests waited, the page's status, the proxied request's answer,
    how long those two took, the held requests' answers.) A held request answered before its model fails the test
    at once."""
    with serving(app) as base_url, ThreadPoolExecutor(number) as pool:
        try:
            sent = send(base_url, pool)
            deadline = time.monotonic() + BOUND
            while len(held.requests) < number:
                answered = [future.result() for future in sent if future.done()]
                assert not answered, f"answered before the model was: {[answer.status_code for answer in answered]}"
                assert time.monotonic() < deadline, f"{len(held.requests)} of {number} runs reached the model"
                time.sleep(0.05)
            in_use = engine_for(app.config["DATABASE_URL"]).pool.checkedout()
            started = time.monotonic()
            page = httpx2.get(f"{base_url}/agents", timeout=BOUND)
            body = {"model": "m", "messages": [USER]}
            proxied = httpx2.post(f"{base_url}/proxy/quick/v1/chat/completions", json=body, timeout=BOUND)
            waited = time.monotonic() - started
        finally:
            held.release()
        return in_use, page.status_code, proxied, waited, [future.result(timeout=BOUND) for future in sent]


def assert_answered_at_once(in_use, page_status, proxied, waited, number):
    assert in_use == 0, f"{in_use} database connections in use while {number} runs waited for their model"
    assert (page_status, proxied.status_code) == (200, 200)
    assert proxied.json()["choices"][0]["message"]["content"] == "Quick."
    assert waited < POOL_TIMEOUT, f"a page and a proxied request took {waited:.1f} s while the runs waited"


def test_live_steps_and_api_runs_waiting_for_their_model_hold_no_connection(app, client, quick):
    held = FakeUpstream(*[(200, completion(content=ANSWER))] * (LIVE + API))
    held.hold()
    with serving(held) as held_url:
        add_held_agent(app, client, held_url)
        live_ids = [start_live(client, "held") for _ in range(LIVE)]

        def send(base_url, pool):
            steps = [
                pool.submit(
                    httpx2.post, f"{base_url}/runs/{run_id}/step", data={"after": 0}, headers=HTMX, timeout=BOUND
                )
                for run_id in live_ids
            ]
            runs = [
                pool.submit(httpx2.post, f"{base_url}/api/agents/held/runs", json={"message": "Hi"}, timeout=BOUND)
                for _ in range(API)
            ]
            return steps + runs

        *at_once, answers = answered_while_held(app, held, LIVE + API, send)

    assert_answered_at_once(*at_once, LIVE + API)
    assert [answer.status_code for answer in answers] == [200] * LIVE + [201] * API
    runs = [client.get(f"/api/runs/{run_id}").get_json() for run_id in live_ids]
    runs += [answer.json() for answer in answers[LIVE:]]
    assert [(run["state"], run["stop_reason"], run["answer"]) for run in runs] == [("finished", "answered", ANSWER)] * (
        LIVE + API
    )


def test_decisions_whose_run_goes_on_to_its_model_hold_no_connection_while_it_answers(app, client, quick):
    """The decided round's tools run, then the run asks its model again: POST /api/runs/<id>/decisions waits."""
    call = completion(calls=[("call_1", "list_bundles", {"entity_type": "node"})])
    held = FakeUpstream(*[(200, call)] * DECIDED, *[(200, completion(content=ANSWER))] * DECIDED)
    held.hold(from_request=DECIDED + 1)
    with serving(held) as held_url:
        add_held_agent(app, client, held_url, tools={"list_bundles": {"require_approval": True}})
        waiting = [
            client.post("/api/agents/held/runs", json={"message": "Which bundles?"}).get_json() for _ in range(DECIDED)
        ]
        assert {run["state"] for run in waiting} == {"awaiting_approval"}

        def send(base_url, pool):
            return [
                pool.submit(
                    httpx2.post,
                    f"{base_url}/api/runs/{run['id']}/decisions",
                    json={"decisions": {run["pending_round"]["calls"][0]["id"]: {"approve": True}}},
                    timeout=BOUND,
                )
                for run in waiting
            ]

        *at_once, answers = answered_while_held(app, held, 2 * DECIDED, send)

    assert_answered_at_once(*at_once, DECIDED)
    assert [answer.status_code for answer in answers] == [200] * DECIDED
    runs = [answer.json() for answer in answers]
    assert [(run["state"], run["stop_reason"], run["answer"]) for run in runs] == [
        ("finished", "answered", ANSWER)
    ] * DECIDED
    assert {run["rounds"][0]["calls"][0]["status"] for run in runs} == {"executed"}
