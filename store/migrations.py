"""The database schema as named steps, applied at start-up with sqlite-utils' own `Migrations`.

Each step runs once and is recorded in `_sqlite_migrations`, so a database from an older version upgrades itself
when the app starts. Never edit a step that has shipped: add a new one. Steps run in a transaction, except those
marked non-transactional (switching the journal mode to WAL cannot happen inside one).

Databases made before this module used sqlite-utils' mechanism recorded their steps in a table of their own,
`migrations`; `migrate` carries those names over before anything is applied, so no step runs twice.
"""

from sqlite_utils import Migrations

migrations = Migrations("toolgate")

LEGACY_TABLE = "migrations"


@migrations(name="0001_enable_wal", transactional=False)
def _enable_wal(db):
    db.enable_wal()


@migrations(name="0002_create_agents")
def _create_agents(db):
    # Every agent field but id, revision and tools lives in `data` (the agent's JSON form); reads fill in
    # defaults, so a field added later needs no migration. `label` is copied out for ordering.
    db["agents"].create(
        {"id": str, "label": str, "data": str, "revision": int, "created_at": str, "updated_at": str},
        pk="id",
        not_null={"label", "data", "revision"},
    )
    # One row per enabled tool: its settings as JSON, `position` keeps the order the agent lists them in.
    db["agent_tools"].create(
        {"agent_id": str, "tool_name": str, "position": int, "settings": str},
        pk=("agent_id", "tool_name"),
        not_null={"position", "settings"},
        foreign_keys=[("agent_id", "agents", "id")],
    )


@migrations(name="0003_create_providers")
def _create_providers(db):
    db["providers"].create(
        {
            "id": str,
            "label": str,
            "base_url": str,
            "api_key_env": str,
            "default_model": str,
            "timeout": float,
        },
        pk="id",
        not_null={"label", "base_url", "api_key_env", "default_model", "timeout"},
        defaults={"api_key_env": "OPENAI_API_KEY", "default_model": "", "timeout": 60.0},
    )


@migrations(name="0004_create_documents")
def _create_documents(db):
    db["documents"].create(
        {"id": str, "title": str, "body": str, "updated_at": str},
        pk="id",
        not_null={"title", "body"},
    )
    db["documents"].enable_fts(["title", "body"], fts_version="FTS5", create_triggers=True)


@migrations(name="0005_create_runs")
def _create_runs(db):
    # No foreign key to agents: a run outlives its agent.
    db["runs"].create(
        {
            "id": int,
            "agent_id": str,
            "message": str,
            "overrides": str,
            "agent_snapshot": str,
            "stop_reason": str,
            "answer": str,
            "result": str,
            "tool_calls": int,
            "rejected_calls": int,
            "duration_ms": float,
            "created_at": str,
        },
        pk="id",
    )
    db["runs"].create_index(["agent_id", "id"])
    db["runs"].create_index(["stop_reason"])


@migrations(name="0006_create_log")
def _create_log(db):
    db["log"].create(
        {
            "id": int,
            "created_at": str,
            "level": str,
            "kind": str,
            "agent_id": str,
            "run_id": int,
            "message": str,
        },
        pk="id",
    )
    db["log"].create_index(["agent_id"])
    db["log"].create_index(["level"])


@migrations(name="0020_create_api_tokens")
def _create_api_tokens(db):
    # Only the SHA-256 of a token is kept; `hint` is its first characters, to tell tokens apart in the list.
    db["api_tokens"].create(
        {"id": int, "name": str, "token_hash": str, "hint": str, "created_at": str},
        pk="id",
        not_null={"name", "token_hash", "hint", "created_at"},
    )
    db["api_tokens"].create_index(["token_hash"], unique=True)
    db["api_tokens"].create_index(["name"], unique=True)


@migrations(name="0040_create_cases")
def _create_cases(db):
    # Regression cases: `data` holds the case's JSON form but agent_id and name (its message, overrides, script,
    # expectation and unpinned keys); `last_check` the result of its latest replay. No foreign key to agents: like
    # a run, a case outlives its agent, and comes back into use if the agent is imported again.
    db["cases"].create(
        {
            "id": int,
            "agent_id": str,
            "name": str,
            "data": str,
            "source_run_id": int,
            "last_check": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"agent_id", "name", "data"},
    )
    db["cases"].create_index(["agent_id", "name"], unique=True)


def _carry_over_legacy_names(db):
    """Record the steps an older database listed in its own `migrations` table, then drop that table."""
    if LEGACY_TABLE not in db.table_names():
        return
    with db.atomic():
        migrations.ensure_migrations_table(db)
        recorded = {migration.name for migration in migrations.applied(db)}
        for row in db[LEGACY_TABLE].rows_where(order_by="name"):
            if row["name"] not in recorded:
                db[migrations.migrations_table].insert(
                    {"migration_set": migrations.name, "name": row["name"], "applied_at": row["applied_at"]}
                )
        db[LEGACY_TABLE].drop()


def applied_migrations(db):
    return [migration.name for migration in migrations.applied(db)]


def migrate(db):
    """Apply every step not yet recorded, in order. Returns the names applied (empty when up to date)."""
    _carry_over_legacy_names(db)
    pending = [migration.name for migration in migrations.pending(db)]
    migrations.apply(db)
    return pending
