"""The policy proxy as an app that speaks Anthropic's Messages API meets it: the `anthropic` SDK, its base URL the
agent's proxy (/proxy/<agent id>: the SDK adds /v1/messages), with the agent's scripted model or a fake
OpenAI-compatible server upstream. Whether it asks with `messages.create`, `messages.stream` or `stream=True`, it
only ever receives tool_use blocks that passed the gate, and every error comes in Anthropic's shape."""

import json
from contextlib import contextmanager

import anthropic
import httpx2
import pytest

from engine import texts
from store import agents as agent_store
from store import tokens as token_store
from tests.database import Database
from tests.live_http import serving
from tests.proxy_support import (
    ONE_PLACEMENT,
    PLACE,
    RESTRICT,
    RESTRICTED,
    TWO_PLACEMENTS,
    USER,
    completion,
)
from tests.support import make_app

pytestmark = pytest.mark.both_engines


PLACE_TOOL = {
    "name": "place_components",
    "description": PLACE["function"]["description"],
    "input_schema": PLACE["function"]["parameters"],
}
WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
ASK = {"model": "claude-x", "max_tokens": 1024, "tools": [PLACE_TOOL]}
WAYS = ["create", "stream", "stream=True"]


def put_agent(client, agent_id="canvas", **fields):
    response = client.put(f"/api/agents/{agent_id}", json={"label": "Canvas", "client_tools": RESTRICT, **fields})
    assert response.status_code in (200, 201), response.json


@contextmanager
def anthropic_client(app, agent_id="canvas"):
    """The app served on 127.0.0.1 and an anthropic SDK client whose base URL is the agent's proxy."""
    with serving(app) as base_url:
        yield anthropic.Anthropic(base_url=f"{base_url}/proxy/{agent_id}", api_key="any key", max_retries=0)


def ask(sdk, client, way, **params):
    """(the message the client reads, the events it read when it streamed, the id of the run recorded), the way a
    client asks: `messages.create`, `messages.stream` (its final message), or `stream=True` (the raw events, read
    into a message here as a client would). A non-streamed answer names its run in X-Toolgate-Run; a streamed one's
    is the agent's newest run (a live stream starts before its run is recorded)."""
    params = {**ASK, **params}
    if way == "create":
        raw = sdk.messages.with_raw_response.create(**params)
        return raw.parse(), [], int(raw.headers["X-Toolgate-Run"])
    if way == "stream":
        with sdk.messages.stream(**params) as stream:
            events = list(stream)
            message = stream.get_final_message()
    else:
        events = list(sdk.messages.create(stream=True, **params))
        message = message_from(events)
    return message, events, client.get("/api/runs?agent=canvas").json["runs"][0]["id"]


def message_from(events):
    """A `stream=True` client's reading of the raw events: the message, its blocks built from their deltas."""
    message = events[0].message.model_copy(deep=True)
    partial = {}
    for event in events[1:]:
        if event.type == "content_block_start":
            message.content.append(event.content_block.model_copy(deep=True))
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            message.content[event.index].text += event.delta.text
        elif event.type == "content_block_delta":
            partial[event.index] = partial.get(event.index, "") + event.delta.partial_json
        elif event.type == "message_delta":
            message.stop_reason, message.usage.output_tokens = event.delta.stop_reason, event.usage.output_tokens
    for index, text in partial.items():
        message.content[index].input = json.loads(text)
    return message


def tool_uses(content):
    return [(block.id, block.name, block.input) for block in content if block.type == "tool_use"]


def results_of(message, output=lambda block: f"uuid-of-{block.id}"):
    """The user turn a client sends after running every tool_use of a message."""
    blocks = [block for block in message.content if block.type == "tool_use"]
    content = [{"type": "tool_result", "tool_use_id": block.id, "content": output(block)} for block in blocks]
    return {"role": "user", "content": content}


# --- The restriction, on the scripted model --------------------------------------------------------------------


