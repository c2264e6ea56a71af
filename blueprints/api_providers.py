"""The JSON API for provider connections, in the agents API's conventions (blueprints/api.py): the connection as
the store keeps it (the *name* of the key's environment variable, never a key), PUT creates or replaces, errors in
the API's one shape (blueprints.json_error): 400 naming the field, 404 for an unknown id, 409 for a connection
some agent still uses. Writes must be `application/json` (blueprints.request_checks), so no CSRF token is needed."""

from flask import Blueprint, jsonify, request
from werkzeug.exceptions import BadRequest

from blueprints import json_error
from engine.config import ValidationError
from services.settings import allowed_networks, configured_names
from store import agents as agent_store
from store import providers as provider_store
from store import row_exists
from store.db import get_db

bp = Blueprint("api_providers", __name__, url_prefix="/api")


@bp.get("/providers")
def list_providers():
    return jsonify({"providers": provider_store.list_providers(get_db())})


@bp.get("/providers/<provider_id>")
def get_provider(provider_id):
    return jsonify(provider_store.get_provider(get_db(), provider_id))


@bp.put("/providers/<provider_id>")
def put_provider(provider_id):
    """Create or replace; the answer is the stored connection, with the defaults of the fields left out."""
    try:
        data = request.get_json()
    except BadRequest:
        return json_error(400, "is not valid JSON", "body")
    if not isinstance(data, dict):
        return json_error(400, "must be a JSON object", "provider")
    if "id" in data and data["id"] != provider_id:
        return json_error(400, f'does not match the address ("{provider_id}"); a connection\'s id cannot change', "id")
    db = get_db()
    existed = row_exists(db, "providers", provider_id)
    save = provider_store.update_provider if existed else provider_store.create_provider
    arguments = (db, provider_id, data) if existed else (db, {**data, "id": provider_id})
    provider = save(*arguments, configured_names("KEY_VARIABLES"), allowed_networks())
    return jsonify(provider), 200 if existed else 201


@bp.delete("/providers/<provider_id>")
def delete_provider(provider_id):
    """Delete a connection no agent uses; one some agent uses is a 409 naming the agents."""
    db = get_db()
    users = agent_store.agents_using_provider(db, provider_id)
    try:
        provider_store.delete_provider(db, provider_id)
    except ValidationError as error:
        return json_error(409, error.errors[error.field], error.field, agents=users)
    return "", 204
