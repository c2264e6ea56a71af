"""Runs exported as OpenTelemetry traces (SPEC §9), for the observability stack a team already has: opt-in, over
OTLP/HTTP, configured by the standard variables.

`configure(environ, database_url)` at start-up: None — and nothing of OpenTelemetry imported — unless
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the whole URL) or OTEL_EXPORTER_OTLP_ENDPOINT (a base, `/v1/traces` added) is
set; OTEL_EXPORTER_OTLP_HEADERS (or its _TRACES_ twin), OTEL_EXPORTER_OTLP_TIMEOUT (seconds, as the Python SDK reads
it), OTEL_SERVICE_NAME (default `toolgate`) and OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (message
text, arguments and outputs, the provider key redacted) are read from the same environment.

`traced(run)` after every save of a run, by whoever saved it (a blueprint, the CLI): the app's RunTracing (kept in
`app.extensions`) sends the spans of what the stored run holds beyond what was sent before (services/run_spans.py),
and records how far it got with the run (store/run_traces.py), so a run stepped over several requests, or a proxied
conversation continued by several client requests, is one trace. Export never breaks a run: the spans are queued
for threads of their own, and a failure is logged, never raised.
"""

import logging
import os
import secrets
import time

from flask import current_app

from engine.config import SCRIPTED_PROVIDER
from engine.redaction import redact
from store import NotFound, run_traces
from store import log as log_store
from store import providers as provider_store
from store.db import get_db, open_db, write_transaction

from .run_spans import Cursor, new_spans

logger = logging.getLogger("toolgate")
EXTENSION = "toolgate_tracing"  # the app's RunTracing, or None
SERVICE_NAME = "toolgate"
TRACES_PATH = "/v1/traces"
DEFAULT_TIMEOUT = 10.0
CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
PROXY_SOURCE = "proxy"


def traces_endpoint(environ):
    """The URL spans are posted to, or None when neither endpoint variable is set."""
    endpoint = (environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or "").strip()
    if endpoint:
        return endpoint
    base = (environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "").strip()
    return f"{base.rstrip('/')}{TRACES_PATH}" if base else None


def _headers(environ):
    """The OTLP headers, `key=value` pairs separated by commas, values URL-encoded (the variable's own format)."""
    from opentelemetry.util.re import parse_env_headers

    text = environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or environ.get("OTEL_EXPORTER_OTLP_HEADERS") or ""
    return parse_env_headers(text, liberal=True)


def _timeout(environ):
    text = environ.get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") or environ.get("OTEL_EXPORTER_OTLP_TIMEOUT") or ""
    try:
        seconds = float(text)
    except ValueError:
        return DEFAULT_TIMEOUT
    return seconds if seconds > 0 else DEFAULT_TIMEOUT


def configure(environ, database_url, schedule_delay_millis=None):
    """The app's RunTracing, or None when no endpoint is set. `schedule_delay_millis`: how long the batch processor
    gathers spans before it sends them (the SDK's default, 5 s, unless given)."""
    endpoint = traces_endpoint(environ)
    if endpoint is None:
        return None
    from .otel_export import SpanSender

    sender = SpanSender(
        endpoint,
        _headers(environ),
        _timeout(environ),
        (environ.get("OTEL_SERVICE_NAME") or "").strip() or SERVICE_NAME,
        _failure_log(database_url),
        schedule_delay_millis=schedule_delay_millis,
    )
    capture = (environ.get(CAPTURE_VARIABLE) or "").strip().lower() == "true"
    return RunTracing(sender, capture)


def traced(run):
    """Hand the run, as just stored (with its id), to the app's trace export, if it has one; returns the run."""
    exporter = current_app.extensions.get(EXTENSION)
    if exporter is not None:
        environ = current_app.config.get("MODEL_ENVIRON")
        exporter.export_run(get_db(), run, os.environ if environ is None else environ)
    return run


def _failure_log(database_url):
    """Write a failure to send spans to the log table and the `toolgate` logger, from the exporter's thread."""

    def note_failure(message):
        logger.error(message)
        try:
            db = open_db(database_url)
            try:
                with write_transaction(db):
                    log_store.add_entries(db, [{"level": "error", "kind": "trace_export", "message": message}])
            finally:
                db.close()
        except Exception:
            logger.exception("The trace export failure could not be written to the log table.")

    return note_failure


class RunTracing:
    """What one app exports: the sender, and whether content is captured."""

    def __init__(self, sender, capture=False):
        self.sender = sender
        self.capture = capture

    def export_run(self, db, run, key_environ=None):
        """Send the spans of what `run` (as stored, with its id) holds beyond what was sent before. Never raises:
        a failure here is logged and the run goes on. `key_environ`: where the provider's key is read, to redact
        it from content."""
        if not isinstance(run, dict) or run.get("id") is None:
            return
        try:
            self._export(db, run, key_environ or {})
        except Exception:
            logger.exception("The spans of run %s could not be exported.", run.get("id"))

    def _export(self, db, run, key_environ):
        stored = run_traces.trace_of(db, run["id"])
        trace = stored or {
            "trace_id": secrets.token_hex(16),
            "span_id": secrets.token_hex(8),
            "conversation_id": _conversation_id(db, run),
            **Cursor().to_row(),
        }
        before = Cursor.from_row(trace)
        secret = self._secret(db, run, key_environ) if self.capture else None
        export = new_spans(
            run,
            before,
            time.time(),
            conversation_id=trace["conversation_id"],
            capture=self.capture,
            redact=lambda value: redact(value, secret),
        )
        if export.cursor == before:
            return
        after = export.cursor.to_row()
        if stored is not None:
            claimed = run_traces.advance(db, run["id"], before.to_row(), after)
        else:  # the run's first spans: its trace is stored with them
            claimed = run_traces.start_trace(db, run["id"], trace, after)
        if claimed:  # else another request sends these spans
            self.sender.send(int(trace["trace_id"], 16), int(trace["span_id"], 16), export.spans)

    def _secret(self, db, run, key_environ):
        """The key of the run's provider connection, to redact; None for the scripted model or a connection gone."""
        provider = (run.get("agent") or {}).get("provider") or SCRIPTED_PROVIDER
        if provider == SCRIPTED_PROVIDER:
            return None
        try:
            connection = provider_store.get_provider(db, provider)
        except NotFound:
            return None
        return key_environ.get(connection["api_key_env"])

    def force_flush(self, timeout_seconds=5.0):
        """Send what is queued now; True when it all went out in time."""
        return self.sender.force_flush(int(timeout_seconds * 1000))

    def shutdown(self):
        self.sender.shutdown()


def _conversation_id(db, run):
    """A proxied run's conversation: the one of the run it continues (its next user message), else its own id."""
    if run.get("source") != PROXY_SOURCE:
        return None
    continues = run.get("continues_run")
    if continues is not None:
        earlier = run_traces.trace_of(db, continues)
        return (earlier or {}).get("conversation_id") or str(continues)
    return str(run["id"])
