"""The policy proxy (SPEC §8): one client request answered under the agent's policy.

The client sends its conversation and its tools; the proxy asks the agent's provider (`ask`, handed in) and puts
the answer through the gate before the client sees anything. A response with any rejected call is answered
upstream — the response, then one tool message per call id — and asked again within the rounds left; the client
gets the first response whose calls all pass (forced values written in), or an answer. At the cap the proxy does
what `on_round_cap` says; a `require_usage` tool not yet run brings the reminder as a hidden request.

Pure: no HTTP and no storage here. The web layer returns or streams `Exchange.completion` and records the
exchange as a run (engine.proxy_runs).
"""

import copy
import json
import logging
import time
from dataclasses import dataclass, replace

from . import texts
from .call_ids import repair_call_ids
from .client_tools import proxy_view
from .gate import TOOLS_DISABLED, reject_without_tools, restriction_log_message, review_calls
from .loop import ANSWERED, AWAITING_CLIENT, CUT_OFF_STOP_REASONS, ERROR, ROUND_CAP
from .providers import ProviderError, RequestSettings, check_answer_size
from .proxy_request import current_turn, text_of
from .types import ALLOWED, REJECTED, USAGE_KEYS, CallRecord, ModelResponse, Round, ToolCall

logger = logging.getLogger("toolgate")

NOT_RUN = "not_run"  # allowed by the gate, not run because another call of its response was rejected
UNREADABLE = "The model's answer could not be read"


