"""Small builders shared by the engine's unit tests: agents, scripts and recording tools.

The SPEC §5 texts are written out here literally, so a changed constant in `engine.texts` fails the tests.
"""

import copy
import dataclasses
import json

from engine.tools.registry import Tool, ToolRegistry
from tests.doubles import ModelDouble

RESTRICTED_LIST_BUNDLES = (
    'Error: The tool "list_bundles" may only be called once per response. None of the tool calls in this '
    "response were executed. Call it once, wait for its result, then call it again if you need to."
)
COLLATERAL_LIST_BUNDLES = (
    'Error: This tool call was not executed, because the tool(s) "list_bundles" in the same response may only '
    "be called once per response."
)
UNKNOWN_TOOL = "Unknown tool."
ALREADY_IN_CONTEXT = "Already in your context."
MAX_ROUNDS_TEXT = (
    "I was unable to fully answer your question within the allowed number of processing steps. "
    "Please try rephrasing or narrowing your question."
)

NODE_BUNDLES = (
    '{"entity_type": "node", "bundles": [{"id": "article", "label": "Article"}, {"id": "page", "label": "Basic page"}]}'
)
TAXONOMY_BUNDLES = '{"entity_type": "taxonomy_term", "bundles": [{"id": "tags", "label": "Tags"}]}'
ENTITY_TYPES = (
    '[{"id": "node", "label": "Content"}, {"id": "taxonomy_term", "label": "Taxonomy term"}, '
    '{"id": "user", "label": "User"}, {"id": "media", "label": "Media"}]'
)


def make_agent(tools=None, script=None, **fields):
    """An agent's JSON form with the id `t` and the label `T`."""
    agent = {"id": "t", "label": "T", "tools": tools or {}, "script": script or []}
    agent.update(fields)
    return agent


def call(name, arguments=None, call_id=None):
    """One tool call of a script item."""
    entry = {"name": name, "arguments": {} if arguments is None else arguments}
    if call_id is not None:
        entry["id"] = call_id
    return entry


def tool_round(*calls):
    return {"tool_calls": list(calls)}


def answer(content):
    return {"content": content}


def tool_messages(run):
    return [message for message in run["messages"] if message["role"] == "tool"]


def tool_message_contents(run):
    return {message["tool_call_id"]: message["content"] for message in tool_messages(run)}


# A registry of instrumented tools: every tool takes {"n": integer} and records (name, n) when it runs.
NUMBERED_ARGUMENTS = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
    "additionalProperties": False,
}


class RecordingTools:
    """A ToolRegistry whose tools record every execution; `fails` names tools whose handler raises."""

    def __init__(self, names=("alpha", "beta", "gamma"), fails=()):
        self.executed = []
        self.registry = ToolRegistry(
            Tool(
                name=name,
                description=f"The {name} tool.",
                parameters=NUMBERED_ARGUMENTS,
                handler=self._handler(name, name in fails),
            )
            for name in names
        )

    def _handler(self, name, fails):
        def handler(arguments, context):
            self.executed.append((name, arguments["n"]))
            if fails:
                raise RuntimeError(f"{name} broke")
            return f"{name}:{arguments['n']}"

        return handler


class SpyRegistry:
    """The built-in tools with handlers that record (name, arguments) before doing their real work."""

    def __init__(self):
        from engine.tools import builtin_tools

        self.executed = []
        self.registry = ToolRegistry(dataclasses.replace(tool, handler=self._spy(tool)) for tool in builtin_tools())

    def _spy(self, tool):
        def handler(arguments, context):
            self.executed.append((tool.name, copy.deepcopy(arguments)))
            return tool.handler(arguments, context)

        return handler

    def names(self):
        return [name for name, _arguments in self.executed]


# Tool-call arguments by kind, for the property tests: valid ones carry a unique `n`, the others never validate.
VALID_KINDS = ("valid", "valid_text")
ARGUMENT_KINDS = ("valid", "valid", "valid_text", "bad_json", "not_object", "schema")
BAD_JSON = ("{", "not json", "{'n': 1}", '{"n": 1', "[1,")
NOT_OBJECT = ("[1]", "3", '"n"', "null", "true")
SCHEMA_FAILURES = ({}, {"n": "one"}, {"n": 1.5}, {"m": 1}, {"n": True})


def arguments_for(kind, variant, n):
    """Arguments of the given kind; `variant` picks among the bad ones, `n` numbers a valid call. "repeat" is a
    small `n` that other calls share, so that identical calls happen."""
    if kind == "repeat":
        return {"n": variant % 2}
    if kind == "valid":
        return {"n": n}
    if kind == "valid_text":
        return json.dumps({"n": n})
    if kind == "bad_json":
        return BAD_JSON[variant % len(BAD_JSON)]
    if kind == "not_object":
        return NOT_OBJECT[variant % len(NOT_OBJECT)]
    if variant == len(SCHEMA_FAILURES):
        return {"n": n, "extra": True}
    return copy.deepcopy(SCHEMA_FAILURES[variant % len(SCHEMA_FAILURES)])


def build_script(items):
    """The script from drawn items; every call gets its own `n`, so a valid call that runs records exactly it."""
    script, number = [], 0
    for kind, value in items:
        if kind == "answer":
            script.append({"content": value})
            continue
        calls = []
        for name, argument_kind, variant in value:
            number += 1
            calls.append({"name": name, "arguments": arguments_for(argument_kind, variant, number)})
        script.append({"tool_calls": calls})
    return script


def all_calls(run):
    return [call for round_ in run["rounds"] for call in round_["calls"]]


def sdk_model(script):
    """The scripted model asked through the openai SDK, as the engine asks a provider; its history is the HTTP
    requests."""
    return ModelDouble(script=script).through_sdk()
