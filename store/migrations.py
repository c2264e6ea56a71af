"""The database schema as named, sortable steps, applied at start-up.

Each step runs once and is recorded in the `migrations` table, so a database from an older version upgrades
itself when the app starts. Never edit a step that has shipped: add a new one. Steps run in a transaction,
except those marked non-transactional (switching the journal mode to WAL cannot happen inside one).
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime


@dataclass(frozen=True)
class Migration:
    name: str
    apply: Callable
    transactional: bool = True


def _enable_wal(db):
    db.enable_wal()


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


def _create_documents(db):
    db["documents"].create(
        {"id": str, "title": str, "body": str, "updated_at": str},
        pk="id",
        not_null={"title", "body"},
    )
    db["documents"].enable_fts(["title", "body"], fts_version="FTS5", create_triggers=True)


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


MIGRATIONS = (
    Migration("0001_enable_wal", _enable_wal, transactional=False),
    Migration("0002_create_agents", _create_agents),
    Migration("0003_create_providers", _create_providers),
    Migration("0004_create_documents", _create_documents),
    Migration("0005_create_runs", _create_runs),
    Migration("0006_create_log", _create_log),
)


def applied_migrations(db):
    if "migrations" not in db.table_names():
        return set()
    return {row["name"] for row in db["migrations"].rows}


def migrate(db, migrations=MIGRATIONS):
    """Apply every step not yet recorded, in name order. Returns the names applied."""
    if "migrations" not in db.table_names():
        db["migrations"].create({"name": str, "applied_at": str}, pk="name")
    done = applied_migrations(db)
    applied = []
    for migration in sorted(migrations, key=lambda step: step.name):
        if migration.name in done:
            continue
        record = {"name": migration.name, "applied_at": datetime.now(UTC).isoformat(timespec="seconds")}
        if migration.transactional:
            with db.atomic():
                migration.apply(db)
                db["migrations"].insert(record)
        else:
            migration.apply(db)
            db["migrations"].insert(record)
        applied.append(migration.name)
    return applied
