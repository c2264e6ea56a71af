"""The gate alone on one response of 1, 10, 100 and 1,000 calls: its cost must grow linearly."""

from engine.config import load_agent
from engine.gate import review_calls
from engine.tools import default_registry
from engine.types import ToolCall

from .timing import microseconds, per_call_seconds

SIZES = (1, 10, 100, 1000)
AGENT = {
    "id": "bench_gate",
    "label": "Gate",
    "tools": {"list_bundles": {}, "place_component": {"restrict_multiple_calls": True}},
}


def response(size):
    return [ToolCall(f"call_{i}", "list_bundles", '{"entity_type": "node"}') for i in range(size)]


def report():
    registry = default_registry()
    config, _ = load_agent(AGENT, known_tools=registry.parameters_by_name())
    print("Gate alone: one response of N valid list_bundles calls (schema-checked)")
    per_call = {}
    for size in SIZES:
        calls = response(size)
        batch = max(1, 2000 // size)
        seconds = per_call_seconds(lambda calls=calls: review_calls(calls, config, registry), number=batch)
        per_call[size] = seconds / size
        print(f"  N={size:5d}  per response {microseconds(seconds)}   per call {microseconds(per_call[size])}")
    print(f"  per-call cost at N=1000 / at N=10: {per_call[1000] / per_call[10]:.2f}x (linear growth: about 1x)")
