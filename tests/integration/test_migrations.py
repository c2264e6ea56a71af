"""One Alembic history (store/migrations.py): one head, a new database gets the schema the legacy sqlite-utils steps
built, and a database made by any earlier version upgrades in place on start, keeping what it holds."""

import sqlite3
import subprocess
import sys

import pytest
import sqlite_utils
from alembic import command
from sqlalchemy import inspect

from store import legacy_migrations, migrations
from store import tokens as token_store
from store.db import open_db, write_transaction
from tests.database import Database
from tests.live_http import ROOT
from tests.support import make_app

LEGACY_STEPS = [step.name for step in legacy_migrations.migrations.pending(sqlite_utils.Database(memory=True))]

# The two sqlite-utils steps main added after the legacy ones, before the store moved to Alembic (their columns are
# now 0002_token_scope_agent_origin): a database such a version made has them recorded.
STEPS_OF_THE_LAST_SQLITE_UTILS_VERSION = sqlite_utils.Migrations("toolgate")


@STEPS_OF_THE_LAST_SQLITE_UTILS_VERSION(name="0070_token_agents_and_response_creators")
def _token_agents_and_response_creators(db):
    db["api_tokens"].add_column("agents", str)
    db["responses"].add_column("creator", str)


@STEPS_OF_THE_LAST_SQLITE_UTILS_VERSION(name="0071_agent_origin")
def _agent_origin(db):
    db["agents"].add_column("origin_path", str)
    db["agents"].add_column("origin_digest", str)


LAST_SQLITE_UTILS_STEPS = [
    step.name for step in STEPS_OF_THE_LAST_SQLITE_UTILS_VERSION.pending(sqlite_utils.Database(memory=True))
]
BOOKKEEPING = ("_sqlite_migrations", "idx__sqlite_migrations_migration_set_name", "schema_history", "alembic_version")


def schema(path):
    """What SQLite holds of the schema: each table, index and trigger with its SQL, whitespace aside."""
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    finally:
        connection.close()
    return {
        (kind, name, " ".join((sql or "").split()).replace("( ", "(").replace(" )", ")"))
        for kind, name, sql in rows
        if name not in BOOKKEEPING and not name.startswith(("sqlite_autoindex_alembic", "sqlite_autoindex_schema"))
    }


def test_ci_refuses_two_heads():
    """Two branches that each add a step after the same one must be put in order before they merge."""
    assert len(migrations.heads()) == 1, migrations.heads()


def test_the_newest_step_by_its_file_name_is_the_head_of_the_history():
    """migrations.newest_step reads the head from the steps' file names, without loading Alembic: each step's revision
    must be its file's name, and the newest file the head."""
    assert migrations.heads() == [migrations.newest_step()]
    versions = migrations.SCRIPT_LOCATION / "versions"
    assert sorted(path.stem for path in versions.glob("*.py") if not path.stem.startswith("_")) == sorted(
        migrations.every_step()
    )


BUILDS_THE_APP = """
import sys
from app import create_app

app = create_app({{"SECRET_KEY": "k", "DATABASE": {database!r}}}, instance_path={folder!r})
loaded = sorted(name for name in ("alembic", "sqlite_utils") if name in sys.modules)
print(app.extensions["toolgate_schema"]["applied"], loaded)
"""


def test_a_process_on_an_up_to_date_database_loads_neither_alembic_nor_sqlite_utils(tmp_path):
    """Each process `make run` starts builds the app on a database `flask init-db` has just brought up to date: it
    checks the newest step is applied and loads neither (14 MB a process); one that finds the database behind
    migrates it."""
    code = BUILDS_THE_APP.format(database=str(tmp_path / "toolgate.db"), folder=str(tmp_path))

    def build():
        result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    assert build() == f"{migrations.every_step()} ['alembic', 'sqlite_utils']"
    assert build() == "[] []"

    behind = tmp_path / "behind"
    behind.mkdir()
    code = BUILDS_THE_APP.format(database=str(behind / "toolgate.db"), folder=str(behind))
    database = open_db(f"sqlite:///{behind / 'toolgate.db'}")
    with write_transaction(database):
        command.upgrade(migrations._config(database, []), migrations.every_step()[-2])
    database.close()
    assert build() == f"{migrations.every_step()[-1:]} ['alembic', 'sqlite_utils']"


def test_every_step_name_fits_in_postgresqls_alembic_version():
    """alembic_version.version_num is VARCHAR(32) on PostgreSQL (SQLite would store a longer name)."""
    assert [step for step in migrations.every_step() if len(step) > 32] == []


def test_a_new_database_has_the_schema_of_one_the_legacy_steps_built_then_upgraded(tmp_path):
    """The baseline is where the legacy steps ended, statement for statement; the steps after it run on both."""
    new = make_app(tmp_path / "new")
    (tmp_path / "old").mkdir()
    old = sqlite_utils.Database(tmp_path / "old" / "toolgate.db")
    legacy_migrations.migrations.apply(old)
    STEPS_OF_THE_LAST_SQLITE_UTILS_VERSION.apply(old)
    old.close()
    upgraded = make_app(tmp_path / "old")
    assert schema(new.config["DATABASE"]) == schema(upgraded.config["DATABASE"])
    assert new.extensions["toolgate_schema"]["applied"] == migrations.every_step()
    assert upgraded.extensions["toolgate_schema"]["applied"] == migrations.every_step()


