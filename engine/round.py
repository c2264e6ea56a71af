"""What follows one model response (SPEC §4), decided once for every driver.

Between "a model response arrived" and "what comes next" every driver does the same: read the completion, repair
its call ids, build the assistant message, then decide — the answer ends the run, an answer cut off ends it too, a
`require_usage` tool not yet used brings a reminder, tool calls on a request that offered no tools are rejected, and
otherwise the gate reviews the calls of a tool round. `next_step` says which, as a `Step` value, the way
openai-agents' `SingleStepResult.next_step` does. The drivers carry it out: the loop (engine.loop) executes a tool
round's allowed calls; the policy proxy (engine.proxy) hides a round with a rejection and asks again, or hands the
calls to the client. Whether the round cap ends a run with its message is `round_cap_answer`, asked by the loop when
a round completes and by the proxy before each request (its client runs the calls in between).
"""

import json
import logging
from dataclasses import dataclass, replace

from . import texts
from .call_ids import repair_call_ids
from .gate import TOOLS_DISABLED, reject_without_tools, restriction_log_message, review_calls
from .providers import ProviderError, check_answer_size
from .redaction import redact
from .types import USAGE_KEYS, ModelResponse, Round, ToolCall

logger = logging.getLogger("toolgate")

ANSWERED = "answered"
ROUND_CAP = "round_cap"
RETURN_DIRECTLY = "return_directly"
ERROR = "error"
TRUNCATED = "truncated"
CONTENT_FILTER = "content_filter"
STOPPED = "stopped"
AWAITING_CLIENT = "awaiting_client"  # a proxied run whose client got tool calls to run (engine.proxy)
CANCELLED = "cancelled"  # a proxied request its client closed before its answer was complete (engine.proxy)
STOP_REASONS = (
    *(ANSWERED, ROUND_CAP, RETURN_DIRECTLY, TOOLS_DISABLED, ERROR, TRUNCATED, CONTENT_FILTER, STOPPED),
    *(AWAITING_CLIENT, CANCELLED),
)
# An answer the provider cut off ends the run, its partial text the answer (SPEC §4).
CUT_OFF_STOP_REASONS = {"length": TRUNCATED, "content_filter": CONTENT_FILTER}

# What comes after a response (Step.next_step).
FINAL = "final"  # the run ends: Step.stop_reason and Step.answer
ASK_AGAIN = "ask_again"  # a reminder joined the transcript: ask the model again
TOOL_ROUND = "tool_round"  # the gate reviewed the calls: Step.review

UNREADABLE = "The model's answer could not be read"


@dataclass(frozen=True)
class Step:
    """One response read and decided. `round` is the response as a round (ids repaired; no calls yet), `assistant`
    the message that goes into the transcript, `rounds_used` the count after it (a reminder and a tool round each
    use one), `verdicts` the gate's (a tool round) or the rejections of calls no tool was offered for, and `log` the
    entries the round writes."""

    next_step: str
    round: Round
    assistant: dict
    rounds_used: int
    stop_reason: str | None = None
    answer: str | None = None
    reminder: str | None = None  # the system message a reminder appends
    verdicts: tuple = ()
    log: tuple = ()


