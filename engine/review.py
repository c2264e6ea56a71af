"""The gate for clients that drive their own loop: one response's tool calls in, verdicts and tool messages out;
and the tools to send the model, exactly as a run would send them."""

from collections import Counter
from dataclasses import replace

from .approvals import PendingRound, decided_verdicts
from .config import MAX_CALLS_PER_RESPONSE, ValidationError, json_value_problem, load_agent
from .gate import identical_call_key
from .proxy.client_tools import gate_api_view
from .round import AWAITING_CLIENT, AwaitingApproval, ToolRound, rejection_entries, review_round, write_log
from .tools import default_registry
from .types import ALLOWED, AWAITING_APPROVAL, FINISHED, REJECTED, CallRecord, ModelResponse, Round, RunRecord, ToolCall

GATE_KEY = "gate:"  # a held gate API request's run is found by this prefix and the request's id
GATE_REQUEST = "Gate API request {request_id}"  # such a run's message


def _call_fields(data, where):
    """(id, name, arguments) of a tool call in OpenAI's chat format or the script's short form."""
    if not isinstance(data, dict):
        raise ValidationError({where: "must be an object"})
    function = data.get("function")
    if isinstance(function, dict):
        name, arguments = function.get("name"), function.get("arguments", "")
    else:
        name, arguments = data.get("name"), data.get("arguments", {})
    if not isinstance(name, str) or not name:
        raise ValidationError({where: 'needs a function "name"'})
    return data.get("id"), name, arguments


def parse_tool_call(data, index):
    """A ToolCall from OpenAI's chat format or the script's short form; ValidationError naming the entry."""
    where = f"tool_calls[{index}]"
    call_id, name, arguments = _call_fields(data, where)
    if not isinstance(call_id, str) or not call_id:
        raise ValidationError({where: 'needs an "id" string'})
    return ToolCall(id=call_id, name=name, arguments=arguments)


def tools_for_agent(agent, overrides=None, *, registry=None):
    """The `tools` the agent's next model request sends (OpenAI's format), `overrides` applied: none when the
    agent has no tools or `max_rounds` is 0. Raises ValidationError naming the bad field."""
    registry = registry or default_registry()
    config, _ = load_agent(agent, overrides, known_tools=registry.parameters_by_name())
    return registry.schemas_for_model(config.tools) if config.max_rounds > 0 else []


def review_tool_calls(agent, tool_calls, overrides=None, *, registry=None, calls_so_far=None, artifacts=None):
    """The gate's verdict on one response: which ids may run and with which arguments (artifact placeholders
    replaced, forced values put in), why the others may not, the tool messages to append for the rejected ones,
    and the log entries of its rejections, exactly those a run writes for the same response (engine.round's
    review_round, which every entry point shares). Nothing executes. The agent's client tools are reviewed like its
    tools, except that their schema is unknown here: their arguments need only be a JSON object.

    `calls_so_far`: what already ran in the client's run, either {tool name: count} (enough for
    max_calls_per_run) or the list of calls that ran, each with the arguments it ran with (what this answer's
    `arguments` said), which max_identical_calls needs. `artifacts`: {placeholder: content} of the artifacts the
    client kept. Calls that require approval come back `awaiting_approval`, none of the response to run yet, with
    `pending` (engine.approvals.PendingRound's JSON) for held_gate_run. Raises ValidationError naming the bad
    field."""
    if not isinstance(tool_calls, list):
        raise ValidationError({"tool_calls": "must be a list"})
    if len(tool_calls) > MAX_CALLS_PER_RESPONSE:
        message = f"must hold at most {MAX_CALLS_PER_RESPONSE} calls, like one response (got {len(tool_calls):,})"
        raise ValidationError({"tool_calls": message})
    problems = {
        f"tool_calls[{index}]{problem[0]}": problem[1]
        for index, data in enumerate(tool_calls)
        if (problem := json_value_problem(data))
    }
    for name, value in (("calls_so_far", calls_so_far), ("artifacts", artifacts)):
        if value is not None and (problem := json_value_problem(value)):
            problems[f"{name}{problem[0]}"] = problem[1]
    if problems:
        raise ValidationError(problems)
    registry = registry or default_registry()
    config, _ = load_agent(agent, overrides, known_tools=registry.parameters_by_name())
    calls = [parse_tool_call(data, index) for index, data in enumerate(tool_calls)]
    ids = [call.id for call in calls]
    if len(set(ids)) != len(ids):
        raise ValidationError({"tool_calls": "every call needs its own id"})
    counts, identical = _checked_calls_so_far(calls_so_far)
    gate_config, gate_registry = gate_api_view(config, registry)
    step = review_round(
        Round(number=1, tools_offered=tuple(gate_config.tools), response=ModelResponse(None, tuple(calls))),
        config=gate_config,
        registry=gate_registry,
        rounds_used=0,
        calls_so_far=counts,
        identical_so_far=identical,
        artifacts=_checked_artifacts(artifacts),
    )
    log = []
    write_log(step.log, log)
    match step:
        case ToolRound():
            return _gate_answer(step.verdicts, step.restricted_tools, log)
        case AwaitingApproval():  # nothing of the response runs until a person decides (held_gate_run)
            pending = PendingRound(step.round, step.verdicts, step.awaiting)
            return {**_gate_answer(step.verdicts, (), log, step.awaiting), "pending": pending.to_state()}


