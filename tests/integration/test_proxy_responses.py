"""The policy proxy's OpenAI Responses API (SPEC §8) as the clients that speak it by default meet it: the `openai`
SDK's `client.responses` and the OpenAI Agents SDK in its default configuration, pointed at /proxy/<agent id>/v1 of
the app served on 127.0.0.1, with the agent's scripted model or a fake Chat Completions server upstream. The gate, the
hidden re-asks and the recording are the ones Chat Completions clients get."""

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import httpx2
import openai
import pytest
import sqlite_utils
from agents import Agent, OpenAIProvider, RunConfig, Runner, function_tool, set_tracing_disabled

from engine import texts
from store import legacy_migrations
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
    proxy_client,
)
from tests.support import make_app

pytestmark = pytest.mark.both_engines


# The canvas tool as a Responses API client declares it.
PLACE_TOOL = {"type": "function", **PLACE["function"]}
ASK = "Build a page with a hero and a text."
BELOW_HERO = {"name": "place_components", "arguments": {"component": "text", "below_uuid": "{{hero}}"}}


def put_agent(client, agent_id="canvas", **fields):
    agent = {"label": "Canvas", "client_tools": RESTRICT, **fields}
    response = client.put(f"/api/agents/{agent_id}", json=agent)
    assert response.status_code in (200, 201), response.json


def calls_of(response):
    calls = [item for item in response.output if item.type == "function_call"]
    return [(call.call_id, call.name, json.loads(call.arguments)) for call in calls]


def results_for(response):
    """The function_call_output items a client sends after running every call of a response."""
    return [
        {"type": "function_call_output", "call_id": item.call_id, "output": f"uuid-of-{item.call_id}"}
        for item in response.output
        if item.type == "function_call"
    ]


def as_input(response):
    return [item.model_dump(exclude_none=True) for item in response.output]


def hidden_round_shows_both_rejections(client, run_id):
    run = client.get(f"/api/runs/{run_id}").json
    hidden = run["rounds"][0]
    assert hidden["shown_to_client"] is False and run["rounds"][1]["shown_to_client"] is True
    assert [(call["status"], call["reason"], call["message"]) for call in hidden["calls"]] == [
        ("rejected", "restricted_repeat", RESTRICTED)
    ] * 2
    page = client.get(f"/runs/{run_id}").get_data(as_text=True)
    round_one = page.split('id="round-1-heading"')[1].split('id="round-2-heading"')[0]
    assert "Not shown to the client" in round_one
    assert round_one.count("Restricted tool called more than once") == 2
    return run


# --- The openai SDK's client.responses ---------------------------------------------------------------------------


def test_a_restricted_tool_called_twice_reaches_the_client_as_one_function_call_after_one_hidden_re_ask(app, client):
    put_agent(client, script=[TWO_PLACEMENTS, ONE_PLACEMENT, {"content": "Placed."}])
    with proxy_client(app, "canvas") as sdk:
        raw = sdk.responses.with_raw_response.create(model="gpt-x", input=ASK, tools=[PLACE_TOOL])
        response = raw.parse()

    assert response.id.startswith("resp_") and response.object == "response" and response.status == "completed"
    [call] = response.output
    assert call.type == "function_call" and call.id.startswith("fc_") and call.status == "completed"
    assert (call.call_id, call.name, json.loads(call.arguments)) == ("hero", "place_components", {"component": "hero"})
    assert response.tools[0].name == "place_components" and response.parallel_tool_calls is True
    run = hidden_round_shows_both_rejections(client, raw.headers["X-Toolgate-Run"])
    assert run["source"] == "proxy" and run["api"] == "responses" and run["model_requests"] == 2
    assert run["message"] == ASK


