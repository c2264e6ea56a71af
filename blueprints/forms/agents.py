"""The agent form: an agent's fields, its tools and its client tools, and the agent's JSON form back as the form's
data."""

import json
import re

from flask_wtf import FlaskForm
from markupsafe import Markup
from wtforms import HiddenField, SelectChoice, SelectField, StringField, TextAreaField
from wtforms.validators import ValidationError
from wtforms.widgets import NumberInput

from engine import texts
from engine.config import AGENT_DEFAULTS, APPROVAL_TIMEOUT_LIMIT, MAX_ROUNDS_LIMIT

from .arguments import arguments_form_data
from .fields import posted_text, posted_whole_number
from .request_settings import (
    ON_ROUND_CAP_CHOICES,
    PARALLEL_TOOL_CALLS_CHOICES,
    PARALLEL_TOOL_CALLS_VALUES,
    parallel_tool_calls_choice,
    parse_script,
    request_settings_data,
    request_settings_fields,
    request_settings_form_data,
)
from .tool_settings import (
    client_tool_arguments,
    client_tool_error_field,
    client_tools_field,
    tool_error_field,
    tools_field,
    tools_form_data,
)

AGENT_SCRIPT_HELP = Markup(
    'The scripted model\'s responses, as JSON: a list whose items are <code>{"content": "…"}</code> or '
    '<code>{"tool_calls": [{"id": "…", "name": "…", "arguments": {…}}]}</code>. Call ids default to '
    '<code>call_R_I</code> (response R, call I). An argument <code>"{{call_2_1}}"</code> is replaced by the '
    "result of call <code>call_2_1</code>. Used only when the provider is Scripted."
)


class AgentForm(FlaskForm):
    label = StringField("Label")
    id = StringField(
        "Machine name",
        description="Lowercase letters, digits and underscores, starting with a letter. Derived from the label "
        "when left empty; fixed once the agent is created.",
    )
    description = TextAreaField(
        "Description",
        description="What the agent is for; shown in the list. Not sent to the model.",
        render_kw={"rows": 2},
    )
    system_prompt = TextAreaField(
        "System prompt", description="The system prompt: the agent's instructions to the model.", render_kw={"rows": 6}
    )
    provider = SelectField(
        "Provider",
        description="Scripted replays the script below, offline. Add real models under Providers.",
        validate_choice=False,
    )
    model = StringField(
        "Model", description="The model name sent to the provider; empty uses the connection's default."
    )
    parallel_tool_calls = SelectField(
        "Parallel tool calls",
        description="Sent to the provider as parallel_tool_calls; the provider default sends nothing.",
        choices=PARALLEL_TOOL_CALLS_CHOICES,
        validate_choice=False,
    )
    max_rounds = StringField(
        "Max rounds",
        default="10",
        description="Tool rounds allowed, 0 to 100. 0 turns the tools off: one request, no tools.",
        widget=NumberInput(min=0, max=MAX_ROUNDS_LIMIT),
    )
    on_round_cap = SelectField("At the round cap", choices=ON_ROUND_CAP_CHOICES, validate_choice=False)
    max_rounds_message = TextAreaField(
        "Round cap message",
        description="The answer when the run stops at the cap with a message. Leave empty for the default: "
        f"“{texts.MAX_ROUNDS}”",
        render_kw={"rows": 2},
    )
    approval_timeout_seconds = StringField(
        "Approval timeout (seconds)",
        default="300",
        description="How long a call that requires approval waits for a decision, 1 to 3,600; past it the call is "
        "rejected as not decided in time and the model is asked again.",
        widget=NumberInput(min=1, max=APPROVAL_TIMEOUT_LIMIT),
    )
    approval_webhook = StringField(
        "Approval webhook",
        description="A URL that receives a JSON POST (the run, the tool, its arguments redacted, the link to "
        "decide) when a call starts waiting for approval. Empty: none.",
    )
    script = TextAreaField(
        "Script", default="[]", description=AGENT_SCRIPT_HELP, render_kw={"rows": 12, "spellcheck": "false"}
    )
    revision = HiddenField()
    new_client_tool = StringField(
        "Tool name",
        description="The function name the client declares, exactly: letters, digits, underscores and hyphens.",
    )

    tool_names = ()  # set by agent_form_class()
    client_tool_names = ()

    def validate_script(self, field):
        self.script_value = parse_script(field.data)

    def validate_revision(self, field):
        if not re.fullmatch(r"\d{1,9}", (field.data or "").strip()):
            raise ValidationError("The form's revision is missing; reload the page and try again.")

    def agent_data(self, agent_id):
        """The JSON form of what was posted, for validate_agent; tools in registry order, enabled ones only."""
        tools = {}
        for name in self.tool_names:
            tool_form = self.tools[name]
            if tool_form.enabled.data:
                tools[name] = tool_form.settings()
        return {
            "id": agent_id,
            "label": (self.label.data or "").strip(),
            "description": posted_text(self.description.data),
            "system_prompt": posted_text(self.system_prompt.data),
            "provider": self.provider.data,
            "model": (self.model.data or "").strip(),
            "max_rounds": posted_whole_number(self.max_rounds.data),
            "on_round_cap": self.on_round_cap.data,
            "max_rounds_message": posted_text(self.max_rounds_message.data),
            "parallel_tool_calls": PARALLEL_TOOL_CALLS_VALUES.get(
                self.parallel_tool_calls.data, self.parallel_tool_calls.data
            ),
            **request_settings_data(self),
            "approval_timeout_seconds": posted_whole_number(self.approval_timeout_seconds.data),
            "approval_webhook": (self.approval_webhook.data or "").strip(),
            "tools": tools,
            "client_tools": {name: self.client_tools[name].settings() for name in self.client_tool_names},
            "script": getattr(self, "script_value", []),
            "revision": posted_whole_number(self.revision.data),
        }

    def field_for(self, key):
        """The field an engine.config error key ("label", "tools.NAME.KEY") belongs next to, or None."""
        parts = key.split(".")
        if parts[0] == "tools":
            return tool_error_field(self, parts)
        if parts[0] == "client_tools":
            return client_tool_error_field(self, parts)
        if len(parts) == 1 and parts[0] in self and parts[0] not in ("tools", "csrf_token", "revision"):
            return self[parts[0]]
        return None


