"""Tool servers for the app: its registry with the stored servers' tools, and saving and connecting servers — a
server is stored only once it answered as an MCP server, with the tool list it gave; Connect (and the refresh
command) fetch that list again. The pages, the API and the CLI call this.

`key_variables` is always the administrator's TOOLGATE_KEY_VARIABLES: the variables a header may read besides
*_API_KEY ones. The first call of an app's life fixes them for it, as the config does."""

import os

from flask import current_app, g

from engine.addresses import NOTHING_ALLOWED
from engine.tools.mcp import MISSING_SECRET, McpError, list_tools
from store import ValidationError
from store import tool_servers as tool_server_store
from store.db import get_db

SECRET_ENVIRON = "toolgate_secret_environ"


def app_registry(base, key_variables):
    """The app's tool registry: `base` (the built-in and installed tools) plus the cached tools of the stored tool
    servers, built again only when those change, and read once per request (the run page asks for each call).
    `key_variables`: the administrator's TOOLGATE_KEY_VARIABLES."""
    if "tool_registry" not in g:
        g.tool_registry = tool_server_store.registry_with_servers(get_db(), base, secret_environ(key_variables))
    return g.tool_registry


def secret_environ(key_variables):
    """Where tool server headers read their secrets: the app's one SecretEnviron (MODEL_ENVIRON in tests, else the
    process environment), limited to the variables a provider key may name."""
    if SECRET_ENVIRON not in current_app.extensions:
        environ = current_app.config.get("MODEL_ENVIRON")
        current_app.extensions[SECRET_ENVIRON] = tool_server_store.SecretEnviron(
            os.environ if environ is None else environ, key_variables
        )
    return current_app.extensions[SECRET_ENVIRON]


def save_tool_server(db, data, *, create, key_variables=(), allow_command=False, allowed_networks=NOTHING_ALLOWED):
    """Validate `data` (its URL by the address rule, with what the operator allows in `allowed_networks`), connect
    to the server and list its tools, then store both. A server that cannot be used is a ValidationError on the
    field that reaches it (url or command), and nothing is stored. Editing a server that runs a command may keep
    that command (the API sends back what it read) but never set a new one."""
    if not create and isinstance(data, dict) and not allow_command:
        stored = tool_server_store.get_tool_server(db, data.get("id"))
        allow_command = bool(stored["command"]) and data.get("command") == stored["command"]
    server = tool_server_store.validate_tool_server(
        data, key_variables, allow_command=allow_command, allowed_networks=allowed_networks
    )
    tools = fetch_tools(server, secret_environ(key_variables))
    return tool_server_store.save_tool_server(db, server, tools, create=create)


def fetch_tools(server, environ):
    """The server's tools, or a ValidationError on its url (or command) saying in words why they could not be
    listed."""
    try:
        return list_tools(tool_server_store.connection(server), environ)
    except McpError as error:
        if error.kind == MISSING_SECRET:
            raise ValidationError({"headers": f"cannot be sent: {error}"}) from None
        raise ValidationError({"command" if server["command"] else "url": str(error)}) from None


def connect(db, server_id, key_variables=()):
    """Connect: fetch the stored server's tools again and cache them. (the server, None) or (the server as it was,
    the McpError saying what went wrong)."""
    server = tool_server_store.get_tool_server(db, server_id)
    try:
        tools = list_tools(tool_server_store.connection(server), secret_environ(key_variables))
    except McpError as error:
        return server, error
    return tool_server_store.refresh_tools(db, server_id, tools), None
