"""Provider connections (SPEC §7): how to reach an OpenAI-compatible server. The API key itself is never
stored: only the name of the environment variable that holds it.

Whoever can edit a connection chooses where its key is sent, so the variable must look like an API key's (a name
ending in _API_KEY) or be one the administrator listed (TOOLGATE_KEY_VARIABLES): the form cannot send the
server's other secrets to a URL of its choosing. Runs read only such variables, whatever an older version stored."""

import os
import re
from urllib.parse import urlparse

from engine.config import ID_RULE, LABEL_MAX, SCRIPTED_PROVIDER, check_text, is_valid_id

from . import ValidationError, get_row, row_exists

ENV_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
URL_MAX = 2_000
TIMEOUT_MAX = 3_600
PROVIDER_DEFAULTS = {"api_key_env": "OPENAI_API_KEY", "default_model": "", "timeout": 60.0}
FIELDS = ("id", "label", "base_url", "api_key_env", "default_model", "timeout")
KEY_SUFFIX = "_API_KEY"


def key_variable_allowed(name, key_variables=()):
    """Whether a connection may name this environment variable: `key_variables` are the administrator's extras."""
    return name.endswith(KEY_SUFFIX) or name in key_variables


def key_environ(environ, key_variables=()):
    """The variables of `environ` a run may read a key from."""
    return {name: value for name, value in environ.items() if key_variable_allowed(name, key_variables)}


def validate_provider(data, key_variables=()):
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
    elif not key_variable_allowed(api_key_env, key_variables):
        errors["api_key_env"] = f'must end in "{KEY_SUFFIX}" or be listed in TOOLGATE_KEY_VARIABLES'
    check_text(errors, provider, "default_model", LABEL_MAX)
    timeout = provider["timeout"]
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= TIMEOUT_MAX:
        errors["timeout"] = f"must be a number of seconds above 0 and at most {TIMEOUT_MAX:,}"
    if errors:
        raise ValidationError(errors)
    provider["timeout"] = float(timeout)
    return {key: provider[key] for key in FIELDS}


def api_key_is_set(provider, key_variables=()):
    return bool(key_environ(os.environ, key_variables).get(provider["api_key_env"]))


def list_providers(db):
    return [dict(row) for row in db["providers"].rows_where(order_by="label COLLATE NOCASE, id")]


def get_provider(db, provider_id):
    return get_row(db["providers"], provider_id, f'No provider connection with id "{provider_id}".')


def create_provider(db, data, key_variables=()):
    provider = validate_provider(data, key_variables)
    with db.atomic():
        if row_exists(db["providers"], provider["id"]):
            raise ValidationError({"id": f'is already used by another provider connection ("{provider["id"]}")'})
        db["providers"].insert(provider)
    return get_provider(db, provider["id"])


def update_provider(db, provider_id, data, key_variables=()):
    provider = validate_provider({**data, "id": provider_id}, key_variables)
    with db.atomic():
        get_provider(db, provider_id)
        db["providers"].update(provider_id, provider)
    return get_provider(db, provider_id)


def delete_provider(db, provider_id):
    """Delete a connection no agent uses; raises ValidationError naming the agents that still use it."""
    from .agents import agents_using_provider

    with db.atomic():
        get_provider(db, provider_id)
        users = agents_using_provider(db, provider_id)
        if users:
            raise ValidationError(
                {"id": f"is used by the agent(s) {', '.join(users)}: switch them to another provider first"}
            )
        db["providers"].delete(provider_id)