@pytest.mark.parametrize("way", WAYS)
def test_a_restricted_tool_called_twice_reaches_the_client_as_one_tool_use_after_one_hidden_re_ask(app, client, way):
    put_agent(client, script=[TWO_PLACEMENTS, ONE_PLACEMENT, {"content": "Placed."}])
    with anthropic_client(app) as sdk:
        message, events, run_id = ask(sdk, client, way, messages=[USER])

    assert tool_uses(message.content) == [("hero", "place_components", {"component": "hero"})]
    assert message.stop_reason == "tool_use" and message.role == "assistant" and message.id.startswith("msg_")
    if events:
        kinds = [event.type for event in events if event.type in RAW_EVENTS]
        assert kinds == [*RAW_EVENTS[:2], "content_block_delta", *RAW_EVENTS[3:]]
    run = client.get(f"/api/runs/{run_id}").json
    assert (run["source"], run["api"], run["model_requests"]) == ("proxy", "messages", 2)
    hidden, shown = run["rounds"]
    assert hidden["shown_to_client"] is False and shown["shown_to_client"] is True
    assert [(call["status"], call["reason"], call["message"]) for call in hidden["calls"]] == [
        ("rejected", "restricted_repeat", RESTRICTED)
    ] * 2
    page = client.get(f"/runs/{run_id}").get_data(as_text=True)
    round_one = page.split('id="round-1-heading"')[1].split('id="round-2-heading"')[0]
    assert "Not shown to the client" in round_one
    assert round_one.count("Restricted tool called more than once") == 2
    assert "Not shown to the client" not in page.split('id="round-2-heading"')[1]


RAW_EVENTS = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
]


@pytest.mark.parametrize("way", WAYS)
def test_three_requests_of_one_conversation_are_one_run_with_the_clients_results(app, client, way):
    below_hero = {"name": "place_components", "arguments": {"component": "text", "below_uuid": "{{hero}}"}}
    put_agent(client, script=[TWO_PLACEMENTS, ONE_PLACEMENT, {"tool_calls": [below_hero]}, {"content": "Done."}])
    messages, run_ids = [USER], []
    with anthropic_client(app) as sdk:
        for _ in range(3):
            message, _, run_id = ask(sdk, client, way, messages=messages)
            run_ids.append(run_id)
            messages += [{"role": "assistant", "content": message.content}]
            if message.stop_reason == "tool_use":
                messages.append(results_of(message))

    assert message.content[0].text == "Done." and message.stop_reason == "end_turn"
    assert len(set(run_ids)) == 1
    # The model remembered its first, hidden attempt: the second placement went below the UUID the client returned.
    [(second_id, _, second)] = tool_uses(messages[3]["content"])
    assert second == {"component": "text", "below_uuid": "uuid-of-hero"}
    run = client.get(f"/api/runs/{run_ids[0]}").json
    assert (run["stop_reason"], run["answer"], run["message"], run["api"]) == (
        "answered",
        "Done.",
        USER["content"],
        "messages",
    )
    assert [round_["shown_to_client"] for round_ in run["rounds"]] == [False, True, True, True]
    ran = [call for round_ in run["rounds"] for call in round_["calls"] if call["status"] == "executed"]
    assert [(call["run_by"], call["output"]) for call in ran] == [
        ("client", "uuid-of-hero"),
        ("client", f"uuid-of-{second_id}"),
    ]
    assert client.get(f"/runs/{run_ids[0]}").get_data(as_text=True).count("Run by the client") == 2
    assert client.get("/api/runs").json["total"] == 1


# --- On a fake upstream: what the proxy sends, and what it does with the answer ----------------------------------


