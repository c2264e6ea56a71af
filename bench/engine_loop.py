"""Toolgate's product path, `engine.run_agent(agent, message)`, against the thin loop a person would write by hand
with the same `openai` client and in-process transport (`client.chat.completions.create(messages=..., tools=...)`),
and how the cost of one request grows with the transcript: a 40-round run against a 3-round run.

The growth is measured in CPU time (`time.process_time`), the two runs in alternation: everything runs in this
process (the scripted model is an in-process WSGI app), so the process's CPU time is the run's cost, and other
work on a shared machine moves it far less than it moves the wall clock."""

import json
import statistics
import time

from engine import run_agent
from engine.providers import scripted_model
from engine.tools import default_registry

from .timing import compare, milliseconds

AGENT = {
    "id": "bench_three_rounds",
    "label": "Benchmark: three rounds",
    "tools": {"list_bundles": {"restrict_multiple_calls": True}, "list_entity_types": {}},
    "script": [
        {
            "tool_calls": [
                {"name": "list_bundles", "arguments": {"entity_type": "node"}},
                {"name": "list_bundles", "arguments": {"entity_type": "taxonomy_term"}},
                {"name": "list_entity_types", "arguments": {}},
            ]
        },
        {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "node"}}]},
        {"content": "Nodes have article and page bundles."},
    ],
}
MESSAGE = "Which bundles do nodes and taxonomy terms have?"
ROUNDS = 3
LONG_ROUNDS = 40
LONG_AGENT = {
    "id": "bench_forty_rounds",
    "label": "Benchmark: forty rounds",
    "max_rounds": LONG_ROUNDS,
    "tools": {"list_bundles": {}, "list_entity_types": {}},
    "script": [
        {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": ("node", "user", "media")[n % 3]}}]}
        for n in range(LONG_ROUNDS - 1)
    ]
    + [{"content": "Every entity type has bundles."}],
}
TARGET_RATIO = 0.6
TARGET_GROWTH = 1.5
GROWTH_ROUNDS = 15  # alternations of the 3-round and the 40-round batch


def minimal_loop(client, tools, handlers, message=MESSAGE):
    """The least a loop can do: ask, reject a response's calls wholesale if a tool repeats, run the rest, ask again."""
    messages = [{"role": "user", "content": message}]
    while True:
        completion = client.chat.completions.create(model="scripted", messages=messages, tools=tools)
        message = completion.choices[0].message
        if not message.tool_calls:
            return message.content
        messages.append(
            {
                "role": "assistant",
                "content": message.content or "",
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in message.tool_calls
                ],
            }
        )
        names = [call.function.name for call in message.tool_calls]
        repeated = len(names) != len(set(names))
        for call in message.tool_calls:
            if repeated:
                content = "Error: rejected."
            else:
                content = json.dumps(handlers[call.function.name](json.loads(call.function.arguments), None))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})


def _thin_loop_for(agent, message):
    """The hand-written loop for this agent, on the very client and transport the product path uses."""
    registry = default_registry()
    tools = [registry.get(name).schema_for_model() for name in agent["tools"]]
    handlers = {name: registry.get(name).handler for name in agent["tools"]}
    client = scripted_model(agent["script"]).client
    return lambda: minimal_loop(client, tools, handlers, message)


def report():
    expected = run_agent(AGENT, MESSAGE)
    assert expected["model_requests"] == ROUNDS and expected["rejected_calls"] == 3
    thin_loop = _thin_loop_for(AGENT, MESSAGE)
    assert thin_loop() == expected["answer"]

    product, baseline = compare(lambda: run_agent(AGENT, MESSAGE), thin_loop)
    print("Product path: engine.run_agent(agent, message), the scripted 3-round run (3 parallel calls rejected,")
    print("1 call, answer), beside a thin hand-written loop through the same openai client and transport")
    print(f"  thin loop (chat.completions.create)  per run {milliseconds(baseline)}")
    print(f"  toolgate run_agent                   per run {milliseconds(product)}")
    print(f"  ratio toolgate / thin loop: {product / baseline:.2f}x (target <= {TARGET_RATIO}x)")

    print()
    long_run = run_agent(LONG_AGENT, MESSAGE)
    long_requests = long_run["model_requests"]
    assert long_run["stop_reason"] == "answered" and long_requests == LONG_ROUNDS
    short_per_request, long_per_request = cpu_per_request(
        lambda: run_agent(AGENT, MESSAGE), ROUNDS, lambda: run_agent(LONG_AGENT, MESSAGE), long_requests
    )
    print(f"Per-request cost as the transcript grows: a {LONG_ROUNDS}-round run against the 3-round run (CPU time,")
    print("the two in alternation, median over batches)")
    print(
        f"  toolgate   per request {milliseconds(short_per_request)} at 3 rounds, "
        f"{milliseconds(long_per_request)} at {LONG_ROUNDS}: "
        f"{long_per_request / short_per_request:.2f}x (target <= {TARGET_GROWTH}x)"
    )
    thin_short_per_request, thin_long_per_request = cpu_per_request(
        thin_loop, ROUNDS, _thin_loop_for(LONG_AGENT, MESSAGE), long_requests, rounds=5
    )
    print(
        f"  thin loop  per request {milliseconds(thin_short_per_request)} at 3 rounds, "
        f"{milliseconds(thin_long_per_request)} at {LONG_ROUNDS}: "
        f"{thin_long_per_request / thin_short_per_request:.2f}x"
    )


def cpu_per_request(short_run, short_requests, long_run, long_requests, rounds=GROWTH_ROUNDS):
    """Median CPU seconds per model request of each run, batches of the two in alternation; a batch of the short
    run makes about as many requests as one of the long run, so drift hits both alike."""
    short_batch = max(1, long_requests // short_requests)
    short_samples, long_samples = [], []
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(short_batch):
            short_run()
        short_samples.append((time.process_time() - started) / (short_batch * short_requests))
        started = time.process_time()
        long_run()
        long_samples.append((time.process_time() - started) / long_requests)
    return statistics.median(short_samples), statistics.median(long_samples)
