"""One tool's settings (SPEC §3) as a sub-form, for the agent form and the run form: the tools Toolgate runs, and the
tools a client runs (SPEC §2 `client_tools`)."""

from markupsafe import Markup
from wtforms import BooleanField, Form, FormField, StringField, TextAreaField
from wtforms.widgets import NumberInput

from engine import texts
from engine.config import MAX_CALLS_PER_RUN_LIMIT, TOOL_SETTING_DEFAULTS

from .arguments import argument_error_field, argument_settings, arguments_field, arguments_form_data
from .fields import posted_text, posted_whole_number

ERROR_MESSAGE_HELP = Markup(
    "Use <code>[tool_name]</code> for the tool's name. Leave empty for the default message: <q>{}</q> Start your "
    "message with <q>Error:</q> — a retrying model recovers only if the message reads as an error."
).format(texts.RESTRICTED_REPEAT)


class ToolSettingsForm(Form):
    """One tool's checkbox and its settings (SPEC §3); a sub-form, so no CSRF token of its own."""

    enabled = BooleanField("Enable")
    restrict_multiple_calls = BooleanField(
        "Restrict to one call per response",
        description="If one response calls this tool more than once, none of that response's tool calls run: each "
        "gets an error message, and the model retries.",
    )
    multiple_call_error_message = TextAreaField(
        "Multiple call error message", description=ERROR_MESSAGE_HELP, render_kw={"rows": 3}
    )
    require_usage = BooleanField(
        "Require usage",
        description="If the model answers without having run this tool, remind it and go on (within the round cap).",
    )
    return_directly = BooleanField(
        "Return directly",
        description="After a round in which this tool ran, end the run with its output as the answer.",
    )
    description_override = TextAreaField(
        "Description override",
        description="Replaces the description sent to the model. Leave empty to send the one above.",
        render_kw={"rows": 2},
    )
    max_calls_per_run = StringField(
        "Max calls per run",
        default="0",
        description="Calls past this number in one run are rejected. 0 = unlimited.",
        widget=NumberInput(min=0, max=MAX_CALLS_PER_RUN_LIMIT),
    )
    max_identical_calls = StringField(
        "Max identical calls",
        default="0",
        description="A call with the same arguments as this many calls that already ran in the run is rejected, "
        "telling the model to use the earlier result. 0 = unlimited.",
        widget=NumberInput(min=0, max=MAX_CALLS_PER_RUN_LIMIT),
    )
    use_artifacts = BooleanField(
        "Use artifacts",
        description="Keep the output as an artifact: the model gets {{artifact:TOOL:N}} in its place, and that "
        "placeholder in a later call's arguments is replaced by the output before the call runs.",
    )
    progress_message = StringField(
        "Progress message", description="Shown beside this tool's calls on the run page, e.g. “Listing bundles…”."
    )
    require_approval = BooleanField(
        "Require approval",
        description="A response that calls this tool waits, before any of its calls runs, until a person approves, "
        "edits or rejects each call of this tool.",
    )
    arguments = arguments_field(None)  # each tool's own, from its schema: see _tools_field

    def settings(self):
        return {
            **_shared_settings(self),
            "return_directly": self.return_directly.data,
            "use_artifacts": self.use_artifacts.data,
            "progress_message": (self.progress_message.data or "").strip(),
            "require_approval": self.require_approval.data,
        }


def _shared_settings(form):
    """The settings, as posted, that a tool the server runs and one the client runs both have."""
    argument_rules, argument_descriptions = argument_settings(form.arguments)
    return {
        "restrict_multiple_calls": form.restrict_multiple_calls.data,
        "multiple_call_error_message": posted_text(form.multiple_call_error_message.data),
        "require_usage": form.require_usage.data,
        "description_override": posted_text(form.description_override.data),
        "max_calls_per_run": posted_whole_number(form.max_calls_per_run.data),
        "max_identical_calls": posted_whole_number(form.max_identical_calls.data),
        "argument_rules": argument_rules,
        "argument_descriptions": argument_descriptions,
    }