def test_the_conversation_goes_upstream_in_chat_completions_and_forced_values_reach_the_tool_use_input(
    app, client, upstream
):
    rules = {"region": {"action": "force_value", "values": ["footer"], "hide": True}}
    put_agent(client, provider="upstream", client_tools={"place_components": {"argument_rules": rules}})
    upstream.replies = [(200, completion("Placing it.", calls=[("c2", "place_components", {"component": "text"})]))]
    history = [
        USER,
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "A hero first.", "signature": "sig"},
                {"type": "text", "text": "First the hero."},
                {"type": "tool_use", "id": "c1", "name": "place_components", "input": {"component": "hero"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "c1",
                    "content": [{"type": "text", "text": "No canvas."}],
                    "is_error": True,
                },
                {"type": "text", "text": "Try a text instead."},
            ],
        },
    ]
    with anthropic_client(app) as sdk:
        raw = sdk.messages.with_raw_response.create(
            **{**ASK, "tools": [WEB_SEARCH, PLACE_TOOL]},
            system=[{"type": "text", "text": "You build pages."}, {"type": "text", "text": "Be brief."}],
            messages=history,
            tool_choice={"type": "any", "disable_parallel_tool_use": True},
            extra_body={"temperature": 0.2},  # the SDK's current release no longer sends it; older clients do
            stop_sequences=["END"],
            metadata={"user_id": "u-1"},
        )
        message = raw.parse()

    assert message.content[0].text == "Placing it."
    assert tool_uses(message.content) == [("c2", "place_components", {"component": "text", "region": "footer"})]
    body = upstream.bodies[0]
    assert body["messages"] == [
        {"role": "system", "content": "You build pages.\n\nBe brief."},
        USER,
        {
            "role": "assistant",
            "content": "First the hero.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "place_components", "arguments": '{"component": "hero"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Error: No canvas."},
        {"role": "user", "content": [{"type": "text", "text": "Try a text instead."}]},
    ]
    assert [tool["function"]["name"] for tool in body["tools"]] == ["place_components"]
    assert (body["tool_choice"], body["parallel_tool_calls"]) == ("required", False)
    assert (body["max_tokens"], body["temperature"], body["stop"]) == (1024, 0.2, ["END"])
    assert "metadata" not in body and "system" not in body and "stream" not in body
    run = client.get(f"/api/runs/{raw.headers['X-Toolgate-Run']}").json
    assert run["left_out_tools"] == ["web_search_20250305"]


PLACED = {"type": "tool_use", "id": "c1", "name": "place_components", "input": {"component": "hero"}}
REMINDER = "<system-reminder>The user opened page.html in the IDE.</system-reminder>"


SCREENSHOT = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}


@pytest.mark.parametrize(
    "beside",
    [[], [{"type": "text", "text": "Make it blue."}], [{"type": "text", "text": REMINDER}], [SCREENSHOT]],
    ids=["alone", "with a text block", "with a reminder", "with an image"],
)
def test_at_the_cap_a_tool_result_gets_the_cap_message_whatever_text_stands_beside_it(app, client, upstream, beside):
    put_agent(client, provider="upstream", max_rounds=1, on_round_cap="message")
    upstream.replies = [(200, completion(calls=[("c2", "place_components", {"component": "text"})]))]
    result = {"type": "tool_result", "tool_use_id": "c1", "content": "uuid-1", "cache_control": {"type": "ephemeral"}}
    history = [USER, {"role": "assistant", "content": [PLACED]}, {"role": "user", "content": [result, *beside]}]
    with anthropic_client(app) as sdk:
        raw = sdk.messages.with_raw_response.create(**ASK, messages=history)
        message = raw.parse()

    assert [block.type for block in message.content] == ["text"] and message.stop_reason == "end_turn"
    assert message.content[0].text == texts.MAX_ROUNDS
    assert upstream.bodies == []
    run = client.get(f"/api/runs/{raw.headers['X-Toolgate-Run']}").json
    assert (run["stop_reason"], run["message"], run["model_requests"]) == ("round_cap", USER["content"], 0)


