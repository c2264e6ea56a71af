"""Approvals on client tools (SPEC §8): a proxied response that calls a client tool with `require_approval` is held
until a person decides on each such call. Real clients (the openai SDK, Chat Completions and Responses, and the
anthropic SDK) wait in a thread of their own, against the app served on 127.0.0.1, while the test decides through
the runs API as a reviewer would, from another process."""

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import anthropic
import pytest

from tests.live_http import serving
from tests.proxy_support import PLACE, USER, chat_stream_lines, proxy_client

APPROVE = {"place_components": {"require_approval": True}}
HERO = {"tool_calls": [{"id": "hero", "name": "place_components", "arguments": {"component": "hero"}}]}
FOOTER = {"tool_calls": [{"id": "footer", "name": "place_components", "arguments": {"component": "footer"}}]}
WAIT = 15  # seconds: the longest any step of these tests may take


def put_agent(client, agent_id="canvas", **fields):
    agent = {"label": "Canvas", "client_tools": APPROVE, "approval_timeout_seconds": 5, **fields}
    response = client.put(f"/api/agents/{agent_id}", json=agent)
    assert response.status_code in (200, 201), response.json


def held_run(client, agent_id="canvas", not_this=None):
    """The id of the agent's run awaiting approval, once a held request has recorded it."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        runs = client.get(f"/api/runs?state=awaiting_approval&agent={agent_id}").json["runs"]
        if runs and runs[0]["id"] != not_this:
            return runs[0]["id"]
        time.sleep(0.05)
    raise AssertionError("no run awaited approval")


def decide(client, run_id, decisions):
    return client.post(f"/api/runs/{run_id}/decisions", json={"decisions": decisions})


@pytest.fixture
def waiting():
    """Run a client's request in a thread of its own, as a client that waits for its answer."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        yield pool.submit


def test_an_approved_call_reaches_the_client_once_decided_and_not_before(app, client, waiting):
    put_agent(client, script=[HERO, {"content": "Placed."}])
    with proxy_client(app, "canvas") as sdk:
        answer = waiting(sdk.chat.completions.create, model="gpt-x", messages=[USER], tools=[PLACE])
        run_id = held_run(client)
        time.sleep(0.5)
        assert not answer.done()  # held: nothing of the response has reached the client
        run = client.get(f"/api/runs/{run_id}").json
        assert run["state"] == "awaiting_approval" and run["source"] == "proxy"
        assert [call["status"] for call in run["pending_round"]["calls"]] == ["awaiting_approval"]

        before = time.time()
        assert decide(client, run_id, {"hero": {"approve": True}}).status_code == 200
        after = time.time()
        message = answer.result(timeout=WAIT).choices[0].message

    assert [(call.id, json.loads(call.function.arguments)) for call in message.tool_calls] == [
        ("hero", {"component": "hero"})
    ]
    run = client.get(f"/api/runs/{run_id}").json
    assert run["state"] == "finished" and run["stop_reason"] == "awaiting_client"
    assert run["model_requests"] == 1 and len(run["rounds"]) == 1
    review = run["rounds"][0]["calls"][0]["review"]
    assert review["decision"] == "approved" and before - 0.001 <= review["decided_at"] <= after
    assert decide(client, run_id, {"hero": {"approve": True}}).status_code == 409


def test_an_edited_call_reaches_the_client_with_the_reviewers_arguments(app, client, waiting):
    put_agent(client, script=[HERO, {"content": "Placed."}])
    with proxy_client(app, "canvas") as sdk:
        answer = waiting(sdk.chat.completions.create, model="gpt-x", messages=[USER], tools=[PLACE])
        run_id = held_run(client)
        refused = decide(client, run_id, {"hero": {"approve": True, "arguments": {"region": "header"}}})
        assert refused.status_code == 400
        assert refused.json["field"] == "decisions.hero.arguments"
        assert "component" in refused.json["error"]

        edited = {"component": "text", "region": "header"}
        assert decide(client, run_id, {"hero": {"approve": True, "arguments": edited}}).status_code == 200
        message = answer.result(timeout=WAIT).choices[0].message

    assert [(call.id, json.loads(call.function.arguments)) for call in message.tool_calls] == [("hero", edited)]


