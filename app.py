"""Toolgate's Flask application factory: config, extensions, blueprints, CLI commands — nothing else."""

import gc
import os
import secrets

from flask import Flask
from flask_wtf.csrf import CSRFProtect
from sqlalchemy import inspect

import cli
from blueprints import (
    agents,
    api,
    api_cases,
    api_providers,
    api_runs,
    api_tool_servers,
    auth,
    cases,
    compare,
    console_log,
    documents,
    live_runs,
    log,
    providers,
    proxy,
    register_error_handlers,
    register_template_helpers,
    request_checks,
    runs,
    security,
    tokens,
    tool_servers,
    traces,
)
from engine.proxy.serve import KEEP_ALIVE_SECONDS
from engine.tools import default_registry
from services import runs as run_service
from services import settings
from store import db, migrations

csrf = CSRFProtect()

# Settings read from TOOLGATE_* as written: from_prefixed_env takes what looks like JSON as JSON (digits, a number).
TEXT_SETTINGS = (
    "ADMIN_PASSWORD",
    "ADMIN_PASSWORD_HASH",
    "ALLOWED_HOSTS",
    "ALLOWED_NETWORKS",
    "KEY_VARIABLES",
    "TRACE_URL",
)


def _secret_key(instance_path):
    """The key in instance/secret_key, generated on first start (owner-only); never part of the repository."""
    path = os.path.join(instance_path, "secret_key")
    if not os.path.exists(path):
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_hex(32))
    os.chmod(path, 0o600)  # tighten a key an older version left readable
    with open(path) as file:
        return file.read().strip()


