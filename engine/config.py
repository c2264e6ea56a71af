"""Agent and tool settings (SPEC §2–3): defaults, validation, runtime overrides, machine names.

The JSON form of an agent (a plain dict) is what storage, the API and the CLI exchange; `AgentConfig` is the
typed, validated, frozen form the loop and the gate read. Every key defaults, so a stored agent from an older
version needs no migration when a setting is added.
"""

import copy
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import urlsplit

from .arguments import check_argument_descriptions, check_argument_rules, rules_from_json

ID_MAX = 64
ID_PATTERN = re.compile(rf"^[a-z][a-z0-9_]{{0,{ID_MAX - 1}}}$")
ID_RULE = (
    "must start with a lowercase letter and contain only lowercase letters, digits and underscores "
    f"(at most {ID_MAX} characters)"
)
ON_ROUND_CAP_CHOICES = ("final_answer", "message")
SCRIPTED_PROVIDER = "scripted"
MAX_ROUNDS_LIMIT = 100
LABEL_MAX = 200
DESCRIPTION_MAX = 2_000
SYSTEM_PROMPT_MAX = 100_000
MESSAGE_MAX = 10_000
MAX_CALLS_PER_RUN_LIMIT = 10_000
TOOL_CHOICE_MODES = ("auto", "required")
MAX_TOKENS_LIMIT = 1_000_000
APPROVAL_TIMEOUT_LIMIT = 3_600  # seconds: at most what a common client waits for an answer
URL_MAX = 2_000
SEED_LIMIT = 2**63  # a signed 64-bit integer, what OpenAI accepts
SCRIPT_MAX_RESPONSES = 1_000
MAX_CALLS_PER_RESPONSE = 128
# Levels of arrays and objects inside one field's value (for the script: inside one response). Deeper JSON is
# refused when an agent is saved, when a run starts and at the gate, before anything copies or walks it.
MAX_DEPTH = 32
NOT_UNICODE = "is not valid Unicode text (it holds a lone surrogate or bytes that are not UTF-8)"
# C0, DEL and C1: what a name shown on one line (and written into a JUnit report, whose XML 1.0 cannot hold most of
# them) must not hold.
CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f-\x9f]")

TOOL_SETTING_DEFAULTS = MappingProxyType(
    {
        "restrict_multiple_calls": False,
        "multiple_call_error_message": "",
        "require_usage": False,
        "return_directly": False,
        "description_override": "",
        "max_calls_per_run": 0,
        "max_identical_calls": 0,
        "argument_rules": {},
        "argument_descriptions": {},
        "use_artifacts": False,
        "progress_message": "",
        "require_approval": False,
    }
)

# The settings that mean something for a tool the client runs (the proxy and the gate API apply them): not those
# that act on a tool's execution or output, which Toolgate never sees.
CLIENT_TOOL_SETTING_DEFAULTS = MappingProxyType(
    {
        key: TOOL_SETTING_DEFAULTS[key]
        for key in (
            "restrict_multiple_calls",
            "multiple_call_error_message",
            "require_usage",
            "description_override",
            "max_calls_per_run",
            "max_identical_calls",
            "argument_rules",
            "argument_descriptions",
            "require_approval",
        )
    }
)
CLIENT_RUNS_IT = "does not apply to a client tool: Toolgate never runs it"
# What OpenAI accepts as a function name.
TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

AGENT_DEFAULTS = MappingProxyType(
    {
        "label": "",
        "description": "",
        "system_prompt": "",
        "provider": SCRIPTED_PROVIDER,
        "model": "",
        "max_rounds": 10,
        "on_round_cap": "final_answer",
        "max_rounds_message": "",
        "parallel_tool_calls": None,
        "tool_choice": "auto",
        "temperature": None,
        "top_p": None,
        "seed": None,
        "max_tokens": None,
        "tools": {},
        "client_tools": {},
        "script": [],
        "approval_timeout_seconds": 300,
        "approval_webhook": "",
        "revision": 1,
    }
)
TOOL_MAPS = {"tools": TOOL_SETTING_DEFAULTS, "client_tools": CLIENT_TOOL_SETTING_DEFAULTS}

# Fields a run may not override: they name the agent rather than configure it.
NOT_OVERRIDABLE = ("id", "revision")