def drive_with_reminders(app, client, limit=20):
    """A Claude Code-like client: each request after the first sends the results of every tool_use it got with a
    reminder block beside them and a system message after them. (the messages it got, the runs they joined)."""
    messages, got, runs = [USER], [], set()
    with anthropic_client(app) as sdk:
        for number in range(limit):
            message, _, run_id = ask(sdk, client, "create", messages=messages)
            got.append(message)
            runs.add(run_id)
            if message.stop_reason != "tool_use":
                return got, runs
            reminder = {"type": "text", "text": f"<system-reminder>Step {number} done.</system-reminder>"}
            results = results_of(message)
            messages += [
                {"role": "assistant", "content": message.content},
                {**results, "content": [*results["content"], reminder]},
                {"role": "system", "content": "The todo list changed."},
            ]
    raise AssertionError("the session never ended")


def test_a_long_session_with_reminders_beside_every_result_is_held_to_the_cap(app, client):
    script = [{"tool_calls": [{"name": "place_components", "arguments": {"component": f"c{n}"}}]} for n in range(12)]
    put_agent(client, max_rounds=10, on_round_cap="message", script=script)
    got, runs = drive_with_reminders(app, client)

    assert [message.stop_reason for message in got] == ["tool_use"] * 10 + ["end_turn"]
    assert got[-1].content[0].text == texts.MAX_ROUNDS
    [run_id] = runs
    run = client.get(f"/api/runs/{run_id}").json
    assert (run["stop_reason"], len(run["rounds"]), run["model_requests"]) == ("round_cap", 10, 10)
    assert run["message"] == USER["content"]


def test_the_per_run_limits_hold_with_reminders_beside_the_results(app, client):
    place = [{"name": "place_components", "arguments": {"component": name}} for name in ("hero", "text", "hero")]
    script = [{"tool_calls": [call]} for call in place] + [{"content": "Done."}]
    put_agent(client, client_tools={"place_components": {"max_calls_per_run": 2}}, script=script)
    got, runs = drive_with_reminders(app, client)

    assert [message.stop_reason for message in got] == ["tool_use", "tool_use", "end_turn"]
    run = client.get(f"/api/runs/{runs.pop()}").json
    hidden = [round_ for round_ in run["rounds"] if not round_["shown_to_client"]]
    assert [(call["reason"], call["message"]) for call in hidden[0]["calls"]] == [
        ("call_limit", "Error: place_components may be called at most 2 times per run.")
    ]
    put_agent(client, client_tools={"place_components": {"max_identical_calls": 1}}, script=script)
    got, runs = drive_with_reminders(app, client)
    assert [message.stop_reason for message in got] == ["tool_use", "tool_use", "end_turn"]
    hidden = [
        round_ for round_ in client.get(f"/api/runs/{runs.pop()}").json["rounds"] if not round_["shown_to_client"]
    ]
    assert [call["reason"] for call in hidden[0]["calls"]] == ["repeated_call"]


def test_a_users_images_go_upstream_as_image_parts_beside_its_text(app, client, upstream):
    put_agent(client, provider="upstream")
    upstream.replies = [(200, completion("A red button."))]
    linked = {"type": "image", "source": {"type": "url", "url": "https://example.com/b.png"}}
    said = {"role": "user", "content": [{"type": "text", "text": "What is on these?"}, SCREENSHOT, linked]}
    with anthropic_client(app) as sdk:
        message = sdk.messages.create(**ASK, messages=[said])

    assert message.content[0].text == "A red button."
    assert upstream.bodies[0]["messages"][-1]["content"] == [
        {"type": "text", "text": "What is on these?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "image_url", "image_url": {"url": "https://example.com/b.png"}},
    ]
    assert client.get("/api/runs").json["runs"][0]["message"] == "What is on these?"


def test_the_images_of_a_tool_result_go_upstream_after_the_results_and_its_text_in_the_tool_message(
    app, client, upstream
):
    put_agent(client, provider="upstream")
    upstream.replies = [(200, completion("A login form."))]
    read = {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "/src/screen.png"}}
    result = {"type": "tool_result", "tool_use_id": "r1", "content": [{"type": "text", "text": "PNG"}, SCREENSHOT]}
    history = [USER, {"role": "assistant", "content": [read]}, {"role": "user", "content": [result]}]
    with anthropic_client(app) as sdk:
        message = sdk.messages.create(**ASK, messages=history)

    assert message.content[0].text == "A login form."
    assert upstream.bodies[0]["messages"][-2:] == [
        {"role": "tool", "tool_call_id": "r1", "content": "PNG"},
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}],
        },
    ]
    assert client.get("/api/runs").json["runs"][0]["message"] == USER["content"]  # the results' turn goes on


