"""The floor under the policy proxy's figure: the least any proxy built on this stack does for a request — Flask
reads the body, the `openai` SDK forwards it upstream, one row with the request and the answer goes into SQLite
(WAL, one write transaction), and the answer goes back as JSON. No policy, no checks, no run to build.

bench.proxy serves it as it serves the app (`make run`'s server, a process of its own) and times it beside the direct
call, so each run shows how much of the proxy's added latency the extra hop costs by itself, and how much is
Toolgate's.

`gunicorn 'bench.proxy_floor:create_app()'`, with FLOOR_UPSTREAM_URL (the upstream's base URL, …/v1) and
FLOOR_DATABASE (a file it may create) in the environment.
"""

import json
import os
import sqlite3
import threading

import openai
from flask import Flask, jsonify, request


def create_app():
    upstream = openai.OpenAI(base_url=os.environ["FLOOR_UPSTREAM_URL"], api_key="unused", max_retries=0)
    database = os.environ["FLOOR_DATABASE"]
    connections = threading.local()

    def connection():
        if not hasattr(connections, "db"):
            db = sqlite3.connect(database, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("CREATE TABLE IF NOT EXISTS exchanges (id INTEGER PRIMARY KEY, body TEXT, answer TEXT)")
            connections.db = db
        return connections.db

    app = Flask(__name__)

    @app.get("/ready")
    def ready():
        connection()
        return "ready"

    @app.post("/v1/chat/completions")
    def chat_completions():
        body = request.get_json()
        answer = upstream.post("/chat/completions", body=body, cast_to=object)
        db = connection()
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO exchanges (body, answer) VALUES (?, ?)", [json.dumps(body), json.dumps(answer)])
        db.execute("COMMIT")
        return jsonify(answer)

    return app