def test_a_rejected_call_never_reaches_the_client_and_the_model_is_asked_again(app, client, waiting):
    put_agent(client, script=[HERO, {"content": "I will not place a hero then."}])
    with proxy_client(app, "canvas") as sdk:
        answer = waiting(sdk.chat.completions.create, model="gpt-x", messages=[USER], tools=[PLACE])
        run_id = held_run(client)
        assert decide(client, run_id, {"hero": {"reject": "No heroes today."}}).status_code == 200
        message = answer.result(timeout=WAIT).choices[0].message

    assert message.content == "I will not place a hero then." and not message.tool_calls
    run = client.get(f"/api/runs/{run_id}").json
    hidden, shown = run["rounds"]
    assert hidden["shown_to_client"] is False and shown["shown_to_client"] is True
    call = hidden["calls"][0]
    assert (call["status"], call["reason"]) == ("rejected", "reviewer_rejected")
    assert call["message"] == "Error: A reviewer rejected this tool call. No heroes today."
    assert run["messages"][2] == {"role": "tool", "tool_call_id": "hero", "content": call["message"]}


def test_a_call_no_one_decides_in_time_is_rejected_and_a_late_decision_is_refused(app, client, waiting):
    put_agent(client, script=[HERO, {"content": "No one answered."}], approval_timeout_seconds=1)
    with proxy_client(app, "canvas") as sdk:
        started, before = time.monotonic(), time.time()
        answer = waiting(sdk.chat.completions.create, model="gpt-x", messages=[USER], tools=[PLACE])
        run_id = held_run(client)
        message = answer.result(timeout=WAIT).choices[0].message
        answered = time.time()

    assert time.monotonic() - started >= 1
    assert message.content == "No one answered." and not message.tool_calls
    call = client.get(f"/api/runs/{run_id}").json["rounds"][0]["calls"][0]
    assert (call["reason"], call["review"]["decision"], call["review"]["by"]) == ("approval_timeout", "timed_out", None)
    assert before + 1 <= call["review"]["decided_at"] <= answered  # the deadline it waited until
    page = client.get(f"/runs/{run_id}").get_data(as_text=True)
    assert "Not decided in time: no one approved or rejected it before the approval timeout" in page
    # A case replays the reviewers' decisions; no decision was taken here, so the run cannot become one.
    assert (
        "This run cannot be saved as a regression case: no one decided one of its calls within the approval "
        "timeout, and a replay cannot wait for that." in page
    )
    assert call["message"] == (
        "Error: This tool call was not executed: it requires approval, and no one decided on it within 1 seconds."
    )
    late = decide(client, run_id, {"hero": {"approve": True}})
    assert late.status_code == 409


def test_a_streamed_request_keeps_its_connection_alive_while_held(app, client, waiting):
    app.config["PROXY_KEEP_ALIVE_SECONDS"] = 0.3
    put_agent(client, script=[HERO, {"content": "Placed."}])
    with proxy_client(app, "canvas") as sdk:
        lines = waiting(chat_stream_lines, sdk, [PLACE])
        run_id = held_run(client)
        time.sleep(1)
        assert decide(client, run_id, {"hero": {"approve": True}}).status_code == 200
        received = lines.result(timeout=WAIT)

    assert received.count(": keep-alive") >= 2
    chunks = [json.loads(line.removeprefix("data: ")) for line in received if line.startswith("data: {")]
    calls = [call for chunk in chunks for call in chunk["choices"][0]["delta"].get("tool_calls") or []]
    assert [call["id"] for call in calls] == ["hero"] and [line for line in received if line][-1] == "data: [DONE]"


def test_two_decisions_racing_for_one_call_one_wins_the_other_gets_409(app, client, waiting):
    put_agent(client, script=[HERO, {"content": "Placed."}])
    with proxy_client(app, "canvas") as sdk:
        answer = waiting(sdk.chat.completions.create, model="gpt-x", messages=[USER], tools=[PLACE])
        run_id = held_run(client)
        barrier = threading.Barrier(2)

        def racer(decision):
            barrier.wait(timeout=WAIT)
            return app.test_client().post(f"/api/runs/{run_id}/decisions", json={"decisions": {"hero": decision}})

        first = waiting(racer, {"approve": True})
        second = waiting(racer, {"reject": "No."})
        statuses = sorted([first.result(timeout=WAIT).status_code, second.result(timeout=WAIT).status_code])
        answer.result(timeout=WAIT)

    assert statuses == [200, 409]


