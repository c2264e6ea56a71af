"""The policy file (issue 34): one agent as YAML, for a team to keep in git and review as a diff.

A file holds the agent's id and what differs from the defaults of engine/config.py (SPEC §2–3), in the field order
of SPEC §2, tools and arguments sorted by name, long and multi-line texts as block scalars; it starts with a line
pointing editors at the JSON Schema (`agent_schema`, published as schema/agent.json and at /schema/agent.json).
What it leaves out: the revision (the database's count of saves) and the order the tools were enabled in.

Reading is strict: YAML's anchors and aliases (the "billion laughs" bomb), merge keys, tags beyond JSON's types,
keys that are not text and a key given twice are refused at the line they are on, and a file is refused unread
past FILE_MAX_BYTES. Timestamps stay text: a policy holds JSON values only.
"""

import json
import re

import yaml
from yaml.nodes import MappingNode, SequenceNode

from engine.arguments import ACTIONS, RULE_DEFAULTS
from engine.config import (
    AGENT_DEFAULTS,
    APPROVAL_TIMEOUT_LIMIT,
    CLIENT_TOOL_SETTING_DEFAULTS,
    DESCRIPTION_MAX,
    ID_PATTERN,
    LABEL_MAX,
    MAX_CALLS_PER_RESPONSE,
    MAX_CALLS_PER_RUN_LIMIT,
    MAX_ROUNDS_LIMIT,
    MAX_TOKENS_LIMIT,
    ON_ROUND_CAP_CHOICES,
    SCRIPT_MAX_RESPONSES,
    SEED_LIMIT,
    SYSTEM_PROMPT_MAX,
    TOOL_MAPS,
    TOOL_NAME_PATTERN,
    TOOL_SETTING_DEFAULTS,
    URL_MAX,
)

FILE_MAX_BYTES = 2 * 1024 * 1024
SCHEMA_LINE = "# yaml-language-server: $schema={url}\n"
# Fields a file never holds: the revision counts the database's saves, not the policy's content.
NOT_IN_FILE = ("revision",)
FILE_FIELDS = ("id", *(key for key in AGENT_DEFAULTS if key not in NOT_IN_FILE))
BLOCK_TEXT_WIDTH = 80  # a one-line text longer than this is written folded, over several lines
ARGUMENT_MAPS = ("argument_rules", "argument_descriptions")
OTHER_BREAKS = re.compile("[\r\x85\u2028\u2029]")
JSON_TAGS = {f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "str", "seq", "map")}


class FileProblem(ValueError):
    """What is wrong with a file, at a line (None when it is the whole file) and a field (None when it is not
    one field)."""

    def __init__(self, message, line=None, field=None):
        self.message, self.line, self.field = message, line, field
        super().__init__(message)

    def describe(self, name):
        where = f"{name}:{self.line}" if self.line else name
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


def _at(node, message):
    return FileProblem(message, line=node.start_mark.line + 1)


