"""A stored run as OpenTelemetry spans in the GenAI semantic conventions (v1.38.0: gen-ai-spans.md,
gen-ai-agent-spans.md): the spans of what its record holds beyond what was exported before.

Built from the run's JSON as stored (`GET /api/runs/<id>`), never from the loop, so the loop and the proxy know
nothing of tracing. Pure: the run in, span descriptions out; services/tracing.py hands them to the OpenTelemetry
SDK, so this module imports none of it.

- The run is an `invoke_agent {agent id}` span, sent once the run has ended (a run that waits for approval or for
  its client's tool results has not): it starts with its first model request and ends when it was seen ending.
- Each model request is a `chat {model}` span, child of the run's, sent with the step that made it; a request
  that failed is one too, with `error.type`.
- Each call that ran is an `execute_tool {tool}` span. Toolgate records no time per call: the span covers the time
  from its response to the next request (or to the run's end). A call the gate or a reviewer rejected gets no span
  but a `toolgate.guardrail.result` event on its round's chat span (the conventions have no event for a call that
  was not executed); every reviewer's decision is a `toolgate.review` event there too. A proxied round's calls are
  sent when the client's next request says which it ran (then as `function` tools: the client ran them).
- Message text, arguments and outputs only with `capture` on, through `redact`.
"""

import json
from dataclasses import dataclass, field
from datetime import datetime

from engine import gate
from engine.approvals import REVIEWER_REJECTED
from engine.config import SCRIPTED_PROVIDER
from engine.types import ALLOWED, AWAITING_APPROVAL, CLIENT, ERROR, EXECUTED

SCHEMA_URL = "https://opentelemetry.io/schemas/1.38.0"
AWAITING_CLIENT = "awaiting_client"
GUARDRAIL_EVENT = "toolgate.guardrail.result"
REVIEW_EVENT = "toolgate.review"
# The tool setting whose rule rejected a call, by the verdict's reason (SPEC §3-4); None: no setting, a fact.
RULE_SETTINGS = {
    gate.RESTRICTED_REPEAT: "restrict_multiple_calls",
    gate.COLLATERAL: "restrict_multiple_calls",
    gate.CALL_LIMIT: "max_calls_per_run",
    gate.REPEATED_CALL: "max_identical_calls",
    gate.ARGUMENT_NOT_ALLOWED: "argument_rules",
    gate.TOOLS_DISABLED: "max_rounds",
    REVIEWER_REJECTED: "require_approval",
}
# The rejections whose message quotes the call's arguments or a reviewer's words: content, sent only with capture.
QUOTING_REASONS = {gate.INVALID_ARGUMENTS, gate.ARGUMENT_NOT_ALLOWED, REVIEWER_REJECTED}
WAITING_STATUSES = {ALLOWED, AWAITING_APPROVAL}


@dataclass(frozen=True)
class Cursor:
    """How far a run was exported: the rounds whose chat span was sent, the rounds whose calls' spans were sent,
    and whether the run's own span was."""

    rounds_exported: int = 0
    rounds_settled: int = 0
    ended: bool = False

    def to_row(self):
        return {"rounds_exported": self.rounds_exported, "rounds_settled": self.rounds_settled, "ended": self.ended}

    @classmethod
    def from_row(cls, row):
        return cls(row["rounds_exported"], row["rounds_settled"], bool(row["ended"]))


@dataclass(frozen=True)
class Event:
    name: str
    time: float  # Unix seconds
    attributes: dict


@dataclass(frozen=True)
class SpanDescription:
    """One span to send: `agent` marks the run's own span (its ids are the trace's); every other span is its
    child."""

    name: str
    kind: str  # "internal" or "client"
    start: float  # Unix seconds
    end: float
    attributes: dict
    events: tuple = ()
    error: str | None = None  # the status description of a span that failed
    agent: bool = False


@dataclass(frozen=True)
class Export:
    """What to send for a run now, and the cursor once it is sent."""

    spans: tuple
    cursor: Cursor = field(default_factory=Cursor)


