"""The policy proxy (SPEC §8): one client request answered under the agent's policy.

The client sends its conversation and its tools; the proxy asks the agent's provider (`ask`, handed in) and puts
the answer through the gate before the client sees anything. A response with any rejected call is answered
upstream — the response, then one tool message per call id — and asked again within the rounds left; the client
gets the first response whose calls all pass (forced values written in), or an answer. At the cap the proxy does
what `on_round_cap` says; a `require_usage` tool not yet run brings the reminder as a hidden request.

A response whose calls pass the gate and include a call of a client tool that requires approval is held: the
exchange yields `Held` and its driver (engine.proxy.serve) sends back the decisions (`Decided`) once taken, or
`Stopped` when a person stopped the run meanwhile: the client then gets the stop as its answer, as it gets the round
cap's message, and none of the held calls.

Pure: no HTTP and no storage here. The answer is a chat completion whatever API the client speaks: each API's
module translates it out, and engine.proxy.serve records the exchange as a run.
"""

import copy
import json
import time
from dataclasses import dataclass, replace

from .. import texts
from ..approvals import PendingRound, decided_verdicts
from ..providers import ProviderError, RequestSettings, read_completion
from ..round import (
    AWAITING_CLIENT,
    CANCELLED,
    ERROR,
    ROUND_CAP,
    STOPPED,
    TOOLS_DISABLED,
    Answered,
    AskAgain,
    AwaitingApproval,
    ToolRound,
    ToolsDisabled,
    answer_round,
    assistant_message,
    log_entry,
    next_step,
    offers_tools,
    rejection_entries,
    round_cap_answer,
    write_log,
)
from ..types import ALLOWED, REJECTED, CallRecord, Round, sum_usage
from .approvals import answered_upstream
from .client_tools import proxy_view
from .turn import current_turn

NOT_RUN = "not_run"  # allowed by the gate, not run because another call of its response was rejected