class _Loader(yaml.SafeLoader):
    """yaml.SafeLoader, refusing what a policy has no use for and what makes reading it costly or ambiguous."""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise FileProblem(
                "anchors and aliases (&name, *name) are not allowed in a policy file: write each value out",
                line=event.start_mark.line + 1,
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        if not isinstance(node, MappingNode):
            raise _at(node, "expected a mapping")
        mapping = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise _at(key_node, "merge keys (<<) are not allowed in a policy file")
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                raise _at(key_node, f"the key {key_node.value!r} is not text; put it in quotes")
            if key in mapping:
                raise _at(key_node, f'the key "{key}" is given twice in the same mapping')
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


def _refuse_tag(loader, node):
    raise _at(
        node,
        f"the tag {node.tag} is not allowed: a policy file holds text, numbers, true/false, null, lists and mappings",
    )


_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.yaml_constructors = {tag: build for tag, build in yaml.SafeLoader.yaml_constructors.items() if tag in JSON_TAGS}
_Loader.add_constructor(None, _refuse_tag)


def _field_lines(root):
    """{field path: line} for every key and list item under `root`, the paths written as ValidationError names
    fields (`tools.NAME.KEY`, `script[0]`)."""
    lines, pending = {}, [("", root)]
    while pending:
        path, node = pending.pop()
        if isinstance(node, MappingNode):
            children = ((f"{path}.{key.value}" if path else str(key.value), key, value) for key, value in node.value)
        elif isinstance(node, SequenceNode):
            children = ((f"{path}[{index}]", item, item) for index, item in enumerate(node.value))
        else:
            continue
        for child_path, marked, child in children:
            lines.setdefault(child_path, marked.start_mark.line + 1)
            pending.append((child_path, child))
    return lines


def line_of(lines, field):
    """The line of `field`, or of the nearest enclosing field the file has (a field it leaves out: None)."""
    while field:
        if field in lines:
            return lines[field]
        cut = max(field.rfind("."), field.rfind("["))
        field = field[:cut] if cut > 0 else ""
    return None


def read_policy(content):
    """(the agent's fields, {field path: line}) from a file's bytes. Raises FileProblem."""
    if len(content) > FILE_MAX_BYTES:
        raise FileProblem(
            f"is {len(content):,} bytes; a policy file may be at most {FILE_MAX_BYTES:,} bytes "
            f"({FILE_MAX_BYTES // (1024 * 1024)} MB)"
        )
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise FileProblem(f"is not UTF-8 text (byte {error.start + 1} is not)") from None
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = " ".join(part for part in (error.context, error.problem) if part)
        raise FileProblem(f"is not valid YAML: {problem}", line=mark.line + 1 if mark else None) from None
    except yaml.YAMLError as error:
        raise FileProblem(f"is not valid YAML: {error}") from None
    except RecursionError:
        raise FileProblem("is nested too deeply to be read") from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise FileProblem("must be a mapping of agent fields (id: …, label: …)", line=1)
    return data, _field_lines(root)


# --- Writing --------------------------------------------------------------------------------------------------


def _differs(value, default):
    return value != default or type(value) is not type(default)


def _settings_form(settings, defaults):
    form = {}
    for key, default in defaults.items():
        value = settings.get(key, default)
        if key == "argument_rules":
            value = {
                name: {part: rule[part] for part in RULE_DEFAULTS if _differs(rule[part], RULE_DEFAULTS[part])}
                for name, rule in sorted(value.items())
            }
        elif key == "argument_descriptions":
            value = dict(sorted(value.items()))
        if _differs(value, default):
            form[key] = value
    return form


def file_form(agent):
    """The fields a file holds for a validated agent: its id, its label, and what differs from the defaults."""
    form = {"id": agent["id"]}
    for key in FILE_FIELDS[1:]:
        value, default = agent[key], AGENT_DEFAULTS[key]
        if key in TOOL_MAPS:
            value = {name: _settings_form(value[name], TOOL_MAPS[key]) for name in sorted(value)}
        if key == "label" or _differs(value, default):
            form[key] = value
    return form


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data):
        return True


def _represent_text(dumper, text):
    style = None
    if OTHER_BREAKS.search(text):
        style = '"'  # YAML reads these as line breaks, and would change them in any other style
    elif "\n" in text:
        style = "|"
    elif len(text) > BLOCK_TEXT_WIDTH and " " in text:
        style = ">"
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _represent_text)


def dump_policy(agent, schema_url):
    """The file of a validated agent, as text: the schema line, then its file form."""
    body = yaml.dump(
        file_form(agent),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=BLOCK_TEXT_WIDTH,
        default_flow_style=False,
    )
    return SCHEMA_LINE.format(url=schema_url) + body


# --- The JSON Schema ------------------------------------------------------------------------------------------


def _text(maximum, **extra):
    return {"type": "string", "maxLength": maximum, **extra}


def _tool_settings_schema(defaults):
    """The schema of one tool's settings: a boolean, a count or a text for each key of `defaults`."""
    texts = {"progress_message": LABEL_MAX}
    properties = {}
    for key, default in defaults.items():
        if isinstance(default, bool):
            properties[key] = {"type": "boolean"}
        elif isinstance(default, int):
            properties[key] = {"type": "integer", "minimum": 0, "maximum": MAX_CALLS_PER_RUN_LIMIT}
        elif isinstance(default, str):
            properties[key] = _text(texts.get(key, DESCRIPTION_MAX))
        elif key == "argument_rules":
            properties[key] = {"type": "object", "additionalProperties": {"$ref": "#/$defs/argument_rule"}}
        else:  # argument_descriptions
            properties[key] = {"type": "object", "additionalProperties": _text(DESCRIPTION_MAX)}
        properties[key]["default"] = default
    return {"type": "object", "properties": properties, "additionalProperties": False}


