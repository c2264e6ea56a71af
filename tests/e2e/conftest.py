"""Browser tests: a live server over its own temporary database, and Debian's Chromium, headless."""

import threading
import uuid

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
def demo_server(tmp_path_factory):
    """A second live server, over a database with the demo loaded as `make run` loads it: the pages a newcomer sees
    first. Tests that change it put back what they change."""
    instance = tmp_path_factory.mktemp("demo_instance")
    app = create_app({"DATABASE": str(instance / "toolgate.db")}, instance_path=str(instance))
    assert app.test_cli_runner().invoke(args=["load-demo"]).exit_code == 0
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.app = app
    server.url = f"http://127.0.0.1:{server.server_port}"
    yield server
    server.shutdown()
    thread.join(timeout=5)


@pytest.fixture
def suffix():
    """A few characters no other test uses: every browser test shares one server and its database, so what a test
    creates carries this in its name."""
    return uuid.uuid4().hex[:8]


@pytest.fixture
def new_agent(live_server, suffix):
    """Store an agent through the API under a fresh id (the prefix and this test's suffix) and return the id."""
    client = live_server.app.test_client()

    def create(prefix, agent):
        agent_id = f"{prefix}_{suffix}"
        assert client.put(f"/api/agents/{agent_id}", json=agent).status_code == 201
        return agent_id

    return create


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
