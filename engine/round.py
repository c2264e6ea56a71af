"""What follows one model response (SPEC §4), decided once for every driver.

Between "a model response arrived" and "what comes next" every driver does the same: repair its call ids, build the
assistant message, then decide — the answer ends the run, an answer cut off ends it too, a `require_usage` tool not
yet used brings a reminder, tool calls on a request that offered no tools are rejected, and otherwise the gate
reviews the calls of a tool round, which may then wait for approval. `next_step` says which as a value, one Step
class per outcome (Answered, AskAgain, ToolsDisabled, ToolRound, AwaitingApproval), the way openai-agents'
`NextStep*` classes do, and each driver matches on the class: the loop (engine.loop) executes a tool round's
allowed calls; the policy proxy (engine.proxy) hides a round with a rejection and asks again, or hands the calls to
the client; the gate API (engine.review) answers with a tool round's verdicts (`review_round`, the round review all
three share). Whether the round cap ends a run with its message is `round_cap_answer`, asked by the loop when a
round completes and by the proxy before each request (its client runs the calls in between).
"""

import logging
from dataclasses import dataclass, replace

from . import texts
from .call_ids import repair_call_ids
from .gate import TOOLS_DISABLED, reject_without_tools, restriction_log_message, review_calls
from .redaction import redact
from .types import Round

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


@dataclass(frozen=True)
class Step:
    """One response read and decided; each outcome is a subclass with only its own fields. `round` is the response
    as a round (ids repaired; no calls yet), `assistant` the message that goes into the transcript, `rounds_used`
    the count after it (a reminder and a tool round each use one)."""

    round: Round
    assistant: dict
    rounds_used: int


@dataclass(frozen=True)
class Answered(Step):
    """The model answered without tool calls and the run ends with its text: `stop_reason` says how the answer came
    (answered, round_cap when the cap withheld the tools, truncated or content_filter when it was cut off)."""

    stop_reason: str
    answer: str


@dataclass(frozen=True)
class AskAgain(Step):
    """The model answered while a `require_usage` tool has not run: `reminder` joins the transcript as a system
    message and the model is asked again."""

    reminder: str


@dataclass(frozen=True)
class ToolsDisabled(Step):
    """The model called tools on a request that offered none: every call is answered with its rejection (`verdicts`),
    none runs, and the run ends with `answer` (its text, or the cap message). Its stop reason is TOOLS_DISABLED."""

    answer: str
    verdicts: tuple
    log: tuple


@dataclass(frozen=True)
class ToolRound(Step):
    """The gate reviewed the calls: `verdicts` one per call in response order, `restricted_tools` the restricted
    tools called more than once, `log` the entries the review writes."""

    verdicts: tuple
    restricted_tools: tuple
    log: tuple

    @property
    def all_allowed(self):
        return all(verdict.allowed for verdict in self.verdicts)


@dataclass(frozen=True)
class AwaitingApproval(Step):
    """The gate reviewed the calls and allowed some whose tool requires approval (`awaiting`, their ids in response
    order): nothing of the round runs until a person decides on each."""

    verdicts: tuple
    awaiting: tuple
    log: tuple


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
            stop_reason = CUT_OFF_STOP_REASONS[response.finish_reason]
            return Answered(round_, assistant, rounds_used, stop_reason, response.content or "")
        missing = [name for name, settings in config.tools.items() if settings.require_usage and name not in used_tools]
        if offered and missing:
            reminder = texts.REQUIRE_USAGE_REMINDER.format(names=", ".join(missing))
            return AskAgain(replace(round_, reminder=reminder), assistant, rounds_used + 1, reminder)
        withheld_by_cap = not offered and config.max_rounds > 0 and bool(config.tools)
        stop_reason = ROUND_CAP if withheld_by_cap else ANSWERED
        return Answered(round_, assistant, rounds_used, stop_reason, response.content or "")
    if not offered:
        verdicts = reject_without_tools(response.tool_calls).verdicts
        answer = response.content or cap_message(config)
        return ToolsDisabled(round_, assistant, rounds_used, answer, verdicts, rejection_entries(config.id, verdicts))
    return review_round(
        round_,
        config=config,
        registry=registry,
        rounds_used=rounds_used,
        calls_so_far=calls_so_far,
        identical_so_far=identical_so_far,
        artifacts=artifacts,
    )


def review_round(round_, *, config, registry, rounds_used, calls_so_far, identical_so_far, artifacts=None):
    """The gate's review of a tool round, the round review every entry point shares (the loop, the proxy and the gate
    API): a ToolRound, or AwaitingApproval when it allowed calls whose tool requires approval; either with the log
    entries of its rejections — the restriction's one entry at error, else one at warning per rejected call."""
    review = review_calls(
        round_.response.tool_calls,
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
    assistant = assistant_message(round_.response)
    awaiting = tuple(
        verdict.call.id
        for verdict in review.verdicts
        if verdict.allowed and config.settings_for(verdict.call.name).require_approval
    )
    if awaiting:
        return AwaitingApproval(round_, assistant, rounds_used + 1, review.verdicts, awaiting, log)
    return ToolRound(round_, assistant, rounds_used + 1, review.verdicts, review.restricted_tools, log)


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
