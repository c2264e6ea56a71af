"""What the policy proxy's tests share: a fake OpenAI-compatible upstream that records what the proxy sends it, the
app served for real (tests/live_http.serving) with an `openai` SDK client pointed at an agent's proxy, and the
client tool definitions those tests exchange. `completion` (tests/doubles) is imported from here too."""

import json
from contextlib import contextmanager

import openai

from store import agents as agent_store
from store import providers as provider_store
from tests.database import Database
from tests.doubles import ModelDouble
from tests.doubles import completion as completion  # the proxy tests import it from here
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


class FakeUpstream(ModelDouble):
    """The proxy's upstream: the one model double, answering whatever it is offered (as a model might), its queue of
    (status, body) replies or completions in `replies`."""

    def __init__(self, *replies):
        super().__init__(*replies, ignores_tools=True)

    @property
    def replies(self):
        return self.answers

    @replies.setter
    def replies(self, replies):
        self.answers = list(replies)


def add_upstream(app, base_url, provider_id="upstream", **fields):
    """A provider connection to an upstream served at `base_url` (no retries unless `fields` say), its key in the
    app's MODEL_ENVIRON."""
    app.config["MODEL_ENVIRON"] = {UPSTREAM_KEY: "sk-upstream-key"}
    connection = {"id": provider_id, "label": "Upstream", "base_url": f"{base_url}/v1", "api_key_env": UPSTREAM_KEY}
    db = Database(app.config["DATABASE_URL"])
    try:
        provider_store.create_provider(db, {**connection, "max_retries": 0, **fields})
    finally:
        db.close()


def add_held_agent(database, upstream_url, key_variable):
    """The agent "held" in the database (a URL or a SQLite file), its provider connection "held" the model server at
    `upstream_url` (tests.async_model_server.held_and_running), its key in the variable `key_variable`."""
    db = Database(database)
    try:
        connection = {"id": "held", "label": "Held", "base_url": f"{upstream_url}/v1", "api_key_env": key_variable}
        provider_store.create_provider(db, {**connection, "max_retries": 0})
        agent_store.save_agent(db, {"id": "held", "label": "Held", "provider": "held"}, known_tools=None)
    finally:
        db.close()


@contextmanager
def proxy_client(app, agent_id):
    """The app served on 127.0.0.1 and an openai SDK client whose base URL is the agent's proxy."""
    with serving(app) as base_url:
        client = openai.OpenAI(base_url=f"{base_url}/proxy/{agent_id}/v1", api_key="any key", max_retries=0)
        client.toolgate_url = base_url
        yield client


def chat_stream_lines(sdk, tools):
    """The lines of a streamed Chat Completions answer to USER, as an `openai` SDK client reads them."""
    with sdk.chat.completions.with_streaming_response.create(
        model="gpt-x", messages=[USER], tools=tools, stream=True
    ) as response:
        return list(response.iter_lines())


def streamed_text(response):
    """The text of a streamed Chat Completions answer as the proxy sent it (an httpx2 response), its events checked
    to be server-sent events that end with [DONE]."""
    assert response.headers["content-type"].startswith("text/event-stream"), response.text
    events = [line.removeprefix("data: ") for line in response.text.split("\n\n") if line]
    assert events[-1] == "[DONE]"
    return "".join(json.loads(event)["choices"][0]["delta"].get("content") or "" for event in events[:-1])


def tool_results(message, output=lambda call: f"uuid-of-{call.id}"):
    """The tool messages a client appends after running every call of an assistant message."""
    return [{"role": "tool", "tool_call_id": call.id, "content": output(call)} for call in message.tool_calls or []]
