"""The agent loop (SPEC §4): rounds, the round cap, reminders, return_directly, and the gate before every round.

`run_agent` is the one entry point the web layer, the CLI, the tests and the benchmarks use. It returns the run
as plain JSON-serialisable data in the shape of `POST /api/agents/<id>/runs`, without the `id` storage assigns.
"""

import json
import logging
import time
from collections import Counter
from dataclasses import replace

from . import texts
from .call_ids import repair_call_ids
from .config import MESSAGE_MAX, NOT_UNICODE, ValidationError, is_valid_unicode, load_agent
from .gate import TOOLS_DISABLED, call_key, reject_without_tools, restriction_log_message, review_calls
from .providers import ProviderError, model_for_agent
from .redaction import redact
from .tools import ToolError, default_registry
from .tools.context import RunContext
from .tools.documents import DOCUMENT_TOOLS, retrieve_into_context, store_for
from .types import ERROR as CALL_ERROR
from .types import EXECUTED, REJECTED, CallRecord, Round, RunRecord

logger = logging.getLogger("toolgate")

DOCUMENT_TOOL_NAMES = frozenset(tool.name for tool in DOCUMENT_TOOLS)

ANSWERED = "answered"
ROUND_CAP = "round_cap"
RETURN_DIRECTLY = "return_directly"
ERROR = "error"
TRUNCATED = "truncated"
CONTENT_FILTER = "content_filter"
TOOL_ERROR = "tool_error"
STOP_REASONS = (ANSWERED, ROUND_CAP, RETURN_DIRECTLY, TOOLS_DISABLED, ERROR, TRUNCATED, CONTENT_FILTER)
# An answer the provider cut off ends the run, its partial text the answer (SPEC §4).
CUT_OFF_STOP_REASONS = {"length": TRUNCATED, "content_filter": CONTENT_FILTER}


def _tool_output_text(output):
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