def test_a_client_that_went_away_sends_the_same_conversation_again_and_gets_the_decision(app, client, waiting):
    put_agent(client, script=[HERO, {"content": "Placed."}])
    with serving(app) as base_url:
        gone = anthropic.Anthropic(base_url=f"{base_url}/proxy/canvas", api_key="any key", max_retries=0, timeout=1)
        body = {"model": "claude-x", "max_tokens": 100, "messages": [{"role": "user", "content": USER["content"]}]}
        tools = [{"name": "place_components", "input_schema": PLACE["function"]["parameters"]}]
        with pytest.raises(anthropic.APITimeoutError):
            gone.messages.create(**body, tools=tools)
        run_id = held_run(client)

        again = anthropic.Anthropic(base_url=f"{base_url}/proxy/canvas", api_key="any key", max_retries=0)
        answer = waiting(again.messages.create, **body, tools=tools)
        time.sleep(0.5)
        assert decide(client, run_id, {"hero": {"approve": True}}).status_code == 200
        message = answer.result(timeout=WAIT)

    assert [(block.type, block.id, block.input) for block in message.content if block.type == "tool_use"] == [
        ("tool_use", "hero", {"component": "hero"})
    ]
    runs = client.get("/api/runs?agent=canvas").json["runs"]
    assert [run["id"] for run in runs] == [run_id]
    assert client.get(f"/api/runs/{run_id}").json["model_requests"] == 1


def test_a_streamed_messages_request_gets_the_text_before_the_hold_then_pings_then_the_call(app, client, waiting):
    app.config["PROXY_KEEP_ALIVE_SECONDS"] = 0.3
    put_agent(client, script=[{**HERO, "content": "Placing a hero."}, {"content": "Placed."}])
    text_arrived = threading.Event()
    with serving(app) as base_url:
        sdk = anthropic.Anthropic(base_url=f"{base_url}/proxy/canvas", api_key="any key", max_retries=0)
        tools = [{"name": "place_components", "input_schema": PLACE["function"]["parameters"]}]

        def read_stream():
            lines = []
            with sdk.messages.with_streaming_response.create(
                model="claude-x", max_tokens=100, messages=[USER], tools=tools, stream=True
            ) as response:
                for line in response.iter_lines():
                    lines.append(line)
                    if "hero." in line:  # the last word of the text, streamed word by word
                        text_arrived.set()
            return lines

        lines = waiting(read_stream)
        run_id = held_run(client)
        assert text_arrived.wait(WAIT)  # the text the model wrote before its call, while the call waits
        time.sleep(1.5)
        assert decide(client, run_id, {"hero": {"approve": True}}).status_code == 200
        received = lines.result(timeout=WAIT)

    events = [line.removeprefix("event: ") for line in received if line.startswith("event: ")]
    assert events.count("ping") >= 2
    held = events.index("ping")
    assert "content_block_delta" in events[:held] and events[held:].count("content_block_start") == 1
    assert events[-1] == "message_stop"
    tool_use = [json.loads(line[6:]) for line in received if line.startswith("data: ") and '"tool_use"' in line]
    assert tool_use[0]["content_block"]["id"] == "hero"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_responses_client_waits_for_the_approval_of_its_call(app, client, waiting, stream):
    put_agent(client, script=[HERO, {"content": "Placed."}])
    function = {"type": "function", "name": "place_components", "parameters": PLACE["function"]["parameters"]}
    with proxy_client(app, "canvas") as sdk:

        def ask():
            if not stream:
                return sdk.responses.create(model="gpt-x", input=USER["content"], tools=[function])
            with sdk.responses.stream(model="gpt-x", input=USER["content"], tools=[function]) as events:
                return events.get_final_response()

        answer = waiting(ask)
        run_id = held_run(client)
        edited = {"hero": {"approve": True, "arguments": {"component": "text"}}}
        assert decide(client, run_id, edited).status_code == 200
        response = answer.result(timeout=WAIT)

    calls = [item for item in response.output if item.type == "function_call"]
    assert [(call.call_id, json.loads(call.arguments)) for call in calls] == [("hero", {"component": "text"})]
    assert client.get(f"/api/runs/{run_id}").json["api"] == "responses"


