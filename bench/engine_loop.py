"""Toolgate's loop against a hand-written minimal loop that sends the same requests through the same `openai`
client and in-process transport: what the gate, validation and bookkeeping cost per round and per run."""

import json

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


def minimal_loop(model, tools, handlers):
    """The least a loop can do for this run: ask, reject a repeated call wholesale, run the rest, ask again."""
    messages = [{"role": "user", "content": MESSAGE}]
    while True:
        completion = model.client.chat.completions.create(model="scripted", messages=messages, tools=tools)
        message = completion.choices[0].message
        if not message.tool_calls:
            return message.content
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
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


def report():
    registry = default_registry()
    tools = [registry.get(name).schema_for_model() for name in AGENT["tools"]]
    handlers = {name: registry.get(name).handler for name in AGENT["tools"]}
    model = scripted_model(AGENT["script"])

    expected = run_agent(AGENT, MESSAGE, model=model)
    assert expected["model_requests"] == ROUNDS and expected["rejected_calls"] == 3
    assert minimal_loop(model, tools, handlers) == expected["answer"]

    toolgate, baseline = compare(
        lambda: run_agent(AGENT, MESSAGE, model=model), lambda: minimal_loop(model, tools, handlers)
    )
    print("Loop: scripted 3-round run (3 parallel calls rejected, 1 call, answer), same openai client and transport")
    print(f"  baseline minimal loop  per run {milliseconds(baseline)}   per round {milliseconds(baseline / ROUNDS)}")
    print(f"  toolgate run_agent     per run {milliseconds(toolgate)}   per round {milliseconds(toolgate / ROUNDS)}")
    print(f"  ratio toolgate / baseline: {toolgate / baseline:.2f}x (target <= 1.30x)")