class ValidationError(ValueError):
    """Bad input, anywhere: an agent, a tool setting, a run's message, gate input, a document, a provider.
    `errors` maps each offending field (`tools.NAME.KEY` for a tool setting) to a message; `field` is the first
    of them and the exception text reads "field: message"."""

    def __init__(self, errors):
        # Errors may quote what was sent: kept printable, so any page, terminal or JSON can show them.
        self.errors = {printable(field): printable(message) for field, message in dict(errors).items()}
        self.field, message = next(iter(self.errors.items()))
        super().__init__(f"{self.field}: {message}")


def _empty_mapping():
    return MappingProxyType({})


@dataclass(frozen=True)
class ToolSettings:
    restrict_multiple_calls: bool = False
    multiple_call_error_message: str = ""
    require_usage: bool = False
    return_directly: bool = False
    description_override: str = ""
    max_calls_per_run: int = 0
    max_identical_calls: int = 0
    argument_rules: MappingProxyType = field(default_factory=_empty_mapping)  # argument name -> ArgumentRule
    argument_descriptions: MappingProxyType = field(default_factory=_empty_mapping)  # argument name -> text
    use_artifacts: bool = False
    progress_message: str = ""
    require_approval: bool = False

    @classmethod
    def from_json(cls, settings):
        """The settings of an already validated tool settings dict."""
        return cls(
            **{
                **settings,
                "argument_rules": MappingProxyType(rules_from_json(settings["argument_rules"])),
                "argument_descriptions": MappingProxyType(dict(settings["argument_descriptions"])),
            }
        )


@dataclass(frozen=True)
class AgentConfig:
    id: str
    label: str
    description: str = ""
    system_prompt: str = ""
    provider: str = SCRIPTED_PROVIDER
    model: str = ""
    max_rounds: int = 10
    on_round_cap: str = "final_answer"
    max_rounds_message: str = ""
    parallel_tool_calls: bool | None = None
    tool_choice: str = "auto"
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    tools: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    client_tools: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))  # name -> ToolSettings
    script: tuple = ()
    approval_timeout_seconds: int = 300
    approval_webhook: str = ""
    revision: int = 1

    def settings_for(self, tool_name):
        return self.tools.get(tool_name, ToolSettings())


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def is_valid_id(value):
    """An agent's id, and a provider connection's (which agents name as their `provider`)."""
    return isinstance(value, str) and ID_PATTERN.match(value) is not None


def machine_name(label):
    """A machine name derived from a label: "My agent!" -> "my_agent"; "" when the label has no letter or digit."""
    name = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
    if name and not name[0].isalpha():
        name = f"agent_{name}"
    return name[:ID_MAX].rstrip("_")


def is_valid_unicode(text):
    """False for a string holding a lone surrogate: Python allows one ("\\ud800" in JSON, bad bytes in a command
    line), UTF-8 does not, so SQLite could not store it and no page could show it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable(text):
    """`text` with any lone surrogate written as an escape (\\ud800)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def json_value_problem(value, max_depth=MAX_DEPTH):
    """(where, why) for the first part of a JSON value that cannot be taken, or None: a string or key that is not
    valid Unicode, a number JSON does not have (NaN, Infinity), or nesting deeper than `max_depth` (None: any).
    `where` is the path inside the value (".tools.x", "[0].id"; "" for the value itself, and for nesting).
    Walks in document order without recursion, keeping only the open containers, so any size and depth is safe."""
    steps = []  # the path to the container the last iterator walks
    open_items = [iter([("", value)])]
    while open_items:
        entry = next(open_items[-1], None)
        if entry is None:
            open_items.pop()
            if open_items:
                steps.pop()
            continue
        step, item = entry
        if isinstance(item, str) and not is_valid_unicode(item):
            return "".join([*steps, step]), NOT_UNICODE
        if isinstance(item, float) and not math.isfinite(item):
            return "".join([*steps, step]), "is NaN or Infinity, which are not JSON numbers"
        if isinstance(item, (dict, list)):
            if max_depth is not None and len(open_items) > max_depth:
                return "", f"is nested more than {max_depth} levels deep"
            if isinstance(item, dict):
                bad_key = next((key for key in item if isinstance(key, str) and not is_valid_unicode(key)), None)
                if bad_key is not None:
                    return "".join([*steps, step, f".{printable(bad_key)}"]), NOT_UNICODE
                children = ((f".{key}", child) for key, child in item.items())
            else:
                children = ((f"[{index}]", child) for index, child in enumerate(item))
            steps.append(step)
            open_items.append(children)
    return None


