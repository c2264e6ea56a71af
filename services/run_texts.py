"""How a run reads in words: stop reasons, call statuses and rejection reasons, for the pages and the CLI."""

import json

STOP_REASON_TEXTS = {
    "answered": "Answered",
    "return_directly": "Returned directly",
    "tools_disabled": "Tools disabled",
    "error": "Error",
    "truncated": "Truncated: the answer was cut off at the token limit",
    "content_filter": "Content filter: the provider's filter stopped the answer",
    "stopped": "Stopped by a person",
    "awaiting_client": "Waiting for the client to run its tool calls",
    "cancelled": "Cancelled by the client: it closed its request before the answer was complete",
}
# A run that has not ended has no stop reason: its state says where it is. The runs list shows each stop reason's
# short label (stop_reason_label), and a run's page that label with what it means (each text starts with it).
STATE_TEXTS = {
    "running": "Running",
    "awaiting_approval": "Awaiting approval",
    "interrupted": "Interrupted",
    "abandoned": "Abandoned: its client never came back",
}
# States that say more than the stop reason stored with them: a proxied run that waited for its client in vain.
OVERRIDING_STATES = ("abandoned",)
# Under an answer the provider cut off: the partial text is the answer, and says so.
CUT_OFF_TEXTS = {
    "truncated": "Cut off: the model reached its token limit (finish reason length) before it finished.",
    "content_filter": "Cut off: the provider's content filter stopped the answer (finish reason content_filter).",
}
ERROR_PREVIEW_CHARS = 500  # of a provider's error, shown before "the rest of the error"
ROUND_CAP_FORCED = "Round cap reached — forced answer without tools"
ROUND_CAP_MESSAGE = "Round cap reached — stopped with the round cap message"
ROUND_CAP_LABEL = "Round cap reached"
STOP_REASON_LABELS = {
    "truncated": "Truncated",
    "content_filter": "Content filter",
    "cancelled": "Cancelled by the client",
}
REASON_TEXTS = {
    "unknown_tool": "Unknown tool",
    "invalid_arguments": "Invalid arguments",
    "call_limit": "Call limit reached",
    "argument_not_allowed": "Value not allowed",
    "repeated_call": "Repeated identical call",
    "restricted_repeat": "Restricted tool called more than once",
    "collateral": "Collateral: another tool in this response is restricted",
    "tools_disabled": "Tools were not offered",
    "tool_error": "The tool failed",
    "reviewer_rejected": "Rejected by a reviewer",
    "stopped": "Not run: the run was stopped",
    "not_run": "Not run: another call in this response was rejected",
}
STATUS_TEXTS = {
    "executed": "Executed",
    "rejected": "Rejected",
    "error": "Error",
    "allowed": "Allowed",
    "awaiting_approval": "Awaiting approval",
}
CLIENT_STATUS_TEXTS = {"executed": "Run by the client", "allowed": "Sent to the client"}
SOURCE_LABELS = {"page": "Run page", "api": "API", "cli": "Command line", "proxy": "Policy proxy", "case": "Case"}
API_LABELS = {"chat_completions": "Chat Completions", "responses": "Responses", "messages": "Messages"}


def stop_reason_text(run):
    """The stop reason of a run in words. round_cap says whether the answer was forced by one more request
    without tools, or is the round cap message."""
    reason = run.get("stop_reason")
    if reason is None or run.get("state") in OVERRIDING_STATES:
        return STATE_TEXTS.get(run.get("state"), "")
    if reason == "round_cap":
        rounds = run.get("rounds") or []
        forced = bool(rounds) and rounds[-1].get("tools_offered") is None
        return ROUND_CAP_FORCED if forced else ROUND_CAP_MESSAGE
    return STOP_REASON_TEXTS.get(reason, reason or "")


def stop_reason_label(reason, state=None):
    """A stop reason in words without a run at hand (filters, lists); a run without one, its state."""
    if reason is None or state in OVERRIDING_STATES:
        return STATE_TEXTS.get(state, "")
    if reason == "round_cap":
        return ROUND_CAP_LABEL
    return STOP_REASON_LABELS.get(reason) or STOP_REASON_TEXTS.get(reason, reason)


