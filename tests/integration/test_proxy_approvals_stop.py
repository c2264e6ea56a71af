"""Stop on a proxied run whose response is held for approval: the run ends at once with stop reason `stopped`, and
the client's request, waiting in a thread of its own (a real SDK client against the app served on 127.0.0.1), is
answered within about a second with the stop as its answer — an assistant text, as the round cap's message reaches
it — and none of the held calls. Stop is pressed through the runs API, or the run page's form, as a person would,
from outside the request that waits: that request sees the stop in the run's row only."""

import json
import time
from concurrent.futures import ThreadPoolExecutor

import anthropic
import pytest

from tests.live_http import serving
from tests.proxy_support import PLACE, USER, chat_stream_lines, proxy_client

STOPPED_ANSWER = "A person stopped this run in Toolgate while its tool calls waited for approval: none of them was run."
STOPPED_CALL = "Error: This tool call was not executed, because a person stopped the run."
HERO = {"tool_calls": [{"id": "hero", "name": "place_components", "arguments": {"component": "hero"}}]}
WAIT = 15  # seconds: the longest any step of these tests may take
RELEASED_WITHIN = 1.5  # seconds between Stop and the client's answer: the held request looks at its run every 0.25 s
ANTHROPIC_TOOLS = [{"name": "place_components", "input_schema": PLACE["function"]["parameters"]}]
RESPONSES_TOOLS = [{"type": "function", "name": "place_components", "parameters": PLACE["function"]["parameters"]}]


def put_agent(client, script, agent_id="canvas"):
    agent = {
        "label": "Canvas",
        "client_tools": {"place_components": {"require_approval": True}},
        "approval_timeout_seconds": 60,
        "script": script,
    }
    response = client.put(f"/api/agents/{agent_id}", json=agent)
    assert response.status_code in (200, 201), response.json


def held_run(client, not_this=None):
    """The id of the agent's run awaiting approval, once a held request has recorded it."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        runs = client.get("/api/runs?state=awaiting_approval&agent=canvas").json["runs"]
        if runs and runs[0]["id"] != not_this:
            return runs[0]["id"]
        time.sleep(0.05)
    raise AssertionError("no run awaited approval")


def stop(client, run_id):
    return client.post(f"/api/runs/{run_id}/stop", json={})


@pytest.fixture
def waiting():
    """Run a client's request in a thread of its own, as a client that waits for its answer."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        yield pool.submit


def stop_while_it_waits(client, answer):
    """Press Stop on the held run once its request waits; (the run Stop answered, the client's answer, how long the
    client waited after Stop)."""
    run_id = held_run(client)
    time.sleep(0.3)
    assert not answer.done()
    pressed = time.monotonic()
    response = stop(client, run_id)
    assert response.status_code == 200, response.json
    result = answer.result(timeout=WAIT)
    return response.json, result, time.monotonic() - pressed


def assert_stopped_run(run, answer=STOPPED_ANSWER):
    """The stored run of a held response a person stopped: ended, stopped, its held round hidden with every call
    answered as not run, and the answer its client received."""
    assert (run["state"], run["stop_reason"], run["answer"]) == ("finished", "stopped", answer)
    assert run["pending_round"] is None and run["model_requests"] == 1
    [held] = run["rounds"]
    assert held["shown_to_client"] is False
    assert [(call["id"], call["status"], call["reason"], call["message"]) for call in held["calls"]] == [
        ("hero", "rejected", "stopped", STOPPED_CALL)
    ]
    assert run["messages"][-2:] == [
        {"role": "tool", "tool_call_id": "hero", "content": STOPPED_CALL},
        {"role": "assistant", "content": answer},
    ]
    assert (run["tool_calls"], run["rejected_calls"]) == (0, 1)


def test_a_chat_completions_client_gets_the_stop_as_its_answer_and_none_of_the_held_calls(app, client, waiting):
    put_agent(client, [HERO, {"content": "Placed."}])
    with proxy_client(app, "canvas") as sdk:
        answer = waiting(sdk.chat.completions.create, model="gpt-x", messages=[USER], tools=[PLACE])
        stopped, completion, waited = stop_while_it_waits(client, answer)

    assert waited < RELEASED_WITHIN
    choice = completion.choices[0]
    assert (choice.message.content, choice.message.tool_calls, choice.finish_reason) == (STOPPED_ANSWER, None, "stop")
    assert_stopped_run(stopped)
    run = client.get(f"/api/runs/{stopped['id']}").json
    assert_stopped_run(run)
    assert run["conversation"]["key"] != stopped["conversation"]["key"]  # recorded as its client got it
    late = client.post(f"/api/runs/{run['id']}/decisions", json={"decisions": {"hero": {"approve": True}}})
    assert (late.status_code, late.json["error"]) == (409, "state: The run has already ended.")
    again = stop(client, run["id"])
    assert (again.status_code, again.json["error"]) == (409, "state: The run has already ended.")
    assert client.get(f"/api/runs/{run['id']}").json == run