def test_a_streamed_response_is_the_gated_one_in_the_events_the_sdk_reads(app, client):
    put_agent(client, script=[TWO_PLACEMENTS, {"content": "One at a time.", **ONE_PLACEMENT}])
    with proxy_client(app, "canvas") as sdk:
        with sdk.responses.stream(model="gpt-x", input=ASK, tools=[PLACE_TOOL]) as stream:
            events = list(stream)
            final = stream.get_final_response()

    assert [event.sequence_number for event in events] == list(range(len(events)))
    # The text streams live, as the model writes it: one delta or several, in a row.
    types = [
        kind
        for number, kind in enumerate(event.type for event in events)
        if kind != events[number - 1].type or not kind.endswith(".delta")
    ]
    assert types == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert final.output_text == "One at a time." and final.status == "completed"
    assert calls_of(final) == [("hero", "place_components", {"component": "hero"})]
    added = [event.item.id for event in events if event.type == "response.output_item.added"]
    assert [item.id for item in final.output] == added


def test_stream_true_gives_the_same_response_as_the_events_iterator(app, client):
    put_agent(client, script=[{"content": "Nothing to place."}])
    with proxy_client(app, "canvas") as sdk:
        events = list(sdk.responses.create(model="gpt-x", input=ASK, tools=[PLACE_TOOL], stream=True))

    assert "".join(event.delta for event in events if event.type == "response.output_text.delta") == "Nothing to place."
    assert events[-1].type == "response.completed" and events[-1].response.output_text == "Nothing to place."
    with serving(app) as base_url, httpx2.Client(base_url=base_url) as http:
        raw = http.post("/proxy/canvas/v1/responses", json={"model": "m", "input": "Hi", "stream": True})
    assert raw.headers["content-type"].startswith("text/event-stream")
    assert raw.text.startswith("event: response.created\ndata: {")


def test_three_requests_of_one_conversation_are_one_run_with_the_clients_results(app, client):
    put_agent(client, script=[TWO_PLACEMENTS, ONE_PLACEMENT, {"tool_calls": [BELOW_HERO]}, {"content": "Done."}])
    conversation, run_ids = [{"role": "user", "content": ASK}], []
    with proxy_client(app, "canvas") as sdk:
        for _ in range(3):
            raw = sdk.responses.with_raw_response.create(model="gpt-x", input=conversation, tools=[PLACE_TOOL])
            response = raw.parse()
            run_ids.append(raw.headers["X-Toolgate-Run"])
            conversation += [*as_input(response), *results_for(response)]

    assert response.output_text == "Done." and len(set(run_ids)) == 1
    second = [item for item in conversation if item.get("type") == "function_call"][1]
    assert json.loads(second["arguments"]) == {"component": "text", "below_uuid": "uuid-of-hero"}
    run = client.get(f"/api/runs/{run_ids[0]}").json
    assert run["stop_reason"] == "answered" and run["answer"] == "Done." and run["api"] == "responses"
    assert [round_["shown_to_client"] for round_ in run["rounds"]] == [False, True, True, True]
    ran = [call for round_ in run["rounds"] for call in round_["calls"] if call["status"] == "executed"]
    assert [(call["run_by"], call["output"]) for call in ran] == [
        ("client", "uuid-of-hero"),
        ("client", f"uuid-of-{second['call_id']}"),
    ]
    assert client.get(f"/runs/{run_ids[0]}").get_data(as_text=True).count("Run by the client") == 2


def test_a_conversation_that_refers_to_earlier_items_by_item_reference_is_one_run(app, client):
    put_agent(client, script=[ONE_PLACEMENT, {"tool_calls": [BELOW_HERO]}, {"content": "Done."}])
    conversation, run_ids = [{"role": "user", "content": ASK}], []
    with proxy_client(app, "canvas") as sdk:
        for _ in range(3):
            raw = sdk.responses.with_raw_response.create(model="gpt-x", input=conversation, tools=[PLACE_TOOL])
            response = raw.parse()
            run_ids.append(raw.headers["X-Toolgate-Run"])
            # As the Vercel AI SDK sends them: the assistant's items by reference, the results in full.
            conversation += [{"type": "item_reference", "id": item.id} for item in response.output]
            conversation += results_for(response)

    assert response.output_text == "Done." and len(set(run_ids)) == 1
    run = client.get(f"/api/runs/{run_ids[0]}").json
    assert [call["output"] for round_ in run["rounds"] for call in round_["calls"]] == [
        "uuid-of-hero",
        f"uuid-of-{run['rounds'][1]['calls'][0]['id']}",
    ]
    assert run["rounds"][1]["calls"][0]["arguments"] == {"component": "text", "below_uuid": "uuid-of-hero"}


