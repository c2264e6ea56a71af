"""What real clients send, replayed through the proxy (issue 31): the request bodies and headers Claude Code and the
Codex CLI sent over a twelve-round session, captured from the clients themselves (tests/fixtures/clients/README.md
says how, with which versions), sent again, streamed and not, to an agent whose upstream is a fake model. Counts come
from the conversation the client sends, so each captured request carries its session's earlier rounds: the cap,
max_calls_per_run, max_identical_calls and the restriction must hold at every round of the long session, the
reminders Claude Code puts beside each tool_result (a text block, a system message) included."""

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.proxy_support import completion

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "clients"
CAP = 5
CALLS_PER_RUN = 3
MAX_ROUNDS_MESSAGE = (
    "I was unable to fully answer your question within the allowed number of processing steps. Please try rephrasing "
    "or narrowing your question."
)
RESTRICTED = (
    'Error: The tool "{tool}" may only be called once per response. None of the tool calls in this response were '
    "executed. Call it once, wait for its result, then call it again if you need to."
)


@dataclass(frozen=True)
class Client:
    fixture: str
    api: str  # messages or responses
    tool: str  # the tool its captured session called every round
    command: str  # the name of the call's argument that holds the command

    def arguments(self, number):
        """The arguments of the session's call in round `number`, as the capturing server made them."""
        if self.tool == "Bash":
            return {"command": f"echo round {number}", "description": f"Print round {number}"}
        return {self.command: f"echo round {number}"}

    def requests(self):
        """The captured requests, each with its `$shared` parts put back."""
        fixture = json.loads((FIXTURES / self.fixture).read_text())
        return _resolved(fixture["requests"], fixture["shared"])

    def session(self):
        """The session's requests that offered tools, in order: request n carries the results of n rounds."""
        return [request for request in self.requests() if request["method"] == "POST" and request["body"].get("tools")]


CLAUDE_CODE_DEFAULT = Client("claude-code-2.1.197-default-model.json", "messages", "Bash", "command")
CLAUDE_CODE_SONNET = Client("claude-code-2.1.197-sonnet-4-5.json", "messages", "Bash", "command")
CODEX = Client("codex-0.171.0-exec.json", "responses", "exec_command", "cmd")


def _resolved(value, shared):
    if isinstance(value, dict):
        if set(value) == {"$shared"}:
            return shared[value["$shared"]]
        return {key: _resolved(item, shared) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolved(item, shared) for item in value]
    return value


def results_in(client, body):
    """How many results of calls the body carries (tool_result blocks, function_call_output items)."""
    if client.api == "messages":
        return sum(
            1
            for message in body["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        )
    return sum(1 for item in body["input"] if item.get("type") == "function_call_output")


def sent(http, client, request, stream):
    """The captured request sent again to the replay agent's proxy, its headers as the client sent them; what the
    client received: (the calls as (name, arguments), the text)."""
    body = {**request["body"], "stream": stream}
    response = http.post(
        f"/proxy/replay{request['path']}", data=json.dumps(body), headers=request["headers"], buffered=True
    )
    assert response.status_code == 200, response.get_data(as_text=True)[:2000]
    if not stream:
        return _answer(client, response.get_json())
    events = [
        json.loads(line.removeprefix("data: "))
        for line in response.get_data(as_text=True).splitlines()
        if line.startswith("data: ")
    ]
    return _streamed_answer(client, events)


def _answer(client, answer):
    if client.api == "messages":
        calls = [(block["name"], block["input"]) for block in answer["content"] if block["type"] == "tool_use"]
        text = "".join(block["text"] for block in answer["content"] if block["type"] == "text")
        return calls, text
    calls = [
        (item["name"], json.loads(item["arguments"])) for item in answer["output"] if item["type"] == "function_call"
    ]
    text = "".join(part["text"] for item in answer["output"] if item["type"] == "message" for part in item["content"])
    return calls, text


def _streamed_answer(client, events):
    if client.api == "responses":
        assert events[-1]["type"] == "response.completed", events[-1]
        return _answer(client, events[-1]["response"])
    calls, text, arguments = [], "", {}
    for event in events:
        if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
            calls.append(event["content_block"]["name"])
            arguments[len(calls) - 1] = ""
        elif event["type"] == "content_block_delta" and event["delta"]["type"] == "input_json_delta":
            arguments[len(calls) - 1] += event["delta"]["partial_json"]
        elif event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
            text += event["delta"]["text"]
    assert events[-1]["type"] == "message_stop", events[-1]
    return [(name, json.loads(arguments[index] or "{}")) for index, name in enumerate(calls)], text


def put_replay_agent(http, client, **fields):
    agent = {"label": "Replay", "provider": "upstream", "max_rounds": 100, "on_round_cap": "message", **fields}
    response = http.put("/api/agents/replay", json=agent)
    assert response.status_code in (200, 201), response.json


def call(client, number, call_id="call_up"):
    return (call_id, client.tool, client.arguments(number))


def upstream_tool_messages(upstream, request_number):
    return [
        message["content"] for message in upstream.bodies[request_number - 1]["messages"] if message["role"] == "tool"
    ]


CLIENTS = [
    pytest.param(CLAUDE_CODE_DEFAULT, id="claude_code_default_model"),
    pytest.param(CLAUDE_CODE_SONNET, id="claude_code_sonnet"),
    pytest.param(CODEX, id="codex"),
]
STREAMED = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])


