"""Browser tests: a live server over its own temporary database, and Debian's Chromium, headless."""

import uuid

import pytest

from tests.live_http import served_app


@pytest.fixture(scope="session")
def live_server(tmp_path_factory):
    with served_app(tmp_path_factory, "live_instance") as served:
        yield served


@pytest.fixture(scope="session")
def demo_server(tmp_path_factory):
    """A second live server, over a database with the demo loaded as `make run` loads it: the pages a newcomer sees
    first. Tests that change it put back what they change."""
    with served_app(tmp_path_factory, "demo_instance", demo=True) as served:
        yield served


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
    return live_server.url


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
