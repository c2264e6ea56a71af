"""An upstream that fails after the client's stream began (issue 30): a connection reset, a stall past the
connection's timeout, a chunk that is not JSON, an error event. Each API's stream ends the way its own servers end
one — OpenAI's Responses with `response.failed` carrying the error, Chat Completions and Messages with their error
event — and the run records the text the client had already received. A raw server on 127.0.0.1 plays the upstream,
the real SDKs the clients."""

import json
import socket
import struct
import time
from contextlib import ExitStack

import anthropic
import openai
import pytest

from tests.live_http import serving
from tests.proxy_support import PLACE, RESTRICT, USER, add_upstream
from tests.raw_http import raw_server

WAIT = 10.0  # seconds the run may take to be recorded
TIMEOUT = 1.0  # the upstream connection's timeout, which the stall outlasts
FIRST_WORDS = "Hello, "
# What the client is told for each way the upstream fails, as the run records it too.
FAILURES = {
    "reset": "Could not reach the model endpoint: ",
    "stall": "The model did not answer",
    "not_json": "The model's answer could not be read: ",
    "error_event": "The model's answer could not be read: The engine fell over.",
}


def _chunk(data):
    line = f"data: {data}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(line), line)


def failing_stream(way):
    """An upstream's answer that streams FIRST_WORDS, then fails `way`."""

    def answer(connection, head, body, number):
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        start = {"id": "up-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        for delta in ({"role": "assistant", "content": ""}, {"content": FIRST_WORDS}):
            connection.sendall(_chunk(json.dumps({**start, "choices": [{"index": 0, "delta": delta}]})))
        if way == "reset":  # closed at once with a TCP reset, as a crashed server's connection is
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            connection.close()
        elif way == "stall":  # silent until the proxy gives up and hangs up
            connection.settimeout(TIMEOUT * 10)
            connection.recv(1)
        elif way == "not_json":
            connection.sendall(_chunk("<html>502 Bad Gateway</html>"))
        else:
            connection.sendall(_chunk(json.dumps({"error": {"message": "The engine fell over.", "type": "server"}})))
        return False

    return answer


@pytest.fixture
def served(app, client):
    """Serve the app, and give a function that points the canvas agent at an upstream failing a given way (for the
    rest of the test) and yields the proxy's base URL."""

    def failing(way):
        port, _, _ = servers.enter_context(raw_server(failing_stream(way)))
        add_upstream(app, f"http://127.0.0.1:{port}", timeout=TIMEOUT)
        agent = {"label": "Canvas", "provider": "upstream", "client_tools": RESTRICT}
        assert client.put("/api/agents/canvas", json=agent).status_code in (200, 201)
        return base_url

    with ExitStack() as servers, serving(app) as base_url:
        yield failing


def recorded_run(client):
    """The run of the test's one request, once recorded: a client that read the error hangs up before the stream's
    end is recorded."""
    deadline = time.monotonic() + WAIT
    while not (runs := client.get("/api/runs?agent=canvas").json["runs"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    [run] = runs
    return client.get(f"/api/runs/{run['id']}").json


@pytest.mark.parametrize("way", FAILURES)
def test_a_streamed_response_whose_upstream_fails_ends_with_response_failed(client, served, way, caplog):
    base_url = served(way)
    sdk = openai.OpenAI(base_url=f"{base_url}/proxy/canvas/v1", api_key="any key", max_retries=0)
    events = list(sdk.responses.create(model="m", input="Build a page.", tools=[_function(PLACE)], stream=True))
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert "response.output_text.delta" in kinds
    failed = events[-1]
    assert failed.type == "response.failed"
    assert failed.response.status == "failed"
    assert failed.response.error.code == "server_error"
    assert failed.response.error.message.startswith(FAILURES[way])
    [message] = failed.response.output
    assert (message.status, message.content[0].text) == ("incomplete", FIRST_WORDS)
    assert [event.sequence_number for event in events] == list(range(len(events)))
    run = recorded_run(client)
    assert (run["stop_reason"], run["error"]) == ("error", failed.response.error.message)
    assert run["answer"] == FIRST_WORDS  # what the client received
    assert not [record for record in caplog.records if record.name == "werkzeug"]  # no traceback in the output


@pytest.mark.parametrize("way", FAILURES)
def test_a_streamed_chat_completion_whose_upstream_fails_ends_with_the_error_and_records_the_text(client, served, way):
    base_url = served(way)
    sdk = openai.OpenAI(base_url=f"{base_url}/proxy/canvas/v1", api_key="any key", max_retries=0)
    received = []
    with pytest.raises(openai.APIError) as raised:
        for chunk in sdk.chat.completions.create(model="m", messages=[USER], tools=[PLACE], stream=True):
            received.append(chunk.choices[0].delta.content or "")
    assert "".join(received) == FIRST_WORDS
    assert raised.value.message.startswith(FAILURES[way])
    run = recorded_run(client)
    assert (run["stop_reason"], run["answer"], run["error"]) == ("error", FIRST_WORDS, raised.value.message)


@pytest.mark.parametrize("way", FAILURES)
def test_a_streamed_message_whose_upstream_fails_ends_with_the_error_and_records_the_text(client, served, way):
    base_url = served(way)
    sdk = anthropic.Anthropic(base_url=f"{base_url}/proxy/canvas", api_key="any key", max_retries=0)
    received = []
    with pytest.raises(anthropic.APIStatusError) as raised:
        tools = [_anthropic_tool(PLACE)]
        for event in sdk.messages.create(model="m", max_tokens=100, messages=[USER], tools=tools, stream=True):
            if event.type == "content_block_delta":
                received.append(event.delta.text)
    assert "".join(received) == FIRST_WORDS
    assert raised.value.body["error"]["type"] == "api_error"
    message = raised.value.body["error"]["message"]
    assert message.startswith(FAILURES[way])
    run = recorded_run(client)
    assert (run["stop_reason"], run["answer"], run["error"]) == ("error", FIRST_WORDS, message)


def _function(tool):
    """A chat tool as a Responses function tool."""
    return {"type": "function", **tool["function"]}


def _anthropic_tool(tool):
    function = tool["function"]
    return {"name": function["name"], "description": function["description"], "input_schema": function["parameters"]}
