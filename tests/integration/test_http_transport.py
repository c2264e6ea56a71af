"""The network under every provider connection (engine/http_transport.py), against raw HTTP servers on 127.0.0.1
that answer as real ones can: a compressed body, a body cut off midway, a connection closed while idle, a stream
written in pieces, and the environment's HTTP proxy in between."""

import gzip
import json
import threading

from engine import run_agent
from engine.providers import connection_model
from tests.doubles import completion
from tests.raw_http import raw_server

QUESTION = "Which bundles exist?"
ANSWER = completion("Two bundles.")


def _response(body, *headers):
    head = [b"HTTP/1.1 200 OK", b"Content-Type: application/json", b"Content-Length: %d" % len(body), *headers]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def _model(port, connection_id, **fields):
    connection = {"id": connection_id, "label": "Raw", "base_url": f"http://127.0.0.1:{port}/v1", "api_key_env": ""}
    return connection_model({**connection, "max_retries": 0, **fields}, "m", environ={})


def _body():
    return {"model": "m", "messages": [{"role": "user", "content": QUESTION}]}


def test_a_gzip_compressed_answer_is_read_as_the_json_it_holds():
    def answer(connection, head, body, number):
        connection.sendall(_response(gzip.compress(json.dumps(ANSWER).encode()), b"Content-Encoding: gzip"))

    with raw_server(answer) as (port, _, _):
        assert _model(port, "gzip").post(_body()) == ANSWER


def test_requests_one_after_the_other_share_one_connection():
    def answer(connection, head, body, number):
        connection.sendall(_response(json.dumps(ANSWER).encode()))

    with raw_server(answer) as (port, accepted, heads):
        model = _model(port, "reused")
        for _ in range(5):
            assert model.post(_body()) == ANSWER

    assert len(heads) == 5
    assert len(accepted) == 1


def test_a_connection_the_server_closed_while_idle_is_replaced_not_failed():
    closed = threading.Event()

    def answer(connection, head, body, number):
        connection.sendall(_response(json.dumps(ANSWER).encode()))
        connection.close()  # without saying so in the answer, as a server's idle timeout does
        closed.set()
        return False

    with raw_server(answer) as (port, accepted, _):
        model = _model(port, "closed-idle")
        assert model.post(_body()) == ANSWER
        assert closed.wait(timeout=10)
        assert model.post(_body()) == ANSWER  # max_retries 0: the closed connection is not used at all

    assert len(accepted) == 2


def test_an_answer_cut_off_midway_is_an_error_in_words():
    def answer(connection, head, body, number):
        whole = _response(json.dumps(ANSWER).encode())
        connection.sendall(whole[: len(whole) - 20])
        return False

    connection = {"label": "Cut", "api_key_env": "", "default_model": "m", "max_retries": 0}
    with raw_server(answer) as (port, _, _):
        result = run_agent(
            {"id": "cut", "label": "Cut", "provider": "cut", "tools": {}},
            QUESTION,
            providers={"cut": {**connection, "base_url": f"http://127.0.0.1:{port}/v1"}},
            environ={},
        )

    assert result["stop_reason"] == "error"
    assert result["error"].startswith("Could not reach the model endpoint: ")


def test_a_streamed_answer_comes_out_piece_by_piece_as_the_server_writes_it():
    release = threading.Event()
    events = [{"choices": [{"index": 0, "delta": {"content": word}}]} for word in ("Two ", "bundles.")]

    def answer(connection, head, body, number):
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        for event in events:
            line = f"data: {json.dumps(event)}\n\n".encode()
            connection.sendall(b"%x\r\n%s\r\n" % (len(line), line))
            if not release.wait(timeout=5):  # the second piece only once the client has read the first
                return False
        connection.sendall(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")

    with raw_server(answer) as (port, _, _):
        chunks = _model(port, "streamed").stream(_body())
        first = next(chunks)
        release.set()
        rest = list(chunks)

    assert first["choices"][0]["delta"]["content"] == "Two "
    assert [chunk["choices"][0]["delta"]["content"] for chunk in rest] == ["bundles."]


def test_the_proxy_the_environment_names_carries_the_request(monkeypatch):
    """As httpx2 did, HTTP_PROXY sends plain-HTTP requests through that proxy, the whole URL in the request line."""

    def answer(connection, head, body, number):
        connection.sendall(_response(json.dumps(ANSWER).encode()))

    with raw_server(answer) as (proxy_port, _, heads):
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy_port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        connection = {"id": "proxied", "label": "Behind a proxy", "api_key_env": "", "max_retries": 0}
        model = connection_model({**connection, "base_url": "http://model.example/v1"}, "m", environ={})
        assert model.post(_body()) == ANSWER

    assert heads[0].startswith("POST http://model.example/v1/chat/completions HTTP/1.1")