def test_a_rejected_call_brings_the_collateral_message_to_the_other_calls_of_its_response(app, client, waiting):
    both = {
        "tool_calls": [
            {"id": "hero", "name": "place_components", "arguments": {"component": "hero"}},
            {"id": "layout", "name": "get_layout", "arguments": {}},
        ]
    }
    put_agent(client, script=[both, {"content": "Understood."}])
    get_layout = {"type": "function", "function": {"name": "get_layout", "parameters": {"type": "object"}}}
    with proxy_client(app, "canvas") as sdk:
        answer = waiting(sdk.chat.completions.create, model="gpt-x", messages=[USER], tools=[PLACE, get_layout])
        run_id = held_run(client)
        pending = client.get(f"/api/runs/{run_id}").json["pending_round"]["calls"]
        assert [call["status"] for call in pending] == ["awaiting_approval", "allowed"]
        page = client.get(f"/runs/{run_id}").get_data(as_text=True)
        assert "Awaiting approval: 1 of 1 call to decide — nothing has run yet" in page
        assert "sent to the client" not in page
        assert decide(client, run_id, {"hero": {"reject": ""}}).status_code == 200
        message = answer.result(timeout=WAIT).choices[0].message

    assert message.content == "Understood." and not message.tool_calls
    calls = client.get(f"/api/runs/{run_id}").json["rounds"][0]["calls"]
    assert [(call["id"], call["reason"], call["message"]) for call in calls] == [
        ("hero", "reviewer_rejected", "Error: A reviewer rejected this tool call."),
        (
            "layout",
            "not_run",
            "Error: This tool call was not executed, because another call in the same response was rejected. Call "
            "it again if you still need it.",
        ),
    ]


class WebhookReceiver:
    """A webhook on 127.0.0.1 that records each JSON POST, then answers with `status`, or hangs until released."""

    def __init__(self, status=204, hang=False):
        self.status = status
        self.hang = hang
        self.posts = []
        self.received = threading.Event()
        self.release = threading.Event()

    def __call__(self, environ, start_response):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        self.posts.append(json.loads(environ["wsgi.input"].read(length)))
        self.received.set()
        if self.hang:
            self.release.wait(WAIT)
        start_response(f"{self.status} Webhook", [("Content-Type", "text/plain")])
        return [b""]


@pytest.mark.parametrize(
    "receiver",
    [WebhookReceiver(), WebhookReceiver(status=500), WebhookReceiver(hang=True)],
    ids=["answers", "fails", "hangs"],
)
def test_the_webhook_is_told_of_the_waiting_call_and_never_delays_the_run(app, client, waiting, receiver):
    with serving(receiver) as hook_url:
        put_agent(client, script=[HERO, {"content": "Placed."}], approval_webhook=f"{hook_url}/toolgate")
        with proxy_client(app, "canvas") as sdk:
            answer = waiting(sdk.chat.completions.create, model="gpt-x", messages=[USER], tools=[PLACE])
            run_id = held_run(client)
            assert receiver.received.wait(WAIT)
            assert decide(client, run_id, {"hero": {"approve": True}}).status_code == 200
            message = answer.result(timeout=WAIT).choices[0].message
            receiver.release.set()

    assert [call.id for call in message.tool_calls] == ["hero"]
    assert receiver.posts == [
        {
            "event": "approval_requested",
            "run_id": run_id,
            "agent_id": "canvas",
            "calls": [{"id": "hero", "tool": "place_components", "arguments": {"component": "hero"}}],
            "url": f"{sdk.toolgate_url}/runs/{run_id}",
        }
    ]


def test_a_webhook_no_longer_allowed_when_it_is_sent_is_not_sent_and_the_run_goes_on(app, client, waiting, caplog):
    app.config["ALLOWED_NETWORKS"] = "169.254.169.254"  # allowed when the agent is saved, not when a call waits
    put_agent(client, script=[HERO, {"content": "Placed."}], approval_webhook="http://169.254.169.254/hook")
    app.config["ALLOWED_NETWORKS"] = ""
    with proxy_client(app, "canvas") as sdk:
        answer = waiting(sdk.chat.completions.create, model="gpt-x", messages=[USER], tools=[PLACE])
        run_id = held_run(client)
        assert decide(client, run_id, {"hero": {"approve": True}}).status_code == 200
        answer.result(timeout=WAIT)

    assert f"The approval webhook of run {run_id} was not sent: its URL is not allowed: 169.254.169.254 is a cloud" in (
        caplog.text
    )


