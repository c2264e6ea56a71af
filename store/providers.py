"""Provider connections (SPEC §7): how to reach an OpenAI-compatible server. The API key itself is never
stored: only the name of the environment variable that holds it (empty for a server that takes no key).

Whoever can edit a connection chooses where its key is sent, so the variable must look like an API key's (a name
ending in _API_KEY) or be one the administrator listed (TOOLGATE_KEY_VARIABLES): the form cannot send the
server's other secrets to a URL of its choosing. Runs read only such variables, whatever an older version stored.

`headers` and `extra_body` are JSON objects, stored as JSON text and read back as dicts."""

import json
import os
import re
from collections.abc import Mapping
from urllib.parse import urlparse

from engine.addresses import NOTHING_ALLOWED, url_problem
from engine.config import ID_RULE, LABEL_MAX, SCRIPTED_PROVIDER, URL_MAX, check_text, is_valid_id
from engine.providers import REQUEST_FIELDS

from . import ValidationError, execute, get_row, insert_row, row_exists, select_rows, update_row
from .db import write_transaction

ENV_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
HEADER_NAME_PATTERN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
# Toolgate sets these itself: the key comes from the environment variable, never from a stored header.
RESERVED_HEADERS = ("authorization", "content-type", "content-length", "host")

TIMEOUT_MAX = 3_600
MAX_RETRIES_LIMIT = 10
JSON_OPTION_MAX = 10_000  # characters of `headers` or `extra_body` as JSON
JSON_OPTIONS = ("headers", "extra_body")
PROVIDER_DEFAULTS = {
    "api_key_env": "OPENAI_API_KEY",
    "default_model": "",
    "timeout": 60.0,
    "max_retries": 2,
    "headers": {},
    "extra_body": {},
}
FIELDS = ("id", "label", "base_url", "api_key_env", "default_model", "timeout", "max_retries", "headers", "extra_body")


def _check_json_option(errors, name, value):
    if not isinstance(value, dict):
        errors[name] = "must be a JSON object"
    elif len(json.dumps(value)) > JSON_OPTION_MAX:
        errors[name] = f"must be at most {JSON_OPTION_MAX:,} characters as JSON"


def _header_error(name, value):
    if not HEADER_NAME_PATTERN.match(name):
        return f'must name headers with letters, digits and - _ . ! # $ % & \' * + ^ ` | ~ (not "{name}")'
    if name.lower() in RESERVED_HEADERS:
        return f'may not set "{name}": Toolgate sets it (the API key comes from the environment variable)'
    if not isinstance(value, str) or not (value.isascii() and value.isprintable()):
        return f'must give "{name}" a text value of printable ASCII characters on one line'
    return None


def _check_headers(errors, headers):
    problems = [problem for problem in (_header_error(name, value) for name, value in headers.items()) if problem]
    if problems:
        errors["headers"] = problems[0]


def _check_extra_body(errors, extra_body):
    managed = [key for key in extra_body if key in REQUEST_FIELDS]
    if managed:
        errors["extra_body"] = (
            f"may not set {', '.join(managed)}: Toolgate sends those itself (set them on the agent instead)"
        )


KEY_SUFFIX = "_API_KEY"


def key_variable_allowed(name, key_variables=()):
    """Whether a connection may name this environment variable: `key_variables` are the administrator's extras."""
    return name.endswith(KEY_SUFFIX) or name in key_variables


class KeyEnviron(Mapping):
    """The variables of `environ` a run may read a key from: a view, checked on lookup, since a run reads one or
    two of them and copying the whole environment costs more than the rest of a proxied request's set-up."""

    def __init__(self, environ, key_variables=()):
        self._environ = environ
        self._key_variables = tuple(key_variables)

    def __getitem__(self, name):
        if not key_variable_allowed(name, self._key_variables):
            raise KeyError(name)
        return self._environ[name]

    def __iter__(self):
        return (name for name in self._environ if key_variable_allowed(name, self._key_variables))

    def __len__(self):
        return sum(1 for _ in self)


def key_environ(environ, key_variables=()):
    """The variables of `environ` a run may read a key from."""
    return KeyEnviron(environ, key_variables)


def validate_provider(data, key_variables=(), allowed_networks=NOTHING_ALLOWED):
    """A provider connection with defaults filled in; raises ValidationError naming every bad field. The base URL
    must pass the address rule (engine.addresses), with what the operator allows in `allowed_networks`."""
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
    elif problem := url_problem(base_url, allowed_networks):
        errors["base_url"] = problem
    api_key_env = provider["api_key_env"]
    if not isinstance(api_key_env, str) or (api_key_env and not ENV_NAME_PATTERN.match(api_key_env)):
        errors["api_key_env"] = (
            "must be an environment variable name (letters, digits and underscores), or empty for no key"
        )
    elif api_key_env and not key_variable_allowed(api_key_env, key_variables):
        errors["api_key_env"] = f'must end in "{KEY_SUFFIX}" or be listed in TOOLGATE_KEY_VARIABLES'
    check_text(errors, provider, "default_model", LABEL_MAX)
    timeout = provider["timeout"]
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= TIMEOUT_MAX:
        errors["timeout"] = f"must be a number of seconds above 0 and at most {TIMEOUT_MAX:,}"
    max_retries = provider["max_retries"]
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or not 0 <= max_retries <= MAX_RETRIES_LIMIT:
        errors["max_retries"] = f"must be a whole number from 0 to {MAX_RETRIES_LIMIT}"
    for name in JSON_OPTIONS:
        _check_json_option(errors, name, provider[name])
    if "headers" not in errors:
        _check_headers(errors, provider["headers"])
    if "extra_body" not in errors:
        _check_extra_body(errors, provider["extra_body"])
    if errors:
        raise ValidationError(errors)
    provider["timeout"] = float(timeout)
    return {key: provider[key] for key in FIELDS}


def _to_row(provider):
    return {**provider, **{name: json.dumps(provider[name]) for name in JSON_OPTIONS}}


def _from_row(row):
    return {**row, **{name: json.loads(row[name]) for name in JSON_OPTIONS}}


def api_key_is_set(provider, key_variables=()):
    return bool(provider["api_key_env"]) and bool(key_environ(os.environ, key_variables).get(provider["api_key_env"]))


def list_providers(db):
    return [_from_row(row) for row in select_rows(db, "SELECT * FROM providers ORDER BY lower(label), id")]


def get_provider(db, provider_id):
    return _from_row(get_row(db, "providers", provider_id, f'No provider connection with id "{provider_id}".'))


def create_provider(db, data, key_variables=(), allowed_networks=NOTHING_ALLOWED):
    provider = validate_provider(data, key_variables, allowed_networks)
    with write_transaction(db):
        if row_exists(db, "providers", provider["id"]):
            raise ValidationError({"id": f'is already used by another provider connection ("{provider["id"]}")'})
        insert_row(db, "providers", _to_row(provider))
    return get_provider(db, provider["id"])


def update_provider(db, provider_id, data, key_variables=(), allowed_networks=NOTHING_ALLOWED):
    provider = validate_provider({**data, "id": provider_id}, key_variables, allowed_networks)
    with write_transaction(db):
        get_provider(db, provider_id)
        update_row(db, "providers", provider_id, _to_row(provider))
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
        execute(db, "DELETE FROM providers WHERE id = :id", {"id": provider_id})
