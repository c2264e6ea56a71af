"""The run page's form: the message and the per-run overrides, prefilled from the stored agent.

Like forms.py, the form only turns posted strings into JSON values; engine.config decides what is acceptable
(when the run starts), and `apply_errors` puts its messages next to the fields. The overrides recorded with a
run are only the fields that differ from the stored agent, so a run's page shows what was changed for it.
"""

import json

from flask_wtf import FlaskForm
from wtforms import Form, FormField, SelectField, StringField, TextAreaField
from wtforms.validators import ValidationError
from wtforms.widgets import NumberInput

from engine.config import MAX_ROUNDS_LIMIT, MESSAGE_MAX, SCRIPTED_PROVIDER, TOOL_SETTING_DEFAULTS, apply_overrides
from forms import ON_ROUND_CAP_CHOICES, ToolSettingsForm, _text, _whole_number


class RunForm(FlaskForm):
    message = TextAreaField("Message", render_kw={"rows": 3, "maxlength": MESSAGE_MAX})
    max_rounds = StringField("Round cap", widget=NumberInput(min=0, max=MAX_ROUNDS_LIMIT))
    on_round_cap = SelectField("At the round cap", choices=ON_ROUND_CAP_CHOICES, validate_choice=False)
    script = TextAreaField("Script (JSON)", render_kw={"rows": 12, "spellcheck": "false"})

    tool_names = ()  # set by run_form_class()
    scripted = False

    def validate_message(self, field):
        if not (field.data or "").strip():
            raise ValidationError("Message is required.")

    def validate_script(self, field):
        if not self.scripted:
            return
        text = (field.data or "").strip() or "[]"
        try:
            self.script_value = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValidationError(
                f"Script is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})."
            ) from None

    def run_message(self):
        return _text(self.message.data)

    def overrides(self, agent):
        """The posted settings that differ from the stored agent, as run overrides (SPEC §3)."""
        overrides = {}
        max_rounds = _whole_number(self.max_rounds.data)
        if max_rounds != agent["max_rounds"]:
            overrides["max_rounds"] = max_rounds
        if self.on_round_cap.data != agent["on_round_cap"]:
            overrides["on_round_cap"] = self.on_round_cap.data
        if self.scripted:
            script = getattr(self, "script_value", agent["script"])
            if script != agent["script"]:
                overrides["script"] = script
        tools = {}
        for name in self.tool_names:
            tool_form = self.tools[name]
            stored = agent["tools"].get(name)
            if not tool_form.enabled.data:
                if stored is not None:
                    tools[name] = None
                continue
            baseline = stored if stored is not None else TOOL_SETTING_DEFAULTS
            changed = {key: value for key, value in tool_form.settings().items() if value != baseline.get(key)}
            if changed or stored is None:
                tools[name] = changed
        if tools:
            overrides["tools"] = tools
        return overrides

    def field_for(self, key):
        """The field an engine error key ("max_rounds", "tools.NAME.KEY", "message") belongs next to."""
        parts = key.removeprefix("overrides.").split(".")
        if parts[0] == "tools" and len(parts) >= 2 and parts[1] in self.tool_names:
            tool_form = self.tools[parts[1]]
            return tool_form[parts[2]] if len(parts) == 3 and parts[2] in tool_form.form else tool_form.enabled
        if len(parts) == 1 and parts[0] in ("message", "max_rounds", "on_round_cap", "script"):
            return self[parts[0]]
        return None


def run_form_class(tool_names, scripted):
    """A RunForm with one ToolSettingsForm per registered tool (fields named tools-NAME-KEY)."""
    tools_form = type("RunToolsForm", (Form,), {name: FormField(ToolSettingsForm, label=name) for name in tool_names})
    attributes = {"tools": FormField(tools_form), "tool_names": tuple(tool_names), "scripted": scripted}
    return type("BoundRunForm", (RunForm,), attributes)


def run_form(agent, tool_names, message="", overrides=None, **kwargs):
    """The run form for a stored agent: bound to the request's POST data, else prefilled from the agent (with a
    previous run's message and overrides applied when given)."""
    scripted = agent["provider"] == SCRIPTED_PROVIDER
    names = [name for name in agent["tools"]] + [name for name in tool_names if name not in agent["tools"]]
    form_class = run_form_class(names, scripted)
    prefill = agent
    if overrides:
        try:
            prefill = apply_overrides(agent, overrides)
        except ValueError:
            prefill = agent
    kwargs.setdefault("data", _form_data(prefill, names, message))
    return form_class(**kwargs)


def _form_data(agent, tool_names, message):
    tools = {}
    for name in tool_names:
        settings = agent["tools"].get(name)
        tools[name] = {**TOOL_SETTING_DEFAULTS, **(settings or {}), "enabled": settings is not None}
        tools[name]["max_calls_per_run"] = str(tools[name]["max_calls_per_run"])
    return {
        "message": message,
        "max_rounds": str(agent["max_rounds"]),
        "on_round_cap": agent["on_round_cap"],
        "script": json.dumps(agent.get("script", []), indent=2, ensure_ascii=False),
        "tools": tools,
    }
