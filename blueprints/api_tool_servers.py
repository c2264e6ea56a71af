"""The JSON API for tool servers: `GET /api/tool-servers`, `GET|PUT|DELETE /api/tool-servers/<id>`. PUT creates or
replaces, and like the page it connects first: a server that does not answer as an MCP server is a 400 naming the
field, and nothing is stored. What the server listed (`tools`, `vanished`, `refreshed_at`) is read-only: a PUT may
send it back as it read it, and it is ignored. A command (stdio) is set from the command line only."""

from flask import Blueprint, jsonify, request
from werkzeug.exceptions import BadRequest

from blueprints import json_error, json_validation_error
from services import tool_servers as tool_server_service
from services.settings import allowed_networks, configured_names
from store import ValidationError, row_exists
from store import tool_servers as tool_server_store
from store.db import get_db

bp = Blueprint("api_tool_servers", __name__, url_prefix="/api")

READ_ONLY = ("tools", "vanished", "refreshed_at")


@bp.get("/tool-servers")
def list_tool_servers():
    return jsonify({"tool_servers": tool_server_store.list_tool_servers(get_db())})


@bp.get("/tool-servers/<server_id>")
def get_tool_server(server_id):
    return jsonify(tool_server_store.get_tool_server(get_db(), server_id))


@bp.put("/tool-servers/<server_id>")
def put_tool_server(server_id):
    try:
        data = request.get_json()
    except BadRequest:
        return json_error(400, "is not valid JSON", "body")
    if not isinstance(data, dict):
        return json_error(400, "must be a JSON object", "tool_server")
    if "id" in data and data["id"] != server_id:
        return json_error(400, f'does not match the address ("{server_id}"); a server\'s id cannot change', "id")
    data = {key: value for key, value in data.items() if key not in READ_ONLY}
    db = get_db()
    existed = row_exists(db, "tool_servers", server_id)
    server = tool_server_service.save_tool_server(
        db,
        {**data, "id": server_id},
        create=not existed,
        key_variables=configured_names("KEY_VARIABLES"),
        allowed_networks=allowed_networks(),
    )
    return jsonify(server), 200 if existed else 201


@bp.delete("/tool-servers/<server_id>")
def delete_tool_server(server_id):
    try:
        tool_server_store.delete_tool_server(get_db(), server_id)
    except ValidationError as error:
        return json_validation_error(error, status=409)
    return "", 204
