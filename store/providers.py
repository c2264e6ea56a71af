"""Provider connections (SPEC §7): how to reach an OpenAI-compatible server. The API key itself is never
stored: only the name of the environment variable that holds it."""

import os
import re
from urllib.parse import urlparse

from engine.config import ID_RULE, LABEL_MAX, SCRIPTED_PROVIDER, check_text, is_valid_id

from . import ValidationError, get_row, row_exists
from .db import write_transaction

ENV_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
URL_MAX = 2_000
TIMEOUT_MAX = 3_600
PROVIDER_DEFAULTS = {"api_key_env": "OPENAI_API_KEY", "default_model": "", "timeout": 60.0}
FIELDS = ("id", "label", "base_url", "api_key_env", "default_model", "timeout")


def validate_provider(data):
    """A provider connection with defaults filled in; raises ValidationError naming every bad field."""
    if not isinstance(data, dict):
        raise ValidationError({"provider": "must be a JSON object"})
    provider = {**PROVIDER_DEFAULTS, **data}
    errors = {}
    for key in provider:
        if key not in FIELDS:
            errors[key] = "is not a provider field"
    if not is_valid_id(provider.get("id")):
        errors["id"] = ID_RULE
    elif provider["id"] == SCRIPTED_PROVIDER:
        errors["id"] = f'"{SCRIPTED_PROVIDER}" is the built-in scripted model; choose another id'
    check_text(errors, provider, "label", LABEL_MAX, required=True)
    base_url = provider.get("base_url")
    parsed = urlparse(base_url) if isinstance(base_url, str) else None
    if not parsed or parsed.scheme not in ("http", "https") or not parsed.netloc:
        errors["base_url"] = "must be an http:// or https:// URL, such as https://api.openai.com/v1"
    elif len(base_url) > URL_MAX:
        errors["base_url"] = f"must be at most {URL_MAX:,} characters"
    api_key_env = provider["api_key_env"]
    if not isinstance(api_key_env, str) or not ENV_NAME_PATTERN.match(api_key_env):
        errors["api_key_env"] = "must be an environment variable name: letters, digits and underscores"
    check_text(errors, provider, "default_model", LABEL_MAX)
    timeout = provider["timeout"]
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= TIMEOUT_MAX:
        errors["timeout"] = f"must be a number of seconds above 0 and at most {TIMEOUT_MAX:,}"
    if errors:
        raise ValidationError(errors)
    provider["timeout"] = float(timeout)
    return {key: provider[key] for key in FIELDS}


def api_key_is_set(provider):
    return bool(os.environ.get(provider["api_key_env"]))


def list_providers(db):
    return [dict(row) for row in db["providers"].rows_where(order_by="label COLLATE NOCASE, id")]


def get_provider(db, provider_id):
    return get_row(db["providers"], provider_id, f'No provider connection with id "{provider_id}".')


def create_provider(db, data):
    provider = validate_provider(data)
    with write_transaction(db):
        if row_exists(db["providers"], provider["id"]):
            raise ValidationError({"id": f'is already used by another provider connection ("{provider["id"]}")'})
        db["providers"].insert(provider)
    return get_provider(db, provider["id"])


def update_provider(db, provider_id, data):
    provider = validate_provider({**data, "id": provider_id})
    with write_transaction(db):
        get_provider(db, provider_id)
        db["providers"].update(provider_id, provider)
    return get_provider(db, provider_id)


def delete_provider(db, provider_id):
    """Delete a connection no agent uses; raises ValidationError naming the agents that still use it."""
    from .agents import agents_using_provider

    with write_transaction(db):
        get_provider(db, provider_id)
        users = agents_using_provider(db, provider_id)
        if users:
            raise ValidationError(
                {"id": f"is used by the agent(s) {', '.join(users)}: switch them to another provider first"}
            )
        db["providers"].delete(provider_id)
