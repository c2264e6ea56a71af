"""The app as `make run` serves it freezes its heap once it is loaded (app.serve_app): a full garbage collection walked
the whole loaded app and SDK, and under a burst of proxied requests each one stopped the worker, pages and all, for
a tenth of a second or more (bench.gateway measures that; nothing here is timed)."""

import os
import subprocess
import sys

from tests.live_http import ROOT

# Run in a process of its own: a frozen heap, and the SDK imported, would stay with the test process.
SERVED = """
import gc, sys
from app import serve_app
sdk_before = "openai" in sys.modules
served = serve_app()
fresh = ["made after the freeze"]
walked = {id(thing) for thing in gc.get_objects()}
sdk = sys.modules.get("openai")
print(sdk_before, sdk is not None, id(served) in walked, id(sdk.OpenAI) in walked, id(fresh) in walked)
"""


def test_the_served_app_and_its_sdk_are_loaded_then_frozen_and_what_comes_after_is_still_collected(tmp_path):
    environment = {
        **os.environ,
        "TOOLGATE_DATABASE": str(tmp_path / "toolgate.db"),
        "TOOLGATE_SECRET_KEY": "a frozen heap",
    }
    result = subprocess.run(
        [sys.executable, "-c", SERVED], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0, result.stderr
    sdk_before, sdk_loaded, app_walked, sdk_walked, fresh_walked = result.stdout.split()
    assert (sdk_before, sdk_loaded) == ("False", "True")  # serve_app loads the SDK a first request would load
    assert (app_walked, sdk_walked) == ("False", "False")  # frozen: a collection no longer walks them
    assert fresh_walked == "True"  # what a request makes afterwards is collected as before
