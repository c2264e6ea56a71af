"""A proxied answer as a stream of pieces, whatever API the client streams it in.

The proxy hands a streaming client its answer as pieces: `Start` (the answer's id, model and creation time), `Text`
(text as the model writes it), `Call` (one whole tool call, only once its response has passed the gate), `End` (the
finish reason and the usage). Each API's module (engine.proxy.chat_completions, …) turns pieces into its own events;
`pieces_of` cuts an answer already complete into pieces, so a buffered answer and a live one stream alike.
"""

import json
from dataclasses import dataclass, field


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
    """Each event (a JSON-able dict) as a server-sent event; `named`: with its `type` as the event's name, as the
    Responses and Messages APIs send them."""
    for event in events:
        data = json.dumps(event, ensure_ascii=False)
        yield (f"event: {event['type']}\ndata: {data}\n\n" if named else f"data: {data}\n\n").encode()
