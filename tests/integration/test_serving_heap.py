"""The app as `make run` serves it freezes its heap once it is loaded (app.serve_app): a full garbage collection walked
the whole loaded app, and under a burst of proxied requests each one stopped the worker, pages and all, for
a tenth of a second or more (bench.gateway measures that; nothing here is timed)."""

import os
import subprocess
import sys

from tests.live_http import ROOT

# Run in a process of its own: a frozen heap would stay with the test process.
SERVED = """
import gc, sys
from app import serve_app
served = serve_app()
fresh = ["made after the freeze"]
walked = {id(thing) for thing in gc.get_objects()}
print("openai" in sys.modules, id(served) in walked, id(served.view_functions) in walked, id(fresh) in walked)
"""


def test_the_served_app_is_frozen_once_loaded_without_the_sdk_and_what_comes_after_is_still_collected(tmp_path):
    environment = {
        **os.environ,
        "TOOLGATE_DATABASE": str(tmp_path / "toolgate.db"),
        "TOOLGATE_SECRET_KEY": "a frozen heap",
    }
    result = subprocess.run(
        [sys.executable, "-c", SERVED], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0, result.stderr
    sdk_loaded, app_walked, views_walked, fresh_walked = result.stdout.split()
    assert sdk_loaded == "False"  # a process that only proxies never loads it (tests/integration/test_proxy_memory.py)
    assert (app_walked, views_walked) == ("False", "False")  # frozen: a collection no longer walks them
    assert fresh_walked == "True"  # what a request makes afterwards is collected as before