def field_value_problems(name, value, prefix=""):
    """{error key: message} for what json_value_problem finds in one agent field's value (keys start with
    `prefix`); a script is checked response by response, after its length, so that nesting names the response."""
    key = f"{prefix}{name}"
    if name == "script" and isinstance(value, list):
        if len(value) > SCRIPT_MAX_RESPONSES:
            return {key: f"must have at most {SCRIPT_MAX_RESPONSES:,} responses (got {len(value):,})"}
        for index, item in enumerate(value):
            problem = json_value_problem(item)
            if problem:
                return {f"{key}[{index}]{problem[0]}": problem[1]}
        return {}
    problem = json_value_problem(value)
    return {f"{key}{problem[0]}": problem[1]} if problem else {}


def check_text(errors, data, name, maximum, required=False, error_key=None, one_line=False):
    """Put a message in `errors` if data[name] is not valid Unicode text of at most `maximum` characters (not
    blank if `required`; without control characters, tabs and line breaks included, if `one_line`). Every validator
    checks its text fields with it: agents, documents, providers, tokens, cases."""
    value = data.get(name)
    error_key = error_key or name
    if not isinstance(value, str):
        errors[error_key] = "must be a string"
    elif not is_valid_unicode(value):
        errors[error_key] = NOT_UNICODE
    elif one_line and (control := CONTROL_CHARACTER.search(value)):
        shown = control.group().encode("unicode_escape").decode("ascii")
        errors[error_key] = f"must be one line without control characters (character {control.start() + 1} is {shown})"
    elif required and not value.strip():
        errors[error_key] = "is required"
    elif len(value) > maximum:
        errors[error_key] = f"must be at most {maximum:,} characters (got {len(value):,})"


def _check_int(errors, name, value, low, high):
    if not _is_int(value):
        errors[name] = f"must be a whole number from {low} to {high}"
    elif not low <= value <= high:
        errors[name] = f"must be from {low} to {high} (got {value})"


def _check_optional_number(errors, name, value, low, high):
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        errors[name] = f"must be empty (null) or a number from {low} to {high}"
    elif not low <= value <= high:
        errors[name] = f"must be from {low} to {high} (got {value})"


def _check_request_settings(errors, agent):
    """What the agent sends with each request besides the messages and tools (SPEC §2)."""
    tool_choice = agent["tool_choice"]
    if tool_choice not in TOOL_CHOICE_MODES and not (
        isinstance(tool_choice, str) and isinstance(agent["tools"], dict) and tool_choice in agent["tools"]
    ):
        not_enabled = f' ("{tool_choice}" is not enabled)' if isinstance(tool_choice, str) and tool_choice else ""
        errors["tool_choice"] = f'must be "auto", "required" or the name of an enabled tool{not_enabled}'
    _check_optional_number(errors, "temperature", agent["temperature"], 0, 2)
    _check_optional_number(errors, "top_p", agent["top_p"], 0, 1)
    if agent["seed"] is not None and not (_is_int(agent["seed"]) and -SEED_LIMIT <= agent["seed"] < SEED_LIMIT):
        errors["seed"] = "must be empty (null) or a whole number (a signed 64-bit integer)"
    max_tokens = agent["max_tokens"]
    if max_tokens is not None and not (_is_int(max_tokens) and 1 <= max_tokens <= MAX_TOKENS_LIMIT):
        errors["max_tokens"] = f"must be empty (null) or a whole number from 1 to {MAX_TOKENS_LIMIT:,}"


def _check_webhook(errors, url):
    """`approval_webhook`: empty, or an http(s) URL. Where it points is judged when it is sent to (the address rule,
    with what the operator allows: services.approval_webhooks), as for a provider connection's URL."""
    if url == "":
        return
    try:
        parts = urlsplit(url) if isinstance(url, str) else None
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        errors["approval_webhook"] = "must be empty or an http:// or https:// URL, such as https://hooks.example.com/x"
    elif len(url) > URL_MAX:
        errors["approval_webhook"] = f"must be at most {URL_MAX:,} characters"


