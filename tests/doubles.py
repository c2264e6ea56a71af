"""The one model double of the tests, and the one builder of the chat completions it answers with.

`ModelDouble` stands in for a model wherever the code talks to one: passed as `model=` to the engine (it has a
ChatModel's `complete`), called as the proxy's upstream (`answer(body)` gives a completion), or served over real
HTTP as an OpenAI-compatible chat-completions server (it is a WSGI app: tests/live_http.serving puts it on
127.0.0.1). Whichever way it is asked, it answers from the same queue and keeps the same history, so a test reads
what the model was sent the same way everywhere.

Its answers are queued: each request gets the next one, and once the queue is used up every request gets the last
one again (or `then`, when given). An answer is one of:
- a string: a text answer;
- a ModelResponse: text and tool calls, as the engine reads them;
- a dict with "choices": a completion sent as it is (raw, so a test can send what a real server might);
- a dict with "role": an assistant message, sent as the completion's message;
- a (status, body) tuple: sent as it is with that HTTP status (asked in-process, an error status raises
  ProviderError), for what a server answers that no model would;
- a callable: called with the request body, it returns one of the above (a model that reads what it is sent).
With `script=` it answers as the engine's scripted model does (SPEC §7) instead of from a queue, over HTTP through
that model's own endpoint (its usage estimate and its streaming included).

`delay` seconds pass before each answer, as a remote model takes its time; `hold(from_request)` keeps the answers
from that request on until `release()`, so "the model is answering" is a state a test controls. A request that
offers no tools gets only the answer's text ("Done." when it has none), as a real model cannot call a tool it was not
offered — unless `ignores_tools`, a model that calls tools whatever it is offered.
"""

import copy
import io
import json
import threading
import time

import httpx2

from engine.providers import ProviderError, connection_model, read_completion
from engine.scripted import ScriptedModel, scripted_reply
from engine.types import ModelResponse, ToolCall

DONE = "Done."
# A provider connection in front of a double, for the tests that go through the openai SDK in-process.
CONNECTION = {"base_url": "http://model.test/v1", "api_key_env": "TEST_KEY", "default_model": "m", "max_retries": 0}
ENVIRON = {"TEST_KEY": "k"}


def completion(content=None, calls=(), usage=None, finish_reason=None, model="upstream-model"):
    """A chat-completions answer. `calls` are OpenAI-format dicts or (id, name, arguments) tuples, the arguments a
    dict (sent as JSON) or a raw string; `usage` is (prompt, completion, total) tokens."""
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [call if isinstance(call, dict) else _call(*call) for call in calls]
    body = {
        "id": "chatcmpl-upstream",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "system_fingerprint": "fp_upstream",
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason or ("tool_calls" if calls else "stop")}
        ],
    }
    if usage is not None:
        body["usage"] = dict(zip(("prompt_tokens", "completion_tokens", "total_tokens"), usage, strict=True))
    return body


def _call(call_id, name, arguments):
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def tool_calls(*calls, content=None):
    """A ModelResponse with these (name, arguments) calls, numbered call_1, call_2, …"""
    return ModelResponse(content, tuple(ToolCall(f"call_{n}", *call) for n, call in enumerate(calls, start=1)))


