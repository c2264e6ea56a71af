"""Span descriptions (services/run_spans.py) sent with the OpenTelemetry SDK: its tracer, a batch span processor and
its OTLP/HTTP exporter (protobuf). The only module that imports OpenTelemetry; services/tracing.py imports it only
when an endpoint is configured.

The run's own span keeps the ids stored with the run (store/run_traces.py), so the spans sent by the several
requests that step one run are one trace: its children name it as their parent through a non-recording span
context, and the SDK's id generator is told the run's ids for the one span that must have them. A run only queues
its span descriptions: a thread of ours makes them SDK spans, and the batch processor's thread sends them. A
collector that is down, slow or failing is noted once (`note_failure`), until it takes spans again; the exporter's
own per-batch log lines are kept quiet.
"""

import atexit
import logging
import queue
import threading
from contextlib import contextmanager

from opentelemetry import context as context_api
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from .run_spans import SCHEMA_URL

KINDS = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}
logger = logging.getLogger("toolgate")
# The SDK's exporter logs every batch it could not send; Toolgate notes the first one in its own log instead.
QUIET_LOGGERS = ("opentelemetry.exporter.otlp", "opentelemetry.sdk._shared_internal", "opentelemetry.sdk.trace.export")


class StoredIds(RandomIdGenerator):
    """Random ids, except for a span started inside `fixed(trace_id, span_id)` in the same thread."""

    def __init__(self):
        self._fixed = threading.local()

    @contextmanager
    def fixed(self, trace_id, span_id):
        self._fixed.ids = (trace_id, span_id)
        try:
            yield
        finally:
            self._fixed.ids = None

    def generate_trace_id(self):
        ids = getattr(self._fixed, "ids", None)
        return ids[0] if ids else super().generate_trace_id()

    def generate_span_id(self):
        ids = getattr(self._fixed, "ids", None)
        return ids[1] if ids else super().generate_span_id()


class FailureNotingExporter(SpanExporter):
    """The OTLP exporter, noting its first failure (an answer that is not a success, a timeout, no answer) and
    nothing more until a batch goes through again."""

    def __init__(self, exporter, endpoint, note_failure):
        self.exporter = exporter
        self.endpoint = endpoint
        self.note_failure = note_failure
        self.failing = False

    def export(self, spans):
        try:
            result = self.exporter.export(spans)
        except Exception:  # the exporter reports failures as a result; anything else is one too
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self.failing = False
        elif not self.failing:
            self.failing = True
            self.note_failure(
                f"Traces could not be sent to the collector at {self.endpoint}: it did not take a batch of "
                f"{len(spans)} span(s). Runs go on; spans that cannot be sent are dropped, and further failures "
                "are not logged until the collector takes spans again."
            )
        return result

    def shutdown(self):
        self.exporter.shutdown()

    def force_flush(self, timeout_millis=30000):
        return self.exporter.force_flush(timeout_millis)


class SpanSender:
    """A tracer provider of its own (the process-wide one is left to whoever embeds Toolgate) that sends spans to
    one OTLP/HTTP endpoint."""

    def __init__(self, endpoint, headers, timeout, service_name, note_failure, schedule_delay_millis=None):
        for name in QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL)
        self.ids = StoredIds()
        self.timeout_millis = timeout * 1000
        self.provider = TracerProvider(
            sampler=ALWAYS_ON,
            resource=Resource.create({"service.name": service_name}),
            id_generator=self.ids,
            shutdown_on_exit=False,  # shutdown() instead, bounded
        )
        exporter = OTLPSpanExporter(endpoint=endpoint, headers=headers, timeout=timeout)
        self.processor = BatchSpanProcessor(
            FailureNotingExporter(exporter, endpoint, note_failure),
            schedule_delay_millis=schedule_delay_millis,
            export_timeout_millis=self.timeout_millis,
        )
        self.provider.add_span_processor(self.processor)
        self.tracer = self.provider.get_tracer("toolgate", schema_url=SCHEMA_URL)
        self.pending = queue.SimpleQueue()
        self.closed = False
        threading.Thread(target=self._make_spans, name="toolgate-spans", daemon=True).start()
        atexit.register(self.shutdown)  # what is queued goes out as the process ends (a CLI run's spans)

    def send(self, trace_id, span_id, descriptions):
        """Queue the described spans of one trace; a thread of their own makes them SDK spans, so a run pays only for
        the queueing."""
        self.pending.put((trace_id, span_id, descriptions))

    def _make_spans(self):
        while True:
            item = self.pending.get()
            if item is None:  # shut down
                return
            if isinstance(item, threading.Event):  # everything queued before it is made
                item.set()
                continue
            try:
                self._spans(*item)
            except Exception:
                logger.exception("Spans could not be made from a run's record.")

    def _made(self, timeout_seconds):
        """Whether the spans queued so far were made within `timeout_seconds`."""
        made = threading.Event()
        self.pending.put(made)
        return made.wait(timeout_seconds)

    def _spans(self, trace_id, span_id, descriptions):
        """Start and end each described span, the run's own with the stored ids and the others as its children."""
        parent = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
        child_context = trace.set_span_in_context(NonRecordingSpan(parent))
        for description in descriptions:
            if description.agent:
                with self.ids.fixed(trace_id, span_id):
                    span = self._start(description, context_api.Context())
            else:
                span = self._start(description, child_context)
            for event in description.events:
                span.add_event(event.name, event.attributes, timestamp=_nanoseconds(event.time))
            if description.error is not None:
                span.set_status(Status(StatusCode.ERROR, description.error))
            span.end(end_time=_nanoseconds(description.end))

    def _start(self, description, context):
        return self.tracer.start_span(
            description.name,
            context=context,
            kind=KINDS[description.kind],
            attributes={key: value for key, value in description.attributes.items() if value is not None},
            start_time=_nanoseconds(description.start),
        )

    def force_flush(self, timeout_millis):
        return self._made(timeout_millis / 1000) and self.provider.force_flush(timeout_millis)

    def shutdown(self):
        """Send what is queued, waiting for the collector no longer than about the export timeout (the SDK's own
        shutdown waits up to 30 s, a batch at a time, for a collector that hangs). Once only."""
        atexit.unregister(self.shutdown)
        if self.closed:
            return
        self.closed = True
        self._made(self.timeout_millis / 1000)
        self.pending.put(None)
        ending = threading.Thread(target=self.provider.shutdown, name="toolgate-trace-shutdown", daemon=True)
        ending.start()
        ending.join(self.timeout_millis / 1000 + 1)


def _nanoseconds(seconds):
    return int(seconds * 1_000_000_000)