# --- The gate API: a caller that drives its own loop polls with its request_id -------------------------------


def gate(client, **body):
    return client.post("/api/agents/canvas/gate", json=body)


BASH_CALLS = [
    {"id": "rm", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "rm -rf build"}'}},
    {"id": "ls", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
]


def test_the_gate_api_says_a_call_awaits_approval_and_gives_the_decision_to_the_same_request_id(client):
    put_agent(client, client_tools={"Bash": {"require_approval": True}, "ls": {}})
    first = gate(client, tool_calls=BASH_CALLS, request_id="canvas-7")

    assert first.status_code == 200
    assert first.json["execute"] == [] and first.json["awaiting"] == ["rm"]
    assert [(call["id"], call["status"]) for call in first.json["calls"]] == [
        ("rm", "awaiting_approval"),
        ("ls", "allowed"),
    ]
    run_id = first.json["run_id"]
    assert client.get(f"/api/runs/{run_id}").json["state"] == "awaiting_approval"
    page = client.get(f"/runs/{run_id}")
    assert page.status_code == 200 and "Awaiting approval: 1 of 1 call to decide" in page.get_data(as_text=True)
    again = gate(client, tool_calls=BASH_CALLS, request_id="canvas-7")
    assert (again.json["run_id"], again.json["execute"]) == (run_id, [])

    edited = {"command": "rm -rf build/cache"}
    assert decide(client, run_id, {"rm": {"approve": True, "arguments": edited}}).status_code == 200
    decided = gate(client, tool_calls=BASH_CALLS, request_id="canvas-7").json

    assert decided["execute"] == ["rm", "ls"] and "awaiting" not in decided
    assert decided["calls"][0]["arguments"] == edited and decided["tool_messages"] == []
    run = client.get(f"/api/runs/{run_id}").json
    assert run["state"] == "finished" and run["rounds"][0]["calls"][0]["review"]["decision"] == "approved"
    assert gate(client, tool_calls=BASH_CALLS, request_id="canvas-7").json == decided
    assert client.get(f"/runs/{run_id}").status_code == 200
    assert decide(client, run_id, {"rm": {"approve": True}}).status_code == 409


def test_the_gate_api_gives_a_rejection_as_the_calls_tool_message(client):
    put_agent(client, client_tools={"Bash": {"require_approval": True}})
    first = gate(client, tool_calls=BASH_CALLS[:1]).json
    assert first["request_id"] and first["awaiting"] == ["rm"]

    before = time.time()
    assert decide(client, first["run_id"], {"rm": {"reject": "Not the build."}}).status_code == 200
    after = time.time()
    decided = gate(client, tool_calls=BASH_CALLS[:1], request_id=first["request_id"]).json
    review = client.get(f"/api/runs/{first['run_id']}").json["rounds"][0]["calls"][0]["review"]
    assert review["decision"] == "rejected" and before - 0.001 <= review["decided_at"] <= after

    assert decided["execute"] == []
    assert decided["tool_messages"] == [
        {"role": "tool", "tool_call_id": "rm", "content": "Error: A reviewer rejected this tool call. Not the build."}
    ]


def test_a_gate_api_call_no_one_decides_in_time_is_rejected_as_such(client):
    put_agent(client, client_tools={"Bash": {"require_approval": True}}, approval_timeout_seconds=1)
    before = time.time()
    first = gate(client, tool_calls=BASH_CALLS[:1], request_id="late").json
    held = time.time()
    time.sleep(1.1)

    decided = gate(client, tool_calls=BASH_CALLS[:1], request_id="late").json

    assert decided["execute"] == [] and decided["calls"][0]["reason"] == "approval_timeout"
    assert decide(client, first["run_id"], {"rm": {"approve": True}}).status_code == 409
    review = client.get(f"/api/runs/{first['run_id']}").json["rounds"][0]["calls"][0]["review"]
    assert review["decision"] == "timed_out" and before + 1 - 0.001 <= review["decided_at"] <= held + 1 + 0.001


@pytest.mark.parametrize("request_id", ["", 7, "x" * 201, "line\nbreak"])
def test_a_bad_request_id_is_refused_naming_it(client, request_id):
    put_agent(client, client_tools={"Bash": {"require_approval": True}})
    response = gate(client, tool_calls=BASH_CALLS[:1], request_id=request_id)
    assert response.status_code == 400 and response.json["field"] == "request_id"


def test_a_webhook_at_a_cloud_metadata_address_is_refused_when_the_agent_is_saved(client):
    response = client.put(
        "/api/agents/canvas", json={"label": "Canvas", "approval_webhook": "http://169.254.169.254/latest"}
    )

    assert response.status_code == 400 and response.json["field"] == "approval_webhook"
    assert "169.254.169.254 is a cloud metadata address" in response.json["error"]


def test_a_streamed_client_that_closes_while_held_leaves_the_decision_pending_for_its_retry(app, client, waiting):
    app.config["PROXY_KEEP_ALIVE_SECONDS"] = 0.3
    put_agent(client, script=[HERO, {"content": "Placed."}])
    with proxy_client(app, "canvas") as sdk:
        stream = sdk.chat.completions.create(model="gpt-x", messages=[USER], tools=[PLACE], stream=True)
        next(iter(stream))  # the answer has begun
        run_id = held_run(client)
        stream.close()
        time.sleep(1)  # a keep-alive finds the client gone
        assert client.get(f"/api/runs/{run_id}").json["state"] == "awaiting_approval"

        answer = waiting(sdk.chat.completions.create, model="gpt-x", messages=[USER], tools=[PLACE])
        time.sleep(0.5)
        assert decide(client, run_id, {"hero": {"approve": True}}).status_code == 200
        message = answer.result(timeout=WAIT).choices[0].message

    assert [call.id for call in message.tool_calls] == ["hero"]
    assert [run["id"] for run in client.get("/api/runs?agent=canvas").json["runs"]] == [run_id]
    assert client.get(f"/api/runs/{run_id}").json["model_requests"] == 1


def test_a_held_response_later_in_a_conversation_continues_its_run(app, client, waiting):
    layout = {"tool_calls": [{"id": "look", "name": "get_layout", "arguments": {}}]}
    put_agent(client, script=[layout, HERO, {"content": "Placed."}])
    get_layout = {"type": "function", "function": {"name": "get_layout", "parameters": {"type": "object"}}}
    with proxy_client(app, "canvas") as sdk:
        first = sdk.chat.completions.with_raw_response.create(model="gpt-x", messages=[USER], tools=[PLACE, get_layout])
        run_id = int(first.headers["X-Toolgate-Run"])
        looked = first.parse().choices[0].message
        messages = [
            USER,
            looked.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": "look", "content": "[]"},
        ]
        answer = waiting(sdk.chat.completions.create, model="gpt-x", messages=messages, tools=[PLACE, get_layout])
        assert held_run(client) == run_id
        assert decide(client, run_id, {"hero": {"approve": True}}).status_code == 200
        message = answer.result(timeout=WAIT).choices[0].message

    assert [call.id for call in message.tool_calls] == ["hero"]
    run = client.get(f"/api/runs/{run_id}").json
    assert [run["id"] for run in client.get("/api/runs?agent=canvas").json["runs"]] == [run_id]
    assert [[call["id"] for call in round_["calls"]] for round_ in run["rounds"]] == [["look"], ["hero"]]
    assert run["rounds"][0]["calls"][0]["run_by"] == "client" and run["state"] == "finished"


def test_a_gate_api_call_that_starts_waiting_tells_the_webhook(client):
    receiver = WebhookReceiver()
    with serving(receiver) as hook_url:
        put_agent(client, client_tools={"Bash": {"require_approval": True}}, approval_webhook=f"{hook_url}/hook")
        first = gate(client, tool_calls=BASH_CALLS[:1], request_id="hooked").json
        assert receiver.received.wait(WAIT)

    assert receiver.posts == [
        {
            "event": "approval_requested",
            "run_id": first["run_id"],
            "agent_id": "canvas",
            "calls": [{"id": "rm", "tool": "Bash", "arguments": {"command": "rm -rf build"}}],
            "url": f"http://localhost/runs/{first['run_id']}",
        }
    ]
