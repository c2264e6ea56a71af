"""Tool servers (SPEC §6): MCP servers reached over streamable HTTP, whose tools join the registry as SERVER__TOOL.
A server is saved only once it answered and listed its tools; its page lists them (title, description, input schema,
the server's hints) and Connect fetches them again, or says in words what went wrong. Servers that run a local
command are added from the command line only; here they can be relabelled, reconnected and deleted."""

from functools import partial

from flask import Blueprint, abort, render_template, request

from blueprints import confirm_delete_unless_used, done, save_posted
from blueprints.forms.fields import ButtonForm
from blueprints.forms.tool_servers import ToolServerForm, server_to_form_data
from engine.config import machine_name
from engine.tools.mcp import SEPARATOR, McpTool, registry_name
from services import tool_servers as tool_server_service
from services.settings import allowed_networks, configured_names, tool_registry
from store import tool_servers as tool_server_store
from store.db import get_db
from store.tool_servers import ID_MAX, REFRESH_NOTE

bp = Blueprint("tool_servers", __name__)


@bp.app_template_global("tool_server_of")
def tool_server_of(tool_name):
    """The id of the tool server a tool of that name goes to (one it no longer lists included), else None: the
    run page names it beside each call."""
    registry = tool_registry()
    tool = registry.get(tool_name)
    if isinstance(tool, McpTool):
        return tool.server_id
    return tool_name.partition(SEPARATOR)[0] if tool_name in registry.vanished_names() else None


@bp.get("/tool-servers")
def list_tool_servers():
    servers = tool_server_store.list_tool_servers(get_db())
    return render_template("tool_servers/list.html", servers=servers, refresh_note=REFRESH_NOTE)


def _render_form(form, server=None, status=200, form_errors=()):
    return render_template("tool_servers/form.html", form=form, server=server, form_errors=form_errors), status


def _save(form, server_id, create, command=""):
    """Save the posted server: connected and listed first, so a server that cannot be used stores nothing."""
    save = partial(
        tool_server_service.save_tool_server,
        create=create,
        key_variables=configured_names("KEY_VARIABLES"),
        allowed_networks=allowed_networks(),
    )
    return save_posted(form, save, get_db(), form.server_data(server_id, command))


@bp.route("/tool-servers/new", methods=["GET", "POST"])
def new_tool_server():
    form = ToolServerForm()
    if request.method == "GET":
        return _render_form(form)
    server_id = (form.id.data or "").strip() or machine_name(form.label.data or "")[:ID_MAX].rstrip("_")
    server, form_errors = _save(form, server_id, create=True)
    if server is None:
        return _render_form(form, status=400, form_errors=form_errors)
    return done(
        f'Added the tool server "{server["label"]}" with {len(server["tools"])} tool(s).',
        "tool_servers.show_tool_server",
        server_id=server["id"],
    )


@bp.get("/tool-servers/<server_id>")
def show_tool_server(server_id):
    server = tool_server_store.get_tool_server(get_db(), server_id)
    return _render_server(server)


def _render_server(server, error=None, status=200):
    tools = [{**tool, "registry_name": registry_name(server["id"], tool["name"])} for tool in server["tools"]]
    return (
        render_template(
            "tool_servers/show.html",
            server=server,
            tools=tools,
            error=error,
            connect_form=ButtonForm(),
            refresh_note=REFRESH_NOTE,
        ),
        status,
    )


@bp.post("/tool-servers/<server_id>/connect")
def connect_tool_server(server_id):
    """Connect: list the server's tools again and cache them; the page shows them, or what went wrong."""
    db = get_db()
    tool_server_store.get_tool_server(db, server_id)
    if not ButtonForm().validate_on_submit():
        abort(400)
    server, error = tool_server_service.connect(db, server_id, configured_names("KEY_VARIABLES"))
    return _render_server(server, error=str(error) if error else None, status=200)


@bp.route("/tool-servers/<server_id>/edit", methods=["GET", "POST"])
def edit_tool_server(server_id):
    db = get_db()
    server = tool_server_store.get_tool_server(db, server_id)
    if request.method == "GET":
        return _render_form(ToolServerForm(data=server_to_form_data(server)), server=server)
    form = ToolServerForm()
    saved, form_errors = _save(form, server_id, create=False, command=server["command"])
    if saved is None:
        return _render_form(form, server=server, status=400, form_errors=form_errors)
    return done(f'Saved the tool server "{saved["label"]}".', "tool_servers.show_tool_server", server_id=server_id)


@bp.route("/tool-servers/<server_id>/delete", methods=["GET", "POST"])
def delete_tool_server(server_id):
    """A server whose tools some agent enables cannot be deleted: the page names the agents, and a POST answers
    409."""
    db = get_db()
    server = tool_server_store.get_tool_server(db, server_id)
    return confirm_delete_unless_used(
        "tool_servers/delete.html",
        lambda: tool_server_store.delete_tool_server(db, server_id),
        tool_server_store.agents_using_server(db, server_id),
        f'Deleted the tool server "{server["label"]}".',
        "tool_servers.list_tool_servers",
        server=server,
    )
