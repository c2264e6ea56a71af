"""A fake OpenAI-compatible model server for the provider tests, served in a thread on 127.0.0.1 (port 0, so tests
running side by side never clash), speaking HTTP/1.1 with keep-alive like a real server.

It records every request (path, headers, JSON body) and counts the TCP connections opened to it. Each request is
answered by the next queued `Reply` (the last one answers the rest); a Reply can be any status, headers and body,
sent whole or trickled a few bytes at a time.
"""

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

POLL_INTERVAL = 0.05  # how soon the server notices it is shut down


def completion(content=None, tool_calls=None, finish_reason=None, usage=None, model="m"):
    """A chat-completions answer; `tool_calls` in OpenAI's format, or (id, name, arguments) tuples."""
    message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            call
            if isinstance(call, dict)
            else {"id": call[0], "type": "function", "function": {"name": call[1], "arguments": call[2]}}
            for call in tool_calls
        ]
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop")}
        ],
    }
    if usage is not None:
        body["usage"] = dict(zip(("prompt_tokens", "completion_tokens", "total_tokens"), usage, strict=True))
    return body


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
    def __init__(self, *replies):
        self.replies = list(replies) or [Reply()]
        self.answered = 0  # requests answered since the replies were queued
        self.requests = []
        self.connections = 0
        self.request_times = []
        self._lock = threading.Lock()

    def enqueue(self, *replies):
        """Answer the next requests with these replies (the last one answers the rest)."""
        with self._lock:
            self.replies = list(replies)
            self.answered = 0

    def connection_opened(self):
        with self._lock:
            self.connections += 1

    @property
    def bodies(self):
        return [request["body"] for request in self.requests]

    def record(self, path, headers, body):
        """Record one request; the Reply that answers it."""
        with self._lock:
            self.request_times.append(time.monotonic())
            self.requests.append({"path": path, "headers": headers, "body": body})
            reply = self.replies[min(self.answered, len(self.replies) - 1)]
            self.answered += 1
            return reply

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
