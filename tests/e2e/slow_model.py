"""A slow OpenAI-compatible model for the live run tests: the scripted model's endpoint served over real HTTP
(tests/live_http.py), answering each request after a delay, as a real model takes its time, and stored as a
provider connection of the app's database.

It records when it sent each response (Unix time), so a test can tell how soon the page showed it, and it can hold
the responses from a given request on until the test lets them go (`hold`, `release`), so "the run is in the middle
of a step" is a state the test controls instead of a race it hopes to win.
"""

from contextlib import contextmanager

from store import providers as provider_store
from tests.database import Database
from tests.doubles import ModelDouble
from tests.live_http import serving

API_KEY_VARIABLE = "E2E_SLOW_MODEL_API_KEY"


@contextmanager
def slow_model(database_path, provider_id, script, delay=1.0, timeout=10.0, monkeypatch=None):
    """The one model double (tests/doubles) serving `script` after `delay` seconds a request, stored as the provider
    connection `provider_id` of the app's database. Its `sent` holds the Unix time each response went out, and
    `hold`, `wait_for_request` and `release` control when it answers."""
    model = ModelDouble(script=script, delay=delay)
    if monkeypatch is not None:
        monkeypatch.setenv(API_KEY_VARIABLE, "not-a-real-key")
    with serving(model) as url:
        db = Database(database_path)
        try:
            connection = {"id": provider_id, "label": f"Slow model {provider_id}", "base_url": f"{url}/v1"}
            provider_store.create_provider(
                db, {**connection, "api_key_env": API_KEY_VARIABLE, "default_model": "slow", "timeout": timeout}
            )
            yield model
        finally:
            model.release()
            db.close()
