"""The policy proxy (SPEC §8) as an app that speaks OpenAI's API meets it: the `openai` SDK, pointed at
/proxy/<agent id>/v1 of the app served on 127.0.0.1, with the agent's scripted model or a fake OpenAI-compatible
server upstream. The client only ever receives calls that passed the gate; what it never saw is on the run's page."""

import json

import httpx2
import openai
import pytest

from store import agents as agent_store
from tests.database import Database
from tests.live_http import serving
from tests.proxy_support import (
    GET_LAYOUT,
    ONE_PLACEMENT,
    PLACE,
    RESTRICT,
    RESTRICTED,
    TWO_PLACEMENTS,
    USER,
    FakeUpstream,
    add_upstream,
    completion,
    proxy_client,
    streamed_text,
    tool_results,
)

pytestmark = pytest.mark.both_engines

PROXY_COLLATERAL = (
    "Error: This tool call was not executed, because another call in the same response was rejected. Call it again "
    "if you still need it."
)
MAX_ROUNDS_TEXT = (
    "I was unable to fully answer your question within the allowed number of processing steps. "
    "Please try rephrasing or narrowing your question."
)


def put_agent(client, agent_id="canvas", **fields):
    agent = {"label": "Canvas", "client_tools": RESTRICT, **fields}
    response = client.put(f"/api/agents/{agent_id}", json=agent)
    assert response.status_code in (200, 201), response.json


def placement(component, **extra):
    return json.dumps({"component": component, **extra})


# --- The restriction, on the scripted model --------------------------------------------------------------------


def test_a_restricted_tool_called_twice_reaches_the_client_as_one_call_after_one_hidden_re_ask(app, client):
    put_agent(client, script=[TWO_PLACEMENTS, ONE_PLACEMENT, {"content": "Placed."}])
    with proxy_client(app, "canvas") as sdk:
        raw = sdk.chat.completions.with_raw_response.create(model="gpt-x", messages=[USER], tools=[PLACE])
        answer = raw.parse()
        run_id = int(raw.headers["X-Toolgate-Run"])

    message = answer.choices[0].message
    assert [(call.id, call.function.name, call.function.arguments) for call in message.tool_calls] == [
        ("hero", "place_components", placement("hero"))
    ]
    run = client.get(f"/api/runs/{run_id}").json
    assert run["source"] == "proxy" and run["model_requests"] == 2
    hidden, shown = run["rounds"]
    assert hidden["shown_to_client"] is False and shown["shown_to_client"] is True
    assert [(call["status"], call["reason"], call["message"]) for call in hidden["calls"]] == [
        ("rejected", "restricted_repeat", RESTRICTED)
    ] * 2
    page = client.get(f"/runs/{run_id}").get_data(as_text=True)
    round_one = page.split('id="round-1-heading"')[1].split('id="round-2-heading"')[0]
    assert "Not shown to the client" in round_one
    assert round_one.count("Restricted tool called more than once") == 2
    assert "All 2 calls rejected — nothing executed" in round_one
    assert "Not shown to the client" not in page.split('id="round-2-heading"')[1]
    log = client.get("/log?agent=canvas").get_data(as_text=True)
    assert "multiple times in one response. All 2 tool calls in the response were rejected." in log
    assert f'href="/runs/{run_id}"' in log