class ModelDouble:
    """A scripted model (see the module's docstring). Its history, `requests`, holds each request's path, headers and
    JSON body; asked in-process, the body is what the engine passed: {"messages", "tools", "parallel_tool_calls"}
    (tools None when none were offered)."""

    def __init__(self, *answers, script=None, then=None, delay=0.0, ignores_tools=False):
        self.answers = list(answers) or [DONE]
        self.script = script
        self.then = then
        self.delay = delay
        self.ignores_tools = ignores_tools
        self.requests = []  # each {"path", "headers", "body"}, in the order they came
        self.sent = []  # Unix time at which each answer went out, in the order they went
        self.hold_from = None
        self.released = threading.Event()
        self._lock = threading.Condition()
        self._sdk = None
        self._queued_at = 0  # the number of requests answered before the queue was last set

    # --- What it was sent ------------------------------------------------------------------------------------------

    @property
    def bodies(self):
        return [request["body"] for request in self.requests]

    @property
    def offered(self):
        """Per request, the names of the tools offered, or None when no tools were sent."""
        return [
            [tool["function"]["name"] for tool in body["tools"]] if body.get("tools") else None for body in self.bodies
        ]

    def enqueue(self, *answers):
        """Answer the next requests with these (the last one answers the rest), as llm's mock model is scripted."""
        with self._lock:
            self.answers = list(answers)
            self._queued_at = len(self.requests)

    def wait_for_request(self, number, timeout=15.0):
        """Wait until request `number` (1-based) has come in: whatever sent it is then waiting for its answer."""
        with self._lock:
            arrived = self._lock.wait_for(lambda: len(self.requests) >= number, timeout)
        assert arrived, f"the model had {len(self.requests)} requests after {timeout} s, not {number}"

    def hold(self, from_request=1):
        self.hold_from = from_request

    def release(self):
        self.released.set()

    # --- Asked in-process ------------------------------------------------------------------------------------------

    def complete(self, messages, tools=None, parallel_tool_calls=None):
        """The engine's ChatModel call."""
        if self._sdk is not None:
            return self._sdk.complete(messages, tools, parallel_tool_calls)
        body = {
            "messages": copy.deepcopy(messages),
            "tools": copy.deepcopy(tools),
            "parallel_tool_calls": parallel_tool_calls,
        }
        answer = self.reply(self.record(None, {}, body), body)
        return answer if isinstance(answer, ModelResponse) else read_completion(self._completion(answer))

    def answer(self, body):
        """The proxy's upstream call: the completion for this chat-completions body."""
        body = json.loads(json.dumps(body))
        answer = self.reply(self.record(None, {}, body), body)
        return copy.deepcopy(self._completion(answer))

    def through_sdk(self):
        """This double with its requests sent through the openai SDK, as the engine sends a provider's: its
        history then holds the HTTP requests."""
        self._sdk = connection_model(CONNECTION, environ=ENVIRON, transport=httpx2.WSGITransport(app=self))
        return self

    # --- Served over HTTP ------------------------------------------------------------------------------------------

    def __call__(self, environ, start_response):
        raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        body = json.loads(raw) if raw else None
        headers = {key[5:].lower(): value for key, value in environ.items() if key[:5] == "HTTP_"}
        number = self.record(environ.get("PATH_INFO"), headers, body)
        if self.script is not None:
            self._wait(number)
            environ["wsgi.input"] = io.BytesIO(raw)
            answer = ScriptedModel(self.script)(environ, start_response)
            self._sent()
            return answer
        answer = self.reply(number, body)
        status, payload = answer if isinstance(answer, tuple) else (200, self._completion(answer))
        data = json.dumps(payload).encode()
        start_response(f"{status} X", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]

    # --- Its parts -------------------------------------------------------------------------------------------------

    def record(self, path, headers, body):
        """Keep one request in the history; its number (1-based)."""
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "body": body})
            self._lock.notify_all()
            return len(self.requests)

    def _wait(self, number):
        if self.delay:
            threading.Event().wait(self.delay)
        if self.hold_from is not None and number >= self.hold_from:
            self.released.wait(timeout=60)

    def _sent(self):
        with self._lock:
            self.sent.append(time.time())

    def reply(self, number, body):
        """The queued answer to request `number`, after the delay (and the hold)."""
        self._wait(number)
        tools = bool((body or {}).get("tools")) or self.ignores_tools
        if self.script is not None:
            answer = completion(**_scripted(self.script, body["messages"], tools))
        elif (position := number - self._queued_at) <= len(self.answers) or self.then is None:
            answer = self.answers[min(position, len(self.answers)) - 1]
        else:
            answer = self.then
        if callable(answer):
            answer = answer(body)
        if not tools:
            answer = _text_only(answer)
        self._sent()
        return answer

    @staticmethod
    def _completion(answer):
        """The completion an answer stands for; an error status asked in-process raises ProviderError."""
        if isinstance(answer, tuple):
            status, payload = answer
            if status != 200:
                raise ProviderError(f"The model endpoint answered HTTP {status}.", status=status)
            return payload
        if isinstance(answer, str):
            return completion(answer)
        if isinstance(answer, ModelResponse):
            calls = [(call.id, call.name, call.arguments) for call in answer.tool_calls]
            return completion(answer.content, calls, finish_reason=answer.finish_reason)
        if "choices" in answer:
            return answer
        return {**completion(), "choices": [{"index": 0, "message": answer}]}


def _scripted(script, messages, tools_offered):
    reply = scripted_reply(script, messages, tools_offered)
    return {"content": reply.get("content"), "calls": reply.get("tool_calls", ())}


def _text_only(answer):
    """What a model offered no tools says: the answer's text, or "Done." when it has none."""
    if isinstance(answer, str | tuple):
        return answer
    if isinstance(answer, ModelResponse):
        return ModelResponse(answer.content or DONE, ())
    return answer if "choices" in answer else {"role": "assistant", "content": answer.get("content") or DONE}
