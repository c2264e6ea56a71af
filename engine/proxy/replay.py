"""A proxied run as a regression case (SPEC §8, "Regression cases"): the client's part of the conversation, kept
with the case, and the replay that plays it.

A proxied run's tool calls ran on the client, so a replay cannot run them; it plays the client instead. It sends
what the recorded client sent first (its messages and its tools), and answers each call the proxy hands it with
the result the recorded client gave that call id, request after request, as the client did; the agent's policy
proxy (engine.proxy.core) answers with the scripted model upstream playing the case's script. The replay's run is
recorded as a proxied run is (engine.proxy.recording), so it compares with the case as any run does. Pure: no Flask,
no database.
"""

import copy

from ..config import SCRIPTED_PROVIDER, ValidationError, load_agent
from ..round import AWAITING_CLIENT
from ..tools import default_registry
from ..types import CLIENT
from .request import read_request
from .serve import RunsInMemory, answer_and_record
from .upstream import upstream_for_agent

CLIENT_FIELDS = ("messages", "tools", "results")


def client_from_run(run):
    """What the recorded client sent and ran: the messages before the run's first round, its tools, and the result
    it sent back for each call id."""
    results = {
        call["id"]: call["output"]
        for round_ in run["rounds"]
        for call in round_["calls"]
        if call.get("run_by") == CLIENT
    }
    return {
        "messages": copy.deepcopy(run["messages"][: run["client"]["opening_length"]]),
        "tools": copy.deepcopy(run["client"]["tools"]),
        "results": results,
    }


def client_problem(client):
    """(field, why) for a case's `client` that no replay could send, or None."""
    if not isinstance(client, dict) or set(client) != set(CLIENT_FIELDS):
        return "client", f"must be an object with {', '.join(CLIENT_FIELDS)}"
    results = client["results"]
    if not isinstance(results, dict) or not all(isinstance(value, str) for value in results.values()):
        return "client.results", "must be an object mapping call ids to the text the client sent back"
    try:
        read_request({"model": SCRIPTED_PROVIDER, "messages": client["messages"], "tools": client["tools"]})
    except ValidationError as error:
        field, message = next(iter(error.errors.items()))
        return f"client.{field}", message
    return None


def play_client(agent, client, overrides, registry=None):
    """The proxied run of the agent (its JSON form, with `overrides`) that a client playing `client` (the form
    client_from_run gives) drives to its end: a case's replay, or a recording of a client made up (the demo's).
    Raises ValidationError naming the field when the merged agent is invalid."""
    registry = registry or default_registry()
    config, merged = load_agent(agent, overrides, known_tools=registry.parameters_by_name())
    ask = upstream_for_agent(config)
    runs = RunsInMemory()
    messages = copy.deepcopy(client["messages"])
    while True:
        request = read_request({"model": SCRIPTED_PROVIDER, "messages": messages, "tools": client["tools"]})
        exchange, run = answer_and_record(config, merged, request, ask, runs)
        answer = exchange.completion["choices"][0]["message"] if exchange.completion else None
        calls = (answer or {}).get("tool_calls") or []
        # Each request plays at least one more item of the script, so a client that keeps answering ends.
        if exchange.stop_reason != AWAITING_CLIENT or not all(call["id"] in client["results"] for call in calls):
            return {key: value for key, value in run.items() if key != "id"}
        ran = [{"role": "tool", "tool_call_id": call["id"], "content": client["results"][call["id"]]} for call in calls]
        messages = [*messages, answer, *ran]