def test_three_requests_of_one_conversation_are_one_run_with_the_clients_results(app, client):
    below_hero = {"name": "place_components", "arguments": {"component": "text", "below_uuid": "{{hero}}"}}
    put_agent(client, script=[TWO_PLACEMENTS, ONE_PLACEMENT, {"tool_calls": [below_hero]}, {"content": "Done."}])
    messages, run_ids = [USER], []
    with proxy_client(app, "canvas") as sdk:
        for _ in range(3):
            raw = sdk.chat.completions.with_raw_response.create(model="gpt-x", messages=messages, tools=[PLACE])
            run_ids.append(raw.headers["X-Toolgate-Run"])
            message = raw.parse().choices[0].message
            messages += [message.model_dump(exclude_none=True), *tool_results(message)]

    assert message.content == "Done." and len(set(run_ids)) == 1
    # The model remembered its first, hidden attempt: the second placement went below the UUID the client returned.
    second = messages[3]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(second) == {"component": "text", "below_uuid": "uuid-of-hero"}
    run = client.get(f"/api/runs/{run_ids[0]}").json
    assert run["stop_reason"] == "answered" and run["answer"] == "Done."
    assert run["message"] == USER["content"]
    assert [round_["shown_to_client"] for round_ in run["rounds"]] == [False, True, True, True]
    ran = [call for round_ in run["rounds"] for call in round_["calls"] if call["status"] == "executed"]
    assert [(call["run_by"], call["output"]) for call in ran] == [
        ("client", "uuid-of-hero"),
        ("client", f"uuid-of-{messages[3]['tool_calls'][0]['id']}"),
    ]
    # The rounds used are the client's: its conversation holds two; the hidden one counted in its own request.
    assert (run["tool_calls"], run["rejected_calls"], run["rounds_used"]) == (2, 2, 2)
    page = client.get(f"/runs/{run_ids[0]}").get_data(as_text=True)
    assert page.count("Run by the client") == 2
    assert "Save as regression case</button>" in page
    assert "Run again</button>" not in page
    assert client.post(f"/runs/{run_ids[0]}/again").status_code == 303
    assert client.get("/api/runs").json["total"] == 1
    listed = client.get("/api/runs?source=proxy").json
    assert [summary["id"] for summary in listed["runs"]] == [int(run_ids[0])]
    assert client.get("/api/runs?source=api").json["runs"] == []


def test_a_new_user_message_starts_the_next_run_of_the_conversation(app, client):
    put_agent(client, script=[{"content": "Hello."}, {"content": "Still here."}])
    with proxy_client(app, "canvas") as sdk:
        first = sdk.chat.completions.with_raw_response.create(model="m", messages=[USER], tools=[PLACE])
        answer = first.parse().choices[0].message
        follow_up = [USER, answer.model_dump(exclude_none=True), {"role": "user", "content": "And now?"}]
        second = sdk.chat.completions.with_raw_response.create(model="m", messages=follow_up, tools=[PLACE])

    first_id, second_id = int(first.headers["X-Toolgate-Run"]), int(second.headers["X-Toolgate-Run"])
    assert second.parse().choices[0].message.content == "Still here."
    run = client.get(f"/api/runs/{second_id}").json
    assert second_id != first_id and run["continues_run"] == first_id and run["message"] == "And now?"
    assert f'<a href="/runs/{first_id}">run #{first_id}</a>' in client.get(f"/runs/{second_id}").get_data(as_text=True)


# --- On a fake upstream: what the proxy sends, and what it does with the answer ----------------------------------


@pytest.fixture
def upstream(app):
    fake = FakeUpstream()
    with serving(fake) as url:
        add_upstream(app, url, headers={"X-Team": "canvas"}, extra_body={"top_k": 20})
        yield fake


def test_a_mixed_response_is_answered_upstream_and_only_the_retry_reaches_the_client(app, client, upstream):
    rules = {"region": {"action": "only_allow", "values": ["header", "content"]}}
    put_agent(client, provider="upstream", client_tools={"place_components": {"argument_rules": rules}})
    upstream.replies = [
        (
            200,
            completion(
                calls=[("a", "place_components", {"component": "hero", "region": "footer"}), ("b", "get_layout", {})]
            ),
        ),
        (200, completion(calls=[("c", "place_components", {"component": "hero", "region": "header"})])),
    ]
    with proxy_client(app, "canvas") as sdk:
        answer = sdk.chat.completions.create(model="gpt-x", messages=[USER], tools=[PLACE, GET_LAYOUT])

    assert [call.id for call in answer.choices[0].message.tool_calls] == ["c"]
    retry = upstream.bodies[1]["messages"]
    assert retry[0] == USER and retry[1]["tool_calls"][0]["id"] == "a"
    assert retry[2:] == [
        {
            "role": "tool",
            "tool_call_id": "a",
            "content": "Error: invalid value for region in place_components: footer is not one of header, content.",
        },
        {"role": "tool", "tool_call_id": "b", "content": PROXY_COLLATERAL},
    ]