def test_a_streamed_chat_completions_client_gets_the_stop_as_text_then_its_end(app, client, waiting):
    app.config["PROXY_KEEP_ALIVE_SECONDS"] = 0.2
    put_agent(client, [HERO, {"content": "Placed."}])
    with proxy_client(app, "canvas") as sdk:
        stopped, received, waited = stop_while_it_waits(client, waiting(chat_stream_lines, sdk, [PLACE]))

    assert waited < RELEASED_WITHIN
    assert ": keep-alive" in received and [line for line in received if line][-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in received if line.startswith("data: {")]
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks if chunk["choices"]]
    assert "".join(delta.get("content") or "" for delta in deltas) == STOPPED_ANSWER
    assert not [delta for delta in deltas if delta.get("tool_calls")]
    assert [chunk["choices"][0]["finish_reason"] for chunk in chunks if chunk["choices"]][-1] == "stop"
    assert_stopped_run(client.get(f"/api/runs/{stopped['id']}").json)


def test_a_streamed_messages_client_gets_the_text_before_the_hold_then_the_stop_and_no_tool_use(app, client, waiting):
    app.config["PROXY_KEEP_ALIVE_SECONDS"] = 0.2
    put_agent(client, [{**HERO, "content": "Placing a hero."}, {"content": "Placed."}])
    with serving(app) as base_url:
        sdk = anthropic.Anthropic(base_url=f"{base_url}/proxy/canvas", api_key="any key", max_retries=0)

        def read_stream():
            with sdk.messages.stream(
                model="claude-x", max_tokens=100, messages=[USER], tools=ANTHROPIC_TOOLS
            ) as events:
                return [event.type for event in events], events.get_final_message()

        stopped, (events, message), waited = stop_while_it_waits(client, waiting(read_stream))

    assert waited < RELEASED_WITHIN
    assert events[-1] == "message_stop"
    shown = f"Placing a hero.\n\n{STOPPED_ANSWER}"
    assert [(block.type, block.text) for block in message.content] == [("text", shown)]
    assert message.stop_reason == "end_turn"
    assert_stopped_run(client.get(f"/api/runs/{stopped['id']}").json, answer=shown)


def test_a_messages_client_not_streamed_gets_the_stop(app, client, waiting):
    put_agent(client, [HERO, {"content": "Placed."}])
    with serving(app) as base_url:
        sdk = anthropic.Anthropic(base_url=f"{base_url}/proxy/canvas", api_key="any key", max_retries=0)
        answer = waiting(sdk.messages.create, model="claude-x", max_tokens=100, messages=[USER], tools=ANTHROPIC_TOOLS)
        stopped, message, waited = stop_while_it_waits(client, answer)

    assert waited < RELEASED_WITHIN
    assert [(block.type, block.text) for block in message.content] == [("text", STOPPED_ANSWER)]
    assert message.stop_reason == "end_turn"
    assert_stopped_run(client.get(f"/api/runs/{stopped['id']}").json)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_responses_client_gets_the_stop_as_its_output_message(app, client, waiting, stream):
    put_agent(client, [HERO, {"content": "Placed."}])
    with proxy_client(app, "canvas") as sdk:

        def ask():
            if not stream:
                return sdk.responses.create(model="gpt-x", input=USER["content"], tools=RESPONSES_TOOLS)
            with sdk.responses.stream(model="gpt-x", input=USER["content"], tools=RESPONSES_TOOLS) as events:
                return events.get_final_response()

        stopped, response, waited = stop_while_it_waits(client, waiting(ask))
        kept = sdk.responses.retrieve(response.id)

    assert waited < RELEASED_WITHIN
    assert [item.type for item in response.output] == ["message"] and response.output_text == STOPPED_ANSWER
    assert response.status == "completed" and kept.output_text == STOPPED_ANSWER
    run = client.get(f"/api/runs/{stopped['id']}").json
    assert_stopped_run(run)
    assert run["api"] == "responses"


