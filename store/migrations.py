"""The database schema: one Alembic history for SQLite and PostgreSQL (store/alembic/versions/), applied when the
app starts, so a database of any earlier version upgrades in place.

To add a step, add a file store/alembic/versions/NNNN_what_it_does.py:

    from alembic import op

    revision = "0004_add_run_labels"  # at most 32 characters: PostgreSQL's alembic_version holds VARCHAR(32)
    down_revision = "0003_counts_per_statement"  # the newest step before it (one head: a test refuses two)


    def upgrade():
        op.add_column("runs", sa.Column("labels", sa.Text(), nullable=False, server_default="[]"))

SQL both engines run goes through `op.execute(...)`; a step that must differ branches on
`op.get_bind().dialect.name` inside the step. SQLite changes a table by copying it: `with
op.batch_alter_table("runs") as batch:` does that (the history runs with render_as_batch). Never edit a step that
has shipped: add a new one. Each step applied is recorded in `schema_history` with when it was applied.

Databases made before Alembic (SQLite only) recorded sqlite-utils steps (store/legacy_migrations.py) in
`_sqlite_migrations`, or in `migrations` before that: `migrate` first applies the legacy steps such a database
misses, on a connection of their own (sqlite-utils commits as it goes), then the baseline step records them in
`schema_history` and drops the legacy table. The names it records include the two sqlite-utils steps the last
version before Alembic added (0070, 0071), unknown to legacy_migrations: 0002 skips the columns those added.
"""

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import inspect

from . import execute, select_rows, select_value
from .db import write_transaction

# Alembic and sqlite-utils (the legacy steps) are loaded only when a database is behind: each process of `make run`
# builds the app on a database `flask init-db` has just brought up to date, and would hold 14 MB more for nothing
# (docs/performance.md).
SCRIPT_LOCATION = Path(__file__).resolve().parent / "alembic"
# Two replicas that start at once on one PostgreSQL database take turns (SQLite's write lock does that there).
MIGRATION_LOCK = 7_346_257


def _config(connection=None, applied=None):
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    config.attributes["connection"] = connection
    config.attributes["on_version_apply"] = lambda step, **_: applied.append(step.up_revision_id)
    return config


def heads():
    """The newest steps of the history: one, unless two branches each added a step after the same one."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config()).get_heads()


def every_step():
    """Every step of the history, oldest first."""
    from alembic.script import ScriptDirectory

    return [script.revision for script in reversed(list(ScriptDirectory.from_config(_config()).walk_revisions()))]


def newest_step():
    """The step a database at the head of the history has last applied, read from the steps' file names (each step's
    revision is its file's name, NNNN_what_it_does: a test holds the history to that)."""
    return max(path.stem for path in (SCRIPT_LOCATION / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))


def _up_to_date(connection):
    """Whether the database has applied the newest step (a database made before Alembic has no alembic_version)."""
    if "alembic_version" not in inspect(connection).get_table_names():
        return False
    return select_value(connection, "SELECT version_num FROM alembic_version") == newest_step()


def _moment():
    return str(datetime.now(UTC))  # the form the legacy steps recorded


def migrate(connection):
    """Apply every step not yet applied, in order. Returns the names applied (empty when up to date): the legacy
    steps an old SQLite database missed, then the Alembic steps."""
    if _up_to_date(connection):
        return []
    from alembic import command

    from . import legacy_migrations

    applied = []
    if connection.dialect.name == "sqlite" and set(inspect(connection).get_table_names()) & legacy_migrations.TABLES:
        applied += legacy_migrations.migrate(connection)
    steps = []
    with write_transaction(connection):
        if connection.dialect.name == "postgresql":
            execute(connection, "SELECT pg_advisory_xact_lock(:key)", {"key": MIGRATION_LOCK})
        command.upgrade(_config(connection, steps), "head")
        if steps:
            execute(
                connection,
                "INSERT INTO schema_history (step, applied_at) VALUES (:step, :applied_at)",
                [{"step": step, "applied_at": _moment()} for step in steps],
            )
    return applied + steps


def applied_migrations(connection):
    """The names of the steps the database went through, oldest first (the legacy ones included)."""
    rows = select_rows(connection, "SELECT step, applied_at FROM schema_history")
    rows.sort(key=lambda row: (datetime.fromisoformat(row["applied_at"]), row["step"]))
    return [row["step"] for row in rows]


def created_since(connection, seconds):
    """Whether every step was applied in the last `seconds`: a database just created (by a command that ran a
    moment before, as `make run`'s check-host does), not one that was upgraded or has been in use."""
    rows = select_rows(connection, "SELECT applied_at FROM schema_history")
    times = [datetime.fromisoformat(row["applied_at"]) for row in rows]
    return bool(times) and (datetime.now(UTC) - min(times)).total_seconds() <= seconds