class _Run:
    """The mutable state of one run; `run_agent` drives it and returns its `record()`."""

    def __init__(self, config, agent, message, overrides, registry, model, documents, on_event):
        self.config = config
        self.agent = agent
        self.message = message
        self.overrides = overrides
        self.registry = registry
        self.model = model
        self.on_event = on_event
        self.context = RunContext(documents=documents)
        self.messages = []
        self.rounds = []
        self.log = []
        self.rounds_used = 0
        self.model_requests = 0
        self.call_ids = set()  # every tool call id the transcript holds, for repairing repeated ones
        self.secret = None  # the provider's API key, redacted from what the run records
        self.calls_so_far = Counter()  # calls per tool that ran (executed or raised), for max_calls_per_run
        self.identical_so_far = Counter()  # the same, per gate.call_key, for max_identical_calls
        self.artifacts = []  # use_artifacts outputs, as RunRecord.artifacts
        self.executed = set()  # tools that executed successfully, for require_usage
        self.stop_reason = None
        self.answer = None
        self.error = None

    def emit(self, event):
        if self.on_event is not None:
            self.on_event(redact(event, self.secret))

    def write_log(self, level, kind, message):
        message = redact(message, self.secret)
        entry = {"level": level, "kind": kind, "agent_id": self.config.id, "message": message}
        self.log.append(entry)
        logger.log(logging.ERROR if level == "error" else logging.WARNING, message)
        self.emit({"type": "log", **entry})

    def tool_schemas(self):
        return self.registry.schemas_for_model(self.config.tools)

    def start_messages(self):
        if self.config.system_prompt:
            self.messages.append({"role": "system", "content": self.config.system_prompt})
        if DOCUMENT_TOOL_NAMES & set(self.config.tools):
            retrieved = retrieve_into_context(store_for(self.context), self.message, self.context)
            if retrieved:
                self.messages.append({"role": "system", "content": retrieved})
        self.messages.append({"role": "user", "content": self.message})

    def finish(self, stop_reason, answer):
        self.stop_reason = stop_reason
        self.answer = answer

    def cap_message(self):
        return self.config.max_rounds_message or texts.MAX_ROUNDS

    def drive(self):
        self.start_messages()
        cap = self.config.max_rounds
        while self.stop_reason is None:
            if cap and self.rounds_used >= cap and self.config.on_round_cap == "message":
                self.finish(ROUND_CAP, self.cap_message())
                break
            offer = bool(self.config.tools) and self.rounds_used < cap
            tools = self.tool_schemas() if offer else None
            round_ = self.ask(tools)
            if round_ is None:
                break
            response = round_.response
            if not response.tool_calls and response.finish_reason in CUT_OFF_STOP_REASONS:
                self.finish(CUT_OFF_STOP_REASONS[response.finish_reason], response.content or "")
            elif not response.tool_calls:
                round_ = self.after_answer(round_, response, offered=offer)
            elif not offer:
                round_ = self.answer_tool_calls(round_, reject_without_tools(response.tool_calls))
                self.finish(TOOLS_DISABLED, response.content or self.cap_message())
            else:
                self.rounds_used += 1
                round_ = self.tool_round(round_, response)
            self.rounds.append(round_)
            if self.on_event is not None:  # a round's JSON is not free: build it only for a listener
                self.emit({"type": "round", "round": round_.to_json()})

    def ask(self, tools):
        """One request: the round it starts, its call ids repaired and its answer in the transcript; None when
        the provider failed (the run has ended with the error)."""
        self.model_requests += 1
        started = time.perf_counter()
        try:
            response = self.model.complete(self.messages, tools, self.config.parallel_tool_calls)
        except ProviderError as error:
            self.error = redact(str(error), self.secret)
            self.write_log("error", "provider_error", f'The agent "{self.config.id}" stopped: {self.error}')
            self.finish(ERROR, None)
            return None
        latency_ms = (time.perf_counter() - started) * 1000
        number = len(self.rounds) + 1
        if response.tool_calls:
            response = replace(response, tool_calls=repair_call_ids(response.tool_calls, number, self.call_ids))
        self.append_assistant_message(response)
        offered = tuple(tool["function"]["name"] for tool in tools) if tools else None
        return Round(
            number=number,
            tools_offered=offered,
            response=response,
            tools_sent=tuple(tools) if tools else None,
            latency_ms=latency_ms,
        )

    def append_assistant_message(self, response):
        # Never null: OpenAI refuses it without tool calls, and some servers (llama.cpp's) with them.
        assistant = {"role": "assistant", "content": response.content or ""}
        if response.tool_calls:
            assistant["tool_calls"] = [call.to_message() for call in response.tool_calls]
        self.messages.append(assistant)

    def after_answer(self, round_, response, offered):
        if offered:
            missing = [
                name
                for name, settings in self.config.tools.items()
                if settings.require_usage and name not in self.executed
            ]
            if missing:
                reminder = texts.REQUIRE_USAGE_REMINDER.format(names=", ".join(missing))
                self.messages.append({"role": "system", "content": reminder})
                self.rounds_used += 1
                return replace(round_, reminder=reminder)
            self.finish(ANSWERED, response.content or "")
        else:
            withheld_by_cap = self.config.max_rounds > 0 and bool(self.config.tools)
            self.finish(ROUND_CAP if withheld_by_cap else ANSWERED, response.content or "")
        return round_

    def tool_round(self, round_, response):
        review = review_calls(
            response.tool_calls,
            self.config,
            self.registry,
            self.calls_so_far,
            identical_so_far=self.identical_so_far,
            artifacts={artifact["placeholder"]: artifact["content"] for artifact in self.artifacts},
        )
        if review.restricted_tools:
            self.write_log("error", "policy_violation", restriction_log_message(self.config.id, review))
        round_ = self.answer_tool_calls(round_, review)
        direct = next(
            (
                call
                for call in round_.calls
                if call.status == EXECUTED and self.config.settings_for(call.call.name).return_directly
            ),
            None,
        )
        if direct is not None:
            self.finish(RETURN_DIRECTLY, direct.output)
        return round_

    def answer_tool_calls(self, round_, review):
        """Run the allowed calls in response order; one tool message per call id."""
        records = []
        for verdict in review.verdicts:
            if verdict.allowed:
                record = self.execute(verdict, round_.number)
            else:
                record = CallRecord(
                    verdict.call,
                    REJECTED,
                    verdict.reason,
                    verdict.message,
                    replaced_placeholders=verdict.replaced_placeholders,
                    progress_message=self.progress_message(verdict.call.name),
                )
            self.messages.append({"role": "tool", "tool_call_id": verdict.call.id, "content": record.tool_message})
            records.append(record)
        return replace(round_, calls=tuple(records))

    def progress_message(self, tool_name):
        return self.config.settings_for(tool_name).progress_message

    def execute(self, verdict, round_number):
        call = verdict.call
        self.calls_so_far[call.name] += 1
        self.identical_so_far[call_key(call.name, verdict.arguments)] += 1
        tool = self.registry.get(call.name)
        noted = {
            "forced_arguments": verdict.forced_arguments,
            "replaced_placeholders": verdict.replaced_placeholders,
            "progress_message": self.progress_message(call.name),
        }
        try:
            output = _tool_output_text(tool.handler(verdict.arguments, self.context))
        except ToolError as error:
            return CallRecord(call, CALL_ERROR, TOOL_ERROR, f"Error: {error}", **noted)
        except Exception as error:  # a broken tool is the model's problem to hear about, not a crash
            logger.exception("Tool %s raised", call.name)
            return CallRecord(call, CALL_ERROR, TOOL_ERROR, f"Error: {call.name} failed: {error}", **noted)
        self.executed.add(call.name)
        artifact = (
            self.keep_artifact(call, output, round_number)
            if self.config.settings_for(call.name).use_artifacts
            else None
        )
        return CallRecord(call, EXECUTED, output=output, artifact=artifact, **noted)

    def keep_artifact(self, call, output, round_number):
        """Keep the output as the tool's next artifact; the placeholder is what the model is sent."""
        number = 1 + sum(1 for artifact in self.artifacts if artifact["tool"] == call.name)
        placeholder = texts.artifact_placeholder(call.name, number)
        self.artifacts.append(
            {
                "placeholder": placeholder,
                "tool": call.name,
                "number": number,
                "call_id": call.id,
                "round": round_number,
                "content": output,
            }
        )
        return placeholder

    def record(self, duration_ms):
        return RunRecord(
            agent_id=self.config.id,
            message=self.message,
            overrides=self.overrides,
            agent=self.agent,
            stop_reason=self.stop_reason,
            answer=self.answer,
            error=self.error,
            rounds=tuple(self.rounds),
            messages=tuple(self.messages),
            rounds_used=self.rounds_used,
            max_rounds=self.config.max_rounds,
            sources=tuple(self.context.sources),
            layout=tuple(self.context.layout),
            log=tuple(self.log),
            duration_ms=duration_ms,
            artifacts=tuple(self.artifacts),
            model_requests=self.model_requests,
        )


