"""Decisions on a proxied response held for approval (SPEC §8, "Approvals on client tools"), and Stop.

The held run keeps, in its loop state (engine.proxy.serve), the round that waits, the deadline and the schemas of
the client's tools; a reviewer's decisions are recorded there, and the request that waits carries them out. A person
may stop the run instead: it ends at once (stop_held), and the request that waits, if any, answers its client with
the same stop (engine.proxy.core). Pure: the caller reads and stores the state.
"""

from dataclasses import replace
from types import MappingProxyType

from .. import texts
from ..approvals import PendingRound, read_decisions
from ..config import ToolSettings, ValidationError, load_agent
from ..gate import review_edited_arguments
from ..round import STOPPED, assistant_message
from ..tools.registry import ToolRegistry
from ..types import FINISHED, REJECTED, CallRecord
from .client_tools import client_tool
from .recording import run_counts


class DecisionRefused(Exception):
    """The decision cannot be taken (a person reads the text): the call was decided already, or its time passed."""


def is_held(loop_state):
    return bool(loop_state) and "proxy" in loop_state


def decide_held(state, decisions, *, complete, now):
    """The state ({"run", "loop"}) with the reviewer's `decisions` ({call id: decision}, engine.approvals) recorded
    on the held round, taken at `now` (Unix time, seconds); the run still awaits approval until its request carries
    them out. `complete`: every call still undecided must be decided now. Raises ValidationError naming the call, or
    DecisionRefused."""
    run, loop = state["run"], state["loop"]
    held = loop["proxy"]
    pending = PendingRound.from_state(held["pending"])
    if now >= held["deadline"]:
        raise DecisionRefused(
            "No one decided in time: the approval timeout has passed, and the calls that waited are rejected."
        )
    chosen = read_decisions(decisions, pending, now)
    taken = [call_id for call_id in chosen if call_id in pending.decisions]
    if taken:
        raise DecisionRefused(f"The call {taken[0]} has already been decided.")
    for call_id, decision in chosen.items():
        if decision.arguments is not None:
            verdict = _edited_verdict(run["agent"], held["schemas"], pending, call_id, decision.arguments)
            if not verdict.allowed:
                raise ValidationError({f"decisions.{call_id}.arguments": verdict.message})
    pending = pending.with_decisions(chosen)
    undecided = pending.undecided()
    if undecided and complete:
        raise ValidationError({f"decisions.{undecided[0]}": "needs a decision: approve or reject this call"})
    view = pending.view(lambda _name: "")
    run = {**run, "pending_round": view.to_json()}
    return {"run": run, "loop": {**loop, "proxy": {**held, "pending": pending.to_state()}}}


def _edited_verdict(agent, schemas, pending, call_id, arguments):
    """The gate's verdict on a reviewer's arguments: the client's schema of the tool and the agent's argument
    rules."""
    call = next(verdict.call for verdict in pending.verdicts if verdict.call.id == call_id)
    config, _merged = load_agent(agent)
    settings = config.client_tools.get(call.name, ToolSettings())
    gate_config = replace(config, tools=MappingProxyType({call.name: settings}))
    registry = ToolRegistry([client_tool(call.name, parameters=schemas.get(call.name) or {"type": "object"})])
    return review_edited_arguments(call, arguments, gate_config, registry)


def stopped_round(pending):
    """The held round as a person's Stop leaves it: none of its calls reaches the client, each is answered as not run
    (a decision already taken on it kept as its review)."""
    reviews = {call.call.id: call.review for call in pending.view(lambda _name: "").calls}
    calls = tuple(
        CallRecord(verdict.call, REJECTED, STOPPED, texts.STOPPED_CALL, review=reviews[verdict.call.id])
        if verdict.allowed
        else CallRecord(verdict.call, REJECTED, verdict.reason, verdict.message)
        for verdict in pending.verdicts
    )
    return replace(pending.round, calls=calls, shown_to_client=False)


def answered_upstream(round_):
    """The messages that stand for a round the client never saw in the transcript sent upstream: the response, then
    one tool message per call."""
    answers = [{"role": "tool", "tool_call_id": call.call.id, "content": call.message} for call in round_.calls]
    return [assistant_message(round_.response), *answers]


def stop_held(state):
    """The state ({"run", "loop"}) of a held proxied run a person stopped: ended with stop reason `stopped`, the
    held response a round its client never sees (stopped_round), and the answer the client gets in its place
    (texts.PROXY_STOPPED, as engine.proxy.core.ProxyExchange.stopped answers a request that still waits)."""
    run = state["run"]
    round_ = stopped_round(PendingRound.from_state(state["loop"]["proxy"]["pending"]))
    rounds = [*run["rounds"], round_.to_json() | {"number": len(run["rounds"]) + 1}]
    answer = {"role": "assistant", "content": texts.PROXY_STOPPED}
    stopped = {
        **run,
        "state": FINISHED,
        "stop_reason": STOPPED,
        "answer": texts.PROXY_STOPPED,
        "pending_round": None,
        "rounds": rounds,
        "messages": [*run["messages"], *answered_upstream(round_), answer],
        **run_counts(rounds),
    }
    return {**state, "run": stopped}
