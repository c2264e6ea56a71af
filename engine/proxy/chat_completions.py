"""OpenAI's Chat Completions API, as the proxy speaks it: the canonical form, so its translation is the identity.

Every API the proxy speaks is one module like this one: `read(body, stored)` turns the client's body into a
ProxyRequest (ValidationError naming the field; `stored(response id)` gives a response the proxy kept, or None),
`answer(exchange, request)` the exchange's chat completion into the body the client gets, `stream(pieces, request)`
the answer's pieces (engine.proxy.stream) into its stream's bytes, `error_body(...)` an error into the API's error
shape, and `kept(exchange, request)` is what to keep of an answer for later requests to refer to (None for an API
that never refers back). The gate, the re-asks, the counts and the recording never know which API the client spoke.
"""

from .request import CHAT_COMPLETIONS, read_request
from .stream import TEXT, Call, End, Failure, KeepAlive, Start, Text, TextEvent, TextTemplate, server_sent_events

NAME = CHAT_COMPLETIONS


def read(body, stored=None):
    """`stored`: the responses the proxy kept, which only the Responses API refers to."""
    return read_request(body)


def answer(exchange, request):
    return exchange.completion


def kept(exchange, request):
    """Nothing: a Chat Completions client sends its whole conversation with every request."""
    return None


def completion_chunks(pieces, include_usage=False):
    """The `chat.completion.chunk`s of an answer: the role, each text delta, one per tool call, the finish reason;
    then, when the client asked for it (stream_options.include_usage), one without choices that carries the usage.
    Each text delta is a TextEvent, in a chunk written once for the stream (engine.proxy.stream.TextTemplate)."""
    head = texts = None

    def chunk(delta, finish_reason=None):
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}

    for piece in pieces:
        if isinstance(piece, Start):
            head = {"id": piece.id, "object": "chat.completion.chunk", "created": piece.created, "model": piece.model}
            head.update(piece.extra)
            if include_usage:
                head["usage"] = None
            texts = TextTemplate(chunk({"content": TEXT}))
            yield chunk({"role": "assistant", "content": ""})
        elif isinstance(piece, Text):
            yield TextEvent(texts, piece.text)
        elif isinstance(piece, Call):
            function = {"name": piece.name, "arguments": piece.arguments}
            yield chunk(
                {"tool_calls": [{"index": piece.index, "id": piece.id, "type": "function", "function": function}]}
            )
        elif isinstance(piece, Failure):  # the upstream failed mid-stream: OpenAI's streams end with the error
            yield error_body(piece.status, piece.message, error_type="upstream_error")
        elif isinstance(piece, KeepAlive):
            yield piece
        elif isinstance(piece, End):
            yield chunk({}, piece.finish_reason)
            if include_usage:
                yield {**head, "choices": [], "usage": piece.usage}


def stream(pieces, request):
    yield from server_sent_events(completion_chunks(pieces, request.include_usage))
    yield b"data: [DONE]\n\n"


def error_body(status, message, error_type=None, code=None, param=None):
    """OpenAI's error shape, which OpenAI clients read."""
    error_type = error_type or ("invalid_request_error" if status < 500 else "server_error")
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}
