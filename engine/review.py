"""The gate for clients that drive their own loop: one response's tool calls in, verdicts and tool messages out."""

from .config import ValidationError, load_agent
from .gate import restriction_log_message, review_calls
from .tools import default_registry
from .types import ToolCall


def parse_tool_call(data, index):
    """A ToolCall from OpenAI's chat format or the script's short form; ValidationError naming the entry."""
    where = f"tool_calls[{index}]"
    if not isinstance(data, dict):
        raise ValidationError({where: "must be an object"})
    function = data.get("function")
    if isinstance(function, dict):
        name, arguments = function.get("name"), function.get("arguments", "")
    else:
        name, arguments = data.get("name"), data.get("arguments", {})
    if not isinstance(data.get("id"), str) or not data["id"]:
        raise ValidationError({where: 'needs an "id" string'})
    if not isinstance(name, str) or not name:
        raise ValidationError({where: 'needs a function "name"'})
    return ToolCall(id=data["id"], name=name, arguments=arguments)


def review_tool_calls(agent, tool_calls, overrides=None, *, registry=None, calls_so_far=None):
    """The gate's verdict on one response: which ids may run, why the others may not, and the tool messages to
    append for the rejected ones, and the log entry of a policy violation. Nothing executes. `calls_so_far` maps
    tool names to how often they already ran in the client's run (for max_calls_per_run). Raises
    ValidationError naming the bad field."""
    if not isinstance(tool_calls, list):
        raise ValidationError({"tool_calls": "must be a list"})
    registry = registry or default_registry()
    config, _ = load_agent(agent, overrides, known_tools=set(registry.names()))
    calls = [parse_tool_call(data, index) for index, data in enumerate(tool_calls)]
    ids = [call.id for call in calls]
    if len(set(ids)) != len(ids):
        raise ValidationError({"tool_calls": "every call needs its own id"})
    review = review_calls(calls, config, registry, _checked_calls_so_far(calls_so_far))
    violation = restriction_log_message(config.id, review) if review.restricted_tools else None
    return {
        "execute": [verdict.call.id for verdict in review.verdicts if verdict.allowed],
        "calls": [
            {
                "id": verdict.call.id,
                "name": verdict.call.name,
                "status": "allowed" if verdict.allowed else "rejected",
                "reason": verdict.reason,
                "message": verdict.message,
            }
            for verdict in review.verdicts
        ],
        "tool_messages": [
            {"role": "tool", "tool_call_id": verdict.call.id, "content": verdict.message}
            for verdict in review.verdicts
            if not verdict.allowed
        ],
        "restricted_tools": list(review.restricted_tools),
        "log": [{"level": "error", "kind": "policy_violation", "agent_id": config.id, "message": violation}]
        if violation
        else [],
    }


def _checked_calls_so_far(value):
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValidationError(
            {"calls_so_far": "must be an object mapping tool names to how often they ran in this run"}
        )
    for name, count in value.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValidationError({"calls_so_far": f"the count for {name!r} must be a whole number of at least 0"})
    return value