def _nullable_number(kind, minimum, maximum):
    return {"type": [kind, "null"], "minimum": minimum, "maximum": maximum}


def agent_schema():
    """The JSON Schema (2020-12) of a policy file, built from engine/config.py's defaults and limits. Editors
    complete and check with it; Toolgate's own validation (engine.config.validate_agent) stays the judge, and says
    more (a tool that is not registered, a forced value that does not fit the argument's schema)."""
    id_pattern = ID_PATTERN.pattern
    tool_map = {"type": "object", "propertyNames": {"pattern": TOOL_NAME_PATTERN.pattern}}
    fields = {
        "id": {"type": "string", "pattern": id_pattern, "description": "The agent's machine name, as the file's."},
        "label": _text(LABEL_MAX, minLength=1, pattern=r"\S"),
        "description": _text(DESCRIPTION_MAX),
        "system_prompt": _text(SYSTEM_PROMPT_MAX),
        "provider": {"type": "string", "pattern": id_pattern, "description": "scripted, or a provider connection's id"},
        "model": _text(LABEL_MAX),
        "max_rounds": {"type": "integer", "minimum": 0, "maximum": MAX_ROUNDS_LIMIT},
        "on_round_cap": {"enum": list(ON_ROUND_CAP_CHOICES)},
        "max_rounds_message": _text(DESCRIPTION_MAX),
        "parallel_tool_calls": {"type": ["boolean", "null"]},
        "tool_choice": {"type": "string", "description": "auto, required, or the name of an enabled tool"},
        "temperature": _nullable_number("number", 0, 2),
        "top_p": _nullable_number("number", 0, 1),
        "seed": _nullable_number("integer", -SEED_LIMIT, SEED_LIMIT - 1),
        "max_tokens": _nullable_number("integer", 1, MAX_TOKENS_LIMIT),
        "tools": {**tool_map, "additionalProperties": {"$ref": "#/$defs/tool_settings"}},
        "client_tools": {**tool_map, "additionalProperties": {"$ref": "#/$defs/client_tool_settings"}},
        "script": {"type": "array", "maxItems": SCRIPT_MAX_RESPONSES, "items": {"$ref": "#/$defs/response"}},
        "approval_timeout_seconds": {"type": "integer", "minimum": 1, "maximum": APPROVAL_TIMEOUT_LIMIT},
        "approval_webhook": _text(URL_MAX, pattern=r"^(https?://.+)?$", description="empty, or an http(s) URL"),
    }
    for key in FILE_FIELDS[1:]:
        fields[key]["default"] = AGENT_DEFAULTS[key]
    fields["label"].pop("default")
    call = {
        "type": "object",
        "required": ["name"],
        "properties": {
            "id": {"type": "string", "minLength": 1},
            "name": {"type": "string", "minLength": 1},
            "arguments": {"type": ["object", "string"]},
        },
        "additionalProperties": False,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://toolgate.invalid/schema/agent.json",
        "title": "Toolgate agent",
        "description": "One agent's policy file: its id and what differs from the defaults.",
        "type": "object",
        "required": ["id", "label"],
        "properties": {key: fields[key] for key in FILE_FIELDS},
        "additionalProperties": False,
        "$defs": {
            "tool_settings": _tool_settings_schema(TOOL_SETTING_DEFAULTS),
            "client_tool_settings": _tool_settings_schema(CLIENT_TOOL_SETTING_DEFAULTS),
            "argument_rule": {
                "type": "object",
                "required": ["action"],
                "properties": {
                    "action": {"enum": [action for action in ACTIONS if action]},
                    "values": {"type": "array"},
                    "hide": {"type": "boolean", "default": False},
                },
                "additionalProperties": False,
            },
            "response": {
                "type": "object",
                "minProperties": 1,
                "properties": {
                    "content": {"type": "string"},
                    "tool_calls": {"type": "array", "maxItems": MAX_CALLS_PER_RESPONSE, "items": call},
                },
                "additionalProperties": False,
            },
        },
    }


def schema_text():
    """schema/agent.json's content, as agent_schema() gives it."""
    return json.dumps(agent_schema(), indent=2, ensure_ascii=False) + "\n"