def _check_tool_settings(errors, prefix, tool_name, settings, defaults, parameters):
    """Put a message in `errors` for every bad setting of one tool (`defaults` says which keys it may have, a
    registered tool's or a client tool's); normalise the per-argument settings in place (defaults filled in,
    empty entries dropped). `parameters`: the tool's JSON Schema, or None when it is not known."""
    if not isinstance(settings, dict):
        errors[prefix] = "tool settings must be an object"
        return
    for key in settings:
        if key not in defaults:
            client_only = key in TOOL_SETTING_DEFAULTS
            errors[f"{prefix}.{key}"] = CLIENT_RUNS_IT if client_only else "is not a tool setting"
    for key in ("restrict_multiple_calls", "require_usage", "return_directly", "use_artifacts", "require_approval"):
        if key in defaults and not isinstance(settings[key], bool):
            errors[f"{prefix}.{key}"] = "must be true or false"
    for key in ("multiple_call_error_message", "description_override"):
        check_text(errors, settings, key, DESCRIPTION_MAX, error_key=f"{prefix}.{key}")
    if "progress_message" in defaults:
        check_text(errors, settings, "progress_message", LABEL_MAX, error_key=f"{prefix}.progress_message")
    for key in ("max_calls_per_run", "max_identical_calls"):
        _check_int(errors, f"{prefix}.{key}", settings[key], 0, MAX_CALLS_PER_RUN_LIMIT)
    settings["argument_rules"] = check_argument_rules(errors, prefix, tool_name, settings["argument_rules"], parameters)
    settings["argument_descriptions"] = check_argument_descriptions(
        errors, prefix, tool_name, settings["argument_descriptions"], parameters, DESCRIPTION_MAX
    )


def _check_tools(errors, tools, known_tools):
    if not isinstance(tools, dict):
        errors["tools"] = "must be an object mapping tool names to settings"
        return
    for tool_name, settings in tools.items():
        prefix = f"tools.{tool_name}"
        if known_tools is not None and tool_name not in known_tools:
            errors[prefix] = f'"{tool_name}" is not a registered tool'
            continue
        parameters = known_tools.get(tool_name) if isinstance(known_tools, Mapping) else None
        _check_tool_settings(errors, prefix, tool_name, settings, TOOL_SETTING_DEFAULTS, parameters)


def _check_client_tools(errors, client_tools, tools):
    """Client tools need not be registered, and their schema is the client's: only the names and the settings'
    shapes are checked. A name the agent also enables in `tools` would be run by both, so it is refused."""
    if not isinstance(client_tools, dict):
        errors["client_tools"] = "must be an object mapping tool names to settings"
        return
    for tool_name, settings in client_tools.items():
        prefix = f"client_tools.{tool_name}"
        if not TOOL_NAME_PATTERN.match(tool_name):
            errors[prefix] = "a tool name is 1 to 64 letters, digits, underscores or hyphens"
        elif isinstance(tools, dict) and tool_name in tools:
            errors[prefix] = (
                f'"{tool_name}" is also one of the agent\'s tools, which Toolgate runs; a tool is run either by '
                "Toolgate or by the client"
            )
        else:
            _check_tool_settings(errors, prefix, tool_name, settings, CLIENT_TOOL_SETTING_DEFAULTS, None)


