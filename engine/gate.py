"""The gate: reviews every tool call of one model response before any of them runs (SPEC §4).

Pure: it reads the calls, the agent's settings, the registry and how often each tool already ran in this run,
and returns one verdict per call, in response order. Executing and logging are the loop's business.
"""

from collections import Counter
from dataclasses import dataclass

from jsonschema import Draft202012Validator

from . import texts
from .types import ToolCall

UNKNOWN_TOOL = "unknown_tool"
INVALID_ARGUMENTS = "invalid_arguments"
CALL_LIMIT = "call_limit"
RESTRICTED_REPEAT = "restricted_repeat"
COLLATERAL = "collateral"
TOOLS_DISABLED = "tools_disabled"


@dataclass(frozen=True)
class Verdict:
    call: ToolCall
    allowed: bool
    reason: str | None = None
    message: str | None = None  # the tool message of a rejected call
    arguments: dict | None = None  # the validated arguments of an allowed call


@dataclass(frozen=True)
class Review:
    verdicts: tuple
    restricted_tools: tuple  # names of restricted tools called more than once; empty when none

    @property
    def rejected_everything(self):
        return bool(self.restricted_tools)


_validators = {}


def _schema_errors(tool, arguments):
    validator = _validators.get(tool.name)
    if validator is None or validator.schema is not tool.parameters:
        validator = _validators[tool.name] = Draft202012Validator(tool.parameters)
    errors = sorted(validator.iter_errors(arguments), key=lambda error: list(error.absolute_path))
    details = []
    for error in errors:
        where = "/".join(str(part) for part in error.absolute_path)
        details.append(f"{where}: {error.message}" if where else error.message)
    return "; ".join(details)


def _review_one(call, config, registry, calls_so_far):
    tool = registry.get(call.name) if call.name in config.tools else None
    if tool is None:
        return Verdict(call, False, UNKNOWN_TOOL, texts.UNKNOWN_TOOL)
    arguments, error = call.parsed_arguments()
    if error is None:
        error = _schema_errors(tool, arguments) or None
    if error is not None:
        return Verdict(call, False, INVALID_ARGUMENTS, texts.INVALID_ARGUMENTS.format(name=call.name, detail=error))
    limit = config.settings_for(call.name).max_calls_per_run
    if limit and calls_so_far[call.name] >= limit:
        return Verdict(call, False, CALL_LIMIT, texts.CALL_LIMIT.format(name=call.name, limit=limit))
    return Verdict(call, True, arguments=arguments)


def review_calls(calls, config, registry, calls_so_far=None):
    """Decide every call of one response. `calls_so_far` counts, per tool name, the calls that already ran in
    this run (for max_calls_per_run); it is not modified."""
    counted = Counter(calls_so_far or {})  # plus the calls allowed earlier in this response
    verdicts = []
    for call in calls:
        verdict = _review_one(call, config, registry, counted)
        if verdict.allowed:
            counted[call.name] += 1
        verdicts.append(verdict)

    counts = Counter(call.name for call in calls)
    restricted = tuple(
        name for name in counts if counts[name] > 1 and config.settings_for(name).restrict_multiple_calls
    )
    if restricted:
        collateral = texts.collateral_message(restricted)
        verdicts = [
            Verdict(
                call,
                False,
                RESTRICTED_REPEAT,
                texts.restricted_repeat_message(call.name, config.settings_for(call.name).multiple_call_error_message),
            )
            if call.name in restricted
            else Verdict(call, False, COLLATERAL, collateral)
            for call in calls
        ]
    return Review(tuple(verdicts), restricted)


def reject_without_tools(calls):
    """Tool calls on a request that offered no tools: each is rejected, none runs."""
    return Review(tuple(Verdict(call, False, TOOLS_DISABLED, texts.TOOLS_DISABLED) for call in calls), ())


def restriction_log_message(agent_id, review):
    return texts.RESTRICTION_LOG_ENTRY.format(
        agent_id=agent_id, names=texts.quoted_names(review.restricted_tools), count=len(review.verdicts)
    )
