"""A proxied request does its own work in one of services.proxy.TURNS turns, and gives its turn back however it
ends: answered, failed upstream, or refused for a bad body. A turn kept would leave, after TURNS of them, every
later request of the process waiting for ever."""

import gc
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import httpx2

from services.proxy import TURNS, turn, under_way
from tests.live_http import HeldStream, serving
from tests.proxy_support import PLACE, USER, FakeUpstream, add_upstream, completion


def test_more_requests_than_turns_each_get_an_answer_whether_answered_failed_or_refused(app, client):
    upstream = FakeUpstream(
        *[completion("Placed."), (500, {"error": {"message": "The engine is overloaded."}})] * (TURNS + 1)
    )
    with serving(upstream) as url:
        add_upstream(app, url)
        client.put("/api/agents/canvas", json={"label": "Canvas", "provider": "upstream"})
        statuses = []
        for _ in range(TURNS + 1):
            body = {"model": "m", "messages": [USER], "tools": [PLACE]}
            statuses.append(client.post("/proxy/canvas/v1/chat/completions", json=body).status_code)
            statuses.append(client.post("/proxy/canvas/v1/chat/completions", json=body).status_code)
            refused = client.post("/proxy/canvas/v1/chat/completions", json={"model": "m", "messages": "no"})
            statuses.append(refused.status_code)
    assert statuses == [200, 500, 400] * (TURNS + 1)


def test_requests_held_for_approval_hold_no_turn_and_others_are_answered_meanwhile(app, client):
    """More requests waiting for a person than there are turns: each is held, and another agent's request is
    answered while they all wait."""
    approval = {"place_components": {"require_approval": True}}
    held_agent = {"label": "Held", "client_tools": approval, "approval_timeout_seconds": 3, "script": [HERO, DONE]}
    assert client.put("/api/agents/held", json=held_agent).status_code == 201
    assert client.put("/api/agents/free", json={"label": "Free", "script": [{"content": "Free."}]}).status_code == 201
    with serving(app) as base_url, ThreadPoolExecutor(TURNS + 1) as pool:
        held = [
            pool.submit(httpx2.post, f"{base_url}/proxy/held/v1/chat/completions", json=asking(number), timeout=BOUND)
            for number in range(TURNS + 1)
        ]
        _wait_until(lambda: len(_awaiting(client)) == TURNS + 1)
        free = httpx2.post(f"{base_url}/proxy/free/v1/chat/completions", json=asking(0), timeout=BOUND)
        still_waiting = sum(not request.done() for request in held)
        answers = [request.result(timeout=BOUND) for request in held]

    assert free.status_code == 200 and free.json()["choices"][0]["message"]["content"] == "Free."
    assert still_waiting == TURNS + 1
    assert [answer.status_code for answer in answers] == [200] * (TURNS + 1)


def test_nothing_of_a_proxied_request_runs_before_its_turn_while_pages_are_answered(app, client):
    """With every turn of the process taken, a proxied request is not even refused for its body (its first check)
    until a turn is free, and pages, which take no turns, are answered meanwhile."""
    with serving(app) as base_url, ThreadPoolExecutor(1) as pool, ExitStack() as turns:
        for _ in range(TURNS):
            turns.enter_context(turn())
        refused = pool.submit(httpx2.post, f"{base_url}/proxy/canvas/v1/chat/completions", content=b"{}", timeout=BOUND)
        time.sleep(0.5)
        waited = not refused.done()
        page = httpx2.get(f"{base_url}/agents", timeout=BOUND)
        turns.close()
        answer = refused.result(timeout=BOUND)

    assert waited and page.status_code == 200
    assert answer.status_code == 415
    assert answer.json()["error"]["message"] == "The body must be sent as JSON (Content-Type: application/json)."


def test_a_request_is_under_way_until_its_answer_ends_however_it_ends(app, client):
    """services.proxy.under_way counts a proxied request from its arrival until its answer's last byte: a run's commit
    waits for the runs of the others under way to join it, so a request counted for ever would make every later
    commit wait. Streamed (to its end, or its client hanging up halfway), whole, refused, for an unknown agent."""
    streamed = {"model": "m", "messages": [USER], "stream": True}
    # What earlier tests left: answers of the test client never read (counted out when collected), and answers of a
    # live server whose client had read them all before the server closed them.
    gc.collect()
    _wait_until(lambda: under_way() == 0, f"{under_way()} requests of earlier tests still counted under way")
    counted = []
    with serving(app) as base_url:
        for hangs_up in (False, True):
            model = HeldStream()
            with serving(model) as model_url:
                agent_id = f"hangs_up_{hangs_up}".lower()
                add_upstream(app, model_url, provider_id=agent_id)
                agent = {"label": "Streamed", "provider": agent_id}
                assert client.put(f"/api/agents/{agent_id}", json=agent).status_code == 201
                url = f"{base_url}/proxy/{agent_id}/v1/chat/completions"
                with httpx2.stream("POST", url, json=streamed, timeout=BOUND) as response:
                    lines = response.iter_lines()
                    assert any('"Hello "' in line for line in lines)
                    counted.append(under_way())
                    if not hangs_up:
                        model.released.set()
                        assert "data: [DONE]" in list(lines)
                model.released.set()
                _wait_until(lambda: under_way() == 0, f"{under_way()} requests still counted under way")
        url = f"{base_url}/proxy/hangs_up_false/v1/chat/completions"
        answers = [
            httpx2.post(url, json={"model": "m", "messages": "no"}, timeout=BOUND),
            httpx2.post(f"{base_url}/proxy/nobody/v1/chat/completions", json={"messages": [USER]}, timeout=BOUND),
        ]

    assert counted == [1, 1]
    assert [answer.status_code for answer in answers] == [400, 404]
    assert under_way() == 0


HERO = {"tool_calls": [{"id": "hero", "name": "place_components", "arguments": {"component": "hero"}}]}
DONE = {"content": "Placed."}
BOUND = 60  # seconds any one step may take before the test fails instead of hanging


def asking(number):
    """A conversation of its own (the same conversation sent twice would attach to one wait)."""
    return {"model": "m", "messages": [{"role": "user", "content": f"Place hero number {number}."}], "tools": [PLACE]}


def _awaiting(client):
    return client.get("/api/runs?state=awaiting_approval&agent=held").get_json()["runs"]


def _wait_until(condition, what="the held requests did not all start waiting"):
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)
