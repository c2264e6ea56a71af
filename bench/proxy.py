"""The policy proxy's added latency per request: an `openai` SDK client asks an upstream that answers at once, once
directly and once through /proxy/<agent id>/v1 of the app served as `make run` serves it (in a process of its
own), one request after the other in alternation, in the same run. What the proxy adds is its part: the
request read and checked, the agent's policy applied to the answer, the run stored in SQLite, the second hop.

Measured twice: a conversation's first request, and the requests of conversations that go on for CONVERSATION_ROUNDS
rounds, each tool result CONVERSATION_OUTPUT long, as an agent's do (the body grows with every round; the proxy
finds the run each request continues and records it again).

Beside each, bench.proxy_floor served the same way and timed the same way, the pairs taking turns: what the
extra hop costs on this stack by itself (Flask, JSON forwarded through a urllib3 pool, one SQLite row), the floor
under the proxy's figure. The rest of the proxy's figure is Toolgate's own work. The same conversations through the
proxy's Responses API (translated to Chat Completions upstream and back, each response kept) take their turn too,
beside the same floor.
That pair sends its bodies as JSON (`client.post`), the direct call beside it too: the SDK's own typed
`client.responses.create` spends longer checking and converting a long input than the proxy takes to answer it,
and that is the client's time, not Toolgate's.

`python -m bench.proxy [--requests N]` (N rounded to whole blocks). Target: at most 2 ms more, at the median and at
the 95th percentile."""

import argparse
import json
import tempfile
import threading
import time
from contextlib import contextmanager

import openai
from waitress.server import create_server

from app import create_app
from store import agents as agent_store
from store import providers as provider_store
from store.db import open_db
from tests.live_http import MAKE_RUN, AppProcess

from . import proxy_floor
from .concurrency import percentile

FLOOR_SERVER = [*MAKE_RUN[:-1], f"{proxy_floor.__name__}:create_app()"]

REQUESTS = 400
WARM_UP = 40
CONVERSATION_ROUNDS = 9  # the agent's cap is 10: every request is offered the tools
BLOCK = 6 * CONVERSATION_ROUNDS  # requests one pair takes in turn before the other: whole conversations
CONVERSATION_OUTPUT = "x" * 2000
TARGET_MS = 2.0
KEY_VARIABLE = "BENCH_UPSTREAM_API_KEY"
AGENT_ID = "bench_proxy"
PLACE = {
    "type": "function",
    "function": {
        "name": "place_components",
        "description": "Place one component on the canvas.",
        "parameters": {
            "type": "object",
            "properties": {"component": {"type": "string"}, "region": {"type": "string"}},
            "required": ["component"],
        },
    },
}
PLACE_TOOL = {"type": "function", **PLACE["function"]}  # as a Responses API client declares it
MESSAGES_TOOL = {  # as a Messages API client declares it
    "name": PLACE["function"]["name"],
    "description": PLACE["function"]["description"],
    "input_schema": PLACE["function"]["parameters"],
}
MESSAGES = [
    {"role": "system", "content": "You build landing pages."},
    {"role": "user", "content": "Place a hero."},
]
ANSWER = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": "bench-model",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "place_components", "arguments": '{"component": "hero"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52},
    }
).encode()


def instant_upstream(environ, start_response):
    """An OpenAI-compatible server that answers every request at once with one compliant tool call."""
    environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(ANSWER)))])
    return [ANSWER]


@contextmanager
def serving_upstream():
    """The upstream on waitress, which keeps connections open from request to request as model servers do (werkzeug's
    server closes each one, so every request would pay for a new connection and a new thread)."""
    server = create_server(instant_upstream, host="127.0.0.1", port=0, threads=4)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.effective_port}"
    finally:
        server.close()
        thread.join(timeout=5)