def test_previous_response_id_continues_the_run_with_only_the_new_items(app, client):
    put_agent(client, script=[TWO_PLACEMENTS, ONE_PLACEMENT, {"content": "Done."}])
    with proxy_client(app, "canvas") as sdk:
        first = sdk.responses.with_raw_response.create(
            model="gpt-x", instructions="Be brief.", input=ASK, tools=[PLACE_TOOL]
        )
        response = first.parse()
        second = sdk.responses.with_raw_response.create(
            model="gpt-x",
            instructions="Be brief.",
            previous_response_id=response.id,
            input=results_for(response),
            tools=[PLACE_TOOL],
        )
        kept = sdk.responses.retrieve(response.id)

    assert second.parse().output_text == "Done." and second.parse().previous_response_id == response.id
    assert first.headers["X-Toolgate-Run"] == second.headers["X-Toolgate-Run"]
    assert kept.model_dump() == response.model_dump()
    run = client.get(f"/api/runs/{first.headers['X-Toolgate-Run']}").json
    assert run["messages"][0] == {"role": "system", "content": "Be brief."}
    assert [round_["shown_to_client"] for round_ in run["rounds"]] == [False, True, True]
    assert run["rounds"][1]["calls"][0]["run_by"] == "client"


def test_a_responses_run_saved_as_a_case_replays_to_a_pass(app, client):
    put_agent(client, script=[TWO_PLACEMENTS, ONE_PLACEMENT, {"tool_calls": [BELOW_HERO]}, {"content": "Done."}])
    conversation = [{"role": "user", "content": ASK}]
    with proxy_client(app, "canvas") as sdk:
        while True:
            raw = sdk.responses.with_raw_response.create(model="gpt-x", input=conversation, tools=[PLACE_TOOL])
            response = raw.parse()
            if not calls_of(response):
                break
            conversation += [*as_input(response), *results_for(response)]
    run_id = raw.headers["X-Toolgate-Run"]

    assert client.post(f"/runs/{run_id}/case", data={"name": "Through the Responses API"}).status_code == 303
    [case] = client.get("/api/agents/canvas/cases").json["cases"]
    assert case["client"]["tools"] == [PLACE]  # kept as the canonical conversation's tools
    checked = client.post("/api/agents/canvas/cases/check", json={}).json["cases"][0]
    assert checked["passed"] is True and checked["differences"] == []


def test_a_response_not_stored_cannot_be_continued_or_read_back(app, client):
    put_agent(client, script=[{"content": "Hi."}])
    with proxy_client(app, "canvas") as sdk:
        response = sdk.responses.create(model="gpt-x", input="Hello", store=False)
        with pytest.raises(openai.NotFoundError) as continued:
            sdk.responses.create(model="gpt-x", input="Again", previous_response_id=response.id)
        with pytest.raises(openai.NotFoundError) as read_back:
            sdk.responses.retrieve(response.id)
        with pytest.raises(openai.NotFoundError) as referred:
            sdk.responses.create(model="gpt-x", input=[{"type": "item_reference", "id": response.output[0].id}])

    assert response.store is False
    assert continued.value.body == {
        "message": f"Previous response with id '{response.id}' not found.",
        "type": "invalid_request_error",
        "param": "previous_response_id",
        "code": "previous_response_not_found",
    }
    assert read_back.value.body["message"] == f"Response with id '{response.id}' not found."
    assert referred.value.body["param"] == "input[0].id"
    assert client.get("/api/runs").json["total"] == 1


def test_pruning_a_run_deletes_the_responses_kept_of_it(app, client, runner, database):
    put_agent(client, script=[{"content": "Hi."}, {"content": "Again."}])
    with proxy_client(app, "canvas") as sdk:
        old = sdk.responses.with_raw_response.create(model="gpt-x", input="Hello")
        new = sdk.responses.create(model="gpt-x", input="Hello again")
        database["runs"].update(int(old.headers["X-Toolgate-Run"]), {"created_at": "2020-01-01T00:00:00+00:00"})
        assert runner.invoke(args=["prune-runs", "--older-than", "30"]).exit_code == 0
        with pytest.raises(openai.NotFoundError):
            sdk.responses.retrieve(old.parse().id)
        assert sdk.responses.retrieve(new.id).id == new.id


