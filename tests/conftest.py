"""Fixtures shared by the integration and end-to-end tests: an app over a temporary database and instance
folder, its test client and CLI runner, and small helpers for the agent form."""

import shutil

import pytest

from store import migrations
from store.db import engine_for, open_db
from tests.database import Database
from tests.live_http import serving
from tests.postgresql import Cluster
from tests.proxy_support import FakeUpstream, add_upstream
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


def pytest_addoption(parser):
    parser.addoption("--sqlite-only", action="store_true", help="Run the both_engines tests on SQLite only.")


def pytest_generate_tests(metafunc):
    """The tests of a module marked both_engines run once per engine (the `engine` fixture)."""
    if "engine" not in metafunc.fixturenames or not metafunc.definition.get_closest_marker("both_engines"):
        return
    only_sqlite = metafunc.config.getoption("sqlite_only") or metafunc.definition.get_closest_marker("sqlite_only")
    metafunc.parametrize("engine", ["sqlite"] if only_sqlite else ["sqlite", "postgresql"], indirect=True)


@pytest.fixture
def engine(request):
    """The database engine the app of the test runs on: SQLite, unless a both_engines module asks for both."""
    return getattr(request, "param", "sqlite")


@pytest.fixture(scope="session")
def postgresql_template():
    """A throwaway PostgreSQL cluster (tests/postgresql.py) and a migrated database in it, which each test's
    database copies. The engine's connections to it are closed: PostgreSQL copies a database nobody is on."""
    cluster = Cluster()
    url = cluster.create_database()
    connection = open_db(url)
    migrations.migrate(connection)
    connection.close()
    engine_for(url).dispose()
    yield cluster, url.rsplit("/", 1)[1]
    cluster.stop()


@pytest.fixture
def database_settings(request, engine, tmp_path, migrated_database):
    """The app's database settings: a copy of the migrated SQLite database, or of the migrated PostgreSQL one."""
    if engine == "sqlite":
        shutil.copyfile(migrated_database, tmp_path / "toolgate.db")
        return {}
    cluster, template = request.getfixturevalue("postgresql_template")
    return {"DATABASE_URL": cluster.create_database(template=template)}


@pytest.fixture
def app(tmp_path, database_settings):
    """The app with CSRF off, so form tests post plain dicts (a dedicated test proves CSRF is enforced). It starts
    on a copy of the migrated database: start-up finds no step pending."""
    return make_app(tmp_path, **database_settings)


@pytest.fixture
def csrf_app(tmp_path, database_settings):
    return make_app(tmp_path, **database_settings, WTF_CSRF_ENABLED=True)


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


@pytest.fixture
def upstream(app):
    """The proxy tests' fake upstream (tests/proxy_support), served on 127.0.0.1 as the app's provider connection
    `upstream`; a module that needs the connection otherwise defines its own."""
    fake = FakeUpstream()
    with serving(fake) as url:
        add_upstream(app, url)
        yield fake