def test_tools_go_upstream_with_the_agents_overrides_and_forced_values_come_back_written_in(app, client, upstream):
    settings = {
        "description_override": "Place ONE component.",
        "argument_rules": {"region": {"action": "force_value", "values": ["footer"], "hide": True}},
        "argument_descriptions": {"component": "hero or text"},
    }
    put_agent(
        client, provider="upstream", model="agent-model", temperature=0.1, client_tools={"place_components": settings}
    )
    upstream.replies = [(200, completion(calls=[("a", "place_components", {"component": "hero"})]))]
    with proxy_client(app, "canvas") as sdk:
        answer = sdk.chat.completions.create(
            model="client-model", messages=[USER], tools=[PLACE], temperature=0.3, top_p=0.5, tool_choice="required"
        )

    body = upstream.bodies[0]
    assert body["model"] == "agent-model" and body["temperature"] == 0.1  # the agent's, where it sets one
    assert body["top_p"] == 0.5 and body["tool_choice"] == "required"  # the client's, where the agent sets none
    assert body["top_k"] == 20 and upstream.requests[0]["headers"]["x_team"] == "canvas"
    function = body["tools"][0]["function"]
    assert function["description"] == "Place ONE component."
    assert set(function["parameters"]["properties"]) == {"component", "below_uuid"}
    assert function["parameters"]["properties"]["component"]["description"] == "hero or text"
    assert upstream.requests[0]["headers"]["authorization"] == "Bearer sk-upstream-key"
    call = answer.choices[0].message.tool_calls[0]
    assert json.loads(call.function.arguments) == {"component": "hero", "region": "footer"}


def test_an_edit_to_the_agent_governs_the_next_proxied_request_whoever_made_it(app, client, upstream):
    def described(text):
        return {"place_components": {"description_override": text}}

    put_agent(client, provider="upstream", client_tools=described("First."))
    upstream.replies = [(200, completion(content="Done."))]
    with proxy_client(app, "canvas") as sdk:
        sdk.chat.completions.create(model="m", messages=[USER], tools=[PLACE])
        other = Database(app.config["DATABASE_URL"])  # another connection, as another process of the app holds
        try:
            agent_store.save_agent(
                other,
                {**agent_store.get_agent(other, "canvas"), "client_tools": described("Second.")},
                known_tools=None,
            )
        finally:
            other.close()
        sdk.chat.completions.create(model="m", messages=[USER], tools=[PLACE])
        client.delete("/api/agents/canvas")
        put_agent(client, provider="upstream", client_tools=described("Third."))  # revision 1 again
        sdk.chat.completions.create(model="m", messages=[USER], tools=[PLACE])

    descriptions = [body["tools"][0]["function"]["description"] for body in upstream.bodies]
    assert descriptions == ["First.", "Second.", "Third."]


@pytest.mark.parametrize(
    ("on_round_cap", "upstream_requests", "answer"),
    [("final_answer", 1, "The page is half built."), ("message", 0, MAX_ROUNDS_TEXT)],
)
def test_the_round_cap_is_counted_from_the_clients_history(
    app, client, upstream, on_round_cap, upstream_requests, answer
):
    put_agent(client, provider="upstream", max_rounds=2, on_round_cap=on_round_cap)
    upstream.replies = [(200, completion("The page is half built."))]
    history = [USER]
    for number in (1, 2):
        call = {"id": f"c{number}", "type": "function", "function": {"name": "place_components", "arguments": "{}"}}
        history += [{"role": "assistant", "content": "", "tool_calls": [call]}]
        history += [{"role": "tool", "tool_call_id": f"c{number}", "content": f"uuid-{number}"}]
    with proxy_client(app, "canvas") as sdk:
        raw = sdk.chat.completions.with_raw_response.create(model="m", messages=history, tools=[PLACE])

    assert raw.parse().choices[0].message.content == answer
    assert len(upstream.bodies) == upstream_requests
    if upstream_requests:
        assert {"tools", "tool_choice", "parallel_tool_calls"}.isdisjoint(upstream.bodies[0])
    run = client.get(f"/api/runs/{raw.headers['X-Toolgate-Run']}").json
    assert (run["stop_reason"], run["rounds_used"], run["max_rounds"]) == ("round_cap", 2, 2)


