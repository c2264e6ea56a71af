"""The JSON API for agents (SPEC §8): the same JSON form as the engine, the same validation as the pages.

Errors are JSON: {"error": message naming the field, "errors": {field: message}} with 400; 404 for an unknown id;
409 for a stale revision. Requests with a body must be `application/json`, which is also why the blueprint can
skip CSRF tokens: a browser will not send such a request cross-site without a CORS preflight.
"""

from flask import Blueprint, jsonify, request
from werkzeug.exceptions import BadRequest

from blueprints import tool_registry
from db import get_db
from engine.config import AgentValidationError
from store import NotFound, RevisionConflict
from store import agents as agent_store

bp = Blueprint("api", __name__, url_prefix="/api")


def _error(status, message, **extra):
    return jsonify({"error": message, **extra}), status


def _json_body():
    if not request.is_json:
        raise BadRequest('Send the agent as JSON, with the header "Content-Type: application/json".')
    try:
        return request.get_json()
    except BadRequest:
        raise BadRequest("The request body is not valid JSON.") from None


@bp.get("/agents")
def list_agents():
    return jsonify({"agents": agent_store.list_agents(get_db())})


@bp.get("/agents/<agent_id>")
def get_agent(agent_id):
    try:
        return jsonify(agent_store.get_agent(get_db(), agent_id))
    except NotFound as error:
        return _error(404, str(error))


@bp.put("/agents/<agent_id>")
def put_agent(agent_id):
    """Create or replace. Replacing needs the stored `revision`; the answer is the stored agent."""
    data = _json_body()
    if not isinstance(data, dict):
        return _error(400, "agent: must be a JSON object", errors={"agent": "must be a JSON object"})
    if "id" in data and data["id"] != agent_id:
        message = f'does not match the address ("{agent_id}"); an agent\'s id cannot change'
        return _error(400, f"id: {message}", errors={"id": message})
    db = get_db()
    existed = agent_store.agent_exists(db, agent_id)
    try:
        agent = agent_store.save_agent(db, {**data, "id": agent_id}, tool_registry().names())
    except AgentValidationError as error:
        return _error(400, str(error), errors=error.errors)
    except RevisionConflict as conflict:
        return _error(409, str(conflict), revision=conflict.current_revision)
    return jsonify(agent), 200 if existed else 201


@bp.delete("/agents/<agent_id>")
def delete_agent(agent_id):
    """Delete; with ?revision=N, only if N is still the stored revision."""
    revision = request.args.get("revision")
    if revision is not None and not revision.isdecimal():
        return _error(400, "revision: must be a whole number", errors={"revision": "must be a whole number"})
    try:
        agent_store.delete_agent(get_db(), agent_id, revision=int(revision) if revision else None)
    except NotFound as error:
        return _error(404, str(error))
    except RevisionConflict as conflict:
        return _error(409, str(conflict), revision=conflict.current_revision)
    return "", 204
