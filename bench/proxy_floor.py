"""The floor under the policy proxy's figures: the least any proxy built on this stack does for a request — Flask
reads the body, the `openai` SDK forwards it upstream (through engine.http_transport, as every provider connection
sends), one row with the request and the answer goes into SQLite (WAL, one write transaction), and the answer goes
back as JSON; a streamed request is passed on chunk by chunk as server-sent events, its row written at its end. No
policy, no checks, no run to build.

bench.proxy and bench.gateway serve it as they serve the app (`make run`'s server, a process of its own) and time it
beside the direct call, so each run shows how much of the proxy's figure the extra hop costs by itself, and how much
is Toolgate's.

`gunicorn 'bench.proxy_floor:create_app()'`, with FLOOR_UPSTREAM_URL (the upstream's base URL, …/v1) and
FLOOR_DATABASE (a file it may create) in the environment.
"""

import json
import os
import sqlite3
import threading

import httpx2
import openai
from flask import Flask, Response, jsonify, request

from engine.http_transport import PooledTransport


class _Exchanges:
    """One connection for the process, one request writing at a time (under gevent a query blocks the worker
    anyway)."""

    def __init__(self, path):
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS exchanges (id INTEGER PRIMARY KEY, body TEXT, answer TEXT)")
        self.lock = threading.Lock()

    def add(self, body, answer):
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute(
                "INSERT INTO exchanges (body, answer) VALUES (?, ?)", [json.dumps(body), json.dumps(answer)]
            )
            self.db.execute("COMMIT")


def create_app():
    upstream = openai.OpenAI(
        base_url=os.environ["FLOOR_UPSTREAM_URL"],
        api_key="unused",
        max_retries=0,
        http_client=httpx2.Client(transport=PooledTransport()),
    )
    exchanges = _Exchanges(os.environ["FLOOR_DATABASE"])
    app = Flask(__name__)

    @app.get("/ready")
    def ready():
        return "ready"

    @app.post("/v1/chat/completions")
    def chat_completions():
        body = request.get_json()
        if body.get("stream"):
            return Response(_streamed(upstream, exchanges, body), mimetype="text/event-stream")
        answer = upstream.post("/chat/completions", body=body, cast_to=object)
        exchanges.add(body, answer)
        return jsonify(answer)

    return app


def _streamed(upstream, exchanges, body):
    chunks = upstream.post(
        "/chat/completions", body=body, cast_to=object, stream=True, stream_cls=openai.Stream[object]
    )
    received = []
    with chunks:
        for chunk in chunks:
            received.append(chunk)
            yield f"data: {json.dumps(chunk)}\n\n".encode()
    exchanges.add(body, received)
    yield b"data: [DONE]\n\n"
