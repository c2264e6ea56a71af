"""A client that sends a continuation again while the first is still in flight (issue 22, item 3): whatever the
interleaving, every transcript the proxy sends upstream answers each call id exactly once — the upstream here
refuses one that does not, as OpenAI's does ("Duplicate value for 'tool_call_id'")."""

import json
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

from tests.live_http import serving
from tests.proxy_support import PLACE, RESTRICT, USER, add_upstream, completion

CONTINUATIONS = 10
REPEATS = 3


class StrictUpstream:
    """An OpenAI-compatible server that answers a first request with one call and every later one with text, after a
    short wait so that requests overlap; it refuses a transcript that answers a call id twice."""

    def __init__(self):
        self.lock = threading.Lock()
        self.duplicates = []

    def __call__(self, environ, start_response):
        body = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)))
        answered = Counter(m["tool_call_id"] for m in body["messages"] if m.get("role") == "tool")
        twice = [call_id for call_id, count in answered.items() if count > 1]
        if twice:
            with self.lock:
                self.duplicates.append(twice)
            reply, status = {"error": {"message": f"Duplicate value for 'tool_call_id' of {twice[0]}."}}, "400 X"
        elif answered:
            threading.Event().wait(0.05)
            reply, status = completion("Placed."), "200 OK"
        else:
            reply, status = completion(calls=[("a", "place_components", {"component": "hero"})]), "200 OK"
        data = json.dumps(reply).encode()
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]


@pytest.mark.parametrize("repeat", range(REPEATS))
def test_ten_concurrent_continuations_each_send_every_call_id_answered_once(app, client, repeat):
    upstream = StrictUpstream()
    with serving(upstream) as url:
        add_upstream(app, url)
        client.put("/api/agents/canvas", json={"label": "Canvas", "provider": "upstream", "client_tools": RESTRICT})
        with serving(app) as base_url:
            sdk = openai.OpenAI(base_url=f"{base_url}/proxy/canvas/v1", api_key="k", max_retries=0, timeout=30)
            first = sdk.chat.completions.create(model="m", messages=[USER], tools=[PLACE]).choices[0].message
            history = [USER, first.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": "a", "content": "u"}]

            def continue_conversation(_number):
                return sdk.chat.completions.create(model="m", messages=history, tools=[PLACE])

            with ThreadPoolExecutor(CONTINUATIONS) as pool:
                answers = list(pool.map(continue_conversation, range(CONTINUATIONS)))

    assert upstream.duplicates == []
    assert [answer.choices[0].message.content for answer in answers] == ["Placed."] * CONTINUATIONS