def _gate_answer(verdicts, restricted_tools, log, awaiting=()):
    """The gate API's answer: while calls await approval, none is to run yet."""
    return {
        "execute": [] if awaiting else [verdict.call.id for verdict in verdicts if verdict.allowed],
        "calls": [
            {
                "id": verdict.call.id,
                "name": verdict.call.name,
                "status": AWAITING_APPROVAL
                if verdict.call.id in awaiting
                else "allowed"
                if verdict.allowed
                else "rejected",
                "reason": verdict.reason,
                "message": verdict.message,
                "arguments": verdict.arguments,
                "forced_arguments": verdict.forced_arguments or {},
                "replaced_placeholders": list(verdict.replaced_placeholders),
            }
            for verdict in verdicts
        ],
        "tool_messages": [
            {"role": "tool", "tool_call_id": verdict.call.id, "content": verdict.message}
            for verdict in verdicts
            if not verdict.allowed
        ],
        "restricted_tools": list(restricted_tools),
        **({"awaiting": list(awaiting)} if awaiting else {}),
        "log": log,
    }


def held_gate_run(agent, overrides, answer, request_id, *, registry=None, now):
    """(the run, its loop state) that keeps a gate API request whose calls await approval until a person decides
    (engine.proxy.approvals.decide_held records the decisions): the agent as merged with `overrides`, the round
    that waits, the deadline, the schemas its edited arguments are checked against."""
    registry = registry or default_registry()
    config, merged = load_agent(agent, overrides, known_tools=registry.parameters_by_name())
    pending_state = answer["pending"]
    pending = PendingRound.from_state(pending_state)
    record = RunRecord(
        agent_id=config.id,
        message=GATE_REQUEST.format(request_id=request_id),
        overrides=overrides or {},
        agent=merged,
        stop_reason=None,
        answer=None,
        error=None,
        rounds=(),
        messages=(),
        rounds_used=0,
        max_rounds=config.max_rounds,
        sources=(),
        layout=(),
        log=tuple(answer["log"]),
        duration_ms=0.0,
        model_requests=0,
        pending_round=pending.view(lambda _name: ""),
    )
    _gate_config, gate_registry = gate_api_view(config, registry)
    schemas = {call.name: gate_registry.get(call.name).parameters for call in pending.round.response.tool_calls}
    gate_answer = {key: value for key, value in answer.items() if key != "pending"}
    run = {**record.to_json(), "conversation": {"key": GATE_KEY + request_id}, "gate_answer": gate_answer}
    held = {"pending": pending_state, "deadline": now + config.approval_timeout_seconds, "schemas": schemas}
    return run, {"proxy": held}


def decided_gate_run(run, loop_state, *, registry=None):
    """(the run of a held gate API request, decided — or past its deadline —, the log entries of its rejections):
    its answer (`gate_answer`) says which calls run now, with which arguments, and the tool messages of the others."""
    registry = registry or default_registry()
    config, _merged = load_agent(run["agent"], known_tools=registry.parameters_by_name())
    gate_config, gate_registry = gate_api_view(config, registry)
    held = loop_state["proxy"]
    pending = PendingRound.from_state(held["pending"])
    timeout = config.approval_timeout_seconds
    verdicts, reviews = decided_verdicts(pending, gate_config, gate_registry, timeout, held["deadline"])
    log = []
    write_log(rejection_entries(config.id, [verdict for verdict in verdicts if verdict.call.id in reviews]), log)
    records = tuple(
        CallRecord(
            verdict.call, ALLOWED, forced_arguments=verdict.forced_arguments, review=reviews.get(verdict.call.id)
        )
        if verdict.allowed
        else CallRecord(verdict.call, REJECTED, verdict.reason, verdict.message, review=reviews.get(verdict.call.id))
        for verdict in verdicts
    )
    round_ = replace(pending.round, calls=records).to_json()
    answer = {**_gate_answer(verdicts, (), log), "request_id": run["gate_answer"]["request_id"], "run_id": run["id"]}
    decided = {
        **run,
        "state": FINISHED,
        "stop_reason": AWAITING_CLIENT,
        "pending_round": None,
        "rounds": [round_],
        "log": [*run["log"], *log],
        "tool_calls": sum(1 for record in records if record.status != REJECTED),
        "rejected_calls": sum(1 for record in records if record.status == REJECTED),
        "gate_answer": answer,
    }
    return {key: value for key, value in decided.items() if key not in ("id", "created_at")}, log


CALLS_SO_FAR_RULE = (
    "must be an object mapping tool names to how often they ran in this run, or the list of the calls that ran"
)


def _checked_calls_so_far(value):
    """(calls per tool name, calls per gate.identical_call_key) from either form of `calls_so_far`."""
    if value is None:
        return None, None
    if isinstance(value, list):
        counts, identical = Counter(), Counter()
        for index, data in enumerate(value):
            where = f"calls_so_far[{index}]"
            _id, name, arguments = _call_fields(data, where)
            parsed, error = ToolCall(id="", name=name, arguments=arguments).parsed_arguments()
            if error:
                raise ValidationError({where: error})
            counts[name] += 1
            identical[identical_call_key(name, parsed)] += 1
        return counts, identical
    if not isinstance(value, dict):
        raise ValidationError({"calls_so_far": CALLS_SO_FAR_RULE})
    for name, count in value.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValidationError({"calls_so_far": f"the count for {name!r} must be a whole number of at least 0"})
    return value, None


def _checked_artifacts(value):
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(content, str) for content in value.values()):
        raise ValidationError({"artifacts": "must be an object mapping placeholders to their content (strings)"})
    return value