def create_app(test_config=None, instance_path=None):
    app = Flask(__name__, instance_relative_config=True, instance_path=instance_path)
    app.config.from_mapping(
        DATABASE=os.path.join(app.instance_path, "toolgate.db"),  # the SQLite file, unless DATABASE_URL is set
        DATABASE_URL=None,  # sqlite:///… or postgresql://user:password@host:port/database (store/db.py)
        # On PostgreSQL: the connections each process opens at most, and the seconds a request waits for one.
        DATABASE_POOL_SIZE=db.POOL_SIZE,
        DATABASE_POOL_TIMEOUT=db.POOL_TIMEOUT_SECONDS,
        MAX_CONTENT_LENGTH=4 * 1024 * 1024,
        MAX_FORM_MEMORY_SIZE=4 * 1024 * 1024,
        TOOL_REGISTRY=None,  # None: the built-in and installed tools; tests may inject their own
        SESSION_COOKIE_SAMESITE="Lax",
        ADMIN_PASSWORD=None,  # either of these turns the login on (blueprints/auth.py)
        ADMIN_PASSWORD_HASH=None,
        SESSION_IDLE_MINUTES=8 * 60,  # a session unused this long ends (blueprints/auth.py)
        LOGIN_THROTTLE_SECONDS=1,  # the first wait after too many wrong passwords (blueprints/login_throttle.py)
        ALLOWED_HOSTS=(),  # host names served besides 127.0.0.1, localhost and [::1]
        KEY_VARIABLES=(),  # environment variables a provider may name besides *_API_KEY
        # Networks and host names a tool server or provider URL may point at besides the address rule's
        # (engine/addresses.py): link-local, cloud metadata and unspecified addresses are refused otherwise.
        ALLOWED_NETWORKS=(),
        # Seconds a run step may overrun its model's timeout, and a run may wait for its next step, before it reads
        # "interrupted" (store/run_service.py).
        RUN_LEASE_SECONDS=run_service.LEASE_SECONDS,
        # How often a streamed proxied answer held for approval keeps its connection alive (engine.proxy.serve).
        PROXY_KEEP_ALIVE_SECONDS=KEEP_ALIVE_SECONDS,
        TRACE_URL=None,  # the run page links to its trace: a URL with {trace_id} (blueprints/traces.py)
        TELEMETRY_ENVIRON=None,  # None: the OTEL_* variables of os.environ; tests inject their own
    )
    if test_config is None:
        app.config.from_pyfile("config.py", silent=True)
        app.config.from_prefixed_env("TOOLGATE")
        app.config.update(
            {name: os.environ[f"TOOLGATE_{name}"] for name in TEXT_SETTINGS if f"TOOLGATE_{name}" in os.environ}
        )
    else:
        app.config.from_mapping(test_config)
    app.json.sort_keys = False  # agents read in the field order of SPEC §2
    with app.app_context():
        settings.allowed_networks()  # a TOOLGATE_ALLOWED_NETWORKS entry that is no network nor host stops the start
    # Prompts, transcripts and the secret key live here: owner-only, and tightened if an older version was laxer.
    os.makedirs(app.instance_path, mode=0o700, exist_ok=True)
    os.chmod(app.instance_path, 0o700)
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = _secret_key(app.instance_path)

    if app.config["TOOL_REGISTRY"] is None:
        app.config["TOOL_REGISTRY"] = default_registry()  # a tool name clash fails here, at start-up
    db.init_app(app)
    connection = db.open_db(app.config["DATABASE_URL"])
    path = db.sqlite_path(app.config["DATABASE_URL"])
    if path is not None:
        db.restrict_to_owner(path)
    try:
        # What start-up did to the database, for `flask init-db` to report truthfully.
        created = not inspect(connection).get_table_names()
        app.extensions["toolgate_schema"] = {"created": created, "applied": migrations.migrate(connection)}
    finally:
        connection.close()

    # In this order, before CSRF: a foreign host is refused first, then a request without login, then bad input.
    security.init_app(app)
    auth.init_app(app)
    request_checks.init_app(app)
    csrf.init_app(app)
    app.register_blueprint(tokens.bp)
    app.register_blueprint(agents.bp)
    app.register_blueprint(providers.bp)
    app.register_blueprint(tool_servers.bp)
    app.register_blueprint(api.bp)
    csrf.exempt(api.bp)  # JSON only: a browser cannot send it cross-site without a CORS preflight
    app.register_blueprint(runs.bp)
    app.register_blueprint(live_runs.bp)
    app.register_blueprint(log.bp)
    app.register_blueprint(documents.bp)
    app.register_blueprint(api_runs.bp)
    csrf.exempt(api_runs.bp)  # JSON only, like the agents API
    app.register_blueprint(cases.bp)
    app.register_blueprint(compare.bp)
    app.register_blueprint(api_cases.bp)
    csrf.exempt(api_cases.bp)  # JSON only, like the agents API
    app.register_blueprint(api_tool_servers.bp)
    csrf.exempt(api_tool_servers.bp)  # JSON only, like the agents API
    app.register_blueprint(api_providers.bp)
    csrf.exempt(api_providers.bp)  # JSON only, like the agents API
    app.register_blueprint(proxy.bp)
    app.wsgi_app = proxy.TakingTurns(app.wsgi_app, app.config["MAX_CONTENT_LENGTH"])
    csrf.exempt(proxy.bp)  # JSON only: OpenAI clients, which hold no session
    app.register_blueprint(proxy.probes)
    register_error_handlers(app)
    register_template_helpers(app)
    traces.init_app(app)
    cli.register(app)
    return app


def serve_app():
    """The app as `make run` serves it (gunicorn 'app:serve_app()'): the `toolgate` log on the console too,
    one entry per line. The CLI's commands leave their own output alone.

    Each worker freezes its heap once the app is loaded (gc.freeze): a full collection walked all of it, the
    `openai` SDK included when it was loaded, whenever one ran, and under a burst of a thousand proxied requests one
    ran every few hundred requests and stopped the worker for 0.1 to 0.8 s, pages and all (docs/performance.md,
    "Pages while the proxy is busy"). Frozen, only what came after is walked. The SDK is not loaded here: a
    process that only proxies never imports it (engine/providers.py), which saves each worker more memory."""
    console_log.attach()
    app = create_app()
    gc.freeze()
    return app