def _field(value, name):
    """A field of an answer, whether the SDK parsed it into objects or it is the JSON the server sent."""
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def _content_text(content):
    """The answer's text: a string, or a list of content parts read as their joined text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = (_field(part, "text") for part in content)
        return "".join(text for text in parts if isinstance(text, str))
    return None


def _count(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def read_usage(usage):
    """{"prompt_tokens", "completion_tokens", "total_tokens"}, or None when the answer did not say."""
    prompt = _count(_field(usage, "prompt_tokens"))
    completion = _count(_field(usage, "completion_tokens"))
    if prompt is None or completion is None:
        return None
    total = _count(_field(usage, "total_tokens"))
    return dict(zip(USAGE_KEYS, (prompt, completion, prompt + completion if total is None else total), strict=True))


def read_completion(completion, secret=None):
    """The ModelResponse of a chat completion (the SDK's object or plain JSON), the key `secret` redacted from its
    text; ProviderError saying in words what makes it unreadable."""
    choices = _field(completion, "choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = _field(choice, "message") if choice is not None else None
    if message is None or isinstance(message, (str, list, int, float)):
        raise ProviderError(f"{UNREADABLE}: it has no message.")
    tool_calls = _field(message, "tool_calls") or []
    if not isinstance(tool_calls, list):
        raise ProviderError(f"{UNREADABLE}: its tool_calls are not a list.")
    calls = []
    for number, data in enumerate(tool_calls, start=1):
        function = _field(data, "function")
        name = _field(function, "name") if function is not None else None
        if not isinstance(name, str) or not name:
            raise ProviderError(f"{UNREADABLE}: tool call {number} has no function name.")
        call_id, arguments = _field(data, "id"), _field(function, "arguments")
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append(ToolCall(call_id if isinstance(call_id, str) else "", name, redact(arguments, secret)))
    finish_reason = _field(choice, "finish_reason")
    content = redact(_content_text(_field(message, "content")), secret)
    check_answer_size([content, *(text for call in calls for text in (call.id, call.name, call.arguments))])
    return ModelResponse(
        content=content,
        tool_calls=tuple(calls),
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=read_usage(_field(completion, "usage")),
    )


def assistant_message(response):
    """The response as the transcript's assistant message. Its content is never null: OpenAI refuses that without
    tool calls, and some servers (llama.cpp's) with them."""
    message = {"role": "assistant", "content": response.content or ""}
    if response.tool_calls:
        message["tool_calls"] = [call.to_message() for call in response.tool_calls]
    return message


def offers_tools(config, rounds_used):
    """Whether the next request offers the agent's tools: it has some, and the cap has not withheld them."""
    return bool(config.tools) and rounds_used < config.max_rounds


def round_cap_answer(config, rounds_used):
    """The answer that ends a run at the cap when `on_round_cap` is "message"; None while it goes on."""
    cap = config.max_rounds
    if config.tools and cap and rounds_used >= cap and config.on_round_cap == "message":
        return cap_message(config)
    return None


def cap_message(config):
    return config.max_rounds_message or texts.MAX_ROUNDS


def log_entry(level, kind, agent_id, message):
    return {"level": level, "kind": kind, "agent_id": agent_id, "message": message}


def write_log(entries, into, secret=None):
    """Append log entries to a run's log, the key redacted, and write each to the `toolgate` logger."""
    for entry in entries:
        entry = {**entry, "message": redact(entry["message"], secret)}
        into.append(entry)
        logger.log(logging.ERROR if entry["level"] == "error" else logging.WARNING, entry["message"])


def answer_round(response, number, used_ids, offered_tools, latency_ms, started_at):
    """The response as round `number`, its call ids repaired against `used_ids` (which gains them)."""
    if response.tool_calls:
        response = replace(response, tool_calls=repair_call_ids(response.tool_calls, number, used_ids))
    return Round(
        number=number,
        tools_offered=tuple(tool["function"]["name"] for tool in offered_tools) if offered_tools else None,
        response=response,
        tools_sent=tuple(offered_tools) if offered_tools else None,
        latency_ms=latency_ms,
        started_at=started_at,
    )


def next_step(round_, *, config, registry, rounds_used, used_tools, calls_so_far, identical_so_far, artifacts=None):
    """What follows the response of `round_` (answer_round's), as a Step. `config` and `registry` are the tools the
    gate reviews against; `used_tools` the names that count as used for `require_usage`; `calls_so_far` and
    `identical_so_far` what already ran (gate.review_calls)."""
    response = round_.response
    offered = round_.tools_offered is not None
    assistant = assistant_message(response)
    if not response.tool_calls:
        if response.finish_reason in CUT_OFF_STOP_REASONS:
            return Step(
                FINAL,
                round_,
                assistant,
                rounds_used,
                CUT_OFF_STOP_REASONS[response.finish_reason],
                response.content or "",
            )
        missing = [name for name, settings in config.tools.items() if settings.require_usage and name not in used_tools]
        if offered and missing:
            reminder = texts.REQUIRE_USAGE_REMINDER.format(names=", ".join(missing))
            return Step(ASK_AGAIN, replace(round_, reminder=reminder), assistant, rounds_used + 1, reminder=reminder)
        withheld_by_cap = not offered and config.max_rounds > 0 and bool(config.tools)
        return Step(
            FINAL, round_, assistant, rounds_used, ROUND_CAP if withheld_by_cap else ANSWERED, response.content or ""
        )
    if not offered:
        verdicts = reject_without_tools(response.tool_calls).verdicts
        answer = response.content or cap_message(config)
        log = rejection_entries(config.id, verdicts)
        return Step(FINAL, round_, assistant, rounds_used, TOOLS_DISABLED, answer, verdicts=verdicts, log=log)
    review = review_calls(
        response.tool_calls,
        config,
        registry,
        calls_so_far,
        identical_so_far=identical_so_far,
        artifacts=artifacts,
    )
    if review.restricted_tools:  # one entry for the response, at error, in the seed module's words
        log = (log_entry("error", "policy_violation", config.id, restriction_log_message(config.id, review)),)
    else:
        log = rejection_entries(config.id, review.verdicts)
    return Step(TOOL_ROUND, round_, assistant, rounds_used + 1, verdicts=review.verdicts, log=log)


def rejection_entries(agent_id, verdicts):
    """A log entry at warning for each call the gate (or a reviewer) rejected, its kind the reason: an admin finds
    every rejection on the log page, not only the restriction's."""
    return tuple(
        log_entry(
            "warning",
            verdict.reason,
            agent_id,
            f'The agent "{agent_id}" had its call {verdict.call.id} of "{verdict.call.name}" rejected: '
            f"{verdict.message}",
        )
        for verdict in verdicts
        if not verdict.allowed
    )
