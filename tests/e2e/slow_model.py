"""A slow OpenAI-compatible model for the live run tests: the scripted model's endpoint behind a real HTTP server
on 127.0.0.1 (port 0, in a thread), answering each request after a delay, as a real model takes its time.

It records when it sent each response (Unix time), so a test can tell how soon the page showed it, and it can hold
a response until the test lets it go (`hold` / `release`), so "the run is in the middle of a step" is a state the
test controls instead of a race it hopes to win.
"""

import threading
import time
from contextlib import contextmanager

from werkzeug.serving import make_server

from engine.scripted import ScriptedModel
from store import providers as provider_store
from store.db import open_db

API_KEY_VARIABLE = "E2E_SLOW_MODEL_API_KEY"


class SlowModel:
    def __init__(self, script, delay=1.0):
        self.endpoint = ScriptedModel(script)
        self.delay = delay
        self.sent = []  # Unix time at which each response was sent, in request order
        self.held = threading.Event()
        self.held.set()
        self.hold_from = None  # the first request (1-based) whose response waits for release()
        self.requests = 0
        self.lock = threading.Lock()
        self.server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.server.server_port}/v1"

    def hold(self, from_request):
        """Keep the responses from this request on until release()."""
        self.hold_from = from_request
        self.held.clear()

    def release(self):
        self.held.set()

    def app(self, environ, start_response):
        with self.lock:
            self.requests += 1
            number = self.requests
        # The model thinking; a test never waits like this, it waits for what the page shows.
        threading.Event().wait(self.delay)
        if self.hold_from is not None and number >= self.hold_from:
            self.held.wait(timeout=60)
        body = self.endpoint(environ, start_response)
        with self.lock:
            self.sent.append(time.time())
        return body


@contextmanager
def slow_model(database_path, provider_id, script, delay=1.0, timeout=10.0, monkeypatch=None):
    """A SlowModel serving `script`, stored as the provider connection `provider_id` of the app's database."""
    model = SlowModel(script, delay)
    model.thread.start()
    if monkeypatch is not None:
        monkeypatch.setenv(API_KEY_VARIABLE, "not-a-real-key")
    db = open_db(database_path)
    try:
        provider_store.create_provider(
            db,
            {
                "id": provider_id,
                "label": f"Slow model {provider_id}",
                "base_url": model.base_url,
                "api_key_env": API_KEY_VARIABLE,
                "default_model": "slow",
                "timeout": timeout,
            },
        )
        yield model
    finally:
        model.release()
        model.server.shutdown()
        model.thread.join(timeout=5)
        db.close()
