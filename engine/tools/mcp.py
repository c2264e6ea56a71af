"""MCP tool servers (SPEC §6): a server's tools as registry Tools, and a small synchronous facade over the `mcp`
SDK's asynchronous client — list a server's tools, call one within the server's timeout — whose failures are
told in words (unreachable, not an MCP server, a protocol error, an auth failure, a timeout).

The loop and the pages are synchronous, so each list or call opens its own connection inside `asyncio.run`:
nothing lives between two calls, and a server that restarted is simply reached again. The SDK is imported only
when a server is reached, so an engine with no tool server never loads it.

A header's value is either text or `{"env": "NAME"}` (optionally with `"prefix": "Bearer "`): the secret is
read from the environment mapping given, at the moment of the request, and never kept in a Tool or a message.
"""

import asyncio
import hashlib
import json
import re
import shlex
import ssl
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType

from ..config import LABEL_MAX
from ..redaction import redact
from .registry import Tool, ToolError

SEPARATOR = "__"
NAME_MAX = 64  # the longest function name a model API accepts
FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ANY_OBJECT = {"type": "object"}
TOOLS_MAX = 1_000  # tools kept of one server's list
TOOL_DESCRIPTION_MAX = 10_000  # characters of a tool's description kept
RESULT_MAX = 1_000_000  # characters of a tool message; a longer result is cut there, saying so
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
# What MCP says a hint a server leaves out means (the specification's defaults).
HINT_DEFAULTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}

UNREACHABLE = "unreachable"
NOT_MCP = "not_mcp"
PROTOCOL = "protocol"
AUTH = "auth"
TIMEOUT = "timeout"
MISSING_SECRET = "missing_secret"
# The initialize handshake, which every MCP server speaks; probing for the 2026 protocol first costs a request more
# per connection, and its calls took ten times as long against the SDK's own server (bench/mcp.py).
HANDSHAKE = "legacy"
# What the answer to each request is called when a server that answered the handshake sends it broken.
ANSWER_NAMES = {"tools/list": "tool list", "tools/call": "answer to tools/call"}
# How the SDK reports an answer it could not read as JSON-RPC (it hands it on as a JSON-RPC parse error).
UNREADABLE_ANSWER = ("Failed to parse JSON response:", "Failed to parse SSE message:")
INVALID_JSON = re.compile(r"Invalid JSON: ([^\[\n]+)")


class McpError(Exception):
    """A tool server could not be used; `kind` is one of the constants above and the text says why in words."""

    def __init__(self, kind, message):
        self.kind = kind
        super().__init__(message)


@dataclass(frozen=True)
class ServerConnection:
    """How to reach one tool server: a streamable-HTTP `url` (with `headers`), or a local `command` over stdio."""

    id: str
    url: str = ""
    command: str = ""
    headers: Mapping = field(default_factory=lambda: MappingProxyType({}))
    timeout: float = 30.0

    @property
    def address(self):
        return self.url or f"the command {self.command}"


@dataclass(frozen=True)
class McpTool(Tool):
    """A tool of a tool server, as the registry holds it: `name` is SERVER__TOOL, `remote_name` what the server
    calls it; `title` and `annotations` (the server's hints, untrusted) are shown beside it on the agent form."""

    server_id: str = ""
    remote_name: str = ""
    title: str = ""
    annotations: Mapping = field(default_factory=lambda: MappingProxyType({}))


