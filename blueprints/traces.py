"""The app's side of the trace export (services/tracing.py): configured at start-up from the environment (tests
inject theirs as TELEMETRY_ENVIRON), and the run page's link to its trace when TOOLGATE_TRACE_URL (a template with
`{trace_id}`) is set.

Every run is handed over by the blueprint or command that saved it (services.tracing.traced).
"""

import os

from flask import current_app

from services import tracing
from store import run_traces
from store.db import get_db


def init_app(app):
    environ = app.config.get("TELEMETRY_ENVIRON")
    exporter = tracing.configure(os.environ if environ is None else environ, app.config["DATABASE_URL"])
    app.extensions[tracing.EXTENSION] = exporter
    app.jinja_env.globals["trace_url"] = trace_url


def trace_url(run):
    """The address of the run's trace in the team's trace viewer, or None (no template, or nothing exported)."""
    template = current_app.config.get("TRACE_URL")
    if not template or not isinstance(run, dict) or run.get("id") is None:
        return None
    trace_id = run_traces.trace_id_of(get_db(), run["id"])
    return template.replace("{trace_id}", trace_id) if trace_id else None