def agent_form_class(tools, client_tools=None):
    """An AgentForm with one ToolSettingsForm per registered tool (fields named tools-NAME-KEY); `tools` maps the
    names to the JSON Schemas of their arguments (ToolRegistry.parameters_by_name()). `client_tools` maps the
    client tools on the form to the arguments each shows (fields named client_tools-NAME-KEY)."""
    client_tools = client_tools or {}
    attributes = {
        "tools": tools_field(tools),
        "tool_names": tuple(tools),
        **request_settings_fields(tools),
        "client_tools": client_tools_field(client_tools),
        "client_tool_names": tuple(client_tools),
    }
    return type("BoundAgentForm", (AgentForm,), attributes)


def agent_form(tools, provider_choices, agent=None, client_tools=None, **kwargs):
    """The agent form for these tools (name -> schema of its arguments) and providers ([(id, label)]): bound to
    the request's POST data, else to `agent`. A provider the agent names that no longer exists stays selectable,
    marked missing. `client_tools` (name -> argument names) lists the client tools on the form: by default the
    agent's."""
    if client_tools is None:
        stored = (agent or {}).get("client_tools") or {}
        client_tools = {name: client_tool_arguments(settings) for name, settings in stored.items()}
    form_class = agent_form_class(tools, client_tools)
    if agent is not None:
        kwargs.setdefault("data", agent_to_form_data(agent, tools))
    form = form_class(**kwargs)
    choices = [SelectChoice(value, label) for value, label in provider_choices]
    if form.provider.data and form.provider.data not in [value for value, _label in provider_choices]:
        choices.append(SelectChoice(form.provider.data, f"{form.provider.data} (missing)"))
    form.provider.choices = choices
    return form


def agent_to_form_data(agent, tools):
    """An agent's JSON form as the form's data, for editing."""
    agent = {**AGENT_DEFAULTS, **agent}
    return {
        "label": agent["label"],
        "id": agent.get("id", ""),
        "description": agent["description"],
        "system_prompt": agent["system_prompt"],
        "provider": agent["provider"],
        "model": agent["model"],
        "parallel_tool_calls": parallel_tool_calls_choice(agent["parallel_tool_calls"]),
        "max_rounds": str(agent["max_rounds"]),
        "on_round_cap": agent["on_round_cap"],
        "max_rounds_message": agent["max_rounds_message"],
        **request_settings_form_data(agent),
        "approval_timeout_seconds": str(agent["approval_timeout_seconds"]),
        "approval_webhook": agent["approval_webhook"],
        "script": json.dumps(agent["script"], indent=2, ensure_ascii=False),
        "revision": str(agent["revision"]),
        "tools": tools_form_data(agent, tools),
        "client_tools": {
            name: {
                **settings,
                **{key: str(settings[key]) for key in ("max_calls_per_run", "max_identical_calls")},
                "arguments": arguments_form_data(
                    settings, {"properties": {argument: {} for argument in client_tool_arguments(settings)}}
                ),
            }
            for name, settings in agent.get("client_tools", {}).items()
        },
    }