def registry_name(server_id, tool_name):
    """The name a server's tool has in the registry and for the model: SERVER__TOOL, a valid function name of at
    most 64 characters. A tool name with other characters, or too long, keeps a readable prefix and ends in a
    digest of the whole name, so two tools of one server never share a name."""
    name = f"{server_id}{SEPARATOR}{tool_name}"
    if FUNCTION_NAME.match(name):
        return name
    digest = hashlib.sha256(tool_name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    readable = re.sub(r"[^A-Za-z0-9_-]", "_", name)[: NAME_MAX - len(digest) - 1]
    return f"{readable}_{digest}"


def hint(annotations, name):
    """An annotation's value, the specification's default when the server left it out or sent a non-boolean."""
    value = (annotations or {}).get(name)
    return value if isinstance(value, bool) else HINT_DEFAULTS[name]


def proposed_settings(annotations):
    """The tool settings Toolgate proposes from a tool's annotations, to be accepted or changed by a person:
    destructive → require approval; neither read-only nor idempotent → at most one identical call; read-only →
    nothing. Only the four boolean hints count — a server's words (its description, its title) never do."""
    if hint(annotations, "readOnlyHint"):
        return {}
    proposals = {}
    if hint(annotations, "destructiveHint"):
        proposals["require_approval"] = True
    if not hint(annotations, "idempotentHint"):
        proposals["max_identical_calls"] = 1
    return proposals


def resolve_headers(headers, environ):
    """The headers to send: text as given, `{"env": NAME, "prefix": ...}` read from `environ` now. A variable
    that is not set is an McpError naming the variable (never a value)."""
    resolved = {}
    for name, value in headers.items():
        if isinstance(value, Mapping):
            secret = environ.get(value["env"]) if environ is not None else None
            if not secret:
                raise McpError(
                    MISSING_SECRET, f"the environment variable {value['env']} (for the header {name}) is not set"
                )
            resolved[name] = value.get("prefix", "") + secret
        else:
            resolved[name] = value
    return resolved


def list_tools(connection, environ=None):
    """The server's tools as plain dicts: name, title, description, input_schema, annotations. Raises McpError."""
    return _run(connection, environ, "tools/list")


def call_tool(connection, tool_name, arguments, environ=None):
    """`tools/call` within the server's timeout: (the result as the tool message's text, whether the server said
    isError). Raises McpError when the call could not be made or answered."""
    text, is_error = _run(connection, environ, "tools/call", tool_name, arguments)
    return text, is_error


def server_tools(connection, tools, environ=None):
    """Registry Tools for a server's cached tool list (list_tools' dicts): each executes as a `tools/call`, and a
    failure of any kind becomes that call's error, told in words."""
    return [_server_tool(connection, tool, environ) for tool in tools]


def _server_tool(connection, tool, environ):
    remote_name = tool["name"]

    def handler(arguments, context):
        try:
            text, is_error = call_tool(connection, remote_name, arguments, environ)
        except McpError as error:
            raise ToolError(f'the tool server "{connection.id}" failed: {error}.') from None
        if is_error:
            raise ToolError(text or f'the tool server "{connection.id}" reported an error without text.')
        return text

    return McpTool(
        name=registry_name(connection.id, remote_name),
        description=tool.get("description") or tool.get("title") or "",
        parameters=tool.get("input_schema") or dict(ANY_OBJECT),
        handler=handler,
        family=f"mcp:{connection.id}",
        server_id=connection.id,
        remote_name=remote_name,
        title=tool.get("title") or "",
        annotations=MappingProxyType(dict(tool.get("annotations") or {})),
    )


def result_text(result):
    """A CallToolResult as the tool message: its text parts joined by a new line; `structuredContent` as JSON
    text when there is no text; any other part named by its type, e.g. `[image]`; at most RESULT_MAX characters."""
    parts = []
    has_text = False
    for block in result.content or []:
        if getattr(block, "type", None) == "text":
            has_text = True
            parts.append(block.text)
        else:
            parts.append(f"[{getattr(block, 'type', 'content')}]")
    if not has_text and result.structured_content is not None:
        parts.insert(0, json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts)
    if len(text) > RESULT_MAX:
        return (
            f"{text[:RESULT_MAX]}\n[cut: the result had {len(text):,} characters; the first {RESULT_MAX:,} are above]"
        )
    return text


def _tool_dict(tool, sent):
    """One listed tool as a plain dict. The hints are read from what the server sent (`sent`, the tool's JSON),
    not from the SDK's model of it, which turns `"true"` into True: a hint that is not a JSON boolean is left out,
    so it reads as MCP's default."""
    annotations = sent.get("annotations") or {}
    return {
        "name": tool.name,
        "title": (tool.title or (tool.annotations.title if tool.annotations else "") or "")[:LABEL_MAX],
        "description": (tool.description or "")[:TOOL_DESCRIPTION_MAX],
        "input_schema": _usable_schema(tool.input_schema),
        "annotations": {key: value for key, value in annotations.items() if key in HINTS and isinstance(value, bool)},
    }


def _usable_schema(schema):
    """The server's input schema when it is a valid JSON Schema of an object, else one that takes any object: a
    broken schema from a server must not break the gate, nor the model request it is sent in."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, dict) or schema.get("type") != "object":
        return dict(ANY_OBJECT)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return dict(ANY_OBJECT)
    return schema


async def _list_tools(client):
    """Every page of `tools/list`, each read twice: as the SDK's ListToolsResult (which checks its shape) and as
    the JSON the server sent (for the hints, see _tool_dict)."""
    from mcp import types
    from pydantic import TypeAdapter

    as_sent = TypeAdapter(dict)
    tools, cursor = [], None
    for _page in range(100):  # a server whose pages never end cannot hang Connect
        request = types.ListToolsRequest(params=types.PaginatedRequestParams(cursor=cursor))
        sent = await client.session.send_request(request, as_sent)
        page = types.ListToolsResult.model_validate(sent, by_name=False)
        tools.extend(_tool_dict(tool, tool_sent) for tool, tool_sent in zip(page.tools, sent["tools"], strict=True))
        cursor = page.next_cursor
        if cursor is None or len(tools) >= TOOLS_MAX:
            break
    return tools[:TOOLS_MAX]


async def _call_tool(client, tool_name, arguments):
    result = await client.call_tool(tool_name, arguments)
    return result_text(result), bool(result.is_error)


ACTIONS = {"tools/list": _list_tools, "tools/call": _call_tool}


def _run(connection, environ, method, *args):
    """Send `method` (a key of ACTIONS) with `args` on a fresh connection, synchronously, within the connection's
    timeout. A header secret the server echoes (in a result, a tool's description, an error) comes back as
    `[redacted]`."""
    headers = resolve_headers(connection.headers, environ)
    secrets = [environ[value["env"]] for value in connection.headers.values() if isinstance(value, Mapping)]
    coroutine = _session(connection, headers, method, *args)
    try:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            result = asyncio.run(coroutine)
        else:
            with ThreadPoolExecutor(max_workers=1) as pool:  # called from inside an event loop: run beside it
                result = pool.submit(asyncio.run, coroutine).result()
    except McpError as error:
        raise McpError(error.kind, _hidden(str(error), secrets)) from None
    return _hidden(result, secrets)


def _hidden(value, secrets):
    for secret in secrets:
        value = redact(value, secret)
    return value


async def _session(connection, headers, method, *args):
    import anyio
    import httpx2
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client

    # (status, content type) of each answer to a POST, to tell an MCP server from another web server and to say
    # what a broken answer was. A GET (the server's event stream) or a DELETE (the session's end) may be refused
    # with 405 by any MCP server, so those say nothing.
    statuses = []
    handshake = []  # holds True once the server answered the handshake

    async def note_status(response):
        if response.request.method == "POST":
            statuses.append((response.status_code, response.headers.get("content-type", "")))

    async def act(client):
        handshake.append(True)
        return await ACTIONS[method](client, *args)

    try:
        with anyio.fail_after(connection.timeout):
            if connection.command:
                argv = shlex.split(connection.command)
                stdio = StdioServerParameters(command=argv[0], args=argv[1:])
                async with Client(stdio, cache=None, mode=HANDSHAKE) as client:
                    return await act(client)
            async with (
                httpx2.AsyncClient(
                    headers=headers,
                    timeout=connection.timeout,
                    verify=_ssl_context(),
                    event_hooks={"response": [note_status]},
                ) as http,
                Client(streamable_http_client(connection.url, http_client=http), cache=None, mode=HANDSHAKE) as client,
            ):
                return await act(client)
    except McpError:
        raise
    except BaseException as error:  # the SDK raises groups of whatever its tasks met; name the first cause
        if not isinstance(error, Exception):
            raise
        raise _described(connection, error, statuses, method if handshake else None) from None


@cache
def _ssl_context():
    """One TLS context for every connection: loading the system's certificates takes longer than a local call."""
    return ssl.create_default_context()


def _leaves(error):
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


def _described(connection, error, statuses, answering=None):
    """The McpError that says in words what `error` (possibly a group) meant; `answering` is the method the
    server was answering once it had answered the handshake (None before)."""
    import httpx2
    from mcp import MCPError
    from pydantic import ValidationError

    leaves = list(_leaves(error))
    cause = next((leaf for leaf in leaves if not isinstance(leaf, asyncio.CancelledError)), leaves[0])
    rejected = next((status for status, _type in statuses if status >= 400), None)
    where = connection.address
    if isinstance(cause, (TimeoutError, httpx2.TimeoutException)):
        return McpError(TIMEOUT, f"{where} did not answer within {connection.timeout:g} seconds")
    if rejected in (401, 403):
        return McpError(AUTH, f"{where} refused the credentials (HTTP {rejected}); check the headers")
    if connection.command and isinstance(cause, OSError):
        return McpError(UNREACHABLE, f"{where} cannot be started ({_first_line(cause) or type(cause).__name__})")
    if isinstance(cause, (httpx2.TransportError, OSError)):
        return McpError(UNREACHABLE, f"{where} cannot be reached ({_first_line(cause) or type(cause).__name__})")
    if answering is not None:
        answer = statuses[-1] if statuses else None
        return McpError(PROTOCOL, f"{where} answered the handshake, but {_broken_answer(answering, cause, answer)}")
    if rejected is not None and rejected in (404, 405, 406, 415):
        return McpError(NOT_MCP, f"{where} is not an MCP server (HTTP {rejected})")
    if isinstance(cause, MCPError) and connection.url and not _spoke_mcp(statuses):
        return McpError(NOT_MCP, f"{where} is not an MCP server ({_first_line(cause)})")
    if isinstance(cause, MCPError):
        return McpError(PROTOCOL, f"{where} answered with an error: {_first_line(cause)}")
    if isinstance(cause, ValidationError):
        return McpError(PROTOCOL, f"{where} answered something that does not follow the MCP protocol")
    if rejected is not None:
        return McpError(PROTOCOL, f"{where} answered HTTP {rejected}")
    return McpError(PROTOCOL, f"{where} failed: {_first_line(cause) or type(cause).__name__}")


def _broken_answer(method, cause, answer):
    """What was wrong with a server's answer to `method` after a good handshake: `cause` is what the SDK raised,
    `answer` the (status, content type) of the last answer to a POST (None over stdio)."""
    from mcp import MCPError
    from mcp.types import PARSE_ERROR
    from pydantic import ValidationError

    name = ANSWER_NAMES[method]
    status, content_type = answer or (None, "application/json")
    if isinstance(cause, MCPError) and cause.code == PARSE_ERROR and cause.message.startswith(UNREADABLE_ANSWER):
        invalid = INVALID_JSON.search(cause.message)
        if invalid:
            return f"its {name} is not valid JSON: {invalid.group(1).strip()}"
        return f"its {name} is not a JSON-RPC message"
    if not _is_mcp_content(content_type):
        if status >= 400:
            return f"its {method} answered HTTP {status}"
        return f"its {name} is not JSON (HTTP {status}, {content_type or 'no content type'})"
    if isinstance(cause, MCPError):
        return f"its {method} answered a JSON-RPC error {cause.code}: {_first_line(cause)}"
    if isinstance(cause, ValidationError):
        first = cause.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"its {name} does not follow the MCP protocol ({where + ': ' if where else ''}{first['msg']})"
    return f"its {method} failed: {_first_line(cause) or type(cause).__name__}"


def _is_mcp_content(content_type):
    return content_type.startswith(("application/json", "text/event-stream"))


def _spoke_mcp(statuses):
    """Whether any answer came as an MCP server sends them (JSON or an event stream)."""
    return any(_is_mcp_content(content_type) for _status, content_type in statuses)


def _first_line(error):
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else ""
