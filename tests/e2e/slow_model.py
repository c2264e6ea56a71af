"""A slow OpenAI-compatible model for the live run tests: the scripted model's endpoint served over real HTTP
(tests/live_http.py), answering each request after a delay, as a real model takes its time, and stored as a
provider connection of the app's database.

It records when it sent each response (Unix time), so a test can tell how soon the page showed it, and it can hold
the responses from a given request on until the test lets them go (`hold`, `release`), so "the run is in the middle
of a step" is a state the test controls instead of a race it hopes to win.
"""

import threading
import time
from contextlib import contextmanager

from engine.scripted import ScriptedModel
from store import providers as provider_store
from store.db import open_db
from tests.live_http import serving

API_KEY_VARIABLE = "E2E_SLOW_MODEL_API_KEY"


class TimedSlowModel:
    def __init__(self, script, delay):
        self.endpoint = ScriptedModel(script)
        self.delay = delay
        self.sent = []  # Unix time at which each response was sent, in request order
        self.requests = 0
        self.hold_from = None  # the first request (1-based) whose response waits for release()
        self.released = threading.Event()
        self.lock = threading.Condition()  # notified at each request

    def hold(self, from_request):
        self.hold_from = from_request

    def wait_for_request(self, number, timeout=15.0):
        """Wait until request `number` (1-based) has come in: the step that sent it is then in flight."""
        with self.lock:
            arrived = self.lock.wait_for(lambda: self.requests >= number, timeout)
        assert arrived, f"the model had {self.requests} requests after {timeout} s, not {number}"

    def release(self):
        self.released.set()

    def __call__(self, environ, start_response):
        with self.lock:
            self.requests += 1
            number = self.requests
            self.lock.notify_all()
        # The model thinking: the server waits, never the test (it waits for what the page shows).
        threading.Event().wait(self.delay)
        if self.hold_from is not None and number >= self.hold_from:
            self.released.wait(timeout=60)
        body = self.endpoint(environ, start_response)
        with self.lock:
            self.sent.append(time.time())
        return body


@contextmanager
def slow_model(database_path, provider_id, script, delay=1.0, timeout=10.0, monkeypatch=None):
    """A TimedSlowModel serving `script`, stored as the provider connection `provider_id` of the app's database."""
    model = TimedSlowModel(script, delay)
    if monkeypatch is not None:
        monkeypatch.setenv(API_KEY_VARIABLE, "not-a-real-key")
    with serving(model) as url:
        db = open_db(database_path)
        try:
            connection = {"id": provider_id, "label": f"Slow model {provider_id}", "base_url": f"{url}/v1"}
            provider_store.create_provider(
                db, {**connection, "api_key_env": API_KEY_VARIABLE, "default_model": "slow", "timeout": timeout}
            )
            yield model
        finally:
            model.release()
            db.close()
