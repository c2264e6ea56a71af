"""The agent loop (SPEC §4): rounds, the round cap, reminders, return_directly, and the gate before every round.

A run can be driven step by step: `start_run` returns its state as plain JSON, `advance_run` makes one model
request from such a state and returns the next one, `decide_run` takes a reviewer's decisions on a round that waits
for approval, `stop_run` ends it. Between two calls the state can be stored anywhere; a process that picks it up
goes on exactly where the last one stopped. `run_agent` is "start, then advance until it stops" in one call, the
entry point the CLI, the tests and the benchmarks use. Both return the run in the shape of
`POST /api/agents/<id>/runs`, without the `id` storage assigns (a state's run is `state["run"]`).
"""

import copy
import json
import logging
import time
from collections import Counter
from dataclasses import replace

from . import texts
from .approvals import REVIEWER_REJECTED, PendingRound, read_decisions
from .config import MESSAGE_MAX, NOT_UNICODE, ValidationError, is_valid_unicode, load_agent
from .gate import Verdict, identical_call_key, review_edited_arguments
from .providers import ProviderError, model_for_agent
from .redaction import redact
from .round import (
    ERROR,
    RETURN_DIRECTLY,
    ROUND_CAP,
    STOPPED,
    TOOLS_DISABLED,
    Answered,
    AskAgain,
    AwaitingApproval,
    ToolRound,
    ToolsDisabled,
    answer_round,
    log_entry,
    next_step,
    offers_tools,
    rejection_entries,
    round_cap_answer,
    write_log,
)
from .tools import ToolError, default_registry
from .tools.context import RunContext
from .tools.documents import DOCUMENT_TOOLS, retrieve_into_context, store_for
from .types import AWAITING, EXECUTED, FINISHED, REJECTED, RUNNING, CallRecord, Round, RunRecord
from .types import ERROR as CALL_ERROR

logger = logging.getLogger("toolgate")

DOCUMENT_TOOL_NAMES = frozenset(tool.name for tool in DOCUMENT_TOOLS)
TOOL_ERROR = "tool_error"


def _tool_output_text(output):
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


