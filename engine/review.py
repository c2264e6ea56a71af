"""The gate for clients that drive their own loop: one response's tool calls in, verdicts and tool messages out;
and the tools to send the model, exactly as a run would send them."""

from collections import Counter

from .config import MAX_CALLS_PER_RESPONSE, ValidationError, json_value_problem, load_agent
from .gate import identical_call_key
from .proxy.client_tools import gate_api_view
from .round import AwaitingApproval, ToolRound, review_round, write_log
from .tools import default_registry
from .types import ModelResponse, Round, ToolCall


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
    client kept. Raises ValidationError naming the bad field."""
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
    match step:
        case ToolRound():
            restricted_tools = step.restricted_tools
        case AwaitingApproval():  # the client's own loop asks its person: the gate allowed these calls
            restricted_tools = ()
    log = []
    write_log(step.log, log)
    return {
        "execute": [verdict.call.id for verdict in step.verdicts if verdict.allowed],
        "calls": [
            {
                "id": verdict.call.id,
                "name": verdict.call.name,
                "status": "allowed" if verdict.allowed else "rejected",
                "reason": verdict.reason,
                "message": verdict.message,
                "arguments": verdict.arguments,
                "forced_arguments": verdict.forced_arguments or {},
                "replaced_placeholders": list(verdict.replaced_placeholders),
            }
            for verdict in step.verdicts
        ],
        "tool_messages": [
            {"role": "tool", "tool_call_id": verdict.call.id, "content": verdict.message}
            for verdict in step.verdicts
            if not verdict.allowed
        ],
        "restricted_tools": list(restricted_tools),
        "log": log,
    }


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