# The beta features Claude Code 2.1 announces (`anthropic-beta`), among them those its default models need.
CLAUDE_CODE_BETAS = (
    "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,"
    "per-turn-control-2026-07-01,mid-conversation-tool-changes-2026-07-01"
)


def test_what_claude_code_sends_today_is_served_and_what_the_upstream_cannot_serve_is_recorded(app, client, upstream):
    put_agent(client, provider="upstream")
    upstream.replies = [(200, completion("Placed."))]
    environment = [
        {"type": "text", "text": "# Environment\nWorking directory: /src", "cache_control": {"type": "ephemeral"}}
    ]
    history = [
        {"role": "user", "content": [{"type": "text", "text": REMINDER}, {"type": "text", "text": "Build a page."}]},
        {"role": "system", "content": environment},
        # A tool of an earlier request, no longer among the tools sent (the tools changed mid-conversation).
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Glob", "input": {"pattern": "*"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "page.html"}]},
        {"role": "system", "content": "The tools changed."},
    ]
    left_out = {
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
        "output_config": {"effort": "high"},
    }
    with anthropic_client(app) as sdk:
        raw = sdk.messages.with_raw_response.create(
            **ASK,
            system=[{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
            messages=history,
            metadata={"user_id": "u-1"},
            extra_headers={"anthropic-beta": CLAUDE_CODE_BETAS},
            extra_body=left_out,
        )
        message = raw.parse()

    assert message.content[0].text == "Placed." and message.stop_reason == "end_turn"
    body = upstream.bodies[0]
    assert [(sent["role"], sent.get("content")) for sent in body["messages"]] == [
        ("system", "You are Claude Code."),
        ("user", [{"type": "text", "text": REMINDER}, {"type": "text", "text": "Build a page."}]),
        ("system", "# Environment\nWorking directory: /src"),
        ("assistant", ""),
        ("tool", "page.html"),
        ("system", "The tools changed."),
    ]
    assert body["messages"][3]["tool_calls"][0]["function"]["name"] == "Glob"
    assert [tool["function"]["name"] for tool in body["tools"]] == ["place_components"]
    assert not {"thinking", "context_management", "output_config", "metadata"} & set(body)
    run_id = raw.headers["X-Toolgate-Run"]
    run = client.get(f"/api/runs/{run_id}").json
    assert sorted(run["left_out_fields"]) == sorted(left_out) and run["message"] == "Build a page."
    page = client.get(f"/runs/{run_id}").get_data(as_text=True)
    assert "Fields left out" in page and "<code>context_management</code>" in page


def test_usage_and_a_cut_off_answer_read_as_anthropics(app, client, upstream):
    put_agent(client, provider="upstream")
    upstream.replies = [(200, completion("The page is half", usage=(12, 30, 42), finish_reason="length"))]
    with anthropic_client(app) as sdk:
        message = sdk.messages.create(**ASK, messages=[USER])
    assert message.stop_reason == "max_tokens" and message.stop_sequence is None
    assert (message.usage.input_tokens, message.usage.output_tokens) == (12, 30)


# --- Errors, in Anthropic's shape ------------------------------------------------------------------------------


def test_an_upstream_500_reaches_the_client_as_a_500_in_anthropics_shape_and_the_run_says_so(app, client, upstream):
    put_agent(client, provider="upstream")
    upstream.replies = [(500, {"error": {"message": "The engine is overloaded.", "type": "server_error"}})]
    with anthropic_client(app) as sdk, pytest.raises(anthropic.InternalServerError) as raised:
        sdk.messages.create(**ASK, messages=[USER])

    error = raised.value
    message = "The model endpoint answered HTTP 500: The engine is overloaded."
    assert error.status_code == 500
    assert error.body == {"type": "error", "error": {"type": "api_error", "message": message}}
    run = client.get(f"/api/runs/{error.response.headers['X-Toolgate-Run']}").json
    assert run["stop_reason"] == "error" and run["error"] == message and run["api"] == "messages"


def with_result(block):
    return {**ASK, "messages": [USER, {"role": "user", "content": [block]}]}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": "m", "messages": [USER]}, "max_tokens: is required"),
        (
            {**ASK, "messages": [{"role": "robot", "content": "hi"}]},
            "messages[0].role: must be user, assistant or system",
        ),
        (
            {**ASK, "messages": [USER, {"role": "system", "content": [{"type": "image"}]}]},
            "messages[1].content[0]: image blocks cannot be sent",
        ),
        (with_result({"type": "tool_result", "content": "x"}), "messages[1].content[0].tool_use_id: is required"),
        (
            with_result({"type": "image", "source": {"type": "file", "file_id": "file_1"}}),
            'messages[1].content[0].source: must be {"type": "base64", "media_type", "data"} or {"type": "url"',
        ),
        (
            with_result({"type": "tool_result", "tool_use_id": "a", "content": [{"type": "image"}]}),
            'messages[1].content[0].content[0].source: must be {"type": "base64", "media_type", "data"}',
        ),
        (
            with_result({"type": "tool_result", "tool_use_id": "a", "content": [{"type": "document"}]}),
            "messages[1].content[0].content[0]: document blocks cannot be sent",
        ),
        (
            {**ASK, "messages": [USER], "tools": [WEB_SEARCH, {"name": "f", "input_schema": {"type": 5}}]},
            "tools[1].input_schema: is not a valid JSON Schema",
        ),
        ({**ASK, "messages": [USER], "tools": [{"name": "a b", "input_schema": {}}]}, "tools[0].name: must be"),
        (
            {**ASK, "messages": [USER], "tool_choice": {"type": "tool", "name": "other"}},
            "tool_choice.name: must name one of the tools sent",
        ),
    ],
)
def test_a_bad_body_is_a_400_in_anthropics_shape_naming_the_field(app, client, body, message):
    put_agent(client, script=[{"content": "Hi"}])
    with anthropic_client(app) as sdk, pytest.raises(anthropic.BadRequestError) as raised:
        sdk.post("/v1/messages", body=body, cast_to=object)
    assert raised.value.body["type"] == "error" and raised.value.body["error"]["type"] == "invalid_request_error"
    assert raised.value.body["error"]["message"].startswith(message)
    assert client.get("/api/runs").json["total"] == 0


