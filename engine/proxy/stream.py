"""A proxied answer as a stream of pieces, whatever API the client streams it in.

The proxy hands a streaming client its answer as pieces: `Start` (the answer's id, model and creation time), `Text`
(text as the model writes it), `Call` (one whole tool call, only once its response has passed the gate), `End` (the
finish reason and the usage). Each API's module (engine.proxy.chat_completions, …) turns pieces into its own events;
`pieces_of` cuts an answer already complete into pieces, so a buffered answer and a live one stream alike.
"""

import json
from dataclasses import dataclass, field, replace

from .core import UpstreamError

PARAGRAPH = "\n\n"  # between the texts of two responses streamed to one client
TEXT = "\x00text\x00"  # where the text goes in a TextTemplate's event


@dataclass(frozen=True)
class Start:
    id: str
    model: str
    created: int
    extra: dict = field(default_factory=dict)  # fields of the upstream's answer the API passes on (system_fingerprint)


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Call:
    index: int
    id: str
    name: str
    arguments: str  # JSON text


@dataclass(frozen=True)
class End:
    finish_reason: str
    usage: dict | None


@dataclass(frozen=True)
class KeepAlive:
    """The answer is held for approval: the client's stream is kept alive in its API's own way (an SSE comment for
    OpenAI's APIs, a `ping` event for Anthropic's)."""


def pieces_of(completion):
    """The pieces of a chat completion the proxy has answered with."""
    choice = completion["choices"][0]
    message = choice["message"]
    extra = {key: completion[key] for key in ("system_fingerprint",) if key in completion}
    yield Start(completion.get("id"), completion.get("model"), completion.get("created"), extra)
    if message.get("content"):
        yield Text(message["content"])
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        yield Call(index, call["id"], function["name"], function.get("arguments") or "")
    yield End(choice.get("finish_reason") or "stop", completion.get("usage"))


def server_sent_events(events, named=False):
    """Each event (a JSON-able dict, or a TextEvent) as a server-sent event; `named`: with its `type` as the event's
    name, as the Responses and Messages APIs send them."""
    for event in events:
        if isinstance(event, KeepAlive):
            yield b": keep-alive\n\n"
            continue
        if isinstance(event, TextEvent):
            yield event.template.written(event.text)
            continue
        data = json.dumps(event, ensure_ascii=False)
        yield _event_bytes(event, data, named)


def _event_bytes(event, data, named):
    return (f"event: {event['type']}\ndata: {data}\n\n" if named else f"data: {data}\n\n").encode()


class TextTemplate:
    """The events of one stream that differ only by their text (Chat Completions' chunks of text deltas): `event`,
    with TEXT as its last string, written as a server-sent event once, each text then written into its place: the
    bytes server_sent_events writes for the event with the text in it, without building and serializing the whole
    event again for every few words."""

    def __init__(self, event):
        written = _event_bytes(event, json.dumps(event, ensure_ascii=False), named=False)
        self.before, _, self.after = written.rpartition(json.dumps(TEXT).encode())

    def written(self, text):
        return b"%s%s%s" % (self.before, json.dumps(text, ensure_ascii=False).encode(), self.after)


@dataclass(frozen=True)
class TextEvent:
    """A text for the client in its stream's TextTemplate."""

    template: TextTemplate
    text: str


@dataclass(frozen=True)
class Failure:
    """The upstream failed after the client's stream began: the stream ends with the error."""

    status: int
    message: str


