"""What a tool's settings change from the defaults, in one line: the summary of its folded settings group on the
agent form and the run page (templates/_tool_settings.html), so a person reads what is set without opening every
tool. Read from the form as it stands (stored, or posted back with errors), never from the store."""

from engine.arguments import FORCE_VALUE, ONLY_ALLOW

NO_CHANGE = "no restriction: every setting at its default"


def _number(field):
    text = (field.data or "").strip() if field is not None else ""
    return text if text not in ("", "0") else None


def _argument_parts(tool_form):
    parts = []
    for argument in getattr(tool_form, "arguments", ()):
        rule, name = argument.form, argument.short_name
        if rule.action.data == ONLY_ALLOW:
            parts.append(f"{name}: only listed values")
        elif rule.action.data == FORCE_VALUE:
            parts.append(f"{name}: forced" + (", hidden" if rule.hide.data else ""))
        elif rule.hide.data:
            parts.append(f"{name}: hidden")
        if (rule.argument_description.data or "").strip():
            parts.append(f"{name}: described")
    return parts


def tool_settings_summary(tool_form):
    """The settings that differ from the defaults, in words joined by " · "; NO_CHANGE when none does."""
    field = lambda name: getattr(tool_form, name, None)  # noqa: E731 - a client tool has fewer settings
    parts = []
    if field("restrict_multiple_calls") and tool_form.restrict_multiple_calls.data:
        custom = (tool_form.multiple_call_error_message.data or "").strip()
        parts.append("one call per response" + (" (own message)" if custom else ""))
    if field("require_approval") and tool_form.require_approval.data:
        parts.append("requires approval")
    if field("require_usage") and tool_form.require_usage.data:
        parts.append("must be used")
    if field("return_directly") and tool_form.return_directly.data:
        parts.append("returns directly")
    if (limit := _number(field("max_calls_per_run"))) is not None:
        parts.append(f"at most {limit} calls per run")
    if (limit := _number(field("max_identical_calls"))) is not None:
        parts.append(f"at most {limit} identical calls")
    if field("use_artifacts") and tool_form.use_artifacts.data:
        parts.append("output kept as an artifact")
    if field("description_override") and (tool_form.description_override.data or "").strip():
        parts.append("own description")
    if field("progress_message") and (tool_form.progress_message.data or "").strip():
        parts.append("progress message")
    parts.extend(_argument_parts(tool_form))
    return " · ".join(parts) or NO_CHANGE
