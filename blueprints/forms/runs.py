"""The run page's form: the message, and the settings of one run; only those that differ from the stored agent become
the run's overrides (engine.config.overrides_between)."""

import json

from flask_wtf import FlaskForm
from markupsafe import Markup
from wtforms import SelectField, StringField, TextAreaField
from wtforms.validators import ValidationError
from wtforms.widgets import NumberInput

from engine.config import MAX_ROUNDS_LIMIT, MESSAGE_MAX, SCRIPTED_PROVIDER, apply_overrides

from .agents import AgentForm
from .fields import posted_text, posted_whole_number
from .request_settings import (
    ON_ROUND_CAP_CHOICES,
    PARALLEL_TOOL_CALLS_VALUES,
    REQUEST_SETTINGS,
    parallel_tool_calls_choice,
    parse_script,
    request_settings_data,
    request_settings_fields,
    request_settings_form_data,
)
from .tool_settings import tool_error_field, tools_field, tools_form_data

RUN_SCRIPT_HELP = Markup(
    'A list of responses, each <code>{"content": "…"}</code> or <code>{"tool_calls": [{"id", "name", '
    '"arguments"}]}</code>. <code>{{CALL_ID}}</code> in an argument is replaced by what that call returned. Edits '
    "apply to this run only."
)


class RunForm(FlaskForm):
    message = TextAreaField(
        "Message", description="What the user says to the agent.", render_kw={"rows": 3, "maxlength": MESSAGE_MAX}
    )
    max_rounds = StringField(
        "Round cap",
        description="Tool rounds allowed; 0 turns the tools off (one request, no tools).",
        widget=NumberInput(min=0, max=MAX_ROUNDS_LIMIT),
    )
    on_round_cap = SelectField("At the round cap", choices=ON_ROUND_CAP_CHOICES, validate_choice=False)
    parallel_tool_calls = AgentForm.parallel_tool_calls
    script = TextAreaField("Script (JSON)", description=RUN_SCRIPT_HELP, render_kw={"rows": 12, "spellcheck": "false"})

    tool_names = ()  # set by run_form_class()
    scripted = False

    def validate_message(self, field):
        if not (field.data or "").strip():
            raise ValidationError("Message is required.")

    def validate_script(self, field):
        if self.scripted:
            self.script_value = parse_script(field.data)

    def run_message(self):
        return posted_text(self.message.data)

    def run_settings(self):
        """The posted settings in the JSON form, for engine.config.overrides_between: the round cap and, when it
        was read, the script; the request settings; every offered tool's settings, None for the tools left
        unticked."""
        settings = {"max_rounds": posted_whole_number(self.max_rounds.data), "on_round_cap": self.on_round_cap.data}
        settings["parallel_tool_calls"] = PARALLEL_TOOL_CALLS_VALUES.get(
            self.parallel_tool_calls.data, self.parallel_tool_calls.data
        )
        settings.update(request_settings_data(self))
        if hasattr(self, "script_value"):
            settings["script"] = self.script_value
        tools = {name: self.tools[name] for name in self.tool_names}
        settings["tools"] = {name: form.settings() if form.enabled.data else None for name, form in tools.items()}
        return settings

    def field_for(self, key):
        """The field an engine error key ("max_rounds", "tools.NAME.KEY", "message") belongs next to."""
        parts = key.removeprefix("overrides.").split(".")
        if parts[0] == "tools":
            return tool_error_field(self, parts)
        if len(parts) == 1 and parts[0] in (
            "message",
            "max_rounds",
            "on_round_cap",
            "parallel_tool_calls",
            "script",
            *REQUEST_SETTINGS,
        ):
            return self[parts[0]]
        return None


def run_form_class(tools, scripted):
    """A RunForm with one ToolSettingsForm per tool (fields named tools-NAME-KEY), as agent_form_class."""
    attributes = {"tools": tools_field(tools), "tool_names": tuple(tools), "scripted": scripted}
    return type("BoundRunForm", (RunForm,), {**attributes, **request_settings_fields(tools)})


def run_form(agent, tools, message="", overrides=None, **kwargs):
    """The run form for a stored agent and the registered tools (name -> schema of its arguments): bound to the
    request's POST data, else prefilled from the agent (with a previous run's message and overrides applied when
    given). The agent's tools come first."""
    scripted = agent["provider"] == SCRIPTED_PROVIDER
    names = [*agent["tools"], *(name for name in tools if name not in agent["tools"])]
    form_class = run_form_class({name: tools.get(name) for name in names}, scripted)
    prefill = agent
    if overrides:
        try:
            prefill = apply_overrides(agent, overrides)
        except ValueError:
            prefill = agent
    kwargs.setdefault("data", run_form_data(prefill, {name: tools.get(name) for name in names}, message))
    return form_class(**kwargs)


def run_form_data(agent, tools, message):
    return {
        "message": message,
        "max_rounds": str(agent["max_rounds"]),
        "on_round_cap": agent["on_round_cap"],
        "parallel_tool_calls": parallel_tool_calls_choice(agent["parallel_tool_calls"]),
        **request_settings_form_data(agent),
        "script": json.dumps(agent.get("script", []), indent=2, ensure_ascii=False),
        "tools": tools_form_data(agent, tools),
    }