class Assembly:
    """The chunks of one streamed upstream answer put back together: `add(chunk)` returns the text it brings, and
    `completion()` is the whole answer as a non-streamed server would have sent it."""

    def __init__(self):
        self.head = {}
        self.content = []
        self.calls = {}  # index -> {"id", "type", "function": {"name", "arguments"}}
        self.finish_reason = None
        self.usage = None

    def add(self, chunk):
        if not isinstance(chunk, dict):
            return ""
        for key in ("id", "created", "model", "system_fingerprint"):
            if key in chunk and key not in self.head:
                self.head[key] = chunk[key]
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return ""
        choice = choices[0]
        self.finish_reason = choice.get("finish_reason") or self.finish_reason
        # A whole completion (a server that did not stream) carries a message where a chunk carries a delta.
        delta = choice.get("delta") or choice.get("message") or {}
        for number, call in enumerate(delta.get("tool_calls") or []):
            self.add_call(call, number)
        text = delta.get("content")
        if isinstance(text, str) and text:
            self.content.append(text)
            return text
        return ""

    def add_call(self, call, number):
        if not isinstance(call, dict):
            return
        index = call.get("index", number)
        entry = self.calls.setdefault(index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
        if call.get("id"):
            entry["id"] = call["id"]
        function = call.get("function") or {}
        if function.get("name"):
            entry["function"]["name"] += function["name"]
        arguments = function.get("arguments")
        if arguments is not None:
            entry["function"]["arguments"] += arguments if isinstance(arguments, str) else json.dumps(arguments)

    def completion(self):
        message = {"role": "assistant", "content": "".join(self.content) or None}
        if self.calls:
            message["tool_calls"] = [self.calls[index] for index in sorted(self.calls)]
        completion = {
            "object": "chat.completion",
            **self.head,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
        }
        if self.usage is not None:
            completion["usage"] = self.usage
        return completion


class LiveAnswer:
    """A streamed client request answered as the upstream writes: `pieces()` asks upstream with streaming, hands
    the client each text delta at once and a tool call only once its whole response has passed the gate (the proxy
    fails closed), and goes on with the next response when one was rejected and asked again. Afterwards `exchange`
    is the request's Exchange whose answer is exactly what the client received — its text, every delta it was sent
    — or, when the upstream failed or the client went away (cancelled), how far it got."""

    def __init__(self, exchange, upstream, own_id, steps=None):
        self.proxy_exchange = exchange
        self.upstream = upstream
        self.own_id = own_id
        self.steps = (
            steps  # the exchange's steps as its driver carries them out (engine.proxy.serve); by default its own
        )
        self.exchange = None
        self.shown = []  # every text delta the client was sent

    def start(self, head):
        model = self.proxy_exchange.config.model or head.get("model") or self.proxy_exchange.request.model
        extra = {key: head[key] for key in ("system_fingerprint",) if key in head}
        return Start(head.get("id") or self.own_id, model, head.get("created") or 0, extra)

    def pieces(self):
        steps = self.steps if self.steps is not None else self.proxy_exchange.steps()
        started, last_text = False, ""
        try:
            body = next(steps)
            while True:
                while isinstance(body, KeepAlive):  # held for approval: the text so far has reached the client
                    if not started:
                        started = True
                        yield self.start({})
                    yield body
                    body = steps.send(None)
                assembly, last_text = Assembly(), ""
                chunks = self.upstream.stream(body)
                try:
                    for chunk in chunks:
                        text = assembly.add(chunk)
                        if not started and assembly.head:
                            started = True
                            yield self.start(assembly.head)
                        if text:
                            yield from self.show(text, first=not last_text)
                            last_text += text
                finally:
                    chunks.close()  # a client that went away stops the upstream request too
                body = steps.send(assembly.completion())
        except StopIteration as done:
            exchange = done.value
        except UpstreamError as error:
            self.exchange = self.as_far_as_shown(self.proxy_exchange.failed(error))
            if started:
                yield Failure(error.status, error.message)
            return
        except GeneratorExit:  # the client went away: it cancelled its request
            self.exchange = self.as_far_as_shown(self.proxy_exchange.cancelled())
            raise
        completion = exchange.completion
        if not started:
            yield self.start(completion)
        message = completion["choices"][0]["message"]
        own = message.get("content") or ""
        if own != last_text:  # an answer the proxy gave itself (the cap message), not the text just streamed
            yield from self.show(own, first=True)
        self.exchange = self.as_shown(exchange)
        for index, call in enumerate(message.get("tool_calls") or []):
            yield Call(index, call["id"], call["function"]["name"], call["function"].get("arguments") or "")
        yield End(completion["choices"][0].get("finish_reason") or "stop", completion.get("usage"))

    def as_far_as_shown(self, exchange):
        """An exchange that ended before its answer was complete, its answer the text the client had been sent."""
        return replace(exchange, answer="".join(self.shown) or None)

    def show(self, text, first):
        """Text for the client; the first text of another response than the one it read last begins a paragraph
        of its own, not the middle of the last one's sentence."""
        if first and self.shown and not self.shown[-1][-1:].isspace() and not text[:1].isspace():
            self.shown.append(PARAGRAPH)
            yield Text(PARAGRAPH)
        self.shown.append(text)
        yield Text(text)

    def as_shown(self, exchange):
        """The exchange with its answer's text as the client received it: every delta of the request, the ones of
        responses it never saw the calls of included."""
        if not self.shown:
            return exchange
        text = "".join(self.shown)
        completion = exchange.completion
        choice = completion["choices"][0]
        message = {**choice["message"], "content": text}
        completion = {**completion, "choices": [{**choice, "message": message}]}
        messages = (*exchange.messages[:-1], message)
        answer = text if exchange.answer is not None else None
        return replace(exchange, completion=completion, messages=messages, answer=answer)