def test_a_response_kept_for_one_agent_is_not_found_through_another(app, client):
    put_agent(client, script=[{"content": "Hi."}])
    put_agent(client, "other", script=[{"content": "Hi."}])
    with proxy_client(app, "canvas") as sdk:
        response = sdk.responses.create(model="gpt-x", input="Hello")
    with proxy_client(app, "other") as sdk, pytest.raises(openai.NotFoundError):
        sdk.responses.retrieve(response.id)


# --- The API a run's client spoke -------------------------------------------------------------------------------


def test_runs_say_which_api_their_client_spoke_and_the_lists_filter_by_it(app, client):
    put_agent(client, script=[{"content": "Hi."}])
    with proxy_client(app, "canvas") as sdk:
        chat = sdk.chat.completions.with_raw_response.create(model="m", messages=[USER])
        responses = sdk.responses.with_raw_response.create(model="m", input="Hello")
    chat_id, responses_id = int(chat.headers["X-Toolgate-Run"]), int(responses.headers["X-Toolgate-Run"])

    assert client.get(f"/api/runs/{chat_id}").json["api"] == "chat_completions"
    listed = client.get("/api/runs?api=responses").json
    assert [run["id"] for run in listed["runs"]] == [responses_id] and listed["total"] == 1
    assert listed["runs"][0]["api"] == "responses"
    assert client.get("/api/runs?api=messages&source=proxy").json["total"] == 0
    refused = client.get("/api/runs?api=soap")
    assert refused.status_code == 400 and refused.json["field"] == "api"
    page = client.get("/runs?api=responses").get_data(as_text=True)
    assert f'href="/runs/{responses_id}"' in page and f'href="/runs/{chat_id}"' not in page
    assert '<option value="responses" selected>Responses</option>' in page
    assert "· Responses" in page
    header = client.get(f"/runs/{responses_id}").get_data(as_text=True)
    assert '<dt>API</dt><dd class="run-api">Responses</dd>' in header


def test_a_proxied_run_stored_before_the_api_was_recorded_reads_as_chat_completions(app, client, tmp_path):
    put_agent(client, script=[{"content": "Hi."}])
    with proxy_client(app, "canvas") as sdk:
        sdk.chat.completions.create(model="m", messages=[USER])
    database = Database(app.config["DATABASE_URL"])
    [row] = database.query("SELECT * FROM runs")
    database.close()
    old_path = tmp_path / "old" / "toolgate.db"
    old_path.parent.mkdir()
    old = sqlite_utils.Database(old_path)
    legacy_migrations.migrations.apply(old, stop_before="0067_add_run_api")
    result = {key: value for key, value in json.loads(row.pop("result")).items() if key != "api"}
    for column in ("api", "rounds_used", "rejections"):  # added by step 0067 and after
        row.pop(column)
    old["runs"].insert({**row, "result": json.dumps(result)})
    old.close()

    upgraded = make_app(old_path.parent).test_client()
    assert upgraded.get(f"/api/runs/{row['id']}").json["api"] == "chat_completions"
    assert upgraded.get("/api/runs?api=chat_completions").json["total"] == 1


# --- On a fake upstream: what goes up, what comes back ----------------------------------------------------------