class _Run:
    """The mutable state of one run, in memory between two steps; `to_state` and `from_state` are its JSON form."""

    def __init__(self, *, config, agent, message, overrides, registry, documents):
        self.config = config
        self.agent = agent
        self.message = message
        self.overrides = overrides
        self.registry = registry
        self.context = RunContext(documents=documents)
        self.messages = []
        self.rounds = []
        self.log = []
        self.rounds_used = 0
        self.model_requests = 0
        self.call_ids = set()  # every tool call id the transcript holds, for repairing repeated ones
        self.secret = None  # the provider's API key, redacted from what the run records
        self.calls_so_far = Counter()  # calls per tool that ran (executed or raised), for max_calls_per_run
        self.identical_so_far = Counter()  # the same, per gate.identical_call_key, for max_identical_calls
        self.artifacts = []  # use_artifacts outputs, as RunRecord.artifacts
        self.executed = set()  # tools that executed successfully, for require_usage
        self.pending = None  # the PendingRound that waits for approval
        self.stop_reason = None
        self.answer = None
        self.error = None
        self.duration_ms = 0.0  # time spent in steps; the waits between them do not count

    @property
    def state(self):
        return self.record().state

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

    def provider_failed(self, error, doing):
        self.error = redact(str(error), self.secret)
        message = f'The agent "{self.config.id}" {doing}: {self.error}'
        write_log([log_entry("error", "provider_error", self.config.id, message)], self.log)
        self.finish(ERROR, None)

    def step(self, model):
        """One model request and what follows from its answer (engine.round): an answer, a reminder, or a tool
        round carried out here — or left waiting for approval."""
        if not self.messages:
            self.start_messages()
        tools = self.tool_schemas() if offers_tools(self.config, self.rounds_used) else None
        round_ = self.ask(model, tools)
        if round_ is None:
            return
        step = next_step(
            round_,
            config=self.config,
            registry=self.registry,
            rounds_used=self.rounds_used,
            used_tools=self.executed,
            calls_so_far=self.calls_so_far,
            identical_so_far=self.identical_so_far,
            artifacts=self.artifact_contents(),
        )
        self.messages.append(step.assistant)
        self.rounds_used = step.rounds_used
        round_ = step.round
        match step:
            case Answered():
                self.finish(step.stop_reason, step.answer)
            case AskAgain():
                self.messages.append({"role": "system", "content": step.reminder})
            case ToolsDisabled():  # each call answered with its rejection, none run
                write_log(step.log, self.log, self.secret)
                round_ = self.answer_tool_calls(round_, step.verdicts)
                self.finish(TOOLS_DISABLED, step.answer)
            case AwaitingApproval():  # nothing runs until a person decides (decide)
                write_log(step.log, self.log, self.secret)
                self.pending = PendingRound(round_, step.verdicts, step.awaiting)
                return
            case ToolRound():
                write_log(step.log, self.log, self.secret)
                round_ = self.carry_out(round_, step.verdicts)
        self.complete_round(round_)

    def ask(self, model, tools):
        """One request: the round it starts, its call ids repaired; None when the provider failed (the run has
        ended with the error)."""
        self.model_requests += 1
        started_at, started = time.time(), time.perf_counter()
        try:
            response = model.complete(self.messages, tools, self.config.parallel_tool_calls)
        except ProviderError as error:
            self.provider_failed(error, "stopped")
            return None
        latency_ms = (time.perf_counter() - started) * 1000
        return answer_round(response, len(self.rounds) + 1, self.call_ids, tools, latency_ms, started_at)

    def complete_round(self, round_):
        self.rounds.append(round_)
        if self.stop_reason is None:
            answer = round_cap_answer(self.config, self.rounds_used)
            if answer is not None:
                self.finish(ROUND_CAP, answer)

    def drive(self, model, decisions=None):
        """Step until the run ends, or waits for a decision that `decisions` (call id -> decision) lacks."""
        while self.stop_reason is None:
            if self.pending is None:
                self.step(model)
            elif decisions and not [call_id for call_id in self.pending.awaiting if call_id not in decisions]:
                self.decide({call_id: decisions[call_id] for call_id in self.pending.awaiting}, now=time.time())
            else:
                return

    def carry_out(self, round_, verdicts, reviews=None):
        round_ = self.answer_tool_calls(round_, verdicts, reviews)
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

    def artifact_contents(self):
        return {artifact["placeholder"]: artifact["content"] for artifact in self.artifacts}

    def decide(self, decisions, *, now, complete=True):
        """Record decisions on the waiting round (call id -> decision, JSON form), taken at `now` (Unix time,
        seconds); once every call has one, the round runs. `complete`: every call still undecided must be decided
        now."""
        pending = self.pending.with_decisions(self.checked_decisions(decisions, now))
        undecided = pending.undecided()
        if undecided and complete:
            raise ValidationError({f"decisions.{undecided[0]}": "needs a decision: approve or reject this call"})
        self.pending = pending
        if undecided:
            return
        verdicts, reviews = [], {}
        for verdict in pending.verdicts:
            decision = pending.decisions.get(verdict.call.id)
            if decision is not None:
                reviews[verdict.call.id] = decision.review()
                verdict = self.decided_verdict(verdict, decision)
            verdicts.append(verdict)
        self.pending = None
        rejected = [verdict for verdict in verdicts if verdict.reason == REVIEWER_REJECTED]
        write_log(rejection_entries(self.config.id, rejected), self.log, self.secret)
        self.complete_round(self.carry_out(pending.round, verdicts, reviews))

    def checked_decisions(self, data, now):
        decisions = read_decisions(data, self.pending, now)
        for call_id, decision in decisions.items():
            if decision.arguments is not None:
                verdict = self.edited_verdict(call_id, decision.arguments)
                if not verdict.allowed:
                    raise ValidationError({f"decisions.{call_id}.arguments": verdict.message})
        return decisions

    def edited_verdict(self, call_id, arguments):
        call = next(verdict.call for verdict in self.pending.verdicts if verdict.call.id == call_id)
        return review_edited_arguments(call, arguments, self.config, self.registry, self.artifact_contents())

    def decided_verdict(self, verdict, decision):
        if not decision.approve:
            message = texts.reviewer_rejected_message(decision.reason)
            return Verdict(
                verdict.call, False, REVIEWER_REJECTED, message, replaced_placeholders=verdict.replaced_placeholders
            )
        if decision.arguments is not None:
            return self.edited_verdict(verdict.call.id, decision.arguments)
        return verdict

    def stop(self):
        """A person stopped the run: a round that waits for approval is answered without running any of it."""
        if self.pending is not None:
            verdicts = [
                Verdict(verdict.call, False, STOPPED, texts.STOPPED_CALL) if verdict.allowed else verdict
                for verdict in self.pending.verdicts
            ]
            round_ = self.answer_tool_calls(self.pending.round, verdicts)
            self.pending = None
            self.rounds.append(round_)
        self.finish(STOPPED, None)

    def answer_tool_calls(self, round_, verdicts, reviews=None):
        """Run the allowed calls in response order; one tool message per call id."""
        records = []
        for verdict in verdicts:
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
            if reviews and verdict.call.id in reviews:
                record = replace(record, review=reviews[verdict.call.id])
            self.messages.append({"role": "tool", "tool_call_id": verdict.call.id, "content": record.tool_message})
            records.append(record)
        return replace(round_, calls=tuple(records))

    def progress_message(self, tool_name):
        return self.config.settings_for(tool_name).progress_message

    def execute(self, verdict, round_number):
        call = verdict.call
        self.calls_so_far[call.name] += 1
        self.identical_so_far[identical_call_key(call.name, verdict.arguments)] += 1
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

    def record(self):
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
            duration_ms=self.duration_ms,
            artifacts=tuple(self.artifacts),
            model_requests=self.model_requests,
            pending_round=self.pending.view(self.progress_message) if self.pending is not None else None,
        )

    def to_state(self):
        """The run and what the loop needs to go on with it, as plain JSON."""
        return {
            "run": self.record().to_json(),
            "loop": {
                "calls_so_far": dict(self.calls_so_far),
                "identical_so_far": [
                    [name, arguments, count] for (name, arguments), count in self.identical_so_far.items()
                ],
                "executed": sorted(self.executed),
                "call_ids": sorted(self.call_ids),
                "in_context": sorted(self.context.in_context),
                "pending": self.pending.to_state() if self.pending is not None else None,
            },
        }

    @classmethod
    def from_state(cls, state, registry, documents):
        state = copy.deepcopy(state)
        run, loop = state["run"], state["loop"]
        config, agent = load_agent(run["agent"], known_tools=registry.parameters_by_name())
        self = cls(
            config=config,
            agent=agent,
            message=run["message"],
            overrides=run["overrides"],
            registry=registry,
            documents=documents,
        )
        self.messages = run["messages"]
        self.rounds = [Round.from_json(round_) for round_ in run["rounds"]]
        self.log = run["log"]
        self.rounds_used = run["rounds_used"]
        self.artifacts = run["artifacts"]
        self.context.sources = run["sources"]
        self.context.layout = run["layout"]
        self.context.in_context = set(loop["in_context"])
        self.calls_so_far = Counter(loop["calls_so_far"])
        self.identical_so_far = Counter(
            {(name, arguments): count for name, arguments, count in loop["identical_so_far"]}
        )
        self.executed = set(loop["executed"])
        self.call_ids = set(loop["call_ids"])
        self.model_requests = run["model_requests"]
        self.pending = PendingRound.from_state(loop["pending"]) if loop["pending"] is not None else None
        self.stop_reason, self.answer, self.error = run["stop_reason"], run["answer"], run["error"]
        self.duration_ms = run["duration_ms"]
        return self