def test_each_fixture_is_a_long_session_of_one_tool_with_reminders_beside_its_results():
    for client in (CLAUDE_CODE_DEFAULT, CLAUDE_CODE_SONNET, CODEX):
        session = client.session()
        assert [results_in(client, request["body"]) for request in session] == list(range(13))
    for client in (CLAUDE_CODE_DEFAULT, CLAUDE_CODE_SONNET):
        last = client.session()[-1]["body"]["messages"]
        beside = [
            message
            for message in last
            if message["role"] == "user"
            and any(block.get("type") == "tool_result" for block in message["content"])
            and any(
                block.get("type") == "text" and "<system-reminder>" in block["text"] for block in message["content"]
            )
        ]
        assert len(beside) == 12  # every result of the session has a reminder beside it
    assert sum(message["role"] == "system" for message in CLAUDE_CODE_DEFAULT.session()[-1]["body"]["messages"]) >= 2


@pytest.mark.parametrize("client", CLIENTS)
@STREAMED
def test_the_round_cap_holds_across_the_long_session(app, client, upstream, stream):
    http = app.test_client()
    put_replay_agent(http, client, max_rounds=CAP)
    for rounds, request in enumerate(client.session()):
        asked = len(upstream.requests)
        upstream.enqueue(completion(calls=[call(client, 100 + rounds)]))
        calls, text = sent(http, client, request, stream)
        if rounds < CAP:
            assert (calls, len(upstream.requests)) == ([(client.tool, client.arguments(100 + rounds))], asked + 1)
        else:  # the cap: its message, and the upstream is not asked
            assert (calls, text, len(upstream.requests)) == ([], MAX_ROUNDS_MESSAGE, asked)


@pytest.mark.parametrize("client", CLIENTS)
@STREAMED
def test_max_calls_per_run_holds_across_the_long_session(app, client, upstream, stream):
    http = app.test_client()
    put_replay_agent(http, client, client_tools={client.tool: {"max_calls_per_run": CALLS_PER_RUN}})
    limit = f"Error: {client.tool} may be called at most {CALLS_PER_RUN} times per run."
    for rounds, request in enumerate(client.session()):
        upstream.enqueue(completion(calls=[call(client, 100 + rounds)]), "Done.")
        calls, text = sent(http, client, request, stream)
        if rounds < CALLS_PER_RUN:
            assert calls == [(client.tool, client.arguments(100 + rounds))]
        else:  # rejected in a hidden round, and the model asked again
            assert (calls, text) == ([], "Done.")
            assert upstream_tool_messages(upstream, len(upstream.requests))[-1] == limit


@pytest.mark.parametrize("client", CLIENTS)
@STREAMED
def test_max_identical_calls_holds_across_the_long_session(app, client, upstream, stream):
    http = app.test_client()
    put_replay_agent(http, client, client_tools={client.tool: {"max_identical_calls": 1}})
    repeated = (
        f"Error: {client.tool} was already called with these arguments 1 times in this run. Use the earlier result."
    )
    for rounds, request in enumerate(client.session()):
        upstream.enqueue(completion(calls=[call(client, 1)]), "Done.")  # the session's first call, again
        calls, text = sent(http, client, request, stream)
        if rounds == 0:
            assert calls == [(client.tool, client.arguments(1))]
        else:
            assert (calls, text) == ([], "Done.")
            assert upstream_tool_messages(upstream, len(upstream.requests))[-1] == repeated


@pytest.mark.parametrize(
    "client",
    [
        pytest.param(CLAUDE_CODE_DEFAULT, id="claude_code_default_model"),
        pytest.param(CLAUDE_CODE_SONNET, id="claude_code_sonnet"),
        pytest.param(CODEX, id="codex"),
    ],
)
@STREAMED
def test_the_restriction_holds_at_every_round_of_the_long_session(app, client, upstream, stream):
    http = app.test_client()
    put_replay_agent(http, client, client_tools={client.tool: {"restrict_multiple_calls": True}})
    restricted = RESTRICTED.format(tool=client.tool)
    for rounds, request in enumerate(client.session()):
        two = completion(calls=[call(client, 200 + rounds, "call_a"), call(client, 300 + rounds, "call_b")])
        upstream.enqueue(two, completion(calls=[call(client, 200 + rounds)]))
        calls, _ = sent(http, client, request, stream)
        assert calls == [(client.tool, client.arguments(200 + rounds))]
        assert upstream_tool_messages(upstream, len(upstream.requests))[-2:] == [restricted, restricted]


@pytest.mark.parametrize("client", [CLAUDE_CODE_DEFAULT, CLAUDE_CODE_SONNET], ids=["default_model", "sonnet"])
def test_the_probes_claude_code_sent_are_answered_and_not_logged(app, client):
    http = app.test_client()
    probes = [request for request in client.requests() if request["method"] == "HEAD"]
    assert probes
    for probe in probes:
        assert http.head(f"/proxy/replay{probe['path']}", headers=probe["headers"]).status_code == 200
    assert "Proxy request refused" not in http.get("/log").get_data(as_text=True)
