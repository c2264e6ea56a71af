"""Browser tests: a live server over its own temporary database, and Debian's Chromium, headless."""

import threading

import pytest
from werkzeug.serving import make_server

from app import create_app


@pytest.fixture(scope="session")
def live_server(tmp_path_factory):
    instance = tmp_path_factory.mktemp("live_instance")
    app = create_app({"DATABASE": str(instance / "toolgate.db")}, instance_path=str(instance))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.app = app
    yield server
    server.shutdown()
    thread.join(timeout=5)


@pytest.fixture(scope="session")
def put_agent(live_server):
    """Store an agent through the API afresh, whatever an earlier run left under its id."""
    client = live_server.app.test_client()

    def put(agent_id, agent):
        client.delete(f"/api/agents/{agent_id}")
        assert client.put(f"/api/agents/{agent_id}", json=agent).status_code == 201

    return put


@pytest.fixture(scope="session")
def base_url(live_server):
    return f"http://127.0.0.1:{live_server.server_port}"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": "/usr/bin/chromium",
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    }
