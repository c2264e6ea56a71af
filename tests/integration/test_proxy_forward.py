"""The proxy sends to a provider connection without the openai SDK (engine.proxy.forward): whatever the server
answers, the proxy reads it as the SDK path reads it — the same answer, the same retries, the same failure in the
same words — so a client cannot tell the two apart."""

import json
import threading

import pytest

from engine.providers import ProviderError, connection_model
from engine.proxy import forward
from tests.live_http import serving

BODY = {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}
COMPLETION = {
    "id": "up-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello."}, "finish_reason": "stop"}],
}


def _json(status, payload, **headers):
    return status, json.dumps(payload).encode(), {"Content-Type": "application/json", **headers}


def _text(status, text, **headers):
    return status, text.encode(), {"Content-Type": "text/plain", **headers}


def _events(*chunks):
    data = b"".join(f"data: {json.dumps(chunk)}\r\n\r\n".encode() for chunk in chunks) + b"data: [DONE]\n\n"
    return 200, data, {"Content-Type": "text/event-stream"}


CHUNK = {"id": "up-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
ANSWERS = {
    "an answer": [_json(200, COMPLETION)],
    "an error with a JSON message": [_json(400, {"error": {"message": "Bad tools.", "type": "invalid_request"}})],
    "an error with a message at the top": [_json(422, {"message": "Unprocessable."})],
    "an error with a JSON body and no message": [_json(500, {"detail": "nothing"}, **{"retry-after-ms": "10"})],
    "an error in plain text": [_text(502, "  Bad gateway  ", **{"retry-after-ms": "10"})],
    "an error with no body, retried after the SDK's own waits": [_text(500, "")],
    "a retried 503, then an answer": [_json(503, {"error": {"message": "Busy."}}, **{"Retry-After": "0.05"})]
    + [_json(200, COMPLETION)],
    "a 503 on every try": [_json(503, {"error": {"message": "Busy."}}, **{"Retry-After": "0.05"})] * 3,
    "a 429 asking a wait past the deadline": [
        _json(429, {"error": {"message": "Slow down."}}, **{"Retry-After": "30"})
    ],
    "a 503 the server says not to retry": [_json(503, {"error": {"message": "No."}}, **{"x-should-retry": "false"})],
    "a 400 the server says to retry": [_json(400, {"error": {"message": "Again."}}, **{"x-should-retry": "true"})]
    + [_json(200, COMPLETION)],
    "JSON that does not parse": [_text(200, "{not json", **{"Content-Type": "application/json"})],
    "text that is not JSON": [_text(200, "plain words")],
    "a stream asked for or not": [_events({**CHUNK, "choices": [{"index": 0, "delta": {"content": "Hi"}}]})],
    "an error event": [_events({"error": {"message": "It broke."}})],
}


class Server:
    """Answers each request with the next of `answers` (the last one again once they are used up)."""

    def __init__(self, answers=()):
        self.lock = threading.Lock()
        self.answer_with(answers)

    def answer_with(self, answers):
        with self.lock:
            self.answers = list(answers)
            self.requests = []

    def __call__(self, environ, start_response):
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        with self.lock:
            self.requests.append((environ.get("HTTP_AUTHORIZATION"), environ.get("HTTP_X_TEAM"), json.loads(body)))
            status, data, headers = self.answers[min(len(self.requests), len(self.answers)) - 1]
        start_response(f"{status} X", [*headers.items(), ("Content-Length", str(len(data)))])
        return [data]


@pytest.fixture(scope="module")
def served():
    """(the server, its base URL), one for the module: starting and stopping one per case is most of their time."""
    server = Server()
    with serving(server) as url:
        yield server, url


def _outcome(served, send, answers, stream=False):
    """(what the sender returned or the ProviderError's text and status, what the server was sent)."""
    server, url = served
    server.answer_with(answers)
    connection = {
        "id": "forward",
        "base_url": f"{url}/v1",
        "api_key_env": "FORWARD_KEY",
        "default_model": "m",
        "timeout": 2,
        "max_retries": 2,
        "headers": {"X-Team": "blue"},
    }
    model = connection_model(connection, environ={"FORWARD_KEY": "sk-forward-test-key"})
    try:
        result = list(send(model, True)) if stream else send(model, False)
    except ProviderError as error:
        result = (str(error), error.status)
    return result, [(auth, team, {**body, "stream_options": None}) for auth, team, body in server.requests]


def _through_sdk(model, stream):
    return model.stream(BODY) if stream else model.post(BODY)


def _forwarded(model, stream):
    return forward.stream(model, BODY) if stream else forward.post(model, BODY)


@pytest.mark.parametrize("answers", ANSWERS.values(), ids=ANSWERS.keys())
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_proxy_reads_every_answer_as_the_sdk_does(served, answers, stream):
    forwarded, sent = _outcome(served, _forwarded, answers, stream)
    assert (forwarded, sent) == _outcome(served, _through_sdk, answers, stream)
    assert sent[0][:2] == ("Bearer sk-forward-test-key", "blue")


def test_the_retries_and_the_refused_wait_are_told_as_the_sdk_tells_them(served):
    assert _outcome(served, _forwarded, ANSWERS["a 503 on every try"])[0] == (
        "The model endpoint answered HTTP 503 after 3 attempts: Busy.",
        503,
    )
    assert _outcome(served, _forwarded, ANSWERS["a 429 asking a wait past the deadline"])[0] == (
        "The model endpoint answered HTTP 429: Slow down. Not retried: it asked to wait 30 s, which would pass the "
        "2 s timeout.",
        429,
    )


def test_a_server_that_is_not_there_is_told_as_the_sdk_tells_it():
    with serving(Server([_json(200, COMPLETION)])) as url:
        pass  # the port is free again
    connection = {
        "id": "forward-gone",
        "base_url": f"{url}/v1",
        "api_key_env": "",
        "default_model": "m",
        "max_retries": 0,
    }
    model = connection_model(connection, environ={})
    with pytest.raises(ProviderError) as forwarded:
        forward.post(model, BODY)
    with pytest.raises(ProviderError) as through_sdk:
        model.post(BODY)
    assert str(forwarded.value).startswith("Could not reach the model endpoint: ")
    assert str(through_sdk.value).startswith("Could not reach the model endpoint: ")
