"""The values the engine passes around, as frozen dataclasses: what the model asked for (ToolCall, ModelResponse)
and what a run recorded (CallRecord, Round, RunRecord).

The record types carry the run's facts; `to_json()` turns them into the JSON shape of SPEC §8 at the edge, so
the loop never builds dicts by hand and a field added to a round or a call is added in one place.
"""

import dataclasses
import json
from dataclasses import dataclass

from .config import json_value_problem
from .json_copy import json_copy


def _parse_json(text):
    """(value, None), or (None, why the text is not JSON a run can take: malformed, or nested too deeply)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return None, f"the arguments are not valid JSON ({error.msg} at position {error.pos})"
    except RecursionError:
        return None, "the arguments are nested too deeply to be read"
    problem = json_value_problem(value)
    return (None, f"the arguments{problem[0]} {problem[1]}") if problem else (value, None)


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: object  # the raw JSON string the model sent, or an already parsed value
    original_id: str | None = None  # the id the model sent, when Toolgate had to replace it ("" for none)

    def parsed_arguments(self):
        """(value, error): the arguments as JSON, or why they are not a JSON object."""
        value = self.arguments
        if isinstance(value, str):
            value, error = _parse_json(value) if value.strip() else ({}, None)
            if error:
                return None, error
        if not isinstance(value, dict):
            return None, "the arguments must be a JSON object"
        return value, None

    def arguments_for_display(self):
        """Parsed arguments when they are JSON, else the raw text: what a person reading the run wants."""
        if isinstance(self.arguments, str):
            value, error = _parse_json(self.arguments)
            return self.arguments if error else value
        return self.arguments

    def arguments_json(self):
        """The arguments as the string an OpenAI assistant message carries."""
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)

    def to_message(self):
        """The call as an entry of an OpenAI assistant message's `tool_calls`."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments_json()}}

    def to_state(self):
        """Every field exactly, the arguments as the model sent them (a run's saved state needs them)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_state(cls, data):
        return cls(**data)


@dataclass(frozen=True)
class ModelResponse:
    content: str | None
    tool_calls: tuple  # of ToolCall
    finish_reason: str | None = None  # as the provider said: "stop", "tool_calls", "length", "content_filter", …
    usage: dict | None = None  # {"prompt_tokens", "completion_tokens", "total_tokens"}, when the provider said
    model: str | None = None  # the model the answer says it came from, when it said


USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")


def sum_usage(usages):
    """Token usage summed over the requests that reported it (`usages`: each a usage dict, or None when that
    request did not say); None when none did."""
    reported = [usage for usage in usages if usage is not None]
    if not reported:
        return None
    return {key: sum(usage[key] for usage in reported) for key in USAGE_KEYS}


EXECUTED = "executed"
REJECTED = "rejected"
ERROR = "error"
# The statuses of the calls of a round that waits for approval: none of them has run yet. A proxied run's calls
# that passed the gate and went to the client are ALLOWED too, until its next request says they ran.
AWAITING_APPROVAL = "awaiting_approval"
ALLOWED = "allowed"
CLIENT = "client"  # who ran a call the client ran (CallRecord.run_by); Toolgate's own are None


@dataclass(frozen=True)
class CallRecord:
    """One tool call of a round: the gate's verdict and, when it ran, its outcome."""

    call: ToolCall
    status: str  # EXECUTED, REJECTED or ERROR (the tool raised)
    reason: str | None = None
    message: str | None = None  # the tool message of a rejected or failed call
    output: str | None = None  # what an executed call returned
    artifact: str | None = None  # the placeholder the model got instead of the output (use_artifacts)
    forced_arguments: dict | None = None  # {argument: the value it executed with, whatever the model sent}
    replaced_placeholders: tuple = ()  # the artifact placeholders replaced in its arguments
    progress_message: str = ""  # the tool's progress message, shown beside the call
    review: dict | None = None  # a reviewer's decision on a call that required approval (engine.approvals)
    run_by: str | None = None  # CLIENT for a call of a proxied run that the client ran

    @property
    def tool_message(self):
        """What the model is sent back for this call."""
        if self.status != EXECUTED:
            return self.message
        return self.artifact or self.output

    def to_json(self):
        record = {
            "id": self.call.id,
            "original_id": self.call.original_id,
            "name": self.call.name,
            "arguments": self.call.arguments_for_display(),
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "output": self.output,
            "artifact": self.artifact,
            "forced_arguments": dict(self.forced_arguments or {}),
            "replaced_placeholders": list(self.replaced_placeholders),
            "progress_message": self.progress_message or None,
        }
        if self.review is not None:  # only calls that required approval have one
            record["review"] = json_copy(self.review)
        if self.run_by is not None:  # only the calls of a proxied run that its client ran
            record["run_by"] = self.run_by
        return record

    @classmethod
    def from_json(cls, data):
        """The record whose to_json() is `data`: a stored round read back to go on with its run."""
        return cls(
            ToolCall(data["id"], data["name"], data["arguments"], data.get("original_id")),
            data["status"],
            data["reason"],
            data["message"],
            data["output"],
            data.get("artifact"),
            data.get("forced_arguments") or None,
            tuple(data.get("replaced_placeholders") or ()),
            data.get("progress_message") or "",
            json_copy(data.get("review")),
            data.get("run_by"),
        )


