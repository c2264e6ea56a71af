"""The scripted model: an OpenAI-compatible chat-completions endpoint that replays an agent's script (SPEC §7).

It is a plain WSGI application, served in-process through `httpx2.WSGITransport`, so scripted runs take the same
`openai` SDK path as a real provider. It is stateless: the answer to a request depends on the request alone.

- Item N of the script answers a request that already holds N assistant messages.
- A request without tools never gets tool calls: it gets the first answer-only item at index ≥ N.
- An argument string may contain `{{CALL_ID}}`: it is replaced by the content of the tool message that
  answered that call id in the request (unknown ids are left as written). That lets a script place a
  component below the UUID that the previous placement returned.
- Its usage is an estimate, as a real server reports it: a token for every 4 bytes of the request body and of
  the reply.
"""

import json
import re
import time

from . import texts

REFERENCE = re.compile(r"\{\{\s*([A-Za-z0-9_\-.:]+)\s*\}\}")
BYTES_PER_TOKEN = 4


def default_call_id(response_number, call_number):
    return f"call_{response_number}_{call_number}"


def resolve_references(value, results):
    """`value` with each `{{CALL_ID}}` in its strings replaced by results[CALL_ID] (a call's tool message)."""
    if isinstance(value, str):
        return REFERENCE.sub(lambda match: results.get(match.group(1), match.group(0)), value)
    if isinstance(value, dict):
        return {key: resolve_references(item, results) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve_references(item, results) for item in value]
    return value


def tool_results(messages):
    """What a reference can name: each tool message's content by its tool_call_id."""
    return {
        message["tool_call_id"]: message.get("content") or ""
        for message in messages
        if message.get("role") == "tool" and message.get("tool_call_id")
    }


def scripted_reply(script, messages, tools_offered):
    """The assistant message (OpenAI chat format) the script gives to a request with these messages."""
    position = sum(1 for message in messages if message.get("role") == "assistant")
    if not tools_offered:
        content = next(
            (item["content"] for item in script[position:] if not item.get("tool_calls") and "content" in item),
            texts.FINAL_ANSWER_WITHOUT_TOOLS,
        )
        return {"role": "assistant", "content": content}
    if position >= len(script):
        return {"role": "assistant", "content": texts.SCRIPT_EXHAUSTED}
    item = script[position]
    reply = {"role": "assistant", "content": item.get("content")}
    calls = item.get("tool_calls") or []
    if calls:
        results = tool_results(messages)
        reply["tool_calls"] = [
            {
                "id": call.get("id") or default_call_id(position + 1, number),
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": _arguments_text(resolve_references(call.get("arguments", {}), results)),
                },
            }
            for number, call in enumerate(calls, start=1)
        ]
    return reply


def _estimated_tokens(byte_count):
    return -(-byte_count // BYTES_PER_TOKEN)


def _arguments_text(arguments):
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _halves(text):
    middle = len(text) // 2
    return [part for part in (text[:middle], text[middle:]) if part]


def stream_chunks(completion, include_usage):
    """A completion as the chunks a streaming server sends: the role, the text word by word, each call's id and
    name then its arguments in two halves, the finish reason, and the usage when the client asked for it."""
    head = {key: completion[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta, finish_reason=None):
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": word}) for word in re.findall(r"\S+\s*|\s+", message.get("content") or "")]
    for index, call in enumerate(message.get("tool_calls") or []):
        opening = {"index": index, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"]}}
        chunks.append(chunk({"tool_calls": [{**opening, "function": {**opening["function"], "arguments": ""}}]}))
        for part in _halves(call["function"]["arguments"]):
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}))
    chunks.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        chunks.append({**head, "choices": [], "usage": completion["usage"]})
    return chunks


class ScriptedModel:
    """WSGI app answering POST …/chat/completions from a fixed script."""

    def __init__(self, script):
        self.script = list(script)

    def __call__(self, environ, start_response):
        if environ.get("REQUEST_METHOD") != "POST" or not environ.get("PATH_INFO", "").endswith("/chat/completions"):
            return self._respond(start_response, "404 Not Found", {"error": {"message": "Not found."}})
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            raw_body = environ["wsgi.input"].read(length)
            body = json.loads(raw_body or b"{}")
            messages = body["messages"]
            if not isinstance(messages, list) or not all(isinstance(message, dict) for message in messages):
                raise TypeError("messages must be a list of objects")
        except (ValueError, KeyError, TypeError):
            return self._respond(start_response, "400 Bad Request", {"error": {"message": "Invalid request body."}})
        reply = scripted_reply(self.script, messages, bool(body.get("tools")))
        prompt_tokens = _estimated_tokens(len(raw_body))
        completion_tokens = _estimated_tokens(len(json.dumps(reply)))
        completion = {
            "id": f"scripted-{sum(1 for m in messages if m.get('role') == 'assistant') + 1}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or "scripted",
            "choices": [
                {
                    "index": 0,
                    "message": reply,
                    "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        if body.get("stream") is True:
            chunks = stream_chunks(completion, (body.get("stream_options") or {}).get("include_usage") is True)
            data = b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks) + b"data: [DONE]\n\n"
            start_response("200 OK", [("Content-Type", "text/event-stream"), ("Content-Length", str(len(data)))])
            return [data]
        return self._respond(start_response, "200 OK", completion)

    @staticmethod
    def _respond(start_response, status, payload):
        data = json.dumps(payload).encode()
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]