class ClientToolSettingsForm(Form):
    """The settings of one tool the client runs (SPEC §2 `client_tools`): the tool settings that make sense
    without running it. Its schema is the client's, so its arguments are the ones its rules name, plus any the
    user adds by name."""

    restrict_multiple_calls = ToolSettingsForm.restrict_multiple_calls
    multiple_call_error_message = ToolSettingsForm.multiple_call_error_message
    require_usage = BooleanField(
        "Require usage",
        description="If the model answers without having called this tool, remind it and ask again (within the "
        "round cap).",
    )
    description_override = TextAreaField(
        "Description override",
        description="Replaces the description the client sends for this tool. Leave empty to send the client's.",
        render_kw={"rows": 2},
    )
    max_calls_per_run = ToolSettingsForm.max_calls_per_run
    max_identical_calls = ToolSettingsForm.max_identical_calls
    require_approval = BooleanField(
        "Require approval",
        description="A response that calls this tool is held, and its client waits, until a person approves, "
        "edits or rejects each call of this tool.",
    )
    new_argument = StringField(
        "Argument",
        description="The name of one of the tool's arguments, to give it a rule or a description.",
    )
    arguments = arguments_field(None)  # one per argument named: see client_tools_field

    def settings(self):
        return {**_shared_settings(self), "require_approval": self.require_approval.data}


def client_tools_field(client_tools):
    """One ClientToolSettingsForm per client tool (fields named client_tools-NAME-KEY); `client_tools` maps each
    name to the names of the arguments its form shows."""
    fields = {
        name: FormField(
            type(
                "ClientToolSettingsForm",
                (ClientToolSettingsForm,),
                {"arguments": arguments_field({"properties": {argument: {} for argument in arguments}})},
            )
        )
        for name, arguments in client_tools.items()
    }
    return FormField(type("ClientToolsForm", (Form,), fields))


def client_tool_arguments(settings):
    """The arguments a client tool's form shows: those its rules or descriptions name."""
    return list(dict.fromkeys([*settings.get("argument_rules", {}), *settings.get("argument_descriptions", {})]))


def tools_field(tools):
    """One ToolSettingsForm per tool, as a sub-form whose fields are named tools-NAME-KEY. `tools` maps each name
    to the JSON Schema of its arguments (None for a tool the registry no longer has), which gives the tool's
    argument fields (tools-NAME-arguments-ARGUMENT-KEY)."""
    fields = {
        name: FormField(type("ToolSettingsForm", (ToolSettingsForm,), {"arguments": arguments_field(parameters)}))
        for name, parameters in tools.items()
    }
    return FormField(type("ToolsForm", (Form,), fields))


def tool_error_field(form, parts):
    """The field of a tool's error key split on its dots (tools, NAME[, KEY[, ARGUMENT[, KEY]]]): the setting, else
    the checkbox."""
    if len(parts) < 2 or parts[1] not in form.tool_names:
        return None
    tool_form = form.tools[parts[1]].form
    argument_field = argument_error_field(tool_form, parts)
    if argument_field is not None:
        return argument_field
    return tool_form[parts[2]] if len(parts) == 3 and parts[2] in tool_form else tool_form.enabled


def tools_form_data(agent, tools):
    """Each tool's checkbox and settings as form data: ticked with its settings when the agent enables it."""
    data = {}
    for name, parameters in tools.items():
        settings = agent["tools"].get(name)
        data[name] = {**TOOL_SETTING_DEFAULTS, **(settings or {}), "enabled": settings is not None}
        for key in ("max_calls_per_run", "max_identical_calls"):
            data[name][key] = str(data[name][key])
        data[name]["arguments"] = arguments_form_data(settings or {}, parameters)
    return data


def client_tool_error_field(form, parts):
    """The field of a client tool's error key (client_tools, NAME[, KEY[, ARGUMENT[, KEY]]]), or None for an error
    about the tool as a whole (the top of the form says it)."""
    if len(parts) < 3 or parts[1] not in form.client_tool_names:
        return None
    tool_form = form.client_tools[parts[1]].form
    argument_field = argument_error_field(tool_form, parts)
    if argument_field is not None:
        return argument_field
    return tool_form[parts[2]] if len(parts) == 3 and parts[2] in tool_form else None