@dataclass(frozen=True)
class Round:
    """One model response and what Toolgate did with it."""

    number: int
    tools_offered: tuple | None  # the names of the tools the request offered; None when it offered none
    response: ModelResponse
    calls: tuple = ()  # of CallRecord, in response order
    reminder: str | None = None  # the require_usage reminder appended after this response
    tools_sent: tuple | None = None  # the request's `tools` entries exactly as sent; None when it sent none
    latency_ms: float | None = None  # how long the request took, retries included
    shown_to_client: bool | None = None  # proxied runs: whether the client got this response; None elsewhere
    started_at: float | None = None  # when the request was sent (Unix time, seconds)

    def progress_messages(self):
        """The progress messages of the tools that ran in this round, each once, in call order."""
        ran = (call.progress_message for call in self.calls if call.status != REJECTED and call.progress_message)
        return list(dict.fromkeys(ran))

    def to_json(self):
        return {
            "number": self.number,
            "tools_offered": list(self.tools_offered) if self.tools_offered is not None else None,
            "tools_sent": json_copy(list(self.tools_sent)) if self.tools_sent is not None else None,
            "progress_messages": self.progress_messages(),
            "assistant": {
                "content": self.response.content,
                "tool_calls": [
                    {"id": call.id, "name": call.name, "arguments": call.arguments_for_display()}
                    for call in self.response.tool_calls
                ],
            },
            "calls": [call.to_json() for call in self.calls],
            "reminder": self.reminder,
            "finish_reason": self.response.finish_reason,
            "usage": self.response.usage,
            "model": self.response.model,
            "latency_ms": None if self.latency_ms is None else round(self.latency_ms, 3),
            "started_at": None if self.started_at is None else round(self.started_at, 3),
            **({} if self.shown_to_client is None else {"shown_to_client": self.shown_to_client}),  # proxied runs
        }

    @classmethod
    def from_json(cls, data):
        """The round whose to_json() is `data`. The calls' arguments come back as the round shows them (parsed
        when they are JSON), which renders the same; the transcript keeps them exactly as the model sent them."""
        assistant = data["assistant"]
        calls = tuple(ToolCall(call["id"], call["name"], call["arguments"]) for call in assistant["tool_calls"])
        return cls(
            number=data["number"],
            tools_offered=tuple(data["tools_offered"]) if data["tools_offered"] is not None else None,
            response=ModelResponse(
                assistant["content"], calls, data.get("finish_reason"), data.get("usage"), data.get("model")
            ),
            calls=tuple(CallRecord.from_json(call) for call in data["calls"]),
            reminder=data.get("reminder"),
            tools_sent=json_copy(tuple(data["tools_sent"])) if data.get("tools_sent") is not None else None,
            latency_ms=data.get("latency_ms"),
            shown_to_client=data.get("shown_to_client"),
            started_at=data.get("started_at"),
        )


# The states of a run, defined here once. A run that has not ended is running or awaiting approval; `interrupted`
# is how a stored one reads when the process stepping it died, `abandoned` a proxied one whose client never came
# back for the calls it was sent (store.runs).
RUNNING = "running"
AWAITING = "awaiting_approval"
FINISHED = "finished"
INTERRUPTED = "interrupted"
ABANDONED = "abandoned"
RUN_STATES = (RUNNING, AWAITING, FINISHED, INTERRUPTED, ABANDONED)


@dataclass(frozen=True)
class RunRecord:
    """A run, finished or not: everything `run_agent` returns, before it becomes JSON."""

    agent_id: str
    message: str
    overrides: dict
    agent: dict  # the merged agent the run used
    stop_reason: str
    answer: str | None
    error: str | None
    rounds: tuple  # of Round
    messages: tuple  # the transcript, in OpenAI chat format
    rounds_used: int
    max_rounds: int
    sources: tuple
    layout: tuple
    log: tuple
    duration_ms: float
    model_requests: int  # every request sent, the one that failed included
    artifacts: tuple = ()  # {"placeholder", "tool", "number", "call_id", "round", "content"}, in the order kept
    pending_round: Round | None = None  # the round that waits for approval: its calls have not run yet

    @property
    def state(self):
        if self.stop_reason is not None:
            return FINISHED
        return AWAITING if self.pending_round is not None else RUNNING

    def calls(self):
        return [call for round_ in self.rounds for call in round_.calls]

    def usage(self):
        """Token usage summed over the rounds that reported it; None when none did."""
        return sum_usage(round_.response.usage for round_ in self.rounds)

    def to_json(self):
        calls = self.calls()
        return {
            "agent_id": self.agent_id,
            "message": self.message,
            "overrides": self.overrides,
            "agent": self.agent,
            "state": self.state,
            "stop_reason": self.stop_reason,
            "answer": self.answer,
            "error": self.error,
            "rounds": [round_.to_json() for round_ in self.rounds],
            "messages": list(self.messages),
            "tool_calls": sum(1 for call in calls if call.status != REJECTED),
            "rejected_calls": sum(1 for call in calls if call.status == REJECTED),
            "rounds_used": self.rounds_used,
            "max_rounds": self.max_rounds,
            "model_requests": self.model_requests,
            "usage": self.usage(),
            "sources": list(self.sources),
            "layout": list(self.layout),
            "log": list(self.log),
            "artifacts": [dict(artifact) for artifact in self.artifacts],
            "duration_ms": round(self.duration_ms, 3),
            "pending_round": self.pending_round.to_json() if self.pending_round is not None else None,
        }