@pytest.mark.parametrize("stop_before", [*LEGACY_STEPS[1:], None])
def test_a_database_of_every_earlier_version_upgrades_in_place(tmp_path, stop_before):
    """Made by the version whose last step came just before `stop_before` (None: the last version before Alembic),
    with an agent in it once agents existed."""
    path = tmp_path / "toolgate.db"
    old = sqlite_utils.Database(path)
    legacy_migrations.migrations.apply(old, stop_before=stop_before)
    had_agents = "agents" in old.table_names()
    if had_agents:
        old["agents"].insert({"id": "kept", "label": "Kept", "data": '{"label": "Kept"}', "revision": 4})
    old.close()
    missing = LEGACY_STEPS[LEGACY_STEPS.index(stop_before) :] if stop_before else []

    app = make_app(tmp_path)

    assert app.extensions["toolgate_schema"] == {"created": False, "applied": [*missing, *migrations.every_step()]}
    database = Database(app.config["DATABASE_URL"])
    assert migrations.applied_migrations(database) == [*LEGACY_STEPS, *migrations.every_step()]
    database.close()
    fresh = make_app(tmp_path / "fresh")
    assert schema(path) == schema(fresh.config["DATABASE"])
    if had_agents:
        agent = app.test_client().get("/api/agents/kept").get_json()
        assert agent["label"] == "Kept" and agent["revision"] == 4
    assert make_app(tmp_path).extensions["toolgate_schema"]["applied"] == []  # and the next start applies nothing


@pytest.mark.parametrize("stop_before", [*LAST_SQLITE_UTILS_STEPS[1:], None])
def test_a_database_that_has_the_columns_of_a_sqlite_utils_step_gets_them_once(tmp_path, stop_before):
    """Made by a version that added some of 0002's columns with sqlite-utils steps of its own (0070 alone, or 0070
    and 0071): those are not added again, the others are, and what the columns hold is kept."""
    path = tmp_path / "toolgate.db"
    old = sqlite_utils.Database(path)
    legacy_migrations.migrations.apply(old)
    STEPS_OF_THE_LAST_SQLITE_UTILS_VERSION.apply(old, stop_before=stop_before)
    old["api_tokens"].insert(
        {"id": 7, "name": "chat app", "token_hash": "0" * 64, "hint": "tg_abcd", "created_at": "", "agents": '["kept"]'}
    )
    old.close()
    recorded = (
        LAST_SQLITE_UTILS_STEPS[: LAST_SQLITE_UTILS_STEPS.index(stop_before)]
        if stop_before
        else LAST_SQLITE_UTILS_STEPS
    )

    app = make_app(tmp_path)

    assert app.extensions["toolgate_schema"] == {"created": False, "applied": migrations.every_step()}
    database = Database(app.config["DATABASE_URL"])
    assert migrations.applied_migrations(database) == [*LEGACY_STEPS, *recorded, *migrations.every_step()]
    assert [token["agents"] for token in token_store.list_tokens(database)] == [["kept"]]
    database.close()
    assert schema(path) == schema(make_app(tmp_path / "fresh").config["DATABASE"])
    assert make_app(tmp_path).extensions["toolgate_schema"]["applied"] == []


def columns_of_every_table(url):
    connection = open_db(url)
    try:
        inspector = inspect(connection)
        return {
            table: [column["name"] for column in inspector.get_columns(table)]
            for table in inspector.get_table_names()
            if not table.startswith("documents_fts")
        }
    finally:
        connection.close()


def test_a_new_postgresql_database_has_the_tables_and_columns_of_sqlite(tmp_path, postgresql_template):
    cluster, _ = postgresql_template
    url = cluster.create_database()
    on_postgresql = make_app(tmp_path / "postgresql", DATABASE_URL=url)
    on_sqlite = make_app(tmp_path / "sqlite")
    assert on_postgresql.extensions["toolgate_schema"] == {"created": True, "applied": migrations.every_step()}
    postgresql_tables = columns_of_every_table(url)
    assert postgresql_tables["documents"].pop() == "search"  # the full-text index, where SQLite has FTS5
    assert postgresql_tables == columns_of_every_table(on_sqlite.config["DATABASE_URL"])
    assert make_app(tmp_path / "postgresql", DATABASE_URL=url).extensions["toolgate_schema"]["applied"] == []


def test_init_db_on_a_new_postgresql_database_says_it_created_it_and_hides_the_password(tmp_path, postgresql_template):
    cluster, _ = postgresql_template
    url = cluster.create_database().replace("postgres@", "postgres:not-shown@")
    result = make_app(tmp_path, DATABASE_URL=url).test_cli_runner().invoke(args=["init-db"])
    assert result.exit_code == 0, result.output
    shown = url.replace("not-shown", "***")
    steps = migrations.every_step()
    assert f"Created the database at {shown} ({len(steps)} migration steps: {', '.join(steps)})." in result.output
    assert "not-shown" not in result.output
