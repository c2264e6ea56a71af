"""A client that sends a continuation again while the first is still in flight (issue 22, item 3): whatever the
interleaving, every transcript the proxy sends upstream answers each call id exactly once — the upstream here
refuses one that does not, as OpenAI's does ("Duplicate value for 'tool_call_id'")."""

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

from tests.doubles import ModelDouble
from tests.live_http import serving
from tests.proxy_support import PLACE, RESTRICT, USER, add_upstream, completion

pytestmark = pytest.mark.both_engines


CONTINUATIONS = 10
REPEATS = 3


def strict_upstream(duplicates):
    """An OpenAI-compatible server that answers a first request with one call and every later one with text, after a
    short wait so that requests overlap; it refuses a transcript that answers a call id twice (noted in
    `duplicates`)."""
    lock = threading.Lock()

    def answer(body):
        answered = Counter(m["tool_call_id"] for m in body["messages"] if m.get("role") == "tool")
        twice = [call_id for call_id, count in answered.items() if count > 1]
        if twice:
            with lock:
                duplicates.append(twice)
            return 400, {"error": {"message": f"Duplicate value for 'tool_call_id' of {twice[0]}."}}
        if answered:
            threading.Event().wait(0.05)
            return completion("Placed.")
        return completion(calls=[("a", "place_components", {"component": "hero"})])

    return ModelDouble(answer)


@pytest.mark.parametrize("repeat", range(REPEATS))
def test_ten_concurrent_continuations_each_send_every_call_id_answered_once(app, client, repeat):
    duplicates = []
    upstream = strict_upstream(duplicates)
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

    assert duplicates == []
    assert [answer.choices[0].message.content for answer in answers] == ["Placed."] * CONTINUATIONS
