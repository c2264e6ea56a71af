"""What a client sends the policy proxy: an OpenAI chat-completions body, checked, as the canonical conversation
every API is translated into, with where the client's current turn starts in it (engine.proxy.turn).
"""

import json
from dataclasses import dataclass

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from ..config import TOOL_NAME_PATTERN, ValidationError
from .client_tools import ANY_OBJECT, client_tool
from .turn import turn_start

ROLES = ("system", "developer", "user", "assistant", "tool")
# Asked of the upstream by the proxy itself, or answered by it: never passed through as the client sent them.
OWN_FIELDS = ("model", "messages", "tools", "stream", "stream_options", "n")


CHAT_COMPLETIONS = "chat_completions"
UNANSWERED = "has no result: each call needs exactly one before the conversation goes on"


@dataclass(frozen=True)
class ProxyRequest:
    """A client's request in the canonical form every API is translated into: a Chat Completions conversation."""

    messages: tuple  # the client's messages, as it sent them
    tools: tuple  # its `tools` entries, as it sent them
    declared: tuple  # the same as Tools, for the gate: its name, description and schema
    model: str
    stream: bool
    include_usage: bool  # stream_options.include_usage: a last chunk with the usage
    passthrough: dict  # every other field (temperature, tool_choice, …), sent upstream as it is
    api: str = CHAT_COMPLETIONS  # the API the client spoke: chat_completions, responses or messages
    left_out_tools: tuple = ()  # tools the client sent that the upstream cannot run (hosted tools), by type or name
    left_out_fields: tuple = ()  # fields of the client's body that ask for what the upstream cannot give, by name
    turn_start: int = 0  # the index in `messages` where the client's current turn starts (engine.proxy.turn)


def read_request(body):
    """The client's body as a ProxyRequest; ValidationError naming the field for anything the proxy cannot
    forward or gate."""
    if not isinstance(body, dict):
        raise ValidationError({"body": "must be a JSON object (an OpenAI chat-completions request)"})
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValidationError({"messages": "is required: a non-empty list of chat messages"})
    for index, message in enumerate(messages):
        _check_message(message, f"messages[{index}]")
    _check_results(messages)
    tools = body.get("tools", [])
    if tools is None:
        tools = []
    if not isinstance(tools, list):
        raise ValidationError({"tools": "must be a list of function tools"})
    declared = tuple(_declared_tool(tool, f"tools[{index}]") for index, tool in enumerate(tools))
    names = [tool.name for tool in declared]
    if len(set(names)) != len(names):
        raise ValidationError({"tools": "declares one function name twice"})
    for field in ("functions", "function_call"):
        if field in body:
            raise ValidationError({field: "is the deprecated form of tools; send `tools` and `tool_choice`"})
    if body.get("n", 1) != 1:
        raise ValidationError({"n": "must be 1: the proxy answers one choice"})
    model = body.get("model", "")
    if not isinstance(model, str):
        raise ValidationError({"model": "must be a string"})
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise ValidationError({"stream": "must be true or false"})
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise ValidationError({"stream_options": "must be an object"})
    return ProxyRequest(
        messages=tuple(messages),
        tools=tuple(tools),
        declared=declared,
        model=model,
        stream=stream,
        include_usage=stream and options.get("include_usage") is True,
        passthrough={key: value for key, value in body.items() if key not in OWN_FIELDS},
        turn_start=turn_start(messages),
    )


def _check_message(message, where):
    if not isinstance(message, dict):
        raise ValidationError({where: "must be an object"})
    if message.get("role") not in ROLES:
        raise ValidationError({f"{where}.role": f"must be one of: {', '.join(ROLES)}"})
    content = message.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise ValidationError({f"{where}.content": "must be a string, a list of content parts, or null"})
    if message["role"] == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise ValidationError({f"{where}.tool_call_id": "is required on a tool message"})
    calls = message.get("tool_calls")
    if calls is None:
        return
    if message["role"] != "assistant" or not isinstance(calls, list):
        raise ValidationError({f"{where}.tool_calls": "must be a list, on an assistant message"})
    for number, call in enumerate(calls):
        call_where = f"{where}.tool_calls[{number}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ValidationError({call_where: 'needs {"id", "type": "function", "function": {"name", "arguments"}}'})
        if not isinstance(call.get("id"), str):
            raise ValidationError({f"{call_where}.id": "is required"})


def _check_results(messages):
    """ValidationError naming the field unless the conversation's tool results answer its calls exactly once: each
    call has an id of its own, each tool message answers a call made before it that has no result yet, and every call
    of an assistant message is answered before the next user or assistant message (system messages may stand
    between). Only the conversation's last assistant message may still wait for its results: nothing follows it."""
    calls, waiting = set(), {}  # every call id so far; the ids still without a result -> where each was made
    for index, message in enumerate(messages):
        role = message["role"]
        if role in ("user", "assistant") and waiting:
            raise ValidationError({next(iter(waiting.values())): UNANSWERED})
        if role == "assistant":
            for number, call in enumerate(message.get("tool_calls") or []):
                where = f"messages[{index}].tool_calls[{number}].id"
                if call["id"] in calls:
                    raise ValidationError({where: "is the id of an earlier call too: each call needs an id of its own"})
                calls.add(call["id"])
                waiting[call["id"]] = where
        elif role == "tool" and waiting.pop(message["tool_call_id"], None) is None:
            where = f"messages[{index}].tool_call_id"
            if message["tool_call_id"] in calls:
                raise ValidationError({where: "answers a call that already has its result: each call takes one"})
            raise ValidationError({where: "answers no call: no call before it has this id"})
    if waiting and messages[-1]["role"] != "assistant":
        raise ValidationError({next(iter(waiting.values())): UNANSWERED})


def _declared_tool(tool, where):
    function = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(tool, dict) or tool.get("type", "function") != "function" or not isinstance(function, dict):
        raise ValidationError({where: 'the proxy takes function tools: {"type": "function", "function": {...}}'})
    name = function.get("name")
    if not isinstance(name, str) or not TOOL_NAME_PATTERN.match(name):
        raise ValidationError({f"{where}.function.name": "must be 1 to 64 letters, digits, underscores or hyphens"})
    description = function.get("description", "")
    if not isinstance(description, str):
        raise ValidationError({f"{where}.function.description": "must be a string"})
    parameters = function.get("parameters", ANY_OBJECT)
    if not isinstance(parameters, dict):
        raise ValidationError({f"{where}.function.parameters": "must be a JSON Schema object"})
    return client_tool(name, description, _checked_schema(parameters, f"{where}.function.parameters"))


_checked_schemas = {}  # the schema as JSON -> the schema: clients send the same ones with every request
SCHEMAS_KEPT = 512


def _checked_schema(parameters, where):
    """The client's schema once it is known to be valid JSON Schema: the same object for the same schema, so the
    gate builds its validator once, not on every request."""
    key = json.dumps(parameters, sort_keys=True)
    known = _checked_schemas.get(key)
    if known is not None:
        return known
    try:
        Draft202012Validator.check_schema(parameters)
    except SchemaError as error:
        raise ValidationError({where: f"is not a valid JSON Schema: {error.message}"}) from None
    if len(_checked_schemas) >= SCHEMAS_KEPT:
        _checked_schemas.clear()
    return _checked_schemas.setdefault(key, parameters)
