"""The JSON API for agents (SPEC §8): the same JSON form as the engine, the same validation as the pages.

Errors are JSON in the API's one shape (blueprints.json_error): 400 naming the field, 404 for an unknown id, 409
for a stale revision (with the stored `revision`). Writes must be `application/json` (415 otherwise, in
blueprints.request_checks), which is also why the blueprint can skip CSRF tokens: a browser will not send such a
request cross-site without a CORS preflight.
"""

import json

from flask import Blueprint, jsonify, request
from werkzeug.exceptions import BadRequest

from blueprints import json_error
from engine import tools_for_agent
from engine.config import ValidationError
from services.settings import allowed_networks, tool_registry
from store import agents as agent_store
from store.db import get_db

bp = Blueprint("api", __name__, url_prefix="/api")


def _json_body():
    try:
        return request.get_json()
    except BadRequest:
        raise ValidationError({"body": "is not valid JSON"}) from None


@bp.get("/agents")
def list_agents():
    return jsonify({"agents": agent_store.list_agents(get_db())})


@bp.get("/agents/<agent_id>")
def get_agent(agent_id):
    return jsonify(agent_store.get_agent(get_db(), agent_id))


@bp.get("/agents/<agent_id>/tools")
def get_agent_tools(agent_id):
    """{"tools": [...]}: the tools the agent's next model request sends, in OpenAI's format, exactly as a run
    would send them; `?overrides=<JSON>` applies a run's overrides first."""
    agent = agent_store.get_agent(get_db(), agent_id)
    overrides = request.args.get("overrides")
    if overrides is not None:
        try:
            overrides = json.loads(overrides)
        except ValueError:
            return json_error(400, "is not valid JSON", "overrides")
        except RecursionError:
            return json_error(400, "is nested too deeply to be read", "overrides")
    return jsonify({"tools": tools_for_agent(agent, overrides, registry=tool_registry())})


@bp.put("/agents/<agent_id>")
def put_agent(agent_id):
    """Create or replace. Replacing needs the stored `revision`; the answer is the stored agent."""
    data = _json_body()
    if not isinstance(data, dict):
        return json_error(400, "must be a JSON object", "agent")
    if "id" in data and data["id"] != agent_id:
        message = f'does not match the address ("{agent_id}"); an agent\'s id cannot change'
        return json_error(400, message, "id")
    db = get_db()
    existed = agent_store.agent_exists(db, agent_id)
    known_tools = tool_registry().parameters_by_name()
    agent = agent_store.save_agent(db, {**data, "id": agent_id}, known_tools, allowed_networks=allowed_networks())
    return jsonify(agent), 200 if existed else 201


@bp.delete("/agents/<agent_id>")
def delete_agent(agent_id):
    """Delete; with ?revision=N, only if N is still the stored revision."""
    revision = request.args.get("revision")
    if revision is not None and not revision.isdecimal():
        return json_error(400, "must be a whole number", "revision")
    agent_store.delete_agent(get_db(), agent_id, revision=int(revision) if revision else None)
    return "", 204