def test_a_required_tool_not_yet_run_brings_a_hidden_reminder(app, client, upstream):
    put_agent(client, provider="upstream", client_tools={"get_layout": {"require_usage": True}})
    upstream.replies = [(200, completion("Done already.")), (200, completion(calls=[("l", "get_layout", {})]))]
    with proxy_client(app, "canvas") as sdk:
        answer = sdk.chat.completions.create(model="m", messages=[USER], tools=[PLACE, GET_LAYOUT])

    assert answer.choices[0].message.tool_calls[0].function.name == "get_layout"
    assert upstream.bodies[1]["messages"][-2:] == [
        {"role": "assistant", "content": "Done already."},
        {
            "role": "system",
            "content": "Reminder: The following tools should be used based on the instructions, but were not used: "
            "get_layout. Please make sure to use them in your next response.",
        },
    ]


def test_usage_counts_every_upstream_request_of_the_answer(app, client, upstream):
    put_agent(client, provider="upstream")
    two = [("a", "place_components", {"component": "hero"}), ("b", "place_components", {"component": "text"})]
    upstream.replies = [(200, completion(calls=two, usage=(10, 5, 15))), (200, completion("Ok.", usage=(20, 2, 22)))]
    with proxy_client(app, "canvas") as sdk:
        answer = sdk.chat.completions.create(model="m", messages=[USER], tools=[PLACE])

    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens, answer.usage.total_tokens) == (30, 7, 37)


# --- Streaming ---------------------------------------------------------------------------------------------------


def test_a_streamed_answer_is_the_gated_one_read_through_the_sdks_iterator(app, client, upstream):
    put_agent(client, provider="upstream")
    two = [("a", "place_components", {"component": "hero"}), ("b", "place_components", {"component": "text"})]
    upstream.replies = [
        (200, completion(calls=two, usage=(10, 5, 15))),
        (
            200,
            completion("One at a time.", calls=[("c", "place_components", {"component": "hero"})], usage=(20, 2, 22)),
        ),
    ]
    with proxy_client(app, "canvas") as sdk:
        stream = sdk.chat.completions.create(
            model="m", messages=[USER], tools=[PLACE], stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)

    deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    calls = [call for delta in deltas for call in delta.tool_calls or []]
    assert [(call.index, call.id, call.function.name, call.function.arguments) for call in calls] == [
        (0, "c", "place_components", placement("hero"))
    ]
    assert "".join(delta.content or "" for delta in deltas) == "One at a time."
    assert {chunk.object for chunk in chunks} == {"chat.completion.chunk"}
    assert [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices][-1] == "tool_calls"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 37
    # The proxy asks upstream with streaming, to hand the client text as the model writes it (this upstream answers
    # each streamed request with a whole completion, as some servers do: it is read all the same).
    assert all(body["stream"] is True and body["stream_options"] == {"include_usage": True} for body in upstream.bodies)


def test_a_streamed_text_answer_ends_with_done(app, client):
    put_agent(client, script=[{"content": "Nothing to place."}])
    with serving(app) as base_url, httpx2.Client(base_url=base_url) as http:
        response = http.post(
            "/proxy/canvas/v1/chat/completions", json={"model": "m", "messages": [USER], "stream": True}
        )
    assert streamed_text(response) == "Nothing to place."


# --- Errors, in OpenAI's shape ---------------------------------------------------------------------------------


