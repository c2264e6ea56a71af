"""Tool servers (SPEC §6): MCP servers whose tools join the registry as SERVER__TOOL. A row keeps how to reach the
server (a streamable-HTTP URL with extra headers, or a local command over stdio, which only the CLI may set), the
timeout per call, and the server's tool list as last fetched, with when.

A header's value is text, or `{"env": "NAME"}` with an optional `"prefix"` (`{"env": "NOTES_API_KEY", "prefix":
"Bearer "}`): the secret stays in the environment variable, by the rule of provider keys (a name ending in _API_KEY,
or one listed in TOOLGATE_KEY_VARIABLES), and is never stored or shown.

`vanished` remembers the names of tools the server listed once and no longer does, so that an agent which enabled
one still loads, and the gate answers a call of it `unknown_tool`."""

import json
import re
import shlex
from functools import lru_cache
from urllib.parse import urlparse

from engine.addresses import NOTHING_ALLOWED, url_problem
from engine.config import LABEL_MAX, check_text
from engine.tools import ToolRegistry
from engine.tools.mcp import SEPARATOR, ServerConnection, registry_name, server_tools

from . import NotFound, ValidationError, execute, get_row, now, row_exists, select_rows, update_row
from .db import write_transaction
from .providers import ENV_NAME_PATTERN, HEADER_NAME_PATTERN, KEY_SUFFIX, URL_MAX, KeyEnviron, key_variable_allowed

ID_PATTERN = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
ID_MAX = 32
ID_RULE = (
    f"must be 1 to {ID_MAX} characters: lowercase letters and digits, starting with a letter, words joined by "
    "single underscores (it starts the names of the server's tools, SERVER__TOOL)"
)
# The MCP transport sets these itself.
RESERVED_HEADERS = ("content-type", "content-length", "host", "accept", "mcp-session-id", "mcp-protocol-version")
TIMEOUT_MAX = 600
COMMAND_MAX = 2_000
HEADERS_MAX = 10_000  # characters of `headers` as JSON
VANISHED_MAX = 500
DEFAULTS = {"url": "", "command": "", "headers": {}, "timeout": 30.0}
FIELDS = ("id", "label", "url", "command", "headers", "timeout")
JSON_COLUMNS = ("headers", "tools", "vanished")
COMMAND_FROM_CLI = "is set from the command line only (flask --app app add-tool-server ID --command ...)"
REFRESH_NOTE = (
    "A server's tool list is fetched when it is saved and when you press Connect, and again by the command "
    "flask --app app refresh-tool-servers (run it from cron, hourly for instance)."
)


def _header_error(name, value, key_variables):
    if not HEADER_NAME_PATTERN.match(name):
        return f'must name headers with letters, digits and - _ . ! # $ % & \' * + ^ ` | ~ (not "{name}")'
    if name.lower() in RESERVED_HEADERS:
        return f'may not set "{name}": the MCP transport sets it'
    if isinstance(value, dict):
        unknown = set(value) - {"env", "prefix"}
        variable = value.get("env")
        prefix = value.get("prefix", "")
        if unknown or not isinstance(variable, str) or not ENV_NAME_PATTERN.match(variable):
            return f'must give "{name}" text, or {{"env": "VARIABLE"}} with an optional "prefix"'
        if not key_variable_allowed(variable, key_variables):
            return f'may read "{name}" from a variable ending in "{KEY_SUFFIX}" or listed in TOOLGATE_KEY_VARIABLES'
        value = prefix
    if not isinstance(value, str) or not (value.isascii() and value.isprintable()):
        return f'must give "{name}" a text value of printable ASCII characters on one line'
    return None


def _check_headers(errors, headers, key_variables):
    if not isinstance(headers, dict):
        errors["headers"] = 'must be a JSON object mapping header names to text or {"env": "VARIABLE"}'
        return
    if len(json.dumps(headers)) > HEADERS_MAX:
        errors["headers"] = f"must be at most {HEADERS_MAX:,} characters as JSON"
        return
    problems = [_header_error(name, value, key_variables) for name, value in headers.items()]
    problems = [problem for problem in problems if problem]
    if problems:
        errors["headers"] = problems[0]


