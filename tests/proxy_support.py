"""What the policy proxy's tests share: a fake OpenAI-compatible upstream that records what the proxy sends it, the
app served for real (tests/live_http.serving) with an `openai` SDK client pointed at an agent's proxy, and the
client tool definitions and completions those tests exchange."""

import json
import threading
from contextlib import contextmanager

import openai

from store import providers as provider_store
from store.db import open_db
from tests.live_http import serving

UPSTREAM_KEY = "UPSTREAM_API_KEY"
PLACE = {
    "type": "function",
    "function": {
        "name": "place_components",
        "description": "Place components on the canvas, below the component whose UUID is given.",
        "parameters": {
            "type": "object",
            "properties": {
                "component": {"type": "string", "description": "What to place."},
                "region": {"type": "string"},
                "below_uuid": {"type": "string"},
            },
            "required": ["component"],
        },
    },
}
GET_LAYOUT = {"type": "function", "function": {"name": "get_layout", "description": "The page's components."}}
# The canvas agent's restriction, the scripted answers that meet it and the message it rejects with.
RESTRICTED = (
    'Error: The tool "place_components" may only be called once per response. None of the tool calls in this '
    "response were executed. Call it once, wait for its result, then call it again if you need to."
)
USER = {"role": "user", "content": "Build a page with a hero and a text."}
RESTRICT = {"place_components": {"restrict_multiple_calls": True}}
TWO_PLACEMENTS = {
    "tool_calls": [
        {"name": "place_components", "arguments": {"component": "hero"}},
        {"name": "place_components", "arguments": {"component": "text"}},
    ]
}
ONE_PLACEMENT = {"tool_calls": [{"id": "hero", "name": "place_components", "arguments": {"component": "hero"}}]}


def completion(content=None, calls=(), usage=None, finish_reason=None):
    """A chat-completions answer; `calls` are (id, name, arguments) with arguments a dict or a raw string."""
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for call_id, name, arguments in calls
        ]
    body = {
        "id": "chatcmpl-upstream",
        "object": "chat.completion",
        "created": 1,
        "model": "upstream-model",
        "system_fingerprint": "fp_upstream",
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason or ("tool_calls" if calls else "stop")}
        ],
    }
    if usage is not None:
        body["usage"] = dict(zip(("prompt_tokens", "completion_tokens", "total_tokens"), usage, strict=True))
    return body


class FakeUpstream:
    """An OpenAI-compatible chat-completions server (WSGI): each request gets the next queued (status, body), the
    last one the rest; every request's path, headers and JSON body are kept in `requests`."""

    def __init__(self, *replies):
        self.replies = [reply if isinstance(reply, tuple) else (200, reply) for reply in replies]
        self.requests = []
        self._lock = threading.Lock()

    @property
    def bodies(self):
        return [request["body"] for request in self.requests]

    def __call__(self, environ, start_response):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = json.loads(environ["wsgi.input"].read(length) or b"null")
        with self._lock:
            headers = {key[5:].lower(): value for key, value in environ.items() if key.startswith("HTTP_")}
            self.requests.append({"path": environ["PATH_INFO"], "headers": headers, "body": body})
            status, reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        data = json.dumps(reply).encode()
        start_response(f"{status} X", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]


def add_upstream(app, base_url, provider_id="upstream", **fields):
    """A provider connection to an upstream served at `base_url` (no retries unless `fields` say), its key in the
    app's MODEL_ENVIRON."""
    app.config["MODEL_ENVIRON"] = {UPSTREAM_KEY: "sk-upstream-key"}
    connection = {"id": provider_id, "label": "Upstream", "base_url": f"{base_url}/v1", "api_key_env": UPSTREAM_KEY}
    db = open_db(app.config["DATABASE"])
    try:
        provider_store.create_provider(db, {**connection, "max_retries": 0, **fields})
    finally:
        db.close()


@contextmanager
def proxy_client(app, agent_id):
    """The app served on 127.0.0.1 and an openai SDK client whose base URL is the agent's proxy."""
    with serving(app) as base_url:
        client = openai.OpenAI(base_url=f"{base_url}/proxy/{agent_id}/v1", api_key="any key", max_retries=0)
        client.toolgate_url = base_url
        yield client


def tool_results(message, output=lambda call: f"uuid-of-{call.id}"):
    """The tool messages a client appends after running every call of an assistant message."""
    return [{"role": "tool", "tool_call_id": call.id, "content": output(call)} for call in message.tool_calls or []]