def test_an_upstream_500_reaches_the_client_as_a_500_in_openais_shape_and_the_run_says_so(app, client, upstream):
    put_agent(client, provider="upstream")
    upstream.replies = [
        (500, {"error": {"message": "The engine is overloaded.", "type": "server_error", "code": None}})
    ]
    with proxy_client(app, "canvas") as sdk, pytest.raises(openai.InternalServerError) as raised:
        sdk.chat.completions.create(model="m", messages=[USER], tools=[PLACE])

    error = raised.value
    # OpenAI's error shape, `param` included (null: no field of the request was wrong), as every proxy error has it.
    assert error.status_code == 500 and set(error.body) == {"message", "type", "param", "code"}
    assert error.body["param"] is None and error.body["type"] == "upstream_error"
    assert error.body["message"] == "The model endpoint answered HTTP 500: The engine is overloaded."
    run = client.get(f"/api/runs/{error.response.headers['X-Toolgate-Run']}").json
    assert run["stop_reason"] == "error" and run["error"] == error.body["message"]
    assert run["model_requests"] == 1 and run["rounds"] == []


def test_an_upstream_401_that_echoes_the_key_reaches_the_client_with_the_key_redacted(app, client, upstream):
    put_agent(client, provider="upstream")
    upstream.replies = [
        (401, {"error": {"message": "Incorrect API key provided: sk-upstream-key.", "code": "invalid"}})
    ]
    with proxy_client(app, "canvas") as sdk, pytest.raises(openai.AuthenticationError) as raised:
        sdk.chat.completions.create(model="m", messages=[USER])
    assert raised.value.status_code == 401
    assert "sk-upstream-key" not in raised.value.response.text and "[redacted]" in raised.value.body["message"]


@pytest.mark.parametrize(
    ("body", "param", "message"),
    [
        ({"model": "m"}, "messages", "messages: is required"),
        ({"model": "m", "messages": [{"role": "robot", "content": "hi"}]}, "messages[0].role", "must be one of"),
        (
            {"model": "m", "messages": [USER], "tools": [{"type": "function", "function": {"name": "a b"}}]},
            "tools[0].function.name",
            "letters, digits",
        ),
        (
            {
                "model": "m",
                "messages": [USER],
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": 5}}}],
            },
            "tools[0].function.parameters",
            "is not a valid JSON Schema",
        ),
        ({"model": "m", "messages": [USER], "n": 2}, "n", "one choice"),
    ],
)
def test_a_bad_body_is_a_400_in_openais_shape_naming_the_field(app, client, body, param, message):
    put_agent(client, script=[{"content": "Hi"}])
    with proxy_client(app, "canvas") as sdk, pytest.raises(openai.BadRequestError) as raised:
        sdk.post("/chat/completions", body=body, cast_to=object)
    assert raised.value.body["param"] == param and raised.value.body["type"] == "invalid_request_error"
    assert message in raised.value.body["message"]
    assert client.get("/api/runs").json["total"] == 0