def uses(*ids):
    blocks = [{"type": "tool_use", "id": call_id, "name": "place_components", "input": {}} for call_id in ids]
    return {"role": "assistant", "content": blocks}


def results(*ids, text=()):
    blocks = [{"type": "tool_result", "tool_use_id": call_id, "content": "uuid"} for call_id in ids]
    return {"role": "user", "content": [*blocks, *({"type": "text", "text": said} for said in text)]}


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([USER, uses("a"), results("z")], "messages[2].content[0].tool_use_id: answers no call"),
        ([USER, uses("a"), results("a", "a")], "messages[2].content[1].tool_use_id: answers a call that already"),
        ([USER, uses("a", "b"), results("a", text=["Go on."])], "messages[1].content[1].id: has no result"),
        ([USER, uses("a", "a"), results("a", "a")], "messages[1].content[1].id: is the id of an earlier call"),
    ],
    ids=["answers no call", "answers a call twice", "leaves a call unanswered", "shares an id"],
)
def test_tool_results_that_do_not_answer_each_call_once_are_refused_and_never_sent_upstream(
    app, client, upstream, messages, message
):
    put_agent(client, provider="upstream")
    with anthropic_client(app) as sdk, pytest.raises(anthropic.BadRequestError) as raised:
        sdk.messages.create(**ASK, messages=messages)
    assert raised.value.body["type"] == "error" and raised.value.body["error"]["type"] == "invalid_request_error"
    assert raised.value.body["error"]["message"].startswith(message)
    assert upstream.bodies == [] and client.get("/api/runs").json["total"] == 0


