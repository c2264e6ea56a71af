"""A streamed answer that echoes the connection's key reaches the client, and its run, with the key redacted (SPEC
§9), whether the upstream writes the key as it is or with a character escaped in its JSON: the proxy reads without
walking only the chunks that cannot hold the key (engine.proxy.forward)."""

import httpx2
import pytest

from tests.live_http import serving
from tests.proxy_support import PLACE, USER, add_upstream
from tests.stream_support import read_events

KEY = "sk-upstream-key"  # the key add_upstream gives the connection
HEAD = '{"id": "up-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, '


class EchoingStream:
    """A streaming upstream whose text deltas are the JSON string literals it is given, written as they are."""

    def __init__(self, *literals):
        self.literals = literals

    def __call__(self, environ, start_response):
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        events = [f'{HEAD}"delta": {{"role": "assistant", "content": ""}}}}]}}']
        events += [f'{HEAD}"delta": {{"content": {literal}}}}}]}}' for literal in self.literals]
        events += [f'{HEAD}"delta": {{}}, "finish_reason": "stop"}}]}}', "[DONE]"]
        return [f"data: {event}\n\n".encode() for event in events]


@pytest.mark.parametrize(
    "literals",
    [
        ['"Your key is "', f'"{KEY}."'],
        ['"Your key is "', '"\\u0073k-upstream-key."'],  # the same text, its first letter escaped
    ],
)
def test_a_streamed_answer_that_echoes_the_key_reaches_the_client_and_the_run_with_the_key_redacted(
    app, client, literals
):
    with serving(EchoingStream(*literals)) as url:
        add_upstream(app, url)
        assert client.put("/api/agents/canvas", json={"label": "Canvas", "provider": "upstream"}).status_code == 201
        with serving(app) as base_url:
            body = {"model": "m", "messages": [USER], "tools": [PLACE], "stream": True}
            response = httpx2.post(f"{base_url}/proxy/canvas/v1/chat/completions", json=body, timeout=10)
    written = response.content
    texts = [event["choices"][0]["delta"].get("content") for event in read_events([written]) if event["choices"]]
    assert "".join(text or "" for text in texts) == "Your key is [redacted]."
    assert KEY.encode() not in written
    [run] = client.get("/api/runs?agent=canvas").json["runs"]
    assert client.get(f"/api/runs/{run['id']}").json["answer"] == "Your key is [redacted]."