def called(*ids):
    calls = [
        {"id": call_id, "type": "function", "function": {"name": "get_layout", "arguments": "{}"}} for call_id in ids
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def result(call_id):
    return {"role": "tool", "tool_call_id": call_id, "content": "[]"}


@pytest.mark.parametrize(
    ("messages", "param", "message"),
    [
        ([USER, called("a"), result("a"), result("z")], "messages[3].tool_call_id", "answers no call"),
        ([USER, called("a"), result("a"), result("a")], "messages[3].tool_call_id", "already has its result"),
        ([USER, called("a", "b"), result("a"), USER], "messages[1].tool_calls[1].id", "has no result"),
        ([USER, called("a", "b"), result("b")], "messages[1].tool_calls[0].id", "has no result"),
        ([USER, called("a", "a"), result("a"), result("a")], "messages[1].tool_calls[1].id", "an id of its own"),
    ],
    ids=["answers no call", "answers a call twice", "leaves a call unanswered", "ends unanswered", "shares an id"],
)
def test_tool_results_that_do_not_answer_each_call_once_are_refused_and_never_sent_upstream(
    app, client, upstream, messages, param, message
):
    put_agent(client, provider="upstream")
    with proxy_client(app, "canvas") as sdk, pytest.raises(openai.BadRequestError) as raised:
        sdk.chat.completions.create(model="m", messages=messages, tools=[GET_LAYOUT])
    assert raised.value.body["param"] == param and raised.value.body["type"] == "invalid_request_error"
    assert raised.value.body["message"].startswith(f"{param}: ") and message in raised.value.body["message"]
    assert upstream.bodies == [] and client.get("/api/runs").json["total"] == 0


def test_calls_the_last_message_makes_and_system_messages_beside_results_are_a_conversation_like_any(
    app, client, upstream
):
    put_agent(client, provider="upstream")
    upstream.replies = [(200, completion("Fine."))] * 2
    note = {"role": "system", "content": "The layout changed."}
    with proxy_client(app, "canvas") as sdk:
        for messages in ([USER, called("a"), note, result("a"), note], [USER, called("a")]):
            answer = sdk.chat.completions.create(model="m", messages=messages, tools=[GET_LAYOUT])
            assert answer.choices[0].message.content == "Fine."
    assert len(upstream.bodies) == 2


def test_a_body_that_is_not_json_and_an_unknown_agent_are_answered_in_openais_shape(app, client):
    with serving(app) as base_url, httpx2.Client(base_url=base_url) as http:
        not_json = http.post(
            "/proxy/canvas/v1/chat/completions", content=b"{oops", headers={"Content-Type": "application/json"}
        )
        unknown = http.post("/proxy/nobody/v1/chat/completions", json={"model": "m", "messages": [USER]})
        elsewhere = http.get("/proxy/canvas/v1/embeddings")
    assert not_json.status_code == 400 and set(not_json.json()["error"]) == {"message", "type", "param", "code"}
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "agent_not_found"
    assert elsewhere.status_code == 404 and "message" in elsewhere.json()["error"]


def test_models_lists_the_model_the_agent_answers_with(app, client):
    put_agent(client, model="gpt-4o-mini", script=[])
    with proxy_client(app, "canvas") as sdk:
        assert [model.id for model in sdk.models.list()] == ["gpt-4o-mini"]


def test_models_lists_the_connections_default_when_the_agent_names_none(app, client):
    add_upstream(app, "http://127.0.0.1:9", default_model="llama-3-8b")
    put_agent(client, provider="upstream")
    with proxy_client(app, "canvas") as sdk:
        assert [model.id for model in sdk.models.list()] == ["llama-3-8b"]


def test_arguments_an_upstream_sends_as_an_object_reach_the_client_as_json_text(app, client, upstream):
    put_agent(client, provider="upstream")
    call = {"id": "a", "type": "function", "function": {"name": "place_components", "arguments": {"component": "hero"}}}
    answer = completion()
    answer["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [call]}
    upstream.replies = [(200, answer)]
    with proxy_client(app, "canvas") as sdk:
        message = sdk.chat.completions.create(model="m", messages=[USER], tools=[PLACE]).choices[0].message
    assert message.tool_calls[0].function.arguments == placement("hero")


@pytest.mark.parametrize(
    "headers",
    [{"Content-Type": "text/plain"}, {}, {"Content-Type": "application/x-www-form-urlencoded"}],
    ids=["text/plain", "no content type", "a form"],
)
def test_a_body_not_sent_as_json_is_refused_with_415_before_anything_goes_upstream_or_is_recorded(
    app, client, upstream, headers
):
    """What a web page can post across sites without asking (text/plain, a form) never spends the model account."""
    put_agent(client, provider="upstream")
    upstream.replies = [(200, completion("Spent."))]
    body = json.dumps({"model": "m", "messages": [USER]}).encode()
    with serving(app) as base_url, httpx2.Client(base_url=base_url) as http:
        refused = http.post("/proxy/canvas/v1/chat/completions", content=body, headers=headers)
    assert refused.status_code == 415
    assert refused.json()["error"]["message"] == "The body must be sent as JSON (Content-Type: application/json)."
    assert set(refused.json()["error"]) == {"message", "type", "param", "code"}
    assert upstream.requests == [] and client.get("/api/runs").json["runs"] == []


# --- The proxy's own answers, and what it refuses -------------------------------------------------------------


def capped_history():
    """A conversation whose client already ran two rounds of calls."""
    history = [USER]
    for number in (1, 2):
        call = {"id": f"c{number}", "type": "function", "function": {"name": "place_components", "arguments": "{}"}}
        history += [{"role": "assistant", "content": "", "tool_calls": [call]}]
        history += [{"role": "tool", "tool_call_id": f"c{number}", "content": f"uuid-{number}"}]
    return history


def test_the_cap_message_the_proxy_gives_itself_says_stop_and_names_the_agents_model(app, client, upstream):
    put_agent(client, provider="upstream", model="agent-model", max_rounds=2, on_round_cap="message")
    with proxy_client(app, "canvas") as sdk:
        answer = sdk.chat.completions.create(model="client-model", messages=capped_history(), tools=[PLACE])

    assert answer.choices[0].message.content == MAX_ROUNDS_TEXT
    assert (answer.choices[0].finish_reason, answer.model) == ("stop", "agent-model")
    assert upstream.bodies == []


def test_tool_calls_on_a_request_without_tools_are_answered_with_stop_and_the_agents_model(app, client, upstream):
    put_agent(client, provider="upstream", model="agent-model", max_rounds=2)
    upstream.replies = [(200, completion(calls=[("late", "place_components", {"component": "hero"})]))]
    with proxy_client(app, "canvas") as sdk:
        answer = sdk.chat.completions.create(model="client-model", messages=capped_history(), tools=[PLACE])

    assert (answer.choices[0].message.content, answer.choices[0].message.tool_calls) == (MAX_ROUNDS_TEXT, None)
    assert (answer.choices[0].finish_reason, answer.model) == ("stop", "agent-model")


def test_an_upstream_answer_over_5_mb_is_refused_like_a_runs(app, client, upstream):
    put_agent(client, provider="upstream")
    upstream.replies = [(200, completion("x" * (5 * 1024 * 1024 + 1)))]
    with proxy_client(app, "canvas") as sdk, pytest.raises(openai.APIStatusError) as raised:
        sdk.chat.completions.create(model="m", messages=[USER], tools=[PLACE])

    assert raised.value.status_code == 502
    assert raised.value.body["message"].startswith("The model's answer is larger than 5 MB")
    run = client.get(f"/api/runs/{raised.value.response.headers['X-Toolgate-Run']}").json
    assert run["stop_reason"] == "error" and run["rounds"] == []


def test_a_history_whose_call_arguments_changed_does_not_continue_the_old_run(app, client, upstream):
    put_agent(client, provider="upstream")
    upstream.replies = [
        (200, completion(calls=[("a", "place_components", {"component": "hero"})])),
        (200, completion("Placed.")),
    ]
    with proxy_client(app, "canvas") as sdk:
        first = sdk.chat.completions.with_raw_response.create(model="m", messages=[USER], tools=[PLACE])
        answer = first.parse().choices[0].message.model_dump(exclude_none=True)
        changed = json.loads(json.dumps(answer))
        changed["tool_calls"][0]["function"]["arguments"] = placement("text")
        result = {"role": "tool", "tool_call_id": "a", "content": "uuid-a"}
        second = sdk.chat.completions.with_raw_response.create(
            model="m", messages=[USER, changed, result], tools=[PLACE]
        )

    assert second.headers["X-Toolgate-Run"] != first.headers["X-Toolgate-Run"]
    old = client.get(f"/api/runs/{first.headers['X-Toolgate-Run']}").json
    assert old["stop_reason"] == "awaiting_client" and len(old["rounds"]) == 1
