"""A proxied answer streamed (`stream: true`): the proxy reads the whole upstream answer and gates it first, so the
stream is the compliant completion cut into OpenAI's `chat.completion.chunk` events, as server-sent events ending
in `data: [DONE]`."""

import json


def completion_chunks(completion, include_usage=False):
    """The chunks of a chat completion: the role, the text, one per tool call, the finish reason; then, when the
    client asked for it (stream_options.include_usage), one without choices that carries the usage."""
    choice = completion["choices"][0]
    message = choice["message"]
    head = {
        "id": completion.get("id"),
        "object": "chat.completion.chunk",
        "created": completion.get("created"),
        "model": completion.get("model"),
    }
    if "system_fingerprint" in completion:
        head["system_fingerprint"] = completion["system_fingerprint"]
    if include_usage:
        head["usage"] = None

    def chunk(delta, finish_reason=None):
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    if message.get("content"):
        chunks.append(chunk({"content": message["content"]}))
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        delta = {"index": index, "id": call["id"], "type": "function", "function": dict(function)}
        chunks.append(chunk({"tool_calls": [delta]}))
    chunks.append(chunk({}, choice.get("finish_reason") or "stop"))
    if include_usage:
        chunks.append({**head, "choices": [], "usage": completion.get("usage")})
    return chunks


def server_sent_events(completion, include_usage=False):
    """The stream's bytes, event by event."""
    for chunk in completion_chunks(completion, include_usage):
        yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode()
    yield b"data: [DONE]\n\n"
