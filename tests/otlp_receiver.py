"""An OTLP/HTTP trace receiver for the tests (WSGI, served on 127.0.0.1 by tests/live_http.serving): it decodes each
`POST /v1/traces` body as an ExportTraceServiceRequest with opentelemetry-proto and keeps its spans as plain dicts.
`mode` "hang" answers nothing until the test ends; "fail" answers 500."""

import threading

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

HANG_SECONDS = 10.0


def _value(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in any_value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: _value(item.value) for item in any_value.kvlist_value.values}
    return getattr(any_value, kind) if kind else None


def _attributes(key_values):
    return {item.key: _value(item.value) for item in key_values}


class OtlpReceiver:
    def __init__(self, mode="ok"):
        self.mode = mode
        self.spans = []
        self.requests = 0
        self.headers = []  # each request's, lower-case names
        self.released = threading.Event()
        self._lock = threading.Lock()

    def release(self):
        self.released.set()

    def __call__(self, environ, start_response):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length)
        with self._lock:
            self.requests += 1
            self.headers.append({key[5:].lower(): value for key, value in environ.items() if key.startswith("HTTP_")})
        if environ["PATH_INFO"] != "/v1/traces" or environ["REQUEST_METHOD"] != "POST":
            start_response("404 Not Found", [("Content-Length", "0")])
            return [b""]
        if self.mode == "hang":
            self.released.wait(HANG_SECONDS)
        if self.mode != "ok":
            start_response("500 Internal Server Error", [("Content-Length", "0")])
            return [b""]
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        received = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received.append(
                        {
                            "name": span.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex() or None,
                            "kind": span.kind,
                            "start": span.start_time_unix_nano / 1e9,
                            "end": span.end_time_unix_nano / 1e9,
                            "attributes": _attributes(span.attributes),
                            "events": [
                                {
                                    "name": event.name,
                                    "time": event.time_unix_nano / 1e9,
                                    **_attributes(event.attributes),
                                }
                                for event in span.events
                            ],
                            "status": (span.status.code, span.status.message),
                            "resource": resource,
                            "schema_url": scope_spans.schema_url,
                        }
                    )
        with self._lock:
            self.spans.extend(received)
        answer = ExportTraceServiceResponse().SerializeToString()
        start_response("200 OK", [("Content-Type", "application/x-protobuf"), ("Content-Length", str(len(answer)))])
        return [answer]

    def named(self, prefix):
        return [span for span in self.spans if span["name"].startswith(prefix)]
