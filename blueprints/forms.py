"""Flask-WTF forms: agents, the run page, provider connections, documents, and the delete buttons' token.

The forms only turn posted strings into the JSON form (numbers, booleans, the parsed script) and back. Whether
the values are acceptable is decided in one place, engine.config.validate_agent (through store.agents), whose
errors `apply_errors` puts next to the fields they name — the same rules for the pages, the API and the CLI.
The run form checks nothing either: engine.config decides when the run starts, and computes which of the posted
settings differ from the stored agent (engine.config.overrides_between): only those are the run's overrides.
"""

import json
import re

from flask_wtf import FlaskForm
from markupsafe import Markup
from wtforms import (
    BooleanField,
    Form,
    FormField,
    HiddenField,
    SelectChoice,
    SelectField,
    SelectMultipleField,
    StringField,
    TextAreaField,
)
from wtforms.validators import ValidationError
from wtforms.widgets import NumberInput

from blueprints.argument_forms import argument_error_field, argument_settings, arguments_field, arguments_form_data
from engine import texts
from engine.config import (
    AGENT_DEFAULTS,
    MAX_CALLS_PER_RUN_LIMIT,
    MAX_ROUNDS_LIMIT,
    MAX_TOKENS_LIMIT,
    MESSAGE_MAX,
    SCRIPTED_PROVIDER,
    TOOL_SETTING_DEFAULTS,
    apply_overrides,
)
from store.providers import MAX_RETRIES_LIMIT

ON_ROUND_CAP_CHOICES = [
    SelectChoice("final_answer", "Force a final answer (one more request without tools)"),
    SelectChoice("message", "Stop with the round cap message"),
]
# parallel_tool_calls in words, for the agent form's select and the agent's page.
PARALLEL_TOOL_CALLS_LABELS = {None: "Provider default", True: "true", False: "false"}
REQUEST_SETTINGS = ("tool_choice", "temperature", "top_p", "seed", "max_tokens")


def _parallel_tool_calls_choice(value):
    """parallel_tool_calls as the select posts it: "" for null (the provider default), else "true" or "false"."""
    return "" if value is None else json.dumps(value)


PARALLEL_TOOL_CALLS_CHOICES = [
    SelectChoice(_parallel_tool_calls_choice(value), label) for value, label in PARALLEL_TOOL_CALLS_LABELS.items()
]
PARALLEL_TOOL_CALLS_VALUES = {_parallel_tool_calls_choice(value): value for value in PARALLEL_TOOL_CALLS_LABELS}


def _text(value):
    """Browsers post textarea line breaks as \\r\\n; store \\n."""
    return (value or "").replace("\r\n", "\n")


def _whole_number(value):
    """The posted text as an int when it is one; otherwise the text itself, so validation names the field."""
    text = (value or "").strip()
    return int(text) if re.fullmatch(r"-?\d{1,9}", text) else text


