"""The gate: reviews every tool call of one model response before any of them runs (SPEC §4).

Pure: it reads the calls, the agent's settings, the registry, what already ran in this run (how often each
tool, how often each identical call) and the run's artifacts, and returns one verdict per call, in response
order. Executing, keeping artifacts and logging are the loop's business.
"""

import json
from collections import Counter
from dataclasses import dataclass

from jsonschema import Draft202012Validator
from jsonschema_specifications import REGISTRY as SPECIFICATIONS
from referencing.exceptions import Unresolvable

from . import texts
from .arguments import force_values, value_not_allowed
from .artifacts import resolve_artifacts
from .types import ToolCall

UNKNOWN_TOOL = "unknown_tool"
INVALID_ARGUMENTS = "invalid_arguments"
ARGUMENT_NOT_ALLOWED = "argument_not_allowed"
REPEATED_CALL = "repeated_call"
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
    arguments: dict | None = None  # what an allowed call executes with: placeholders replaced, values forced
    forced_arguments: dict | None = None  # {argument: forced value} of an allowed call
    replaced_placeholders: tuple = ()  # the artifact placeholders replaced in its arguments


@dataclass(frozen=True)
class Review:
    verdicts: tuple
    restricted_tools: tuple  # names of restricted tools called more than once; empty when none


_validators = {}
VALIDATORS_KEPT = 512  # the proxy checks against the schemas its clients send: their names are not bounded


def _schema_errors(tool, arguments):
    """Checked against the tool's whole schema: hidden arguments included, since their forced values are in place
    by then (and fit it: checked when the agent was saved)."""
    cached = _validators.get(tool.name)
    if cached is None or cached[0] is not tool.parameters:
        if len(_validators) >= VALIDATORS_KEPT:
            _validators.clear()
        # SPECIFICATIONS and nothing else: a `$ref` to an address is never fetched.
        validator = Draft202012Validator(tool.parameters, registry=SPECIFICATIONS)
        cached = _validators[tool.name] = (tool.parameters, validator)
    try:
        errors = sorted(cached[1].iter_errors(arguments), key=lambda error: list(error.absolute_path))
    except Unresolvable as error:
        return f"the tool's schema refers to {error.ref!r}, which is not part of it"
    details = []
    for error in errors:
        where = "/".join(str(part) for part in error.absolute_path)
        details.append(f"{where}: {error.message}" if where else error.message)
    return "; ".join(details)


def identical_call_key(name, arguments):
    """What makes two calls identical for max_identical_calls: the tool and its arguments as parsed JSON."""
    return name, json.dumps(arguments, sort_keys=True, ensure_ascii=False)


def _review_one(call, config, registry, calls_so_far, identical_so_far, artifacts):
    """Step 1 for one call, in SPEC §4's order. The arguments are read as JSON first, because placeholders are
    looked for in their strings; a call whose arguments are not a JSON object is invalid either way."""
    tool = registry.get(call.name) if call.name in config.tools else None
    if tool is None:
        return Verdict(call, False, UNKNOWN_TOOL, texts.UNKNOWN_TOOL)
    settings = config.settings_for(call.name)
    verdict = _check_arguments(call, tool, settings, *call.parsed_arguments(), artifacts)
    if not verdict.allowed:
        return verdict
    identical = identical_so_far[identical_call_key(call.name, verdict.arguments)]
    if settings.max_identical_calls and identical >= settings.max_identical_calls:
        message = texts.REPEATED_CALL.format(tool=call.name, count=identical)
        return Verdict(call, False, REPEATED_CALL, message, replaced_placeholders=verdict.replaced_placeholders)
    limit = settings.max_calls_per_run
    if limit and calls_so_far[call.name] >= limit:
        message = texts.CALL_LIMIT.format(name=call.name, limit=limit)
        return Verdict(call, False, CALL_LIMIT, message, replaced_placeholders=verdict.replaced_placeholders)
    return verdict


def _check_arguments(call, tool, settings, arguments, error, artifacts):
    """Placeholders, forced values (in place of whatever the model sent, hidden arguments included), the tool's
    schema and the allow-lists, for arguments already read as JSON (or the `error` that says why they are not a
    JSON object)."""
    replaced, forced = (), {}
    if error is None:
        arguments, replaced, error = resolve_artifacts(arguments, artifacts)
    if error is None:
        arguments, forced = force_values(arguments, settings.argument_rules)
        error = _schema_errors(tool, arguments) or None
    if error is not None:
        message = texts.INVALID_ARGUMENTS.format(name=call.name, detail=error)
        return Verdict(call, False, INVALID_ARGUMENTS, message, replaced_placeholders=replaced)
    message = value_not_allowed(call.name, arguments, settings.argument_rules)
    if message is not None:
        return Verdict(call, False, ARGUMENT_NOT_ALLOWED, message, replaced_placeholders=replaced)
    return Verdict(call, True, arguments=arguments, forced_arguments=forced, replaced_placeholders=replaced)


def review_edited_arguments(call, arguments, config, registry, artifacts=None):
    """The verdict on arguments a reviewer put in place of the model's: the argument checks of step 1 (the call
    itself already passed the gate, limits included)."""
    tool = registry.get(call.name)
    error = None if isinstance(arguments, dict) else "the arguments must be a JSON object"
    return _check_arguments(call, tool, config.settings_for(call.name), arguments, error, artifacts or {})


def review_calls(calls, config, registry, calls_so_far=None, *, identical_so_far=None, artifacts=None):
    """Decide every call of one response. What already ran in this run: `calls_so_far` counts the calls per
    tool name (for max_calls_per_run), `identical_so_far` the calls per `identical_call_key` (for max_identical_calls);
    `artifacts` maps the run's placeholders to their content. None of them is modified."""
    # Plus the calls allowed earlier in this response.
    counted = Counter(calls_so_far or {})
    identical = Counter(identical_so_far or {})
    verdicts = []
    for call in calls:
        verdict = _review_one(call, config, registry, counted, identical, artifacts or {})
        if verdict.allowed:
            counted[call.name] += 1
            identical[identical_call_key(call.name, verdict.arguments)] += 1
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