def _begin(agent, message, overrides, registry, documents):
    """A new run of the agent on `message`; ValidationError names a bad field. Its first messages are put in
    place by its first step, once its model is at hand."""
    if not isinstance(message, str) or not message.strip():
        raise ValidationError({"message": "must be a non-empty string"})
    if not is_valid_unicode(message):
        raise ValidationError({"message": NOT_UNICODE})
    if len(message) > MESSAGE_MAX:
        raise ValidationError({"message": f"must be at most {MESSAGE_MAX:,} characters (got {len(message):,})"})
    config, merged = load_agent(agent, overrides, known_tools=registry.parameters_by_name())
    return _Run(
        config=config,
        agent=merged,
        message=message,
        overrides=json.loads(json.dumps(overrides or {})),
        registry=registry,
        documents=documents,
    )


class _Timed:
    """Adds the time spent in the block to the run's duration."""

    def __init__(self, run):
        self.run = run

    def __enter__(self):
        self.started = time.perf_counter()
        return self.run

    def __exit__(self, *exc_info):
        self.run.duration_ms += (time.perf_counter() - self.started) * 1000


def _model_or_stop(run, providers, environ, transport, model):
    """The model to ask, or None when the agent's provider cannot be used (the run has ended with the error)."""
    if model is None:
        try:
            model = model_for_agent(run.config, providers, environ, transport)
        except ProviderError as error:
            run.provider_failed(error, "stopped" if run.rounds else "could not start")
            return None
    run.secret = getattr(model, "secret", None)
    return model


