"""The app's side of the trace export (services/tracing.py): configured at start-up from the environment (tests
inject theirs as TELEMETRY_ENVIRON), and the run page's link to its trace when TOOLGATE_TRACE_URL (a template with
`{trace_id}`) is set.

The policy proxy names the run each answer recorded in its X-Toolgate-Run header: that run is handed to the export
after the proxy's request, so the proxy itself knows nothing of tracing. Every other run is handed over by the
blueprint or command that saved it (services.tracing.traced).
"""

import os

from flask import current_app, request

from services import tracing
from store import NotFound, run_traces
from store import runs as run_store
from store.db import get_db

PROXY_RUN_HEADER = "X-Toolgate-Run"  # blueprints/proxy.py's RUN_HEADER


def init_app(app):
    environ = app.config.get("TELEMETRY_ENVIRON")
    exporter = tracing.configure(os.environ if environ is None else environ, app.config["DATABASE"])
    app.extensions[tracing.EXTENSION] = exporter
    app.after_request(_export_proxied_run)
    app.jinja_env.globals["trace_url"] = trace_url


def _export_proxied_run(response):
    run_id = response.headers.get(PROXY_RUN_HEADER)
    if current_app.extensions.get(tracing.EXTENSION) is None or request.blueprint != "proxy" or not run_id:
        return response
    try:
        tracing.traced(run_store.get_run(get_db(), int(run_id)))
    except (NotFound, ValueError):
        pass
    return response


def trace_url(run):
    """The address of the run's trace in the team's trace viewer, or None (no template, or nothing exported)."""
    template = current_app.config.get("TRACE_URL")
    if not template or not isinstance(run, dict) or run.get("id") is None:
        return None
    trace_id = run_traces.trace_id_of(get_db(), run["id"])
    return template.replace("{trace_id}", trace_id) if trace_id else None
