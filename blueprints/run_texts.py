"""How a run reads in words: stop reasons, call statuses and rejection reasons, for the pages and the CLI."""

STOP_REASON_TEXTS = {
    "answered": "Answered",
    "return_directly": "Returned directly",
    "tools_disabled": "Tools disabled",
    "error": "Error",
}
ROUND_CAP_FORCED = "Round cap reached — forced answer without tools"
ROUND_CAP_MESSAGE = "Stopped at the round cap"
ROUND_CAP_LABEL = "Round cap reached"
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
}
STATUS_TEXTS = {"executed": "Executed", "rejected": "Rejected", "error": "Error", "allowed": "Allowed"}


def stop_reason_text(run):
    """The stop reason of a run in words. round_cap says whether the answer was forced by one more request
    without tools, or is the round cap message."""
    reason = run.get("stop_reason")
    if reason == "round_cap":
        rounds = run.get("rounds") or []
        forced = bool(rounds) and rounds[-1].get("tools_offered") is None
        return ROUND_CAP_FORCED if forced else ROUND_CAP_MESSAGE
    return STOP_REASON_TEXTS.get(reason, reason or "")


def stop_reason_label(reason):
    """A stop reason in words without a run at hand (filters, lists)."""
    if reason == "round_cap":
        return ROUND_CAP_LABEL
    return STOP_REASON_TEXTS.get(reason, reason)


def reason_text(reason):
    return REASON_TEXTS.get(reason, reason or "")


def status_text(status):
    return STATUS_TEXTS.get(status, status or "")