def run_ended(run):
    """Whether the run has ended: a stop reason, and not a proxied run whose client has calls to run."""
    return run.get("stop_reason") not in (None, AWAITING_CLIENT)


def new_spans(run, cursor, now, *, conversation_id=None, capture=False, redact=lambda value: value):
    """The spans of `run` (its stored JSON) past `cursor`, with `now` (Unix seconds) as the end of what has no
    recorded end yet."""
    rounds = run.get("rounds") or []
    times = round_times(run)
    builder = _Builder(run, times, now, conversation_id, capture, redact)
    ended = run_ended(run) and not cursor.ended
    spans = [builder.chat_span(number) for number in range(cursor.rounds_exported, len(rounds))]
    settled = cursor.rounds_settled
    while settled < len(rounds) and (settled + 1 < len(rounds) or run_ended(run) or not _waits(rounds[settled])):
        spans.extend(builder.tool_spans(settled))
        settled += 1
    if ended:
        if run.get("stop_reason") == ERROR:
            spans.append(builder.failed_request_span())
        spans.append(builder.agent_span())
    return Export(tuple(spans), Cursor(len(rounds), settled, cursor.ended or ended))


def _waits(round_):
    """Whether some call of the round has not had its outcome yet (a proxied call its client has not answered)."""
    return any(call.get("status") in WAITING_STATUSES for call in round_.get("calls") or [])


def round_times(run):
    """(start, end) of each round's model request in Unix seconds: its `started_at` and latency when it has them,
    else the end of the round before (the run's creation for the first)."""
    cursor = _timestamp(run.get("created_at"))
    times = []
    for round_ in run.get("rounds") or []:
        start = round_.get("started_at")
        start = cursor if not isinstance(start, (int, float)) else float(start)
        end = start + (round_.get("latency_ms") or 0) / 1000
        times.append((start, end))
        cursor = end
    return times


def _timestamp(created_at):
    try:
        return datetime.fromisoformat(created_at).timestamp()
    except (TypeError, ValueError):
        return 0.0


def error_type(error):
    """A low-cardinality class of a provider failure, from its text: the HTTP status it answered, or what went
    wrong."""
    text = error or ""
    marker = "answered HTTP "
    if marker in text:
        status = text.split(marker, 1)[1][:3]
        if status.isdigit():
            return status
    if "did not answer" in text:
        return "timeout"
    if "Could not reach" in text:
        return "connection_error"
    return "provider_error"


def _json(value):
    return json.dumps(value, ensure_ascii=False)


def _text(content):
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _arguments(arguments):
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def semconv_message(message):
    """An OpenAI chat message in the conventions' message shape: a role and its parts."""
    role = message.get("role")
    if role == "tool":
        part = {"type": "tool_call_response", "id": message.get("tool_call_id"), "response": message.get("content")}
        return {"role": "tool", "parts": [part]}
    parts = [{"type": "text", "content": _text(message.get("content"))}] if _text(message.get("content")) else []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": _arguments(function.get("arguments")),
            }
        )
    return {"role": role, "parts": parts}


