"""At the round cap the request that forces an answer offers no tools, so it carries no `tools`, `tool_choice` nor
`parallel_tool_calls` (SPEC §4: OpenAI refuses the last without tools) — whether they come from the agent's settings
or from the client, in every API the proxy speaks and in a run Toolgate drives. Checked on what the fake upstream
received."""

from contextlib import contextmanager

import anthropic
import pytest

from tests.live_http import serving
from tests.proxy_support import PLACE, completion, proxy_client

TOOL_FIELDS = {"tools", "tool_choice", "parallel_tool_calls"}
# The agent asks for a tool and no parallel calls too: its settings are no more sent without tools than the client's.
CAPPED = {"max_rounds": 1, "tool_choice": "required", "parallel_tool_calls": False}
ASK = "Build a page with a hero."
ARGUMENTS = '{"component": "hero"}'


def put_canvas(client, **fields):
    agent = {"label": "Canvas", "provider": "upstream", "client_tools": {"place_components": {}}, **CAPPED, **fields}
    assert client.put("/api/agents/canvas", json=agent).status_code in (200, 201)


@contextmanager
def anthropic_client(app):
    with serving(app) as base_url:
        yield anthropic.Anthropic(base_url=f"{base_url}/proxy/canvas", api_key="any key", max_retries=0)


def chat_completions(app):
    history = [
        {"role": "user", "content": ASK},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "place_components", "arguments": ARGUMENTS}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "uuid-1"},
    ]
    with proxy_client(app, "canvas") as sdk:
        answer = sdk.chat.completions.create(
            model="m", messages=history, tools=[PLACE], tool_choice="required", parallel_tool_calls=False
        )
    return answer.choices[0].message.content


def responses(app):
    history = [
        {"role": "user", "content": ASK},
        {"type": "function_call", "call_id": "c1", "name": "place_components", "arguments": ARGUMENTS},
        {"type": "function_call_output", "call_id": "c1", "output": "uuid-1"},
    ]
    with proxy_client(app, "canvas") as sdk:
        answer = sdk.responses.create(
            model="m",
            input=history,
            tools=[{"type": "function", **PLACE["function"]}],
            tool_choice="required",
            parallel_tool_calls=False,
        )
    return answer.output_text


def messages(app):
    history = [
        {"role": "user", "content": ASK},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "place_components", "input": {"component": "hero"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "uuid-1"}]},
    ]
    place = {"name": "place_components", "input_schema": PLACE["function"]["parameters"]}
    with anthropic_client(app) as sdk:
        answer = sdk.messages.create(
            model="claude-x",
            max_tokens=1024,
            messages=history,
            tools=[place],
            tool_choice={"type": "any", "disable_parallel_tool_use": True},
        )
    return answer.content[0].text


@pytest.mark.parametrize("api", [chat_completions, responses, messages])
def test_the_proxys_forced_request_at_the_cap_drops_the_clients_tool_choice_and_parallel_tool_calls(
    app, client, upstream, api
):
    put_canvas(client)
    upstream.replies = [completion("The hero is placed.")]

    assert api(app) == "The hero is placed."
    [body] = upstream.bodies
    assert TOOL_FIELDS.isdisjoint(body), sorted(TOOL_FIELDS & set(body))
    assert body["messages"][-1]["role"] == "tool"


def test_a_runs_forced_request_at_the_cap_carries_none_of_the_agents_tool_settings(client, upstream):
    agent = {"label": "Types", "provider": "upstream", "model": "m", "tools": {"list_entity_types": {}}, **CAPPED}
    assert client.put("/api/agents/types", json=agent).status_code == 201
    upstream.replies = [completion(calls=[("c1", "list_entity_types", {})]), completion("Four types.")]

    run = client.post("/api/agents/types/runs", json={"message": "Which types?"}).json

    assert (run["stop_reason"], run["answer"]) == ("round_cap", "Four types.")
    offered, forced = upstream.bodies
    assert (offered["tool_choice"], offered["parallel_tool_calls"]) == ("required", False)
    assert TOOL_FIELDS.isdisjoint(forced), sorted(TOOL_FIELDS & set(forced))
