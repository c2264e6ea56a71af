"""A fake OpenAI-compatible model server for the provider tests, served in a thread on 127.0.0.1 (port 0, so tests
running side by side never clash), speaking HTTP/1.1 with keep-alive like a real server.

Its queue and history are the one model double's (tests/doubles): it records every request (path, headers, JSON
body), and each request is answered by the next queued `Reply` (the last one answers the rest); a Reply can be any
status, headers and body, sent whole or trickled a few bytes at a time. The server counts the TCP connections
opened to it.
"""

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.doubles import ModelDouble, completion

POLL_INTERVAL = 0.05  # how soon the server notices it is shut down


@dataclass
class Reply:
    body: object = field(default_factory=lambda: completion("OK"))
    status: int = 200
    headers: dict = field(default_factory=dict)
    trickle_seconds: float | None = None  # send the body one byte at a time, this long apart

    def chunks(self):
        data = self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()
        if self.trickle_seconds is None:
            yield data
            return
        for index in range(len(data)):
            time.sleep(self.trickle_seconds)
            yield data[index : index + 1]


def error_reply(status, message, **headers):
    return Reply(body={"error": {"message": message, "type": "error"}}, status=status, headers=headers)


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive, as real model servers speak it. (werkzeug's development server closes every
    connection, so the connections a client keeps open could not be counted behind it.)"""

    protocol_version = "HTTP/1.1"

    def handle(self):  # once per TCP connection
        self.server.fake.connection_opened()
        super().handle()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = self.server.fake.record(self.path, headers, json.loads(body) if body else None)
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.trickle_seconds is None:
            data = b"".join(reply.chunks())
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in reply.chunks():
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):  # the client gave up on a trickle: that is the point
            self.close_connection = True

    def log_message(self, format, *args):  # noqa: A002 - http.server's signature
        pass


class FakeModelServer:
    """The one model double (tests/doubles) behind a keep-alive HTTP/1.1 server: its queue holds `Reply`s (a status,
    headers and a body, sent whole or trickled), its history the requests; the server adds the connections opened
    and when each request came."""

    def __init__(self, *replies):
        self.model = ModelDouble(*(replies or [Reply()]), ignores_tools=True)
        self.connections = 0
        self.request_times = []
        self._lock = threading.Lock()

    def enqueue(self, *replies):
        """Answer the next requests with these replies (the last one answers the rest)."""
        self.model.enqueue(*replies)

    def connection_opened(self):
        with self._lock:
            self.connections += 1

    @property
    def requests(self):
        return self.model.requests

    @property
    def bodies(self):
        return self.model.bodies

    def record(self, path, headers, body):
        """Record one request; the Reply that answers it."""
        with self._lock:
            self.request_times.append(time.monotonic())
        return self.model.reply(self.model.record(path, headers, body), body)

    def __enter__(self):
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(POLL_INTERVAL,), daemon=True)
        self._thread.start()
        self.base_url = f"http://127.0.0.1:{self._server.server_port}/v1"
        return self

    def __exit__(self, *exc_info):
        self._server.shutdown()
        self._thread.join(timeout=5)
        self._server.server_close()

    def connection(self, **fields):
        """A provider connection to this server, as the engine takes it (no retries unless asked)."""
        return {
            "id": "fake",
            "label": "Fake",
            "base_url": self.base_url,
            "api_key_env": "FAKE_API_KEY",
            "default_model": "m",
            "timeout": 10.0,
            "max_retries": 0,
            "headers": {},
            "extra_body": {},
            **fields,
        }