class UpstreamError(Exception):
    """The provider failed or answered something unreadable; the client gets it in OpenAI's error shape."""

    def __init__(self, status, message, error_type="upstream_error", code=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = error_type
        self.code = code

    def to_json(self):
        return {"error": {"message": self.message, "type": self.type, "code": self.code}}


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


def _usage(completion):
    usage = completion.get("usage")
    if not isinstance(usage, dict) or not all(isinstance(usage.get(key), int) for key in USAGE_KEYS):
        return None
    return {key: usage[key] for key in USAGE_KEYS}


def read_completion(completion):
    """The ModelResponse of an upstream answer (arguments as JSON text); UpstreamError (502) if it is not one."""
    choices = completion.get("choices") if isinstance(completion, dict) else None
    message = (
        choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    )
    if not isinstance(message, dict):
        raise UpstreamError(502, f"{UNREADABLE}: it has no message.")
    if not isinstance(message.get("tool_calls") or [], list):
        raise UpstreamError(502, f"{UNREADABLE}: its tool_calls are not a list.")
    calls = []
    for number, data in enumerate(message.get("tool_calls") or [], start=1):
        function = data.get("function") if isinstance(data, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise UpstreamError(502, f"{UNREADABLE}: tool call {number} has no function name.")
        arguments = function.get("arguments")
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments if arguments is not None else {})
        calls.append(
            ToolCall(
                id=data.get("id") if isinstance(data.get("id"), str) else "", name=function["name"], arguments=arguments
            )
        )
    content = text_of(message.get("content")) if message.get("content") is not None else None
    try:
        check_answer_size([content, *(text for call in calls for text in (call.id, call.name, call.arguments))])
    except ProviderError as error:
        raise UpstreamError(502, str(error)) from None
    finish_reason = choices[0].get("finish_reason")
    response = ModelResponse(
        content=content,
        tool_calls=tuple(calls),
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=_usage(completion),
    )
    return response


def _assistant_message(response):
    message = {"role": "assistant", "content": response.content or ""}
    if response.tool_calls:
        message["tool_calls"] = [call.to_message() for call in response.tool_calls]
    return message


def _sum_usage(rounds):
    """The token usage of every upstream request of one client request, or None when none said."""
    usages = [round_.response.usage for round_ in rounds if round_.response.usage is not None]
    return {key: sum(usage[key] for usage in usages) for key in USAGE_KEYS} if usages else None


class _Exchange:
    """The state of one client request while the proxy asks upstream; `answer_request` drives it."""

    def __init__(self, config, request, ask, history):
        self.config = config
        self.request = request
        self.ask = ask
        self.gate_config, self.registry = proxy_view(config, request.declared)
        self.turn = current_turn(request.messages)
        self.tools = upstream_tools(config, request)
        self.messages = list(request.messages if history is None else history)
        self.used_ids = {
            call.get("id") for message in self.messages for call in message.get("tool_calls") or [] if call.get("id")
        }
        self.rounds_used = self.turn.rounds_used
        self.rounds, self.log = [], []
        self.requests = 0

    def cap_message(self):
        return self.config.max_rounds_message or texts.MAX_ROUNDS

    def missing_required_tools(self):
        return [
            tool.name
            for tool in self.request.declared
            if self.gate_config.tools[tool.name].require_usage and not self.turn.calls_so_far[tool.name]
        ]

    def drive(self):
        cap = self.config.max_rounds
        while True:
            if self.request.declared and cap and self.rounds_used >= cap and self.config.on_round_cap == "message":
                return self.finish(self.own_completion(self.cap_message()), ROUND_CAP, self.cap_message())
            offer = bool(self.request.declared) and self.rounds_used < cap
            tools = self.tools if offer else None
            body = upstream_body(self.config, self.request, self.messages, tools)
            self.requests += 1
            started = time.perf_counter()
            completion = self.ask(body)
            response = read_completion(completion)
            number = len(self.rounds) + 1
            response = replace(response, tool_calls=repair_call_ids(response.tool_calls, number, self.used_ids))
            round_ = Round(
                number=number,
                tools_offered=tuple(tool.name for tool in self.request.declared) if offer else None,
                response=response,
                tools_sent=tuple(tools) if tools else None,  # built for this request, never changed
                latency_ms=(time.perf_counter() - started) * 1000,
            )
            if not response.tool_calls:
                missing = self.missing_required_tools() if offer else []
                if missing:
                    self.hide_with_reminder(round_, response, missing)
                    continue
                stop_reason = ROUND_CAP if not offer and cap and self.request.declared else ANSWERED
                stop_reason = CUT_OFF_STOP_REASONS.get(response.finish_reason, stop_reason)
                return self.finish(self.client_completion(completion), stop_reason, response.content or "", round_)
            if not offer:
                answer = response.content or self.cap_message()
                rejected = self.records(reject_without_tools(response.tool_calls).verdicts)
                return self.finish(
                    self.own_completion(answer, completion), TOOLS_DISABLED, answer, replace(round_, calls=rejected)
                )
            self.rounds_used += 1
            review = review_calls(
                response.tool_calls,
                self.gate_config,
                self.registry,
                self.turn.calls_so_far,
                identical_so_far=self.turn.identical_so_far,
            )
            if review.restricted_tools:
                self.write_log("policy_violation", restriction_log_message(self.config.id, review))
            if all(verdict.allowed for verdict in review.verdicts):
                round_ = replace(round_, calls=self.records(review.verdicts))
                return self.finish(self.client_completion(completion, review.verdicts), AWAITING_CLIENT, None, round_)
            self.hide_with_rejections(round_, response, review.verdicts)

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

    def hide_with_rejections(self, round_, response, verdicts):
        records = self.records(verdicts)
        self.messages.append(_assistant_message(response))
        for record in records:
            self.messages.append({"role": "tool", "tool_call_id": record.call.id, "content": record.message})
        self.rounds.append(replace(round_, calls=records, shown_to_client=False))

    def hide_with_reminder(self, round_, response, missing):
        reminder = texts.REQUIRE_USAGE_REMINDER.format(names=", ".join(missing))
        self.messages.append(_assistant_message(response))
        self.messages.append({"role": "system", "content": reminder})
        self.rounds_used += 1
        self.rounds.append(replace(round_, reminder=reminder, shown_to_client=False))

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
        shape of the upstream's when there is one."""
        base = completion or {
            "id": f"chatcmpl-toolgate-{time.time_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.config.model or self.request.model,
        }
        own = {key: copy.deepcopy(value) for key, value in base.items() if key != "choices"}
        own["choices"] = [
            {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop", "logprobs": None}
        ]
        return own

    def finish(self, completion, stop_reason, answer, round_=None):
        """The Exchange that hands `completion` to the client, with the usage of every request it took."""
        if round_ is not None:
            self.rounds.append(replace(round_, shown_to_client=True))
        usage = _sum_usage(self.rounds)
        if usage is not None:
            completion["usage"] = usage
        self.messages.append(completion["choices"][0]["message"])
        return Exchange(
            completion=completion,
            error=None,
            rounds=tuple(self.rounds),
            messages=tuple(self.messages),
            stop_reason=stop_reason,
            answer=answer,
            rounds_used=self.rounds_used,
            message=self.turn.message,
            log=tuple(self.log),
            requests=self.requests,
        )

    def write_log(self, kind, message):
        """A log entry of the run (stored with it), and the same on the `toolgate` logger."""
        self.log.append({"level": "error", "kind": kind, "agent_id": self.config.id, "message": message})
        logger.error(message)

    def failed(self, error):
        self.write_log(
            "provider_error", f'The agent "{self.config.id}" could not answer a proxied request: {error.message}'
        )
        return Exchange(
            completion=None,
            error=error,
            rounds=tuple(self.rounds),
            messages=tuple(self.messages),
            stop_reason=ERROR,
            answer=None,
            rounds_used=self.rounds_used,
            message=self.turn.message,
            log=tuple(self.log),
            requests=self.requests,
        )


def answer_request(config, request, ask, history=None):
    """Answer one ProxyRequest under the agent's AgentConfig. `ask(body)` sends a chat-completions body upstream
    and returns the parsed answer, or raises UpstreamError. `history`: the messages to send upstream in place of
    the client's — its conversation with the rounds it never saw put back (engine.proxy_runs) — so the model
    remembers what it was told; the counts come from the client's messages either way. Returns the Exchange,
    a failure included."""
    exchange = _Exchange(config, request, ask, history)
    try:
        return exchange.drive()
    except UpstreamError as error:
        return exchange.failed(error)