def prepare(folder, upstream_url, name="bench.db", url=None):
    """The database the served app uses (the SQLite file `name` in `folder`, or the database at `url`): a connection
    to the upstream and an agent with client tool settings, so every answer goes through the gate (the restriction,
    a forced value) before it is passed on."""
    database = url or f"{folder}/{name}"
    create_app({"DATABASE_URL": database, "SECRET_KEY": "bench"}, instance_path=folder)
    db = open_db(database)
    try:
        connection = {"id": "upstream", "label": "Upstream", "base_url": f"{upstream_url}/v1"}
        provider_store.create_provider(db, {**connection, "api_key_env": KEY_VARIABLE, "max_retries": 0})
        rules = {"region": {"action": "force_value", "values": ["content"], "hide": True}}
        agent = {
            "id": AGENT_ID,
            "label": "Benchmark: proxied canvas",
            "provider": "upstream",
            "client_tools": {"place_components": {"restrict_multiple_calls": True, "argument_rules": rules}},
        }
        agent_store.save_agent(db, agent, known_tools=None)
    finally:
        db.close()
    return database


def chat_request(client, conversation):
    """(seconds, what the conversation goes on with: the answer and the tool's result) of one Chat Completions
    request."""
    started = time.perf_counter()
    completion = client.chat.completions.create(model="bench-model", messages=conversation, tools=[PLACE])
    elapsed = time.perf_counter() - started
    message = completion.choices[0].message
    assert message.tool_calls, completion
    result = {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": CONVERSATION_OUTPUT}
    return elapsed, [message.model_dump(exclude_none=True), result]


def json_chat_request(client, conversation):
    """chat_request with the body sent as JSON and the answer read as JSON, as responses_request does."""
    started = time.perf_counter()
    body = {"model": "bench-model", "messages": conversation, "tools": [PLACE]}
    completion = client.post("/chat/completions", body=body, cast_to=object)
    elapsed = time.perf_counter() - started
    message = completion["choices"][0]["message"]
    assert message["tool_calls"], completion
    result = {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": CONVERSATION_OUTPUT}
    return elapsed, [message, result]


def responses_request(client, conversation):
    """The same, as a Responses API request: the conversation is its input items."""
    started = time.perf_counter()
    body = {"model": "bench-model", "input": conversation, "tools": [PLACE_TOOL]}
    response = client.post("/responses", body=body, cast_to=object)
    elapsed = time.perf_counter() - started
    calls = [item for item in response["output"] if item["type"] == "function_call"]
    assert calls, response
    result = {"type": "function_call_output", "call_id": calls[0]["call_id"], "output": CONVERSATION_OUTPUT}
    return elapsed, [*response["output"], result]


def messages_request(client, conversation):
    """The same, as an Anthropic Messages API request: the system message its own field, the tool's result a
    tool_result block."""
    system = "\n".join(message["content"] for message in conversation if message["role"] == "system")
    body = {
        "model": "bench-model",
        "max_tokens": 1024,
        "system": system,
        "messages": [message for message in conversation if message["role"] != "system"],
        "tools": [MESSAGES_TOOL],
    }
    started = time.perf_counter()
    message = client.post("/messages", body=body, cast_to=object)
    elapsed = time.perf_counter() - started
    calls = [block for block in message["content"] if block["type"] == "tool_use"]
    assert calls, message
    result = {"type": "tool_result", "tool_use_id": calls[0]["id"], "content": CONVERSATION_OUTPUT}
    return elapsed, [{"role": "assistant", "content": message["content"]}, {"role": "user", "content": [result]}]


def _first_requests(clients, requests):
    """`clients`: {name: (openai SDK client, how it asks: chat_request, …)}."""
    samples = {name: [] for name in clients}
    for _ in range(requests):
        for name, (client, ask) in clients.items():
            samples[name].append(ask(client, MESSAGES)[0])
    return samples


def _conversations(clients, requests):
    """Conversations driven side by side, a request to each client in turn: the model calls the tool, the client
    sends its result back, until CONVERSATION_ROUNDS rounds; then a new conversation."""
    samples = {name: [] for name in clients}
    conversations = {name: list(MESSAGES) for name in clients}
    for number in range(requests):
        if number % CONVERSATION_ROUNDS == 0:
            conversations = {name: list(MESSAGES) for name in clients}
        for name, (client, ask) in clients.items():
            elapsed, follow_up = ask(client, conversations[name])
            samples[name].append(elapsed)
            conversations[name] += follow_up
    return samples


def _added(samples, label):
    """(p50, p95) in ms that the call through `label` adds to the direct call beside it; both printed."""
    figures = {key: [percentile(values, share) * 1000 for share in (0.5, 0.95)] for key, values in samples.items()}
    for key, text in (("direct", f"upstream, beside the {label}"), ("through", f"{label} -> upstream")):
        print(f"  openai SDK -> {text:37s} p50 {figures[key][0]:7.2f} ms   p95 {figures[key][1]:7.2f} ms")
    return [through - direct for through, direct in zip(figures["through"], figures["direct"], strict=True)]


def _print_figures(title, samples):
    print(title)
    floor = _added(samples["floor"], "floor")
    print(f"  added by the floor alone                            p50 {floor[0]:+7.2f} ms   p95 {floor[1]:+7.2f} ms")
    for name, label in (("proxy", "proxy"), ("responses", "Responses API"), ("messages", "Messages API")):
        added = _added(samples[name], label)
        verdict = "within" if max(added) <= TARGET_MS else "OVER"
        figures_text = f"p50 {added[0]:+7.2f} ms   p95 {added[1]:+7.2f} ms"
        print(f"  added by the {label:38s} {figures_text}   ({verdict} the {TARGET_MS:g} ms target)")
        own = [proxy - hop for proxy, hop in zip(added, floor, strict=True)]
        print(f"  of which Toolgate's own (less the floor)            p50 {own[0]:+7.2f} ms   p95 {own[1]:+7.2f} ms")


@contextmanager
def _served(server):
    try:
        yield server.ready()
    finally:
        server.stop()


def _paired(direct, throughs, scenario, requests):
    """{name: {"direct": samples, "through": samples}}: for each of `throughs` ({name: (client, how it asks, how
    the direct call beside it asks)}) the direct Chat Completions call and the call through it in alternation, as the
    issue measures; the pairs take turns a BLOCK at a time, so all see the machine in the same moods, and each sees
    two servers at a time."""
    samples = {name: {"direct": [], "through": []} for name in throughs}
    for _ in range(max(1, round(requests / BLOCK))):
        for name, (client, ask, direct_ask) in throughs.items():
            pair = {"direct": (direct, direct_ask), "through": (client, ask)}
            for key, values in scenario(pair, BLOCK).items():
                samples[name][key] += values
    return samples


def report(requests=REQUESTS):
    with tempfile.TemporaryDirectory() as folder, serving_upstream() as upstream_url:
        direct = openai.OpenAI(base_url=f"{upstream_url}/v1", api_key="sk-bench-upstream", max_retries=0)
        database = prepare(folder, upstream_url)
        proxy = AppProcess(MAKE_RUN, database, f"{folder}/server.log", **{KEY_VARIABLE: "sk-bench-upstream"})
        floor_environment = {"FLOOR_UPSTREAM_URL": f"{upstream_url}/v1", "FLOOR_DATABASE": f"{folder}/floor.db"}
        floor = AppProcess(FLOOR_SERVER, database, f"{folder}/floor.log", ready_path="/ready", **floor_environment)
        with _served(proxy) as proxy_url, _served(floor) as floor_url:
            proxy_client = openai.OpenAI(base_url=f"{proxy_url}/proxy/{AGENT_ID}/v1", api_key="unused", max_retries=0)
            floor_client = openai.OpenAI(base_url=f"{floor_url}/v1", api_key="unused", max_retries=0)
            throughs = {
                "proxy": (proxy_client, chat_request, chat_request),
                "floor": (floor_client, chat_request, chat_request),
                "responses": (proxy_client, responses_request, json_chat_request),
                "messages": (proxy_client, messages_request, json_chat_request),
            }
            _paired(direct, throughs, _first_requests, WARM_UP)
            first = _paired(direct, throughs, _first_requests, requests)
            conversations = _paired(direct, throughs, _conversations, requests)
    timed = len(first["proxy"]["through"])
    _print_figures(
        f"Proxy: {timed} chat completions with a client tool, the upstream answering at once, in alternation", first
    )
    kilobytes = len(CONVERSATION_OUTPUT) // 1000
    _print_figures(
        f"Proxy: {timed} requests of {CONVERSATION_ROUNDS}-round conversations ({kilobytes} KB tool results)",
        conversations,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=REQUESTS)
    report(parser.parse_args().requests)