class UpstreamError(Exception):
    """The provider failed or answered something unreadable; the client gets it in its API's error shape."""

    def __init__(self, status, message, error_type="upstream_error", code=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = error_type
        self.code = code


@dataclass(frozen=True)
class Exchange:
    """One client request, answered."""

    completion: dict | None  # what the client gets (the non-streamed form); None when the upstream failed
    error: UpstreamError | None
    rounds: tuple  # of Round, one per upstream request, each with shown_to_client
    messages: tuple  # the conversation: the client's, every hidden round, the answer it got
    stop_reason: str
    answer: str | None
    rounds_used: int  # in the turn, the client's earlier rounds included
    message: str  # the turn's user message
    log: tuple
    requests: int
    pending_round: Round | None = None  # while the exchange is held: the round that waits, as the run shows it


@dataclass(frozen=True)
class Held:
    """What ProxyExchange.steps() yields when a response that passed the gate calls client tools that require
    approval: nothing of it reaches the client until each such call is decided. `state` is the exchange so far as
    plain JSON (ProxyExchange.restore takes it back: another request of the conversation may carry it on). The
    driver sends back a Decided."""

    pending: PendingRound
    state: dict


@dataclass(frozen=True)
class Decided:
    """The held round with the decisions taken (engine.approvals); the calls still undecided waited past
    approval_timeout_seconds, until `deadline` (Unix time, seconds), and are rejected as not decided in time."""

    pending: PendingRound
    deadline: float


@dataclass(frozen=True)
class Stopped:
    """A person stopped the run while its response was held; `round`: the held round as the stop left it, as
    engine.proxy.approvals.stop_held stored it (the decisions taken before kept)."""

    round: Round


def upstream_tools(config, request):
    """The client's tools as the model sees them: a client tool's description override and argument rules and
    descriptions applied; every other key of its definition kept as the client sent it."""
    entries = []
    for entry, tool in zip(request.tools, request.declared, strict=True):
        settings = config.client_tools.get(tool.name)
        if settings is not None:
            entry = {**entry, "function": {**entry["function"], **tool.schema_for_model(settings)["function"]}}
        entries.append(entry)
    return entries


def upstream_body(config, request, messages, tools):
    """The chat-completions body sent upstream: the client's fields, and the agent's where it sets them — its
    model, its sampling settings, `parallel_tool_calls` unless null, `tool_choice` unless "auto" (its default).
    Without tools, no `tools`, `tool_choice` nor `parallel_tool_calls`. Never streamed."""
    settings = RequestSettings.of(config)
    body = {**request.passthrough, **settings.sampling(), "model": config.model or request.model}
    body["messages"] = list(messages)
    if tools:
        body["tools"] = tools
        if config.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = config.parallel_tool_calls
        if config.tool_choice != "auto":
            body["tool_choice"] = settings.tool_choice_field()
    else:
        body.pop("tool_choice", None)
        body.pop("parallel_tool_calls", None)
    return body


class ProxyExchange:
    """One client request while the proxy asks upstream. `steps()` is the exchange without I/O: a generator that
    yields each chat-completions body to send upstream and is sent the parsed answer, and returns the Exchange; a
    driver (answer_request here, a streaming or asynchronous one elsewhere) does the asking. It raises
    UpstreamError when the answer cannot be read; the driver then asks `failed(error)` for the Exchange."""

    def __init__(self, config, request, history=None):
        self.config = config
        self.request = request
        self.gate_config, self.registry = proxy_view(config, request.declared)
        self.turn = current_turn(request)
        self.used_tools = {name for name, count in self.turn.calls_so_far.items() if count}
        self.tools = upstream_tools(config, request)
        self.messages = list(request.messages if history is None else history)
        self.used_ids = {
            call.get("id") for message in self.messages for call in message.get("tool_calls") or [] if call.get("id")
        }
        self.rounds_used = self.turn.rounds_used
        self.rounds, self.log = [], []
        self.requests = 0

    def steps(self, resumed=None):
        """`resumed`: the (state, Decided) of a held exchange this one carries on (restore has taken its state)."""
        if resumed is not None:
            state, decided = resumed
            if isinstance(decided, Stopped):
                return self.stopped(decided.round, state["completion"])
            outcome = self.carry_out_decisions(state["completion"], decided)
            if outcome is not None:
                return outcome
        while True:
            cap_answer = round_cap_answer(self.gate_config, self.rounds_used)
            if cap_answer is not None:
                return self.finish(self.own_completion(cap_answer), ROUND_CAP, cap_answer)
            tools = self.tools if offers_tools(self.gate_config, self.rounds_used) else None
            self.requests += 1
            started_at, started = time.time(), time.perf_counter()
            completion = yield upstream_body(self.config, self.request, self.messages, tools)
            latency_ms = (time.perf_counter() - started) * 1000
            try:
                response = read_completion(completion)
            except ProviderError as error:
                raise UpstreamError(502, str(error)) from None
            round_ = answer_round(response, len(self.rounds) + 1, self.used_ids, tools, latency_ms, started_at)
            step = next_step(
                round_,
                config=self.gate_config,
                registry=self.registry,
                rounds_used=self.rounds_used,
                used_tools=self.used_tools,
                calls_so_far=self.turn.calls_so_far,
                identical_so_far=self.turn.identical_so_far,
            )
            self.rounds_used = step.rounds_used
            match step:
                case AskAgain():
                    self.hide(step.round, step.assistant, [{"role": "system", "content": step.reminder}])
                case Answered():
                    return self.finish(self.client_completion(completion), step.stop_reason, step.answer, step.round)
                case ToolsDisabled():
                    write_log(step.log, self.log)
                    round_ = replace(step.round, calls=self.records(step.verdicts))
                    own = self.own_completion(step.answer, completion)
                    return self.finish(own, TOOLS_DISABLED, step.answer, round_)
                case ToolRound() if step.all_allowed:  # nothing rejected, nothing logged: the client runs them
                    round_ = replace(step.round, calls=self.records(step.verdicts))
                    client = self.client_completion(completion, step.verdicts)
                    return self.finish(client, AWAITING_CLIENT, None, round_)
                case ToolRound():
                    write_log(step.log, self.log)
                    records = self.records(step.verdicts)
                    answers = [
                        {"role": "tool", "tool_call_id": call.call.id, "content": call.message} for call in records
                    ]
                    self.hide(replace(step.round, calls=records), step.assistant, answers)
                case AwaitingApproval():
                    write_log(step.log, self.log)
                    pending = PendingRound(step.round, step.verdicts, step.awaiting)
                    decided = yield Held(pending, self.held_state(pending, completion))
                    if isinstance(decided, Stopped):
                        return self.stopped(decided.round, completion)
                    outcome = self.carry_out_decisions(completion, decided)
                    if outcome is not None:
                        return outcome

    def carry_out_decisions(self, completion, decided):
        """The held response decided: when every call of it is allowed (approved, edited), the Exchange that hands
        it to the client; otherwise None, the round hidden — each rejected call answered with its rejection, the
        others with the collateral message — and the model is asked again."""
        pending = decided.pending
        timeout = self.config.approval_timeout_seconds
        verdicts, reviews = decided_verdicts(pending, self.gate_config, self.registry, timeout, decided.deadline)
        reviewed = [verdict for verdict in verdicts if verdict.call.id in reviews]  # the gate's logged when held
        write_log(rejection_entries(self.config.id, reviewed), self.log)
        records = tuple(replace(record, review=reviews.get(record.call.id)) for record in self.records(verdicts))
        round_ = replace(pending.round, calls=records)
        if all(verdict.allowed for verdict in verdicts):
            client = self.client_completion(completion, verdicts)
            return self.finish(client, AWAITING_CLIENT, None, round_)
        answers = [{"role": "tool", "tool_call_id": call.call.id, "content": call.message} for call in records]
        self.hide(round_, assistant_message(pending.round.response), answers)
        return None

    def stopped(self, round_, completion):
        """The Exchange of a held response whose run a person stopped (`round_`, its calls answered as not run):
        the response hidden, and the stop's text to the client in its place (with the upstream's id and model)."""
        answers = answered_upstream(round_)
        self.hide(round_, answers[0], answers[1:])
        return self.finish(self.own_completion(texts.PROXY_STOPPED, completion), STOPPED, texts.PROXY_STOPPED)

    def held_state(self, pending, completion):
        """The exchange while held, as plain JSON: what restore needs to carry it on."""
        return {
            "pending": pending.to_state(),
            "completion": completion,
            "messages": list(self.messages),
            "rounds": [round_.to_json() for round_ in self.rounds],
            "log": list(self.log),
            "requests": self.requests,
            "rounds_used": self.rounds_used,
            "used_ids": sorted(self.used_ids),
        }

    def restore(self, state):
        """Carry on a held exchange (held_state's JSON) in this one: the client sent the same conversation again."""
        self.messages = list(state["messages"])
        self.rounds = [Round.from_json(round_) for round_ in state["rounds"]]
        self.log = list(state["log"])
        self.requests = state["requests"]
        self.rounds_used = state["rounds_used"]
        self.used_ids = set(state["used_ids"])

    def held_exchange(self, pending):
        """The Exchange recorded while held: the rounds so far and the one that waits."""
        view = pending.view(lambda _name: "")
        return replace(self.exchange(None, None, None, None), pending_round=view)

    def records(self, verdicts):
        """The calls of a round: rejected ones with their message; allowed ones handed to the client, or not
        run when others of the response were rejected."""
        any_rejected = not all(verdict.allowed for verdict in verdicts)
        records = []
        for verdict in verdicts:
            if not verdict.allowed:
                records.append(CallRecord(verdict.call, REJECTED, verdict.reason, verdict.message))
            elif any_rejected:
                records.append(CallRecord(verdict.call, REJECTED, NOT_RUN, texts.PROXY_COLLATERAL))
            else:
                records.append(CallRecord(verdict.call, ALLOWED, forced_arguments=verdict.forced_arguments))
        return tuple(records)

    def hide(self, round_, assistant, answers):
        """A round the client never sees: the response and what answered it join the transcript sent upstream."""
        self.messages.append(assistant)
        self.messages.extend(answers)
        self.rounds.append(replace(round_, shown_to_client=False))

    def client_completion(self, completion, verdicts=()):
        """The upstream's answer as the client gets it: each call with its repaired id and, where the gate forced
        values, the arguments it must run with."""
        choice = completion["choices"][0]
        message = dict(choice["message"])
        if verdicts:
            message["tool_calls"] = [
                self.call_as_run(data, verdict) for data, verdict in zip(message["tool_calls"], verdicts, strict=True)
            ]
        return {**completion, "choices": [{**choice, "message": message}]}

    @staticmethod
    def call_as_run(data, verdict):
        """A tool call as the client gets it: its repaired id, its arguments as JSON text, the values the agent
        forces put in."""
        call = verdict.call
        arguments = json.dumps(verdict.arguments, ensure_ascii=False) if verdict.forced_arguments else call.arguments
        return {**data, "id": call.id, "function": {**data["function"], "arguments": arguments}}

    def own_completion(self, answer, completion=None):
        """An answer the proxy gives itself (the cap message, or the text of tool calls it could not offer), in the
        shape of the upstream's when there is one; it names the agent's model, and its finish reason is "stop"."""
        base = completion or {
            "id": f"chatcmpl-toolgate-{time.time_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
        }
        own = {key: copy.deepcopy(value) for key, value in base.items() if key != "choices"}
        own["model"] = self.config.model or base.get("model") or self.request.model
        own["choices"] = [
            {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop", "logprobs": None}
        ]
        return own

    def finish(self, completion, stop_reason, answer, round_=None):
        """The Exchange that hands `completion` to the client, with the usage of every request it took."""
        if round_ is not None:
            self.rounds.append(replace(round_, shown_to_client=True))
        usage = sum_usage(round_.response.usage for round_ in self.rounds)
        if usage is not None:
            completion["usage"] = usage
        self.messages.append(completion["choices"][0]["message"])
        return self.exchange(completion, None, stop_reason, answer)

    def failed(self, error):
        message = f'The agent "{self.config.id}" could not answer a proxied request: {error.message}'
        write_log([log_entry("error", "proxy_error", self.config.id, message)], self.log)
        return self.exchange(None, error, ERROR, None)

    def cancelled(self):
        """The client closed its request before its answer was complete: not a failure of the proxy or the
        provider, so nothing is logged."""
        return self.exchange(None, None, CANCELLED, None)

    def exchange(self, completion, error, stop_reason, answer):
        return Exchange(
            completion=completion,
            error=error,
            rounds=tuple(self.rounds),
            messages=tuple(self.messages),
            stop_reason=stop_reason,
            answer=answer,
            rounds_used=self.rounds_used,
            message=self.turn.message,
            log=tuple(self.log),
            requests=self.requests,
        )


def answer_request(config, request, ask, history=None):
    """Answer one ProxyRequest under the agent's AgentConfig, asking upstream in turn. `ask(body)` sends a
    chat-completions body upstream and returns the parsed answer, or raises UpstreamError. `history`: the messages
    to send upstream in place of the client's — its conversation with the rounds it never saw put back
    (engine.proxy.recording) — so the model remembers what it was told; the counts come from the client's messages
    either way. Returns the Exchange, a failure included."""
    exchange = ProxyExchange(config, request, history)
    return drive(exchange, exchange.steps(), ask)


def drive(exchange, steps, ask):
    """Carry out `steps` (the exchange's, or a driver's around them that may also yield what is not a body — a
    keep-alive while held — and is sent None back): each body asked upstream. Returns the Exchange."""
    try:
        item = next(steps)
        while True:
            item = steps.send(ask(item) if isinstance(item, dict) else None)
    except StopIteration as done:
        return done.value
    except UpstreamError as error:
        return exchange.failed(error)
