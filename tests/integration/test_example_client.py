"""examples/proxy_client.py when Toolgate is not where it looks: it says what to set instead of a bare connection
error. (test_proxy_example.py plays it against a live Toolgate.)"""

import os
import socket
import subprocess
import sys


def closed_address():
    """An address on 127.0.0.1 where nothing listens."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_the_example_client_says_to_set_toolgate_url_when_it_cannot_connect():
    address = closed_address()
    environment = {**os.environ, "TOOLGATE_URL": address}

    result = subprocess.run(
        [sys.executable, "examples/proxy_client.py"], env=environment, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"Cannot reach Toolgate at {address}. Start it with `make run`, or, if it runs elsewhere, set TOOLGATE_URL to "
        "its address: TOOLGATE_URL=http://127.0.0.1:8000 .venv/bin/python examples/proxy_client.py"
    )
