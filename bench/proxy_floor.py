"""The floor under the policy proxy's figures: the least any proxy built on this stack does for a request — Flask
reads the body, it is forwarded upstream as JSON bytes through a urllib3 pool (as the proxy forwards to a provider
connection, engine.proxy.forward) and the answer parsed, one row with the request and the answer goes into SQLite
(WAL, one write transaction), and the answer goes back as JSON; a streamed answer is passed on as its bytes arrive,
its row written at its end. No policy, no checks, no retries, no run to build. (Until the proxy stopped using the
`openai` SDK, the floor forwarded through the SDK too.)

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

import urllib3
from flask import Flask, Response, jsonify, request

from engine.http_transport import CHUNK_BYTES, IDLE_CONNECTIONS

HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer unused"}


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
    pool = urllib3.PoolManager(maxsize=IDLE_CONNECTIONS, block=False)
    url = f"{os.environ['FLOOR_UPSTREAM_URL']}/chat/completions"
    exchanges = _Exchanges(os.environ["FLOOR_DATABASE"])
    app = Flask(__name__)

    @app.get("/ready")
    def ready():
        return "ready"

    @app.post("/v1/chat/completions")
    def chat_completions():
        body = request.get_json()
        sent = json.dumps(body).encode()
        if body.get("stream"):
            return Response(_streamed(pool, url, sent, exchanges, body), mimetype="text/event-stream")
        answer = json.loads(pool.urlopen("POST", url, body=sent, headers=HEADERS, retries=False).data)
        exchanges.add(body, answer)
        return jsonify(answer)

    return app


def _streamed(pool, url, sent, exchanges, body):
    response = pool.urlopen("POST", url, body=sent, headers=HEADERS, retries=False, preload_content=False)
    received = []
    try:
        while data := response.read1(CHUNK_BYTES):
            received.append(data)
            yield data
    finally:
        response.release_conn()
    exchanges.add(body, b"".join(received).decode())