def run_agent(
    agent,
    message,
    overrides=None,
    *,
    providers=None,
    documents=None,
    on_event=None,
    registry=None,
    environ=None,
    transport=None,
    model=None,
):
    """Drive one user message through the loop and return the run.

    agent: the agent's JSON form (SPEC §2–3; `script` for scripted agents). overrides: fields and tool settings
    merged over it for this run only. providers: provider connections by id. documents: the DocumentStore the
    documents tools read (default: the shipped sample corpus). on_event: called with each round and log entry.
    environ, transport: where API keys come from, and the httpx2 transport underneath a real provider's client.
    model: a ChatModel to use instead of the agent's provider (benchmarks and tests).
    Raises ValidationError (a ValueError) naming the field when the merged agent is invalid.
    """
    if not isinstance(message, str) or not message.strip():
        raise ValidationError({"message": "must be a non-empty string"})
    if not is_valid_unicode(message):
        raise ValidationError({"message": NOT_UNICODE})
    if len(message) > MESSAGE_MAX:
        raise ValidationError({"message": f"must be at most {MESSAGE_MAX:,} characters (got {len(message):,})"})
    registry = registry or default_registry()
    config, merged = load_agent(agent, overrides, known_tools=registry.parameters_by_name())
    started = time.perf_counter()
    run = _Run(config, merged, message, json.loads(json.dumps(overrides or {})), registry, None, documents, on_event)
    try:
        run.model = model or model_for_agent(config, providers, environ, transport)
    except ProviderError as error:
        run.error = str(error)
        run.write_log("error", "provider_error", f'The agent "{config.id}" could not start: {error}')
        run.finish(ERROR, None)
    else:
        run.secret = getattr(run.model, "secret", None)
        run.drive()
    return redact(run.record((time.perf_counter() - started) * 1000).to_json(), run.secret)