class _Builder:
    """The spans of one run, from its JSON."""

    def __init__(self, run, times, now, conversation_id, capture, redact):
        self.run = run
        self.rounds = run.get("rounds") or []
        self.times = times
        self.now = now
        self.capture = capture
        self.redact = redact
        agent = run.get("agent") or {}
        self.provider = agent.get("provider") or SCRIPTED_PROVIDER
        self.model = agent.get("model") or ""
        self.common = {"toolgate.run.id": run.get("id")}
        if conversation_id is not None:
            self.common["gen_ai.conversation.id"] = conversation_id

    def content(self, value):
        """An attribute of content: JSON text (a string as it is), key redacted."""
        return self.redact(value if isinstance(value, str) else _json(value))

    def last_end(self):
        return self.times[-1][1] if self.times else _timestamp(self.run.get("created_at"))

    def run_end(self):
        return max(self.now, self.last_end())

    def model_attributes(self, operation, model=""):
        """What a span that asked the model says of it: a provider connection speaks OpenAI's API. `model`: the
        model asked, when the agent names none (the one that answered, as it said)."""
        attributes = {
            **self.common,
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": SCRIPTED_PROVIDER if self.provider == SCRIPTED_PROVIDER else "openai",
            "toolgate.provider.id": self.provider,
        }
        if self.model or model:
            attributes["gen_ai.request.model"] = self.model or model
        return attributes

    def chat_name(self, model=""):
        model = self.model or model
        return f"chat {model}" if model else "chat"

    def chat_span(self, index):
        round_ = self.rounds[index]
        start, end = self.times[index]
        answered_as = round_.get("model") or ""
        attributes = {
            **self.model_attributes("chat", answered_as),
            "toolgate.round.number": round_.get("number", index + 1),
        }
        if answered_as:
            attributes["gen_ai.response.model"] = answered_as
        if round_.get("finish_reason"):
            attributes["gen_ai.response.finish_reasons"] = [round_["finish_reason"]]
        attributes.update(_usage(round_.get("usage")))
        if round_.get("tools_offered") is not None:
            attributes["toolgate.round.tools_offered"] = list(round_["tools_offered"])
        if "shown_to_client" in round_:
            attributes["toolgate.round.shown_to_client"] = bool(round_["shown_to_client"])
        if self.capture:
            assistant = round_.get("assistant") or {}
            said = {
                "role": "assistant",
                "content": assistant.get("content"),
                "tool_calls": [
                    {"id": call["id"], "function": {"name": call["name"], "arguments": call["arguments"]}}
                    for call in assistant.get("tool_calls") or []
                ],
            }
            output = {**semconv_message(said), "finish_reason": round_.get("finish_reason")}
            attributes["gen_ai.output.messages"] = self.content([output])
            sent = self.input_messages(index)
            if sent is not None:
                attributes["gen_ai.input.messages"] = self.content([semconv_message(message) for message in sent])
        events = []
        for call in round_.get("calls") or []:
            if call.get("review"):
                events.append(self.review_event(call, end))
            if call.get("status") == "rejected":
                events.append(self.guardrail_event(call, end))
        return SpanDescription(self.chat_name(answered_as), "client", start, end, attributes, tuple(events))

    def input_messages(self, index):
        """The transcript the round's request sent: what came before its assistant message. A round's assistant
        message is the one as far from the transcript's last as the round from the run's last; None when the
        transcript does not have them all."""
        messages = self.run.get("messages") or []
        answers = [position for position, message in enumerate(messages) if message.get("role") == "assistant"]
        if self.run.get("pending_round") is not None:  # the last answer is the round that waits for approval
            answers = answers[:-1]
        if len(answers) < len(self.rounds):
            return None
        return messages[: answers[len(answers) - len(self.rounds) + index]]

    def guardrail_event(self, call, time):
        reason = call.get("reason")
        attributes = {
            "gen_ai.tool.call.id": call.get("id"),
            "gen_ai.tool.name": call.get("name"),
            "toolgate.guardrail.decision": "rejected",
            "toolgate.guardrail.reason": reason or "",
        }
        if RULE_SETTINGS.get(reason):
            attributes["toolgate.guardrail.setting"] = RULE_SETTINGS[reason]
        if call.get("message") is not None and (self.capture or reason not in QUOTING_REASONS):
            attributes["toolgate.guardrail.message"] = self.redact(call["message"])
        if self.capture:
            attributes["gen_ai.tool.call.arguments"] = self.content(call.get("arguments"))
        return Event(GUARDRAIL_EVENT, time, attributes)

    def review_event(self, call, time):
        """The reviewer's decision, at the moment it was taken (runs stored before decisions had a time: the end of
        the round's model request)."""
        review = call["review"]
        if isinstance(review.get("decided_at"), (int, float)):
            time = float(review["decided_at"])
        attributes = {
            "gen_ai.tool.call.id": call.get("id"),
            "gen_ai.tool.name": call.get("name"),
            "toolgate.review.decision": review.get("decision") or "",
            "toolgate.review.by": review.get("by") or "",
            "toolgate.review.edited_arguments": review.get("arguments") is not None,
        }
        if self.capture:
            if review.get("reason"):
                attributes["toolgate.review.reason"] = self.redact(review["reason"])
            if review.get("arguments") is not None:
                attributes["toolgate.review.arguments"] = self.content(review["arguments"])
        return Event(REVIEW_EVENT, time, attributes)

    def tool_spans(self, index):
        """The spans of the round's calls that ran, over the time from its response to the next request."""
        start = self.times[index][1]
        end = self.times[index + 1][0] if index + 1 < len(self.times) else self.run_end()
        end = max(start, end)
        spans = []
        for call in self.rounds[index].get("calls") or []:
            if call.get("status") not in (EXECUTED, ERROR):
                continue
            attributes = {
                **self.common,
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.get("name"),
                "gen_ai.tool.call.id": call.get("id"),
                # The conventions' words: a function runs on the client's side, an extension on the agent's.
                "gen_ai.tool.type": "function" if call.get("run_by") == CLIENT else "extension",
                "toolgate.round.number": self.rounds[index].get("number", index + 1),
            }
            error = None
            if call.get("status") == ERROR:
                attributes["error.type"] = call.get("reason") or "tool_error"
                error = self.redact(call.get("message") or "") if self.capture else "The tool raised an error."
            if self.capture:
                attributes["gen_ai.tool.call.arguments"] = self.content(call.get("arguments"))
                result = call.get("output") if call.get("status") == EXECUTED else call.get("message")
                if result is not None:
                    attributes["gen_ai.tool.call.result"] = self.content(result)
            spans.append(
                SpanDescription(f"execute_tool {call.get('name')}", "internal", start, end, attributes, error=error)
            )
        return spans

    def failed_request_span(self):
        """The request that failed and ended the run: from the run's last round to its end."""
        error = self.run.get("error") or ""
        attributes = {**self.model_attributes("chat"), "error.type": error_type(error)}
        return SpanDescription(self.chat_name(), "client", self.last_end(), self.run_end(), attributes, error=error)

    def agent_span(self):
        run = self.run
        agent = run.get("agent") or {}
        agent_id = run.get("agent_id") or ""
        attributes = {
            **self.model_attributes("invoke_agent"),
            "gen_ai.agent.id": agent_id,
            "gen_ai.agent.name": agent.get("label") or agent_id,
            "toolgate.run.source": run.get("source") or "",
            "toolgate.stop_reason": run.get("stop_reason") or "",
            "toolgate.run.tool_calls": run.get("tool_calls") or 0,
            "toolgate.run.rejected_calls": run.get("rejected_calls") or 0,
            "toolgate.run.model_requests": run.get("model_requests") or 0,
            **_usage(run.get("usage")),
        }
        error = None
        if run.get("stop_reason") == ERROR:
            attributes["error.type"] = error_type(run.get("error"))
            error = run.get("error") or ""
        if self.capture:
            if agent.get("system_prompt"):
                attributes["gen_ai.system_instructions"] = self.content(
                    [{"type": "text", "content": agent["system_prompt"]}]
                )
            user = {"role": "user", "content": run.get("message")}
            attributes["gen_ai.input.messages"] = self.content([semconv_message(user)])
            if run.get("answer") is not None:
                answer = {"role": "assistant", "content": run["answer"]}
                attributes["gen_ai.output.messages"] = self.content([semconv_message(answer)])
        start = self.times[0][0] if self.times else _timestamp(run.get("created_at"))
        return SpanDescription(
            f"invoke_agent {agent_id}", "internal", start, self.run_end(), attributes, error=error, agent=True
        )


def _usage(usage):
    if not isinstance(usage, dict):
        return {}
    found = {
        "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
        "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
    }
    return {key: value for key, value in found.items() if isinstance(value, int)}
