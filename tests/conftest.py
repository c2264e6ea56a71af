"""Fixtures shared by the integration and end-to-end tests: an app over a temporary database and instance
folder, its test client and CLI runner, and small helpers for the agent form."""

import pytest

from store import migrations
from store.db import engine_for, open_db
from tests.database import Database
from tests.support import agent_form_data, make_app


@pytest.fixture(scope="session")
def migrated_database(tmp_path_factory):
    """A database file with every migration applied, made once per session. The connection is closed before any
    copy, so the WAL is checkpointed into the file and the file alone is the whole database."""
    path = tmp_path_factory.mktemp("migrated") / "toolgate.db"
    connection = open_db(str(path))
    migrations.migrate(connection)
    connection.close()
    engine_for(str(path)).dispose()
    return path


@pytest.fixture
def app(tmp_path, migrated_database):
    """The app with CSRF off, so form tests post plain dicts (a dedicated test proves CSRF is enforced). It starts
    on a copy of the migrated database: start-up finds no step pending."""
    return make_app(tmp_path, database_from=migrated_database)


@pytest.fixture
def csrf_app(tmp_path, migrated_database):
    return make_app(tmp_path, database_from=migrated_database, WTF_CSRF_ENABLED=True)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


@pytest.fixture
def database(app):
    """The app's database as a test reads it (tests/database.py)."""
    database = Database(app.config["DATABASE_URL"])
    yield database
    database.close()


class AgentActions:
    """The steps the agent tests repeat: create through the form, edit through the form, read through the API."""

    def __init__(self, client):
        self.client = client

    def create(self, **agent):
        agent.setdefault("label", "Test agent")
        return self.client.post("/agents/new", data=agent_form_data(agent))

    def edit(self, agent_id, **agent):
        current = self.get(agent_id)
        return self.client.post(f"/agents/{agent_id}/edit", data=agent_form_data({**current, **agent}))

    def get(self, agent_id):
        response = self.client.get(f"/api/agents/{agent_id}")
        assert response.status_code == 200, response.data
        return response.get_json()


@pytest.fixture
def actions(client):
    return AgentActions(client)