def check_script(script):
    """The scripted model's responses (SPEC §7): a list of `{"content"}` or `{"tool_calls"}` items.
    Returns an error message, or None when the script is well formed."""
    if not isinstance(script, list):
        return "must be a list of responses"
    for index, item in enumerate(script, start=1):
        if not isinstance(item, dict):
            return f"response {index} must be an object"
        unknown = set(item) - {"content", "tool_calls"}
        if unknown:
            return f"response {index} has unknown key(s): {', '.join(sorted(unknown))}"
        if "content" not in item and "tool_calls" not in item:
            return f'response {index} needs "content" or "tool_calls"'
        if "content" in item and not isinstance(item["content"], str):
            return f'response {index}: "content" must be a string'
        calls = item.get("tool_calls", [])
        if not isinstance(calls, list):
            return f'response {index}: "tool_calls" must be a list'
        if len(calls) > MAX_CALLS_PER_RESPONSE:
            return f"response {index} has {len(calls):,} tool calls; at most {MAX_CALLS_PER_RESPONSE} are allowed"
        for number, call in enumerate(calls, start=1):
            where = f"response {index}, tool call {number}"
            if not isinstance(call, dict):
                return f"{where} must be an object"
            unknown = set(call) - {"id", "name", "arguments"}
            if unknown:
                return f"{where} has unknown key(s): {', '.join(sorted(unknown))}"
            if not isinstance(call.get("name"), str) or not call["name"]:
                return f'{where} needs a "name"'
            if "id" in call and (not isinstance(call["id"], str) or not call["id"]):
                return f'{where}: "id" must be a non-empty string'
            if not isinstance(call.get("arguments", {}), (dict, str)):
                return f'{where}: "arguments" must be an object or a string'
    return None


def fill_defaults(data):
    """A deep copy of an agent's JSON form with every missing field and tool setting set to its default."""
    return with_defaults(copy.deepcopy(data))


def with_defaults(data):
    """fill_defaults without copying `data`'s values: for a dict just read from JSON, which nobody else holds (and
    which may be nested too deeply to copy, if an older version stored it; validation then says so)."""
    filled = copy.deepcopy(dict(AGENT_DEFAULTS))
    filled.update(data)
    for key, defaults in TOOL_MAPS.items():
        if isinstance(filled.get(key), dict):
            filled[key] = {
                name: {**copy.deepcopy(dict(defaults)), **settings} if isinstance(settings, dict) else settings
                for name, settings in filled[key].items()
            }
    return filled


def validate_agent(data, known_tools=None):
    """Validate an agent's JSON form and return it with every default filled in.

    `known_tools`: the registered tools, as a mapping of name to the JSON Schema of its arguments
    (`ToolRegistry.parameters_by_name()`), which also checks the argument rules and descriptions against the
    schema; or as a set of names, which checks the names only; None skips both. Raises ValidationError listing
    every bad field. System prompt line endings are normalised to `\\n`; argument rules without an action and
    empty argument descriptions are dropped.
    """
    if not isinstance(data, dict):
        raise ValidationError({"agent": "must be a JSON object"})
    problems = {
        key: message for name, value in data.items() for key, message in field_value_problems(name, value).items()
    }
    if problems:
        raise ValidationError(problems)  # before anything copies a value nested too deeply
    agent = fill_defaults(data)
    errors = {}
    for key in agent:
        if key not in AGENT_DEFAULTS and key != "id":
            errors[key] = "is not an agent field"
    if not is_valid_id(agent.get("id")):
        errors["id"] = ID_RULE
    check_text(errors, agent, "label", LABEL_MAX, required=True)
    check_text(errors, agent, "description", DESCRIPTION_MAX)
    check_text(errors, agent, "system_prompt", SYSTEM_PROMPT_MAX)
    check_text(errors, agent, "model", LABEL_MAX)
    check_text(errors, agent, "max_rounds_message", DESCRIPTION_MAX)
    if isinstance(agent.get("system_prompt"), str):
        agent["system_prompt"] = agent["system_prompt"].replace("\r\n", "\n")
    if not is_valid_id(agent["provider"]):
        errors["provider"] = '"scripted" or the id of a provider connection'
    _check_int(errors, "max_rounds", agent["max_rounds"], 0, MAX_ROUNDS_LIMIT)
    if agent["on_round_cap"] not in ON_ROUND_CAP_CHOICES:
        errors["on_round_cap"] = f"must be one of: {', '.join(ON_ROUND_CAP_CHOICES)}"
    if agent["parallel_tool_calls"] is not None and not isinstance(agent["parallel_tool_calls"], bool):
        errors["parallel_tool_calls"] = "must be true, false or null"
    _check_request_settings(errors, agent)
    _check_int(errors, "approval_timeout_seconds", agent["approval_timeout_seconds"], 1, APPROVAL_TIMEOUT_LIMIT)
    _check_webhook(errors, agent["approval_webhook"])
    if not _is_int(agent["revision"]) or agent["revision"] < 1:
        errors["revision"] = "must be a whole number of at least 1"
    _check_tools(errors, agent["tools"], known_tools)
    _check_client_tools(errors, agent["client_tools"], agent["tools"])
    script_error = check_script(agent["script"])
    if script_error:
        errors["script"] = script_error
    if errors:
        raise ValidationError(errors)
    for settings in [*agent["tools"].values(), *agent["client_tools"].values()]:
        if not settings["restrict_multiple_calls"]:
            settings["multiple_call_error_message"] = ""
    return agent