def test_function_tools_go_upstream_as_chat_tools_and_hosted_tools_are_left_out(app, client, upstream):
    settings = {"argument_rules": {"region": {"action": "force_value", "values": ["footer"], "hide": True}}}
    put_agent(client, provider="upstream", client_tools={"place_components": settings})
    upstream.replies = [(200, completion(calls=[("a", "place_components", {"component": "hero"})], usage=(9, 3, 12)))]
    tools = [{"type": "web_search"}, PLACE_TOOL, {"type": "mcp", "server_label": "docs", "server_url": "http://x"}]
    with proxy_client(app, "canvas") as sdk:
        raw = sdk.responses.with_raw_response.create(
            model="client-model",
            instructions="Place things.",
            input=[{"role": "developer", "content": [{"type": "input_text", "text": ASK}]}],
            tools=tools,
            tool_choice={"type": "function", "name": "place_components"},
            max_output_tokens=300,
            temperature=0.3,
            include=["reasoning.encrypted_content"],
            reasoning={"effort": "low"},
            metadata={"team": "canvas"},
            prompt_cache_key="k",
            truncation="auto",
        )
        response = raw.parse()

    body = upstream.bodies[0]
    assert body["messages"] == [
        {"role": "system", "content": "Place things."},
        {"role": "developer", "content": [{"type": "text", "text": ASK}]},
    ]
    assert [tool["function"]["name"] for tool in body["tools"]] == ["place_components"]
    assert "region" not in body["tools"][0]["function"]["parameters"]["properties"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "place_components"}}
    assert (body["max_tokens"], body["temperature"]) == (300, 0.3)
    assert not {"include", "reasoning", "metadata", "prompt_cache_key", "truncation", "input", "store"} & set(body)
    # Forced values reach the client written into the function_call's arguments.
    assert calls_of(response) == [("a", "place_components", {"component": "hero", "region": "footer"})]
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (9, 3, 12)
    assert response.metadata == {"team": "canvas"} and response.instructions == "Place things."
    run = client.get(f"/api/runs/{raw.headers['X-Toolgate-Run']}").json
    assert run["left_out_tools"] == ["web_search", "docs"]
    page = client.get(f"/runs/{raw.headers['X-Toolgate-Run']}").get_data(as_text=True)
    assert "<dt>Tools left out</dt>" in page and "<code>web_search</code>, <code>docs</code>" in page


def test_the_functions_of_a_namespace_go_upstream_by_a_name_of_their_own_and_come_back_in_it(app, client, upstream):
    put_agent(client, provider="upstream", client_tools={"crm__lookup": {"restrict_multiple_calls": True}})
    twice = [("a", "crm__lookup", {"who": "Ada"}), ("b", "crm__lookup", {"who": "Bob"})]
    upstream.replies = [
        (200, completion(calls=twice)),
        (200, completion(calls=[("c", "crm__lookup", {"who": "Ada"})])),
        (200, completion("Ada is a customer.")),
    ]
    lookup = {"type": "function", "name": "lookup", "parameters": {"type": "object"}}
    crm = {
        "type": "namespace",
        "name": "crm",
        "description": "The CRM.",
        "tools": [lookup, {"type": "custom", "name": "patch"}],
    }
    with proxy_client(app, "canvas") as sdk:
        first = sdk.responses.with_raw_response.create(model="m", input="Who is Ada?", tools=[crm])
        response = first.parse()
        second = sdk.responses.with_raw_response.create(
            model="m",
            input=[{"role": "user", "content": "Who is Ada?"}, *as_input(response), *results_for(response)],
            tools=[crm],
        )

    [call] = response.output
    assert (call.namespace, call.name, call.call_id) == ("crm", "lookup", "c")
    assert [tool["function"]["name"] for tool in upstream.bodies[0]["tools"]] == ["crm__lookup"]
    sent_back = [message for message in upstream.bodies[2]["messages"] if message.get("tool_calls")][-1]
    assert [(call["id"], call["function"]["name"]) for call in sent_back["tool_calls"]] == [("c", "crm__lookup")]
    assert second.parse().output_text == "Ada is a customer."
    assert first.headers["X-Toolgate-Run"] == second.headers["X-Toolgate-Run"]
    run = client.get(f"/api/runs/{first.headers['X-Toolgate-Run']}").json
    assert run["left_out_tools"] == ["crm.patch"] and run["rounds"][0]["calls"][0]["reason"] == "restricted_repeat"


def test_a_structured_output_format_goes_upstream_as_response_format(app, client, upstream):
    put_agent(client, provider="upstream")
    upstream.replies = [(200, completion('{"title": "Home"}'))]
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    text = {"format": {"type": "json_schema", "name": "page", "schema": schema, "strict": True}, "verbosity": "low"}
    with proxy_client(app, "canvas") as sdk:
        response = sdk.responses.create(model="m", input=ASK, text=text)

    assert upstream.bodies[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "page", "schema": schema, "strict": True},
    }
    assert json.loads(response.output_text) == {"title": "Home"} and response.text.format.name == "page"


