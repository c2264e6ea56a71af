"""A streamed proxied answer, live (issue 21): the proxy streams from upstream and hands the client text as the model
writes it — the first words arrive while the upstream is still writing — and a client that goes away mid-stream
stops the upstream request, its run recording how far it got. Real servers on 127.0.0.1 on both sides."""

import time

import anthropic
import httpx2
import pytest

from tests.html_reader import text_of
from tests.live_http import HeldStream, serving
from tests.proxy_support import PLACE, RESTRICT, USER, add_upstream, proxy_client

WAIT = 10.0  # seconds any step may take before the test fails instead of hanging


@pytest.fixture
def held(app, client):
    upstream = HeldStream()
    with serving(upstream) as url:
        add_upstream(app, url)
        agent = {"label": "Canvas", "provider": "upstream", "client_tools": RESTRICT}
        assert client.put("/api/agents/canvas", json=agent).status_code in (200, 201)
        yield upstream


def test_the_first_words_reach_the_client_while_the_upstream_is_still_writing(app, client, held):
    with proxy_client(app, "canvas") as sdk:
        stream = sdk.chat.completions.create(model="m", messages=[USER], tools=[PLACE], stream=True)
        texts = []
        for chunk in stream:
            delta = chunk.choices[0].delta if chunk.choices else None
            if delta is not None and delta.content:
                texts.append((delta.content, held.released.is_set()))
                held.released.set()  # the upstream writes the rest only now
    assert texts == [("Hello ", False), ("world.", True)]
    assert held.bodies[0]["stream"] is True
    [run] = client.get("/api/runs?agent=canvas").json["runs"]
    stored = client.get(f"/api/runs/{run['id']}").json
    assert (stored["stop_reason"], stored["answer"]) == ("answered", "Hello world.")
    assert stored["messages"][-1] == {"role": "assistant", "content": "Hello world."}


def test_a_client_that_goes_away_mid_stream_stops_the_upstream_request_and_the_run_says_how_far_it_got(app, client):
    upstream = HeldStream(words=tuple(f"word{number} " for number in range(200)), pause=0.01)
    with serving(upstream) as url:
        add_upstream(app, url)
        client.put("/api/agents/canvas", json={"label": "Canvas", "provider": "upstream", "client_tools": RESTRICT})
        with serving(app) as base_url, httpx2.Client(base_url=base_url, timeout=WAIT) as http:
            body = {"model": "m", "messages": [USER], "tools": [PLACE], "stream": True}
            with http.stream("POST", "/proxy/canvas/v1/chat/completions", json=body) as response:
                for line in response.iter_lines():
                    if "Hello" in line:
                        break  # the client has its first words, and hangs up
            upstream.released.set()
            assert upstream.closed_early.wait(WAIT), "the upstream was never told to stop"
            deadline = time.monotonic() + WAIT
            runs = []
            while not runs and time.monotonic() < deadline:
                runs = client.get("/api/runs?agent=canvas").json["runs"]
                upstream.closed_early.wait(0.05)
    [run] = runs
    stored = client.get(f"/api/runs/{run['id']}").json
    assert (stored["stop_reason"], stored["error"]) == ("cancelled", None)
    assert stored["model_requests"] == 1
    assert stored["answer"].startswith("Hello ") and not stored["answer"].endswith("word199 ")


def test_a_request_its_client_cancels_before_the_answer_reads_cancelled_by_the_client_not_error(app, client):
    """As Claude Code cancels the request that titles its session: a streamed Messages request, closed by the client
    once the stream has begun and before any text came."""
    upstream = HeldStream(words=tuple(f"word{number} " for number in range(200)), pause=0.01, opening="")
    with serving(upstream) as url:
        add_upstream(app, url)
        client.put("/api/agents/canvas", json={"label": "Canvas", "provider": "upstream", "client_tools": RESTRICT})
        with serving(app) as base_url:
            sdk = anthropic.Anthropic(base_url=f"{base_url}/proxy/canvas", api_key="any key", max_retries=0)
            body = {"model": "m", "max_tokens": 100, "messages": [USER]}
            with sdk.messages.stream(**body) as stream:
                first = next(iter(stream))
            upstream.released.set()
            assert upstream.closed_early.wait(WAIT), "the upstream was never told to stop"
            runs = []
            deadline = time.monotonic() + WAIT
            while not runs and time.monotonic() < deadline:
                runs = client.get("/api/runs?agent=canvas").json["runs"]
                upstream.closed_early.wait(0.05)
    assert first.type == "message_start"
    [run] = runs
    stored = client.get(f"/api/runs/{run['id']}").json
    assert (stored["stop_reason"], stored["error"]) == ("cancelled", None)
    assert not (stored["answer"] or "").endswith("word199 ")
    page = text_of(client.get(f"/runs/{run['id']}"))
    assert "Stop reason Cancelled by the client: it closed its request before the answer was complete" in page
    assert "Error" not in page
    listed = text_of(client.get("/runs?agent=canvas"))
    assert "Cancelled by the client" in listed
    filtered = client.get("/api/runs?agent=canvas&stop_reason=cancelled").json
    assert [summary["id"] for summary in filtered["runs"]] == [run["id"]]
    assert "could not answer" not in text_of(client.get("/log?agent=canvas"))  # no provider error logged
