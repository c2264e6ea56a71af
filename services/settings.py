"""What the app's configuration says, read the same way by the blueprints and the CLI: the tool registry, the
options a run takes, whether the login is on, and the name lists set in the config or the environment."""

import ipaddress
import os

from flask import current_app

from engine.addresses import AllowedNetworks
from services import tool_servers as tool_server_service
from store import providers as provider_store


def tool_registry():
    """The app's tool registry: the one built in create_app (tests inject their own), plus the stored tool servers'
    cached tools (services.tool_servers)."""
    return tool_server_service.app_registry(current_app.config["TOOL_REGISTRY"], configured_names("KEY_VARIABLES"))


DEFAULT_SCHEMA_URL = "http://127.0.0.1:5000/schema/agent.json"


def schema_url():
    """Where the policy files written point editors for their JSON Schema: TOOLGATE_SCHEMA_URL, or where `make run`
    serves it. One address for the CLI and the pages alike, so both write the same bytes."""
    return current_app.config.get("SCHEMA_URL") or DEFAULT_SCHEMA_URL


def configured_names(name):
    """A config value listing names, as a list: a list already, or text separated by commas or spaces (how an
    environment variable such as TOOLGATE_ALLOWED_HOSTS gives it)."""
    value = current_app.config.get(name) or ()
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    return [str(item) for item in value]


def allowed_networks():
    """What the operator allows besides the address rule of tool server and provider URLs (engine.addresses):
    TOOLGATE_ALLOWED_NETWORKS, networks and host names separated by commas. create_app checks it at start-up."""
    return AllowedNetworks.parse(configured_names("ALLOWED_NETWORKS"))


def tool_secrets():
    """Where tool server headers read their secrets (services.tool_servers.secret_environ)."""
    return tool_server_service.secret_environ(configured_names("KEY_VARIABLES"))


def key_environ():
    """Where a run reads API keys: only the variables a provider connection may name (MODEL_ENVIRON in tests)."""
    environ = current_app.config.get("MODEL_ENVIRON")
    return provider_store.key_environ(os.environ if environ is None else environ, configured_names("KEY_VARIABLES"))


def run_options():
    """What a run needs from the app's config besides the database (tests inject a registry, an environment or a
    client)."""
    return {
        "registry": tool_registry(),
        "environ": key_environ(),
        "transport": current_app.config.get("MODEL_TRANSPORT"),
        "lease_seconds": current_app.config["RUN_LEASE_SECONDS"],
    }


def login_enabled():
    return bool(current_app.config.get("ADMIN_PASSWORD") or current_app.config.get("ADMIN_PASSWORD_HASH"))


def is_loopback(address):
    """Whether serving on `address` (make run HOST=…) reaches this machine only."""
    if address.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False