def _checked_state(run, expected, action):
    if run.state != expected:
        raise ValidationError({"state": f"the run is {run.state.replace('_', ' ')}: it cannot {action}"})


def start_run(agent, message, overrides=None, *, registry=None, documents=None):
    """A new run's state, before its first model request. Raises ValidationError (a ValueError) naming the field
    when the merged agent or the message is invalid."""
    run = _begin(agent, message, overrides, registry or default_registry(), documents)
    return run.to_state()


def advance_run(state, *, providers=None, documents=None, registry=None, environ=None, transport=None, model=None):
    """The state after one more model request (and the round it brings) from a running run's `state`.
    The options are run_agent's; `state` is not modified."""
    run = _Run.from_state(state, registry or default_registry(), documents)
    _checked_state(run, RUNNING, "make another request")
    with _Timed(run):
        model = _model_or_stop(run, providers, environ, transport, model)
        if model is not None:
            run.step(model)
    return redact(run.to_state(), run.secret)


def decide_run(state, decisions, *, complete=True, now=None, documents=None, registry=None):
    """The state after a reviewer's `decisions` ({call id: decision}, engine.approvals) on the round that waits for
    approval, taken at `now` (Unix time, seconds; the current time by default): once every call of it is decided,
    the round runs (the next request is advance_run's). `complete`: the decisions must cover every call still
    undecided. Raises ValidationError naming the call or the state."""
    run = _Run.from_state(state, registry or default_registry(), documents)
    _checked_state(run, AWAITING, "take decisions")
    with _Timed(run):
        run.decide(decisions, complete=complete, now=time.time() if now is None else now)
    return run.to_state()


def stop_run(state, *, registry=None):
    """The state of the run ended by a person: stop reason `stopped`, every call already received answered."""
    run = _Run.from_state(state, registry or default_registry(), None)
    if run.state == FINISHED:
        raise ValidationError({"state": "the run has already ended"})
    run.stop()
    return run.to_state()


def run_agent(
    agent,
    message,
    overrides=None,
    *,
    decisions=None,
    providers=None,
    documents=None,
    registry=None,
    environ=None,
    transport=None,
    model=None,
):
    """Drive one user message through the loop and return the run: start, then advance until it stops.

    agent: the agent's JSON form (SPEC §2–3; `script` for scripted agents). overrides: fields and tool settings
    merged over it for this run only. decisions: {call id: decision} for calls that require approval (a run that
    needs one it lacks is returned waiting, `state` "awaiting_approval"). providers: provider connections by id.
    documents: the DocumentStore the documents tools read (default: the shipped sample corpus). environ,
    transport: where API keys come from, and the httpx2 transport underneath a real provider's client. model: a
    ChatModel to use instead of the agent's provider (benchmarks and tests). Raises ValidationError (a ValueError)
    naming the field when the merged agent is invalid.
    """
    registry = registry or default_registry()
    started = time.perf_counter()
    run = _begin(agent, message, overrides, registry, documents)
    model = _model_or_stop(run, providers, environ, transport, model)
    if model is not None:
        run.drive(model, decisions)
    run.duration_ms = (time.perf_counter() - started) * 1000
    return redact(run.record().to_json(), run.secret)