def test_errors_outside_the_route_come_in_anthropics_shape_under_messages_and_openais_elsewhere(app, client):
    put_agent(client, script=[{"content": "Hi"}])
    app.config["MAX_CONTENT_LENGTH"] = 4096
    with serving(app) as base_url, httpx2.Client(base_url=base_url) as http:
        unknown_agent = http.post("/proxy/nobody/v1/messages", json={**ASK, "messages": [USER]})
        not_json = http.post("/proxy/canvas/v1/messages", content=b"{}", headers={"Content-Type": "text/plain"})
        not_served = http.post("/proxy/canvas/v1/messages/count_tokens", json={"messages": [USER]})
        too_large = http.post("/proxy/canvas/v1/messages", json={**ASK, "messages": [{**USER, "content": "x" * 5000}]})
        other_host = http.post(
            "/proxy/canvas/v1/messages", json={**ASK, "messages": [USER]}, headers={"Host": "a.example"}
        )
        chat = http.get("/proxy/canvas/v1/embeddings")

    expected = [(unknown_agent, 404, "not_found_error"), (not_json, 415, "invalid_request_error")]
    expected += [(not_served, 404, "not_found_error"), (too_large, 413, "request_too_large")]
    expected.append((other_host, 400, "invalid_request_error"))
    for response, status, error_type in expected:
        assert response.status_code == status and response.json()["type"] == "error"
        assert response.json()["error"]["type"] == error_type and response.json()["error"]["message"]
    assert "TOOLGATE_ALLOWED_HOSTS" in other_host.json()["error"]["message"]
    assert set(chat.json()["error"]) == {"message", "type", "param", "code"}


# --- Access -----------------------------------------------------------------------------------------------------


def test_with_the_login_on_an_api_token_is_the_key_as_x_api_key_or_a_bearer_token(tmp_path):
    app = make_app(tmp_path, ADMIN_PASSWORD="a long admin password")
    db = Database(app.config["DATABASE_URL"])
    try:
        token = token_store.create_token(db, {"name": "claude app"})[1]
        agent_store.save_agent(
            db, {"id": "canvas", "label": "Canvas", "script": [{"content": "Hi."}]}, known_tools=None
        )
    finally:
        db.close()
    body = {**ASK, "messages": [USER]}
    with serving(app) as base_url, httpx2.Client(base_url=f"{base_url}/proxy/canvas/v1") as http:
        as_api_key = http.post("/messages", json=body, headers={"x-api-key": token, "anthropic-version": "2023-06-01"})
        as_bearer = http.post("/messages", json=body, headers={"Authorization": f"Bearer {token}"})
        refused = http.post("/messages", json=body, headers={"x-api-key": "tg_not-a-token"})
        sdk = anthropic.Anthropic(base_url=f"{base_url}/proxy/canvas", api_key=token, max_retries=0)
        through_sdk = sdk.messages.create(**body)
        with pytest.raises(anthropic.AuthenticationError) as sdk_refused:
            sdk.with_options(api_key="tg_not-a-token").messages.create(**body)

    assert [response.status_code for response in (as_api_key, as_bearer)] == [200, 200]
    assert as_api_key.json()["content"] == [{"type": "text", "text": "Hi."}] and through_sdk.content[0].text == "Hi."
    assert refused.status_code == 401 and refused.json()["error"]["type"] == "authentication_error"
    assert "API token" in refused.json()["error"]["message"]
    assert sdk_refused.value.body["error"]["type"] == "authentication_error"
