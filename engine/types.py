"""The values the engine passes around, as frozen dataclasses: what the model asked for (ToolCall, ModelResponse)
and what a run recorded (CallRecord, Round, RunRecord).

The record types carry the run's facts; `to_json()` turns them into the JSON shape of SPEC §8 at the edge, so
the loop never builds dicts by hand and a field added to a round or a call is added in one place.
"""

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: object  # the raw JSON string the model sent, or an already parsed value

    def parsed_arguments(self):
        """(value, error): the arguments as JSON, or why they are not a JSON object."""
        value = self.arguments
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else {}
            except json.JSONDecodeError as error:
                return None, f"the arguments are not valid JSON ({error.msg} at position {error.pos})"
        if not isinstance(value, dict):
            return None, "the arguments must be a JSON object"
        return value, None

    def arguments_for_display(self):
        """Parsed arguments when they are JSON, else the raw text: what a person reading the run wants."""
        if isinstance(self.arguments, str):
            try:
                return json.loads(self.arguments)
            except json.JSONDecodeError:
                return self.arguments
        return self.arguments

    def arguments_json(self):
        """The arguments as the string an OpenAI assistant message carries."""
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)

    def to_message(self):
        """The call as an entry of an OpenAI assistant message's `tool_calls`."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments_json()}}


@dataclass(frozen=True)
class ModelResponse:
    content: str | None
    tool_calls: tuple  # of ToolCall


EXECUTED = "executed"
REJECTED = "rejected"
ERROR = "error"


@dataclass(frozen=True)
class CallRecord:
    """One tool call of a round: the gate's verdict and, when it ran, its outcome."""

    call: ToolCall
    status: str  # EXECUTED, REJECTED or ERROR (the tool raised)
    reason: str | None = None
    message: str | None = None  # the tool message of a rejected or failed call
    output: str | None = None  # the tool message of an executed call

    @property
    def tool_message(self):
        """What the model is sent back for this call."""
        return self.output if self.status == EXECUTED else self.message

    def to_json(self):
        return {
            "id": self.call.id,
            "name": self.call.name,
            "arguments": self.call.arguments_for_display(),
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "output": self.output,
        }


@dataclass(frozen=True)
class Round:
    """One model response and what Toolgate did with it."""

    number: int
    tools_offered: tuple | None  # the names of the tools the request offered; None when it offered none
    response: ModelResponse
    calls: tuple = ()  # of CallRecord, in response order
    reminder: str | None = None  # the require_usage reminder appended after this response

    def to_json(self):
        return {
            "number": self.number,
            "tools_offered": list(self.tools_offered) if self.tools_offered is not None else None,
            "assistant": {
                "content": self.response.content,
                "tool_calls": [
                    {"id": call.id, "name": call.name, "arguments": call.arguments_for_display()}
                    for call in self.response.tool_calls
                ],
            },
            "calls": [call.to_json() for call in self.calls],
            "reminder": self.reminder,
        }


@dataclass(frozen=True)
class RunRecord:
    """A finished run: everything `run_agent` returns, before it becomes JSON."""

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

    def calls(self):
        return [call for round_ in self.rounds for call in round_.calls]

    def to_json(self):
        calls = self.calls()
        return {
            "agent_id": self.agent_id,
            "message": self.message,
            "overrides": self.overrides,
            "agent": self.agent,
            "stop_reason": self.stop_reason,
            "answer": self.answer,
            "error": self.error,
            "rounds": [round_.to_json() for round_ in self.rounds],
            "messages": list(self.messages),
            "tool_calls": sum(1 for call in calls if call.status != REJECTED),
            "rejected_calls": sum(1 for call in calls if call.status == REJECTED),
            "rounds_used": self.rounds_used,
            "max_rounds": self.max_rounds,
            "model_requests": len(self.rounds),
            "sources": list(self.sources),
            "layout": list(self.layout),
            "log": list(self.log),
            "duration_ms": round(self.duration_ms, 3),
        }