def _optional_number(value):
    """Empty is None (not sent); a number is a number; anything else stays text, so validation names the field."""
    text = (value or "").strip()
    if not text:
        return None
    if re.fullmatch(r"-?\d{1,19}", text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def tool_choice_choices(tool_names):
    return [
        SelectChoice("auto", "Auto: the model decides"),
        SelectChoice("required", "Required: some tool in every response"),
        *(SelectChoice(name, f"Always {name} (when enabled)") for name in tool_names),
    ]


def _request_settings_fields(tool_names):
    """The fields of what an agent sends with each request (SPEC §2), for the agent form and the run form."""
    return {
        "tool_choice": SelectField(
            "Tool choice",
            default="auto",
            choices=tool_choice_choices(tool_names),
            description="Sent as tool_choice with every request that offers tools, never without them. Some servers "
            "(llama-cpp-python) offer no tools unless it says auto.",
            validate_choice=False,
        ),
        "temperature": StringField(
            "Temperature", description="0 to 2. Empty: not sent.", widget=NumberInput(min=0, max=2, step="any")
        ),
        "top_p": StringField(
            "Top p", description="0 to 1. Empty: not sent.", widget=NumberInput(min=0, max=1, step="any")
        ),
        "seed": StringField("Seed", description="A whole number. Empty: not sent.", widget=NumberInput(step=1)),
        "max_tokens": StringField(
            "Max tokens",
            description="1 to 1,000,000: the answer is cut off there (stop reason: truncated). Empty: not sent.",
            widget=NumberInput(min=1, max=MAX_TOKENS_LIMIT),
        ),
    }


def _request_settings_data(form):
    settings = {key: _optional_number(form[key].data) for key in REQUEST_SETTINGS if key != "tool_choice"}
    return {"tool_choice": form.tool_choice.data or "auto", **settings}


def _request_settings_form_data(agent):
    values = {key: agent[key] for key in REQUEST_SETTINGS}
    return {
        key: value if key == "tool_choice" else "" if value is None else str(value) for key, value in values.items()
    }


def _parse_script(text):
    """The script textarea as JSON (empty is `[]`); a ValidationError says where it is not JSON."""
    try:
        return json.loads((text or "").strip() or "[]")
    except json.JSONDecodeError as error:
        raise ValidationError(
            f"Script is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})."
        ) from None


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
        argument_rules, argument_descriptions = argument_settings(self.arguments)
        return {
            "restrict_multiple_calls": self.restrict_multiple_calls.data,
            "multiple_call_error_message": _text(self.multiple_call_error_message.data),
            "require_usage": self.require_usage.data,
            "return_directly": self.return_directly.data,
            "description_override": _text(self.description_override.data),
            "max_calls_per_run": _whole_number(self.max_calls_per_run.data),
            "max_identical_calls": _whole_number(self.max_identical_calls.data),
            "argument_rules": argument_rules,
            "argument_descriptions": argument_descriptions,
            "use_artifacts": self.use_artifacts.data,
            "progress_message": (self.progress_message.data or "").strip(),
            "require_approval": self.require_approval.data,
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
    new_argument = StringField(
        "Argument",
        description="The name of one of the tool's arguments, to give it a rule or a description.",
    )
    arguments = arguments_field(None)  # one per argument named: see client_tools_field

    def settings(self):
        argument_rules, argument_descriptions = argument_settings(self.arguments)
        return {
            "restrict_multiple_calls": self.restrict_multiple_calls.data,
            "multiple_call_error_message": _text(self.multiple_call_error_message.data),
            "require_usage": self.require_usage.data,
            "description_override": _text(self.description_override.data),
            "max_calls_per_run": _whole_number(self.max_calls_per_run.data),
            "max_identical_calls": _whole_number(self.max_identical_calls.data),
            "argument_rules": argument_rules,
            "argument_descriptions": argument_descriptions,
        }


def _client_tools_field(client_tools):
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


def _tools_field(tools):
    """One ToolSettingsForm per tool, as a sub-form whose fields are named tools-NAME-KEY. `tools` maps each name
    to the JSON Schema of its arguments (None for a tool the registry no longer has), which gives the tool's
    argument fields (tools-NAME-arguments-ARGUMENT-KEY)."""
    fields = {
        name: FormField(type("ToolSettingsForm", (ToolSettingsForm,), {"arguments": arguments_field(parameters)}))
        for name, parameters in tools.items()
    }
    return FormField(type("ToolsForm", (Form,), fields))


def _tool_error_field(form, parts):
    """The field of a tool's error key split on its dots (tools, NAME[, KEY[, ARGUMENT[, KEY]]]): the setting, else
    the checkbox."""
    if len(parts) < 2 or parts[1] not in form.tool_names:
        return None
    tool_form = form.tools[parts[1]].form
    argument_field = argument_error_field(tool_form, parts)
    if argument_field is not None:
        return argument_field
    return tool_form[parts[2]] if len(parts) == 3 and parts[2] in tool_form else tool_form.enabled


def _tools_form_data(agent, tools):
    """Each tool's checkbox and settings as form data: ticked with its settings when the agent enables it."""
    data = {}
    for name, parameters in tools.items():
        settings = agent["tools"].get(name)
        data[name] = {**TOOL_SETTING_DEFAULTS, **(settings or {}), "enabled": settings is not None}
        for key in ("max_calls_per_run", "max_identical_calls"):
            data[name][key] = str(data[name][key])
        data[name]["arguments"] = arguments_form_data(settings or {}, parameters)
    return data


AGENT_SCRIPT_HELP = Markup(
    'The scripted model\'s responses, as JSON: a list whose items are <code>{"content": "…"}</code> or '
    '<code>{"tool_calls": [{"id": "…", "name": "…", "arguments": {…}}]}</code>. Call ids default to '
    '<code>call_R_I</code> (response R, call I). An argument <code>"{{call_2_1}}"</code> is replaced by the '
    "result of call <code>call_2_1</code>. Used only when the provider is Scripted."
)
RUN_SCRIPT_HELP = Markup(
    'A list of responses, each <code>{"content": "…"}</code> or <code>{"tool_calls": [{"id", "name", '
    '"arguments"}]}</code>. <code>{{CALL_ID}}</code> in an argument is replaced by what that call returned. Edits '
    "apply to this run only."
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
        self.script_value = _parse_script(field.data)

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
            "description": _text(self.description.data),
            "system_prompt": _text(self.system_prompt.data),
            "provider": self.provider.data,
            "model": (self.model.data or "").strip(),
            "max_rounds": _whole_number(self.max_rounds.data),
            "on_round_cap": self.on_round_cap.data,
            "max_rounds_message": _text(self.max_rounds_message.data),
            "parallel_tool_calls": PARALLEL_TOOL_CALLS_VALUES.get(
                self.parallel_tool_calls.data, self.parallel_tool_calls.data
            ),
            **_request_settings_data(self),
            "tools": tools,
            "client_tools": {name: self.client_tools[name].settings() for name in self.client_tool_names},
            "script": getattr(self, "script_value", []),
            "revision": _whole_number(self.revision.data),
        }

    def field_for(self, key):
        """The field an engine.config error key ("label", "tools.NAME.KEY") belongs next to, or None."""
        parts = key.split(".")
        if parts[0] == "tools":
            return _tool_error_field(self, parts)
        if parts[0] == "client_tools":
            return _client_tool_error_field(self, parts)
        if len(parts) == 1 and parts[0] in self and parts[0] not in ("tools", "csrf_token", "revision"):
            return self[parts[0]]
        return None


def _client_tool_error_field(form, parts):
    """The field of a client tool's error key (client_tools, NAME[, KEY[, ARGUMENT[, KEY]]]), or None for an error
    about the tool as a whole (the top of the form says it)."""
    if len(parts) < 3 or parts[1] not in form.client_tool_names:
        return None
    tool_form = form.client_tools[parts[1]].form
    argument_field = argument_error_field(tool_form, parts)
    if argument_field is not None:
        return argument_field
    return tool_form[parts[2]] if len(parts) == 3 and parts[2] in tool_form else None


def agent_form_class(tools, client_tools=None):
    """An AgentForm with one ToolSettingsForm per registered tool (fields named tools-NAME-KEY); `tools` maps the
    names to the JSON Schemas of their arguments (ToolRegistry.parameters_by_name()). `client_tools` maps the
    client tools on the form to the arguments each shows (fields named client_tools-NAME-KEY)."""
    client_tools = client_tools or {}
    attributes = {
        "tools": _tools_field(tools),
        "tool_names": tuple(tools),
        **_request_settings_fields(tools),
        "client_tools": _client_tools_field(client_tools),
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
        "parallel_tool_calls": _parallel_tool_calls_choice(agent["parallel_tool_calls"]),
        "max_rounds": str(agent["max_rounds"]),
        "on_round_cap": agent["on_round_cap"],
        "max_rounds_message": agent["max_rounds_message"],
        **_request_settings_form_data(agent),
        "script": json.dumps(agent["script"], indent=2, ensure_ascii=False),
        "revision": str(agent["revision"]),
        "tools": _tools_form_data(agent, tools),
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
            self.script_value = _parse_script(field.data)

    def run_message(self):
        return _text(self.message.data)

    def run_settings(self):
        """The posted settings in the JSON form, for engine.config.overrides_between: the round cap and, when it
        was read, the script; the request settings; every offered tool's settings, None for the tools left
        unticked."""
        settings = {"max_rounds": _whole_number(self.max_rounds.data), "on_round_cap": self.on_round_cap.data}
        settings["parallel_tool_calls"] = PARALLEL_TOOL_CALLS_VALUES.get(
            self.parallel_tool_calls.data, self.parallel_tool_calls.data
        )
        settings.update(_request_settings_data(self))
        if hasattr(self, "script_value"):
            settings["script"] = self.script_value
        tools = {name: self.tools[name] for name in self.tool_names}
        settings["tools"] = {name: form.settings() if form.enabled.data else None for name, form in tools.items()}
        return settings

    def field_for(self, key):
        """The field an engine error key ("max_rounds", "tools.NAME.KEY", "message") belongs next to."""
        parts = key.removeprefix("overrides.").split(".")
        if parts[0] == "tools":
            return _tool_error_field(self, parts)
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
    attributes = {"tools": _tools_field(tools), "tool_names": tuple(tools), "scripted": scripted}
    return type("BoundRunForm", (RunForm,), {**attributes, **_request_settings_fields(tools)})


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
    kwargs.setdefault("data", _run_form_data(prefill, {name: tools.get(name) for name in names}, message))
    return form_class(**kwargs)


def _run_form_data(agent, tools, message):
    return {
        "message": message,
        "max_rounds": str(agent["max_rounds"]),
        "on_round_cap": agent["on_round_cap"],
        "parallel_tool_calls": _parallel_tool_calls_choice(agent["parallel_tool_calls"]),
        **_request_settings_form_data(agent),
        "script": json.dumps(agent.get("script", []), indent=2, ensure_ascii=False),
        "tools": _tools_form_data(agent, tools),
    }


def _parse_json_object(label, text):
    """A JSON object typed into a textarea (empty is `{}`); a ValidationError says where it is not JSON."""
    try:
        return json.loads((text or "").strip() or "{}")
    except json.JSONDecodeError as error:
        raise ValidationError(
            f"{label} is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})."
        ) from None


def _json_text(value):
    return json.dumps(value, indent=2, ensure_ascii=False) if value else ""


class ProviderForm(FlaskForm):
    label = StringField("Label")
    id = StringField(
        "Machine name", description="Lowercase letters, digits and underscores. Derived from the label when left empty."
    )
    base_url = StringField(
        "Base URL",
        description="The OpenAI-compatible endpoint, e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1 "
        "for Ollama.",
        render_kw={"placeholder": "https://api.openai.com/v1"},
    )
    api_key_env = StringField(
        "API key environment variable",
        default="OPENAI_API_KEY",
        description="The name of the environment variable that holds the key, not the key itself. It must end in "
        "_API_KEY, or be listed by the administrator in TOOLGATE_KEY_VARIABLES. Leave empty for a server that takes "
        "no key (a local Ollama or llama.cpp).",
    )
    default_model = StringField("Default model", description="Used when an agent names no model.")
    timeout = StringField(
        "Timeout (seconds)",
        default="60",
        description="The longest one request may take, retries included: a slow or trickling answer is cut off at "
        "this deadline.",
        widget=NumberInput(min=1, step="any"),
    )
    max_retries = StringField(
        "Retries",
        default="2",
        description="0 to 10. A 429 or 5xx answer, or a failed connection, is asked again after a growing wait, or "
        "the wait the server's Retry-After asks for; never past the timeout.",
        widget=NumberInput(min=0, max=MAX_RETRIES_LIMIT),
    )
    headers = TextAreaField(
        "Extra headers (JSON)",
        description='Sent with every request, e.g. {"X-Team": "search"} for a gateway that routes on it. Not for the '
        "key: it comes from the environment variable.",
        render_kw={"rows": 3, "spellcheck": "false"},
    )
    extra_body = TextAreaField(
        "Extra body fields (JSON)",
        description='Merged into every request body, e.g. {"top_k": 20} or {"metadata": {"app": "toolgate"}}. Model, '
        "messages, tools and the sampling settings come from the agent.",
        render_kw={"rows": 3, "spellcheck": "false"},
    )

    def validate_headers(self, field):
        _parse_json_object(field.label.text, field.data)

    def validate_extra_body(self, field):
        _parse_json_object(field.label.text, field.data)

    def provider_data(self, provider_id):
        timeout_text = (self.timeout.data or "").strip()
        try:
            timeout = float(timeout_text)
        except ValueError:
            timeout = timeout_text
        data = {
            "id": provider_id,
            "label": (self.label.data or "").strip(),
            "base_url": (self.base_url.data or "").strip(),
            "api_key_env": (self.api_key_env.data or "").strip(),
            "default_model": (self.default_model.data or "").strip(),
            "timeout": timeout,
            "max_retries": _whole_number(self.max_retries.data),
        }
        for name in ("headers", "extra_body"):
            try:
                data[name] = _parse_json_object(name, self[name].data)
            except ValidationError:
                data[name] = self[name].data  # validate_headers has said why; the store refuses it too
        return data

    def field_for(self, key):
        return self[key] if key in self and key != "csrf_token" else None


def provider_to_form_data(provider):
    """A stored connection as the form's data, for editing."""
    return {
        **provider,
        "timeout": f"{provider['timeout']:g}",
        "max_retries": str(provider["max_retries"]),
        "headers": _json_text(provider["headers"]),
        "extra_body": _json_text(provider["extra_body"]),
    }


class DocumentForm(FlaskForm):
    title = StringField("Title")
    id = StringField(
        "Document id",
        description="Lowercase letters, digits, hyphens and underscores. Derived from the title when left empty.",
    )
    body = TextAreaField("Body", render_kw={"rows": 16})

    def document_data(self, doc_id):
        return {"id": doc_id, "title": (self.title.data or "").strip(), "body": self.body.data or ""}

    def field_for(self, key):
        return self[key] if key in ("id", "title", "body") else None


class DeleteForm(FlaskForm):
    """No fields: gives a button that only posts (Delete, Run again) its CSRF token."""


def apply_errors(form, errors):
    """Put validation errors ({"field": "message"}, engine.config's keys) next to their fields, each message
    starting with the field's label. Returns the messages that belong to no field, for the top of the form."""
    unplaced = []
    for key, message in errors.items():
        field = form.field_for(key) or form.field_for(key.partition("[")[0])  # "script[2]": the script field
        if field is None:
            unplaced.append(f"{key}: {message}")
        else:
            field.errors = [*field.errors, f"{field.label.text} {message}."]
    return unplaced


class CaseForm(FlaskForm):
    """A regression case's page: its name, and which of its expectations are pinned (the ticked keys)."""

    name = StringField("Case name")
    pinned = SelectMultipleField("Pinned expectations", validate_choice=False)

    def field_for(self, key):
        return self.name if key == "name" else self.pinned if key == "unpinned" else None


def case_form(case, expectation_keys, **kwargs):
    """The case form bound to the request's POST data, else to the stored case."""
    kwargs.setdefault(
        "data", {"name": case["name"], "pinned": [k for k in expectation_keys if k not in case["unpinned"]]}
    )
    form = CaseForm(**kwargs)
    form.pinned.choices = list(expectation_keys)
    return form


class SaveCaseForm(FlaskForm):
    """The "Save as regression case" form on a run's page; an empty name gets a default from the run."""

    name = StringField("Case name", description="Leave empty to name it after the run's message.")