def test_the_same_conversation_sent_again_after_the_stop_is_asked_anew_as_for_any_ended_run(app, client, waiting):
    put_agent(client, [HERO, {"content": "Placed."}])
    with proxy_client(app, "canvas") as sdk:
        answer = waiting(sdk.chat.completions.create, model="gpt-x", messages=[USER], tools=[PLACE])
        stopped, _completion, _waited = stop_while_it_waits(client, answer)
        stopped_run = client.get(f"/api/runs/{stopped['id']}").json

        again = waiting(sdk.chat.completions.create, model="gpt-x", messages=[USER], tools=[PLACE])
        retried = held_run(client, not_this=stopped["id"])
        decided = client.post(f"/api/runs/{retried}/decisions", json={"decisions": {"hero": {"approve": True}}})
        assert decided.status_code == 200
        message = again.result(timeout=WAIT).choices[0].message

    assert [call.id for call in message.tool_calls] == ["hero"]
    assert retried != stopped["id"] and client.get(f"/api/runs/{retried}").json["model_requests"] == 1
    assert client.get(f"/api/runs/{stopped['id']}").json == stopped_run


def test_a_held_run_whose_client_went_away_is_stopped_and_a_client_that_comes_back_is_asked_anew(app, client, waiting):
    put_agent(client, [HERO, {"content": "Placed."}])
    with serving(app) as base_url:
        body = {"model": "claude-x", "max_tokens": 100, "messages": [USER], "tools": ANTHROPIC_TOOLS}
        gone = anthropic.Anthropic(base_url=f"{base_url}/proxy/canvas", api_key="any key", max_retries=0, timeout=1)
        with pytest.raises(anthropic.APITimeoutError):
            gone.messages.create(**body)
        run_id = held_run(client)

        stopped = stop(client, run_id)
        assert stopped.status_code == 200
        assert_stopped_run(stopped.json)
        again = anthropic.Anthropic(base_url=f"{base_url}/proxy/canvas", api_key="any key", max_retries=0)
        answer = waiting(again.messages.create, **body)
        retried = held_run(client, not_this=run_id)
        assert stop(client, retried).status_code == 200
        message = answer.result(timeout=WAIT)

    assert [(block.type, block.text) for block in message.content] == [("text", STOPPED_ANSWER)]
    assert_stopped_run(client.get(f"/api/runs/{run_id}").json)
    assert [run["id"] for run in client.get("/api/runs?agent=canvas").json["runs"]] == [retried, run_id]


def test_a_call_decided_before_the_stop_keeps_its_review_and_is_not_handed_over(app, client, waiting):
    both = {
        "tool_calls": [
            {"id": "hero", "name": "place_components", "arguments": {"component": "hero"}},
            {"id": "text", "name": "place_components", "arguments": {"component": "text"}},
        ]
    }
    put_agent(client, [both, {"content": "Placed."}])
    with proxy_client(app, "canvas") as sdk:
        answer = waiting(sdk.chat.completions.create, model="gpt-x", messages=[USER], tools=[PLACE])
        run_id = held_run(client)
        approve = client.post(f"/runs/{run_id}/decisions", data={"call_id": "hero", "decision": "approve"})
        assert approve.status_code == 303
        pressed = client.post(f"/runs/{run_id}/stop")  # the run page's Stop, without JavaScript
        completion = answer.result(timeout=WAIT)

    assert pressed.status_code == 303 and pressed.headers["Location"] == f"/runs/{run_id}"
    assert completion.choices[0].message.content == STOPPED_ANSWER and not completion.choices[0].message.tool_calls
    calls = client.get(f"/api/runs/{run_id}").json["rounds"][0]["calls"]
    assert [(call["id"], call["reason"], (call.get("review") or {}).get("decision")) for call in calls] == [
        ("hero", "stopped", "approved"),
        ("text", "stopped", None),
    ]
    page = client.get(f"/runs/{run_id}").get_data(as_text=True)
    assert "Stopped by a person" in page and STOPPED_ANSWER in page


def test_stop_on_a_gate_api_request_that_waits_says_to_decide_instead(client):
    put_agent(client, [])
    calls = [{"id": "hero", "name": "place_components", "arguments": {"component": "hero"}}]
    first = client.post("/api/agents/canvas/gate", json={"tool_calls": calls}).json

    response = stop(client, first["run_id"])

    assert response.status_code == 409
    assert response.json["error"] == (
        "state: A gate API request waits for the decisions on this run's calls: approve or reject them."
    )
    assert client.get(f"/api/runs/{first['run_id']}").json["state"] == "awaiting_approval"


def test_stop_through_the_api_refuses_an_unknown_run_and_a_body_that_is_not_an_empty_json_object(client):
    assert client.post("/api/runs/99/stop", json={}).status_code == 404
    assert client.post("/api/runs/99/stop", data="stop").status_code == 415
    refused = client.post("/api/runs/99/stop", json={"why": "enough"})
    assert (refused.status_code, refused.json["field"]) == (400, "body")
    assert refused.json["error"] == "body: must be an empty JSON object: Stop takes no fields"