def _command_problem(command):
    """Why a command line cannot be split into its words as a shell would, or None."""
    try:
        shlex.split(command)
    except ValueError as error:
        return f"cannot be read as a command line: {error}"
    return None


def validate_tool_server(data, key_variables=(), allow_command=False, allowed_networks=NOTHING_ALLOWED):
    """A tool server with defaults filled in; raises ValidationError naming every bad field. Only the CLI passes
    `allow_command`: a web form that runs commands would be a hole. The URL must pass the address rule
    (engine.addresses), with what the operator allows in `allowed_networks`."""
    if not isinstance(data, dict):
        raise ValidationError({"tool_server": "must be a JSON object"})
    server = {**DEFAULTS, **data}
    errors = {}
    for key in server:
        if key not in FIELDS:
            errors[key] = "is not a tool server field"
    server_id = server.get("id")
    if not isinstance(server_id, str) or len(server_id) > ID_MAX or not ID_PATTERN.match(server_id):
        errors["id"] = ID_RULE
    check_text(errors, server, "label", LABEL_MAX, required=True)
    url, command = server["url"], server["command"]
    if not isinstance(command, str):
        errors["command"] = "must be text"
    elif command and not allow_command:
        errors["command"] = COMMAND_FROM_CLI
    elif command and (len(command) > COMMAND_MAX or not command.isprintable() or not command.strip()):
        errors["command"] = f"must be one line of at most {COMMAND_MAX:,} printable characters"
    elif command and _command_problem(command):
        errors["command"] = _command_problem(command)
    if command and url:
        errors["url"] = "must be empty for a server started as a command"
    elif not command:
        parsed = urlparse(url) if isinstance(url, str) else None
        if not parsed or parsed.scheme not in ("http", "https") or not parsed.netloc or not url.isprintable():
            errors["url"] = "must be an http:// or https:// URL, such as http://127.0.0.1:8000/mcp"
        elif len(url) > URL_MAX:
            errors["url"] = f"must be at most {URL_MAX:,} characters"
        elif problem := url_problem(url, allowed_networks):
            errors["url"] = problem
    _check_headers(errors, server["headers"], key_variables)
    timeout = server["timeout"]
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= TIMEOUT_MAX:
        errors["timeout"] = f"must be a number of seconds above 0 and at most {TIMEOUT_MAX:,}"
    if errors:
        raise ValidationError(errors)
    server["timeout"] = float(timeout)
    return {key: server[key] for key in FIELDS}


def connection(server):
    """The engine's ServerConnection for a stored (or validated) server."""
    return ServerConnection(
        id=server["id"],
        url=server["url"],
        command=server["command"],
        headers=server["headers"],
        timeout=server["timeout"],
    )


def _from_row(row):
    return {**row, **{name: json.loads(row[name]) for name in JSON_COLUMNS}}


def list_tool_servers(db):
    return [_from_row(row) for row in select_rows(db, "SELECT * FROM tool_servers ORDER BY lower(label), id")]


def get_tool_server(db, server_id):
    return _from_row(get_row(db, "tool_servers", server_id, f'No tool server with id "{server_id}".'))


def save_tool_server(db, server, tools, create):
    """Store a validated server with the tool list just fetched from it. `create`: refuse an id already used;
    otherwise the server must exist (NotFound)."""
    with write_transaction(db):
        exists = row_exists(db, "tool_servers", server["id"])
        if create and exists:
            raise ValidationError({"id": f'is already used by another tool server ("{server["id"]}")'})
        if not create and not exists:
            raise NotFound(f'No tool server with id "{server["id"]}".')
        vanished = _vanished(get_tool_server(db, server["id"]), tools) if exists else []
        row = {
            **server,
            "headers": json.dumps(server["headers"]),
            "tools": json.dumps(tools),
            "vanished": json.dumps(vanished),
            "refreshed_at": now(),
        }
        columns = ", ".join(row)
        execute(
            db,
            f"INSERT INTO tool_servers ({columns}) VALUES ({', '.join(f':{column}' for column in row)}) "
            f"ON CONFLICT (id) DO UPDATE SET {', '.join(f'{column} = excluded.{column}' for column in row)}",
            row,
        )
    return get_tool_server(db, server["id"])


