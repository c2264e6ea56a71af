"""The policy proxy's added latency per request on Anthropic's Messages API (`POST …/v1/messages`), measured as
bench.proxy measures Chat Completions: an `anthropic` SDK client asks, one request after the other in alternation,
an upstream that speaks the Messages API and answers at once, and the proxy served as `make run` serves it (which
reads the request into Chat Completions, asks its upstream, answering at once too, and answers in Messages). Both
sides use the same SDK, so its own cost is not in the figure; the translation both ways is.

Beside it, taking turns with it a block at a time, the floor timed as bench.proxy times it (the `openai` SDK, a
Flask app that forwards the body and writes one SQLite row): the rest of the proxy's figure is Toolgate's own work.
First requests, then the requests of CONVERSATION_ROUNDS-round conversations with their long tool results.

`python -m bench.proxy_messages [--requests N]` (N rounded to whole blocks)."""

import argparse
import json
import tempfile
import time
from functools import partial

import anthropic
import openai

from tests.live_http import WAITRESS, AppProcess

from . import proxy as chat_bench
from .proxy import (
    AGENT_ID,
    BLOCK,
    CONVERSATION_OUTPUT,
    CONVERSATION_ROUNDS,
    FLOOR_SERVER,
    KEY_VARIABLE,
    PLACE,
    REQUESTS,
    WARM_UP,
)

PLACE_TOOL = {
    "name": PLACE["function"]["name"],
    "description": PLACE["function"]["description"],
    "input_schema": PLACE["function"]["parameters"],
}
SYSTEM = "You build landing pages."
OPENING = [{"role": "user", "content": "Place a hero."}]
ANSWER = json.dumps(
    {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "bench-model",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "place_components", "input": {"component": "hero"}}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 40, "output_tokens": 12},
    }
).encode()


def instant_upstream(environ, start_response):
    """bench.proxy's upstream, which also speaks the Messages API: one compliant tool_use, at once."""
    if not environ["PATH_INFO"].endswith("/messages"):
        return chat_bench.instant_upstream(environ, start_response)
    environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(ANSWER)))])
    return [ANSWER]


def _timed(client, messages=OPENING):
    """(seconds, the message) of one request."""
    started = time.perf_counter()
    message = client.messages.create(
        model="bench-model", max_tokens=1024, system=SYSTEM, messages=messages, tools=[PLACE_TOOL]
    )
    elapsed = time.perf_counter() - started
    assert message.stop_reason == "tool_use", message
    return elapsed, message


def _carry_on(messages, message):
    """The conversation once the client has run the tool_use it got and sends its result back."""
    [call] = [block for block in message.content if block.type == "tool_use"]
    result = {"type": "tool_result", "tool_use_id": call.id, "content": CONVERSATION_OUTPUT}
    assistant = {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in message.content]}
    return [*messages, assistant, {"role": "user", "content": [result]}]


MESSAGES_SCENARIOS = {
    "first": partial(chat_bench._first_requests, timed=_timed),
    "conversations": partial(chat_bench._conversations, timed=_timed, carry_on=_carry_on, opening=OPENING),
}
CHAT_SCENARIOS = {"first": chat_bench._first_requests, "conversations": chat_bench._conversations}


def _alternated(pairs, scenario, requests):
    """{name: {"direct", "through"}} for `pairs` ({name: (direct client, client through it, its scenarios)}): each
    pair times the direct call and the call through it in alternation, and the pairs take turns a BLOCK at a time,
    so both see the machine in the same moods."""
    samples = {name: {"direct": [], "through": []} for name in pairs}
    for _ in range(max(1, round(requests / BLOCK))):
        for name, (direct, through, scenarios) in pairs.items():
            for key, values in scenarios[scenario]({"direct": direct, "through": through}, BLOCK).items():
                samples[name][key] += values
    return samples


def report(requests=REQUESTS):
    with tempfile.TemporaryDirectory() as folder, chat_bench.serving_upstream(instant_upstream) as upstream_url:
        database = chat_bench._prepare(folder, upstream_url)
        proxy = AppProcess(WAITRESS, database, f"{folder}/server.log", **{KEY_VARIABLE: "sk-bench-upstream"})
        floor_environment = {"FLOOR_UPSTREAM_URL": f"{upstream_url}/v1", "FLOOR_DATABASE": f"{folder}/floor.db"}
        floor = AppProcess(FLOOR_SERVER, database, f"{folder}/floor.log", ready_path="/ready", **floor_environment)
        with chat_bench._served(proxy) as proxy_url, chat_bench._served(floor) as floor_url:
            pairs = {
                "proxy": (
                    anthropic.Anthropic(base_url=upstream_url, api_key="sk-bench-upstream", max_retries=0),
                    anthropic.Anthropic(base_url=f"{proxy_url}/proxy/{AGENT_ID}", api_key="unused", max_retries=0),
                    MESSAGES_SCENARIOS,
                ),
                "floor": (
                    openai.OpenAI(base_url=f"{upstream_url}/v1", api_key="sk-bench-upstream", max_retries=0),
                    openai.OpenAI(base_url=f"{floor_url}/v1", api_key="unused", max_retries=0),
                    CHAT_SCENARIOS,
                ),
            }
            _alternated(pairs, "first", WARM_UP)
            first = _alternated(pairs, "first", requests)
            conversations = _alternated(pairs, "conversations", requests)
    timed = len(first["proxy"]["through"])
    chat_bench._print_figures(
        f"Proxy, Messages API: {timed} messages with a client tool, the upstream answering at once, in alternation",
        first,
        sdk="anthropic",
    )
    kilobytes = len(CONVERSATION_OUTPUT) // 1000
    chat_bench._print_figures(
        f"Proxy, Messages API: {timed} requests of {CONVERSATION_ROUNDS}-round conversations ({kilobytes} KB tool "
        "results)",
        conversations,
        sdk="anthropic",
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=REQUESTS)
    report(parser.parse_args().requests)