def usage_text(usage):
    """A run's or a round's token usage in words; None when the provider reported none."""
    if not usage:
        return None
    return (
        f"{usage['total_tokens']:,} tokens ({usage['prompt_tokens']:,} prompt, "
        f"{usage['completion_tokens']:,} completion)"
    )


def reason_text(reason):
    return REASON_TEXTS.get(reason, reason or "")


def status_text(status, proxied=False):
    """A call's status in words; in a proxied run, the calls that went to the client say so."""
    if proxied and status in CLIENT_STATUS_TEXTS:
        return CLIENT_STATUS_TEXTS[status]
    return STATUS_TEXTS.get(status, status or "")


def review_text(review):
    """A reviewer's decision on a call, as the round shows it; a call no one decided on in time says so."""
    if review["decision"] == "timed_out":
        return "Not decided in time: no one approved or rejected it before the approval timeout"
    if review["decision"] == "rejected":
        return f"Rejected by {review['by']}" + (f": {review['reason']}" if review.get("reason") else "")
    edited = " with edited arguments" if review.get("arguments") is not None else ""
    return f"Approved by {review['by']}{edited}"


def source_label(source):
    """Where a run came from, in words; runs stored before Toolgate recorded it say nothing."""
    return SOURCE_LABELS.get(source, "—")


def api_label(api):
    """The API a proxied run's client spoke, by the name its provider gives it."""
    return API_LABELS.get(api, api or "")


# The settings a run may override, by the label the agent form and the run page give them.
SETTING_LABELS = {
    "label": "Label",
    "description": "Description",
    "system_prompt": "System prompt",
    "provider": "Provider",
    "model": "Model",
    "max_rounds": "Round cap",
    "on_round_cap": "At the round cap",
    "max_rounds_message": "Round cap message",
    "parallel_tool_calls": "Parallel tool calls",
    "tool_choice": "Tool choice",
    "temperature": "Temperature",
    "top_p": "Top p",
    "seed": "Seed",
    "max_tokens": "Max tokens",
    "script": "Script",
    "restrict_multiple_calls": "Restrict to one call per response",
    "multiple_call_error_message": "Multiple call error message",
    "require_usage": "Require usage",
    "return_directly": "Return directly",
    "description_override": "Description override",
    "max_calls_per_run": "Max calls per run",
    "max_identical_calls": "Max identical calls",
    "argument_rules": "Argument rules",
    "argument_descriptions": "Argument descriptions",
    "use_artifacts": "Use artifacts",
    "progress_message": "Progress message",
    "require_approval": "Require approval",
}
VALUE_TEXTS = {True: "on", False: "off", None: "not set"}


def _value_text(key, value):
    if key == "script" and isinstance(value, list):
        return f"{len(value)} response{'s' if len(value) != 1 else ''}"
    if isinstance(value, bool) or value is None:
        return "provider default" if key == "parallel_tool_calls" and value is None else VALUE_TEXTS[value]
    if isinstance(value, str):
        return f"“{value}”" if value else "empty"
    return json.dumps(value, ensure_ascii=False)


def override_lines(overrides):
    """A run's overrides (engine.config.overrides_between's shape) as one line each, in the run page's words:
    (setting, value) pairs, a tool's settings named "TOOL: setting"."""
    lines = []
    for key, value in (overrides or {}).items():
        if key not in ("tools", "client_tools"):
            lines.append((SETTING_LABELS.get(key, key), _value_text(key, value)))
            continue
        for name, settings in (value or {}).items():
            if settings is None:
                lines.append((name, "not enabled for this run"))
            elif not settings:
                lines.append((name, "enabled for this run"))
            else:
                for setting, setting_value in settings.items():
                    lines.append(
                        (f"{name}: {SETTING_LABELS.get(setting, setting)}", _value_text(setting, setting_value))
                    )
    return lines