def refresh_tools(db, server_id, tools):
    """Replace a server's cached tool list with `tools`, remembering the names that vanished from it."""
    with write_transaction(db):
        stored = get_tool_server(db, server_id)
        update_row(
            db,
            "tool_servers",
            server_id,
            {"tools": json.dumps(tools), "vanished": json.dumps(_vanished(stored, tools)), "refreshed_at": now()},
        )
    return get_tool_server(db, server_id)


def _vanished(stored, tools):
    """The registry names of the tools `stored` had, or had lost before, that `tools` no longer has."""
    listed = {registry_name(stored["id"], tool["name"]) for tool in tools}
    before = [*stored["vanished"], *(registry_name(stored["id"], tool["name"]) for tool in stored["tools"])]
    return [name for name in dict.fromkeys(before) if name not in listed][-VANISHED_MAX:]


def agents_using_server(db, server_id):
    """The ids of the agents that enable a tool of this server."""
    prefix = f"{server_id}{SEPARATOR}"
    rows = select_rows(
        db,
        "SELECT DISTINCT agent_id FROM agent_tools WHERE substr(tool_name, 1, :length) = :prefix ORDER BY agent_id",
        {"length": len(prefix), "prefix": prefix},
    )
    return [row["agent_id"] for row in rows]


def delete_tool_server(db, server_id):
    """Delete a server no agent uses; raises ValidationError naming the agents that still enable its tools."""
    with write_transaction(db):
        get_tool_server(db, server_id)
        users = agents_using_server(db, server_id)
        if users:
            raise ValidationError({"id": f"has tools enabled by the agent(s) {', '.join(users)}: disable them first"})
        execute(db, "DELETE FROM tool_servers WHERE id = :id", {"id": server_id})


def registry_with_servers(db, base, environ=None):
    """`base` (the built-in and installed tools) plus the cached tools of every stored server. Built once per
    version of the servers' rows and shared, so the agents' cached configs (keyed on the registry) stay cached.
    `environ`, where header secrets are read at call time, must be hashable (one object for the app's life)."""
    rows = select_rows(db, "SELECT id, url, command, headers, timeout, tools, vanished FROM tool_servers ORDER BY id")
    if not rows:
        return base
    return _registry(base, tuple(tuple(row.values()) for row in rows), environ)


@lru_cache(maxsize=16)
def _registry(base, rows, environ):
    tools, vanished = {tool.name: tool for tool in base}, []
    for server_id, url, command, headers, timeout, cached, gone in rows:
        server = {"id": server_id, "url": url, "command": command, "headers": json.loads(headers), "timeout": timeout}
        for tool in server_tools(connection(server), json.loads(cached), environ):
            tools.setdefault(tool.name, tool)  # a name taken already (by a digest's chance) keeps its first tool
        vanished.extend(json.loads(gone))
    return ToolRegistry(tools.values(), vanished=[*base.vanished_names(), *vanished])


class SecretEnviron(KeyEnviron):
    """Where header secrets are read when a call is made: the variables of `environ` a header may name (the provider
    key rule). Hashable by identity, so one per app can key the registry cache."""

    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other


def hint_marks(db, agent_id):
    """{tool: [setting, ...]}: the agent's settings a person accepted as proposed from a tool server's hints."""
    rows = select_rows(
        db, "SELECT tool_name, settings FROM agent_tool_hints WHERE agent_id = :agent_id", {"agent_id": agent_id}
    )
    return {row["tool_name"]: json.loads(row["settings"]) for row in rows}


def save_hint_marks(db, agent_id, marks):
    """Replace the agent's hint marks with `marks` ({tool: [setting, ...]})."""
    with write_transaction(db):
        execute(db, "DELETE FROM agent_tool_hints WHERE agent_id = :agent_id", {"agent_id": agent_id})
        for tool_name, settings in marks.items():
            execute(
                db,
                "INSERT INTO agent_tool_hints (agent_id, tool_name, settings) "
                "VALUES (:agent_id, :tool_name, :settings)",
                {"agent_id": agent_id, "tool_name": tool_name, "settings": json.dumps(sorted(settings))},
            )