def apply_overrides(agent, overrides):
    """The agent with `overrides` merged key by key (tool settings too), as a new dict.

    `{"tools": {"name": {...}}}` merges into that tool's settings, enabling it if it was not; `null` for a
    tool disables it for the run. `client_tools` merge the same way.
    """
    merged = copy.deepcopy(agent)
    if overrides is None:
        return merged
    if not isinstance(overrides, dict):
        raise ValidationError({"overrides": "must be a JSON object"})
    problems = {
        key: message
        for name, value in overrides.items()
        for key, message in field_value_problems(name, value, prefix="overrides.").items()
    }
    if problems:
        raise ValidationError(problems)
    errors = {}
    for key, value in overrides.items():
        if key in NOT_OVERRIDABLE:
            errors[f"overrides.{key}"] = "cannot be overridden for a run"
        elif key not in AGENT_DEFAULTS:
            errors[f"overrides.{key}"] = "is not an agent field"
        elif key in TOOL_MAPS:
            if not isinstance(value, dict):
                errors[f"overrides.{key}"] = "must be an object mapping tool names to settings"
                continue
            tools = merged.setdefault(key, {})
            for tool_name, settings in value.items():
                if settings is None:
                    tools.pop(tool_name, None)
                elif isinstance(settings, dict):
                    tools[tool_name] = {**tools.get(tool_name, {}), **copy.deepcopy(settings)}
                else:
                    errors[f"overrides.{key}.{tool_name}"] = "must be an object of tool settings, or null"
        else:
            merged[key] = copy.deepcopy(value)
    if errors:
        raise ValidationError(errors)
    return merged


def overrides_between(agent, wanted):
    """The run overrides that turn the stored `agent` into what a run `wanted`: only what differs, so a run
    records what was changed for it. `wanted` holds agent fields; its `tools` maps a tool name to the settings
    wanted for it, or None for "not enabled". Fields and tools it leaves out stay as stored.

    A tool enabled for the run only is recorded with the settings that differ from the defaults (`{}` for none).
    The custom message is left out while the restriction is off: validate_agent clears it then anyway.
    """
    overrides = {key: value for key, value in wanted.items() if key != "tools" and value != agent.get(key)}
    tools = {}
    for name, settings in wanted.get("tools", {}).items():
        stored = agent["tools"].get(name)
        if settings is None:
            if stored is not None:
                tools[name] = None
            continue
        baseline = stored if stored is not None else TOOL_SETTING_DEFAULTS
        changed = {key: value for key, value in settings.items() if value != baseline.get(key)}
        if not settings.get("restrict_multiple_calls"):
            changed.pop("multiple_call_error_message", None)
        if changed or stored is None:
            tools[name] = changed
    if tools:
        overrides["tools"] = tools
    return overrides


def build_config(agent):
    """The frozen AgentConfig of an already validated agent dict."""
    tools, client_tools = (
        MappingProxyType({name: ToolSettings.from_json(settings) for name, settings in agent[key].items()})
        for key in TOOL_MAPS
    )
    return AgentConfig(
        **{key: agent[key] for key in AGENT_DEFAULTS if key not in (*TOOL_MAPS, "script")},
        id=agent["id"],
        tools=tools,
        client_tools=client_tools,
        script=tuple(copy.deepcopy(agent["script"])),
    )


def load_agent(agent, overrides=None, known_tools=None):
    """Validate, apply overrides, validate the result: the config one run uses, and the merged JSON form."""
    base = validate_agent(agent, known_tools)
    if overrides in (None, {}):  # the validated agent is already the run's: no second copy to check
        return build_config(base), base
    merged = validate_agent(apply_overrides(base, overrides), known_tools)
    return build_config(merged), merged