def test_an_answer_cut_short_is_an_incomplete_response(app, client, upstream):
    put_agent(client, provider="upstream")
    upstream.replies = [(200, completion("Half a sen", finish_reason="length"))]
    with proxy_client(app, "canvas") as sdk:
        response = sdk.responses.create(model="m", input=ASK, max_output_tokens=3)
    assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens"
    assert response.output_text == "Half a sen"


def test_an_upstream_500_reaches_the_client_in_openais_shape(app, client, upstream):
    put_agent(client, provider="upstream")
    upstream.replies = [(500, {"error": {"message": "The engine is overloaded.", "type": "server_error"}})]
    with proxy_client(app, "canvas") as sdk, pytest.raises(openai.InternalServerError) as raised:
        sdk.responses.create(model="m", input=ASK, tools=[PLACE_TOOL])

    error = raised.value
    assert error.status_code == 500 and set(error.body) == {"message", "type", "param", "code"}
    assert error.body["message"] == "The model endpoint answered HTTP 500: The engine is overloaded."
    run = client.get(f"/api/runs/{error.response.headers['X-Toolgate-Run']}").json
    assert run["stop_reason"] == "error" and run["api"] == "responses"


@pytest.mark.parametrize(
    ("body", "param", "message"),
    [
        ({"model": "m"}, "input", "is required"),
        ({"model": "m", "input": 5}, "input", "a string, or a list"),
        ({"model": "m", "input": [{"role": "robot", "content": "hi"}]}, "input[0].role", "must be one of"),
        (
            {"model": "m", "input": ["Hi", {"type": "function_call", "name": "f", "arguments": "{}"}]},
            "input[0]",
            "must be an object",
        ),
        (
            {
                "model": "m",
                "input": [
                    {"role": "user", "content": "Hi"},
                    {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
                    {"type": "function_call_output", "output": "done"},
                ],
            },
            "input[2].call_id",
            "is required",
        ),
        (
            {
                "model": "m",
                "input": [
                    {"role": "user", "content": "Hi"},
                    {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "a", "output": [{"type": "input_text", "text": 5}]},
                ],
            },
            "input[2].output[0]",
            "must be an input_text part",
        ),
        ({"model": "m", "input": [{"type": "computer_call_output"}]}, "input[0].type", "must be message"),
        (
            {"model": "m", "input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
            "input[0].content[0]",
            "takes input_text",
        ),
        ({"model": "m", "input": "Hi", "tools": [{"type": "function", "name": "a b"}]}, "tools[0].name", "letters"),
        (
            {
                "model": "m",
                "input": "Hi",
                "tools": [{"type": "web_search"}, {"type": "function", "name": "f", "parameters": {"type": 5}}],
            },
            "tools[1].parameters",
            "is not a valid JSON Schema",
        ),
        ({"model": "m", "input": "Hi", "tools": ["f"]}, "tools[0]", "with a"),
        (
            {
                "model": "m",
                "input": "Hi",
                "tools": [{"type": "namespace", "name": "n", "tools": [{"type": "function"}]}],
            },
            "tools[0].tools[0].name",
            "letters",
        ),
        ({"model": "m", "input": "Hi", "tool_choice": {"type": "web_search"}}, "tool_choice", "must be auto"),
        ({"model": "m", "input": "Hi", "max_output_tokens": 0}, "max_output_tokens", "at least 1"),
        ({"model": "m", "input": "Hi", "text": {"format": {"type": "xml"}}}, "text.format", "json_schema"),
        ({"model": "m", "input": "Hi", "store": "no"}, "store", "true or false"),
    ],
)
def test_a_bad_body_is_a_400_in_openais_shape_naming_the_field(app, client, body, param, message):
    put_agent(client, script=[{"content": "Hi"}])
    with proxy_client(app, "canvas") as sdk, pytest.raises(openai.BadRequestError) as raised:
        sdk.post("/responses", body=body, cast_to=object)
    assert raised.value.body["param"] == param and raised.value.body["type"] == "invalid_request_error"
    assert message in raised.value.body["message"]
    assert client.get("/api/runs").json["total"] == 0


def call_item(call_id):
    return {"type": "function_call", "call_id": call_id, "name": "place_components", "arguments": "{}"}


def output_item(call_id):
    return {"type": "function_call_output", "call_id": call_id, "output": "uuid"}


@pytest.mark.parametrize(
    ("items", "param", "message"),
    [
        ([ASK, output_item("z")], "input[1].call_id", "answers no call"),
        ([ASK, call_item("a"), output_item("a"), output_item("a")], "input[3].call_id", "already has its result"),
        ([ASK, call_item("a"), call_item("b"), output_item("a"), ASK], "input[2].call_id", "has no result"),
        ([ASK, call_item("a"), call_item("a"), output_item("a")], "input[2].call_id", "an id of its own"),
    ],
    ids=["answers no call", "answers a call twice", "leaves a call unanswered", "shares an id"],
)
def test_tool_results_that_do_not_answer_each_call_once_are_refused_and_never_sent_upstream(
    app, client, upstream, items, param, message
):
    put_agent(client, provider="upstream")
    items = [{"role": "user", "content": item} if isinstance(item, str) else item for item in items]
    with proxy_client(app, "canvas") as sdk, pytest.raises(openai.BadRequestError) as raised:
        sdk.responses.create(model="m", input=items, tools=[PLACE_TOOL])
    assert raised.value.body["param"] == param and raised.value.body["type"] == "invalid_request_error"
    assert raised.value.body["message"].startswith(f"{param}: ") and message in raised.value.body["message"]
    assert upstream.bodies == [] and client.get("/api/runs").json["total"] == 0


IMAGE = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}


@pytest.mark.parametrize(
    "results",
    [
        [output_item("c1"), {"role": "user", "content": [IMAGE]}],
        [{**output_item("c1"), "output": [{"type": "input_text", "text": "a.png"}, IMAGE]}],
    ],
    ids=["an image after the output", "an image in the output"],
)
def test_at_the_cap_an_output_gets_the_cap_message_with_the_image_a_tool_attached(app, client, upstream, results):
    put_agent(client, provider="upstream", max_rounds=1, on_round_cap="message")
    upstream.replies = [(200, completion(calls=[("c2", "place_components", {"component": "text"})]))]
    items = [{"role": "user", "content": ASK}, call_item("c1"), *results]
    with proxy_client(app, "canvas") as sdk:
        response = sdk.responses.create(model="m", input=items, tools=[PLACE_TOOL])

    assert response.output_text == texts.MAX_ROUNDS and calls_of(response) == []
    assert upstream.bodies == []
    run = client.get("/api/runs").json["runs"][0]
    assert (run["stop_reason"], run["message"]) == ("round_cap", ASK)


def test_the_images_of_an_output_go_upstream_after_the_outputs_and_its_text_in_the_tool_message(app, client, upstream):
    put_agent(client, provider="upstream")
    upstream.replies = [(200, completion("A login form."))]
    looked = {**output_item("c1"), "output": [{"type": "input_text", "text": "a.png"}, IMAGE]}
    items = [{"role": "user", "content": ASK}, call_item("c1"), call_item("c2"), looked, output_item("c2")]
    with proxy_client(app, "canvas") as sdk:
        response = sdk.responses.create(model="m", input=items, tools=[PLACE_TOOL])
        with pytest.raises(openai.BadRequestError) as raised:
            file_image = {"type": "input_image", "file_id": "file_1"}
            sdk.responses.create(model="m", input=[*items[:3], {**looked, "output": [file_image]}], tools=[PLACE_TOOL])

    assert response.output_text == "A login form."
    assert upstream.bodies[0]["messages"][-3:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "a.png"},
        {"role": "tool", "tool_call_id": "c2", "content": "uuid"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": IMAGE["image_url"]}}]},
    ]
    assert raised.value.body["param"] == "input[3].output[0]" and "with an image_url" in raised.value.body["message"]


def test_results_are_checked_against_the_calls_of_the_response_a_request_continues(app, client):
    put_agent(client, script=[ONE_PLACEMENT, {"content": "Done."}])
    with proxy_client(app, "canvas") as sdk:
        response = sdk.responses.create(model="m", input=ASK, tools=[PLACE_TOOL])
        refused = {}
        for name, items in (
            ("twice", [*results_for(response), *results_for(response)]),
            ("unanswered", [{"role": "user", "content": "Never mind."}]),
        ):
            with pytest.raises(openai.BadRequestError) as raised:
                sdk.responses.create(model="m", previous_response_id=response.id, input=items, tools=[PLACE_TOOL])
            refused[name] = raised.value.body
        answered = sdk.responses.create(
            model="m", previous_response_id=response.id, input=results_for(response), tools=[PLACE_TOOL]
        )

    assert calls_of(response) == [("hero", "place_components", {"component": "hero"})]
    assert refused["twice"]["param"] == "input[1].call_id"
    assert refused["unanswered"]["param"] == "previous_response_id"
    assert refused["unanswered"]["message"].startswith("previous_response_id: has no result")
    assert answered.output_text == "Done." and client.get("/api/runs").json["total"] == 1


def test_a_request_the_proxy_cannot_serve_is_in_the_log_with_the_agent_the_path_and_the_reason(app, client):
    put_agent(client, script=[{"content": "Hi"}])
    with serving(app) as base_url, httpx2.Client(base_url=base_url) as http:
        unknown_path = http.post("/proxy/canvas/v1/realtime/sessions", json={})
        not_json = http.post("/proxy/canvas/v1/responses", content=b"input=Hi")
        bad_body = http.post("/proxy/canvas/v1/responses", json={"model": "m", "input": 5})
        unknown_agent = http.post("/proxy/nobody/v1/responses", json={"model": "m", "input": "Hi"})
    assert [unknown_path.status_code, not_json.status_code, bad_body.status_code, unknown_agent.status_code] == [
        404,
        415,
        400,
        404,
    ]

    log = client.get("/log?agent=canvas").get_data(as_text=True)
    assert log.count(">Proxy request refused</a>") == 3  # three entries, each linking to its kind
    assert "POST /proxy/canvas/v1/realtime/sessions was refused with HTTP 404: There is nothing at this address." in log
    assert "POST /proxy/canvas/v1/responses was refused with HTTP 415: The body must be sent as JSON" in log
    assert "POST /proxy/canvas/v1/responses was refused with HTTP 400: input: must be a string, or a list" in log
    others = client.get("/log?agent=nobody").get_data(as_text=True)
    assert "POST /proxy/nobody/v1/responses was refused with HTTP 404: No agent with id" in others


# --- The OpenAI Agents SDK, as it runs by default ----------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_the_agents_sdk_in_its_default_configuration_gets_one_placement_at_a_time(app, client, streamed):
    text = {"name": "place_components", "arguments": {"component": "text"}}
    put_agent(client, script=[TWO_PLACEMENTS, ONE_PLACEMENT, {"tool_calls": [text]}, {"content": "Done."}])
    placed = []

    @function_tool
    def place_components(component: str) -> str:
        """Place a component on the canvas."""
        placed.append(component)
        return f"uuid-of-{component}"

    set_tracing_disabled(True)
    agent = Agent(name="Canvas", instructions="Build pages.", tools=[place_components], model="gpt-x")
    with serving(app) as base_url:

        async def run():
            sdk = openai.AsyncOpenAI(base_url=f"{base_url}/proxy/canvas/v1", api_key="any key", max_retries=0)
            config = RunConfig(model_provider=OpenAIProvider(openai_client=sdk))
            if not streamed:
                return await Runner.run(agent, ASK, run_config=config)
            result = Runner.run_streamed(agent, ASK, run_config=config)
            async for _ in result.stream_events():
                pass
            return result

        # In a thread of its own: the browser tests' Playwright keeps an event loop running in this one.
        with ThreadPoolExecutor(1) as pool:
            result = pool.submit(asyncio.run, run()).result(timeout=60)

    assert result.final_output == "Done."
    assert placed == ["hero", "text"]
    [summary] = client.get("/api/runs").json["runs"]
    run = hidden_round_shows_both_rejections(client, summary["id"])
    assert run["api"] == "responses" and run["stop_reason"] == "answered" and run["message"] == ASK
    assert [call["run_by"] for round_ in run["rounds"][1:3] for call in round_["calls"]] == ["client", "client"]
