"""The database schema as named steps, applied at start-up with sqlite-utils' own `Migrations`.

Each step runs once and is recorded in `_sqlite_migrations`, so a database from an older version upgrades itself
when the app starts. Never edit a step that has shipped: add a new one. Steps run in a transaction, except those
marked non-transactional (switching the journal mode to WAL cannot happen inside one).

Databases made before this module used sqlite-utils' mechanism recorded their steps in a table of their own,
`migrations`; `migrate` carries those names over before anything is applied, so no step runs twice.
"""

import json
from datetime import UTC, datetime

from sqlite_utils import Migrations

from . import run_charts, run_format
from .db import write_transaction

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


@migrations(name="0007_store_each_run_fact_once")
def _store_each_run_fact_once(db):
    # Runs stored before held the agent snapshot twice and every transcript message beside the rounds it repeats.
    # This step writes the stored form of its time (store/run_format.py, form 1), whatever form runs are written in
    # later: run_format reads every form.
    last_id = 0
    while True:
        rows = list(db.query("SELECT id, result FROM runs WHERE id > ? ORDER BY id LIMIT 500", [last_id]))
        if not rows:
            return
        for row in rows:
            db["runs"].update(row["id"], run_format.stored_row(json.loads(row["result"]), form=1))
        last_id = rows[-1]["id"]


def _create_counts_table(db, counts, table, columns):
    """The table `counts`: how many rows of `table` there are per (agent_id, *columns), filled from the rows
    already there and kept in step by triggers on every insert, delete and change of those columns. `columns`: a
    column name, or a tuple of them."""
    columns = ("agent_id", *((columns,) if isinstance(columns, str) else columns))
    names = ", ".join(columns)
    key = ", ".join(f"coalesce(new.{column}, '')" for column in columns)
    old_key = " AND ".join(f"{column} = coalesce(old.{column}, '')" for column in columns)
    add = (
        f"INSERT INTO {counts} ({names}, count) VALUES ({key}, 1) "
        f"ON CONFLICT ({names}) DO UPDATE SET count = count + 1;"
    )
    remove = (
        f"UPDATE {counts} SET count = count - 1 WHERE {old_key}; DELETE FROM {counts} WHERE {old_key} AND count = 0;"
    )
    definitions = ", ".join(f"{column} TEXT NOT NULL" for column in columns)
    groups = ", ".join(str(number) for number in range(1, len(columns) + 1))
    selected = ", ".join(f"coalesce({column}, '')" for column in columns)
    db.executescript(
        f"""
        CREATE TABLE {counts} (
            {definitions}, count INTEGER NOT NULL, PRIMARY KEY ({names})
        );
        INSERT INTO {counts} ({names}, count)
            SELECT {selected}, count(*) FROM {table} GROUP BY {groups};
        CREATE TRIGGER {counts}_insert AFTER INSERT ON {table} BEGIN {add} END;
        CREATE TRIGGER {counts}_delete AFTER DELETE ON {table} BEGIN {remove} END;
        CREATE TRIGGER {counts}_update AFTER UPDATE OF {names} ON {table} BEGIN {remove} {add} END;
        """
    )


@migrations(name="0008_history_indexes_and_counts")
def _history_indexes_and_counts(db):
    # Every filter combination of /runs, /log and /api/runs walks one index down to the id it pages by (SQLite
    # ends every index with the id), and the totals and filter choices read a counts table instead of the list.
    db["runs"].create_index(["agent_id", "stop_reason", "id"])
    db["log"].create_index(["agent_id", "level", "id"])
    db["log"].create_index(["run_id"])  # prune-runs deletes a run's entries
    _create_counts_table(db, "run_counts", "runs", "stop_reason")
    _create_counts_table(db, "log_counts", "log", "level")


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


@migrations(name="0030_provider_request_options")
def _add_provider_request_options(db):
    # Retries, extra headers and extra body fields of a connection (SPEC §7); the two JSON objects as text.
    db["providers"].add_column("max_retries", int, not_null_default=2)
    db["providers"].add_column("headers", str, not_null_default="{}")
    db["providers"].add_column("extra_body", str, not_null_default="{}")


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


@migrations(name="0050_live_runs")
def _live_runs(db):
    # A run is stored when it starts and updated after every step (issue 11). `state` is the engine's (running,
    # awaiting_approval, finished); `loop_state` what the loop needs to go on, cleared when the run ends. A step
    # holds the run (`stepping`) until `lease_until` (Unix time): a running run whose lease has passed was left
    # by a process that died, or by a page that stopped asking for its next step, and reads "interrupted".
    runs = db["runs"]
    runs.add_column("state", str)
    runs.add_column("loop_state", str)
    runs.add_column("started_at", float)
    runs.add_column("lease_until", float)
    runs.add_column("stepping", int, not_null_default=0)
    runs.add_column("stop_requested", int, not_null_default=0)
    db.execute("UPDATE runs SET state = 'finished'")
    runs.create_index(["state"])


@migrations(name="0060_add_run_source")
def _add_run_source(db):
    # Where a run came from (SPEC §8): page, api, cli, proxy or case; runs stored before say nothing (null). The
    # runs list filters by it like by agent and stop reason: an index per new filter combination, and the counts
    # per source too.
    db["runs"].add_column("source", str)
    db.executescript(
        "DROP TRIGGER run_counts_insert; DROP TRIGGER run_counts_delete; DROP TRIGGER run_counts_update; "
        "DROP TABLE run_counts;"
    )
    _create_counts_table(db, "run_counts", "runs", ("stop_reason", "source"))
    for columns in (
        ["source"],
        ["agent_id", "source"],
        ["stop_reason", "source"],
        ["agent_id", "stop_reason", "source"],
    ):
        db["runs"].create_index([*columns, "id"])


@migrations(name="0061_add_run_conversation_key")
def _add_run_conversation_key(db):
    # A proxied run's digest of the conversation its client holds, so the client's next request finds the run.
    db["runs"].add_column("conversation_key", str)
    db["runs"].create_index(["agent_id", "conversation_key"])


@migrations(name="0062_create_run_traces")
def _create_run_traces(db):
    # The trace of a run exported over OpenTelemetry (services/tracing.py): its ids, kept so that a run stepped over
    # several requests is one trace, and how much of it was exported (rounds whose model request went out, rounds
    # whose calls did, whether the run's own span did), so each request exports only what is new. Deleted with its
    # run (prune-runs).
    db.execute(
        """CREATE TABLE run_traces (
            run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
            trace_id TEXT NOT NULL,
            span_id TEXT NOT NULL,
            conversation_id TEXT,
            rounds_exported INTEGER NOT NULL DEFAULT 0,
            rounds_settled INTEGER NOT NULL DEFAULT 0,
            ended INTEGER NOT NULL DEFAULT 0
        )"""
    )


@migrations(name="0063_create_login_sessions")
def _create_login_sessions(db):
    # The login's sessions (store/sessions.py): the SHA-256 of each session's id, the mark of the password it was
    # opened under, and when it was opened and last used (Unix seconds), for the idle time.
    db["login_sessions"].create(
        {"id_hash": str, "password_mark": str, "created_at": float, "last_used_at": float},
        pk="id_hash",
        not_null={"password_mark", "created_at", "last_used_at"},
    )
    db["login_sessions"].create_index(["last_used_at"])


@migrations(name="0064_create_login_failures")
def _create_login_failures(db):
    # Failed logins of the last hour, per client address (store/login_failures.py), for the login's throttle.
    db["login_failures"].create(
        {"id": int, "client": str, "failed_at": float}, pk="id", not_null={"client", "failed_at"}
    )
    db["login_failures"].create_index(["client", "failed_at"])
    db["login_failures"].create_index(["failed_at"])


@migrations(name="0065_create_tool_servers")
def _create_tool_servers(db):
    # MCP servers (store/tool_servers.py): a URL or a command (exactly one is set), the headers as JSON (secrets only
    # as the names of environment variables), and the server's tool list as last fetched, with the names it lost.
    db["tool_servers"].create(
        {
            "id": str,
            "label": str,
            "url": str,
            "command": str,
            "headers": str,
            "timeout": float,
            "tools": str,
            "vanished": str,
            "refreshed_at": str,
        },
        pk="id",
        not_null={"label", "url", "command", "headers", "timeout", "tools", "vanished"},
        defaults={"url": "", "command": "", "headers": "{}", "timeout": 30.0, "tools": "[]", "vanished": "[]"},
    )
    # Which of an agent's tool settings a person accepted as proposed from the tool's hints (a JSON list of keys),
    # for the agent's page to mark; rows whose setting has since changed are ignored when read.
    db["agent_tool_hints"].create(
        {"agent_id": str, "tool_name": str, "settings": str}, pk=("agent_id", "tool_name"), not_null={"settings"}
    )


@migrations(name="0066_create_responses")
def _create_responses(db):
    # The proxy's Responses API keeps each answered response (unless the client said `store: false`), so a later
    # request can continue it by previous_response_id or refer to its output items. `response` is the response
    # object as the client got it, `input` the conversation items it answered, both as JSON. No foreign key: like
    # a run, a kept response outlives its agent.
    db["responses"].create(
        {"id": str, "agent_id": str, "run_id": int, "input": str, "response": str, "created_at": str},
        pk="id",
        not_null={"agent_id", "input", "response", "created_at"},
    )
    db["responses"].create_index(["run_id"])


@migrations(name="0067_add_run_api")
def _add_run_api(db):
    # The API a proxied run's client spoke (SPEC §8): chat_completions, responses or messages; null for a run that
    # was not proxied. Proxied runs stored before said nothing, or said it in `result` only: they read as they were
    # recorded, and as chat_completions, the only API the proxy spoke then. The runs list filters by it: the
    # counts per API, and an index per filter combination it is most used with.
    db["runs"].add_column("api", str)
    db.execute(
        "UPDATE runs SET api = coalesce(json_extract(result, '$.api'), 'chat_completions') WHERE source = 'proxy'"
    )
    db.executescript(
        "DROP TRIGGER run_counts_insert; DROP TRIGGER run_counts_delete; DROP TRIGGER run_counts_update; "
        "DROP TABLE run_counts;"
    )
    _create_counts_table(db, "run_counts", "runs", ("stop_reason", "source", "api"))
    for columns in (["api"], ["agent_id", "api"], ["stop_reason", "api"], ["agent_id", "stop_reason", "api"]):
        db["runs"].create_index([*columns, "id"])


@migrations(name="0068_run_charts")
def _run_charts(db):
    # The run charts (store/run_charts.py) read two counts tables that triggers keep in step with the runs; each run
    # row carries what they count it by. Runs stored before get those columns from their stored run.
    for column, kind in (("rounds_used", int), ("rejections", str)):
        db["runs"].add_column(column, kind)
    last_id = 0
    while True:
        rows = list(db.query("SELECT * FROM runs WHERE id > ? ORDER BY id LIMIT 500", [last_id]))
        if not rows:
            break
        for row in rows:
            db["runs"].update(row["id"], run_charts.chart_columns(run_format.run_from_row(row)))
        last_id = rows[-1]["id"]
    db.executescript(run_charts.chart_triggers_sql())
    db.executescript(run_charts.fill_counts_sql())


@migrations(name="0069_log_kinds")
def _log_kinds(db):
    # The log filters by kind as well as agent and level: the counts per kind too, and an index per new filter
    # combination ending in the id it pages by, as step 0060 did for the runs' source.
    db.executescript(
        "DROP TRIGGER log_counts_insert; DROP TRIGGER log_counts_delete; DROP TRIGGER log_counts_update; "
        "DROP TABLE log_counts;"
    )
    _create_counts_table(db, "log_counts", "log", ("level", "kind"))
    for columns in (["kind"], ["agent_id", "kind"], ["level", "kind"], ["agent_id", "level", "kind"]):
        db["log"].create_index([*columns, "id"])


@migrations(name="0070_token_agents_and_response_creators")
def _token_agents_and_response_creators(db):
    # A token may be limited to the proxy of named agents: `agents` holds their ids as a JSON list; null (every
    # token made before) opens the whole API and every proxy. A kept response records the credential that created
    # it, `creator` ("token:<id>"), and only that credential reads or continues it; null for a response kept with
    # the login off (or before this step), which then no token reaches.
    db["api_tokens"].add_column("agents", str)
    db["responses"].add_column("creator", str)


@migrations(name="0071_agent_origin")
def _agent_origin(db):
    # An agent applied from a policy file (flask apply, issue 34) records the file's path and the SHA-256 of its
    # content; while origin_path is set, the pages, the API and import-agent refuse to change it. Null: the pages'.
    db["agents"].add_column("origin_path", str)
    db["agents"].add_column("origin_digest", str)


def _carry_over_legacy_names(db):
    """Record the steps an older database listed in its own `migrations` table, then drop that table."""
    if LEGACY_TABLE not in db.table_names():
        return
    with write_transaction(db):
        if LEGACY_TABLE not in db.table_names():  # another process carried them over first
            return
        migrations.ensure_migrations_table(db)
        recorded = set(applied_migrations(db))
        for row in db[LEGACY_TABLE].rows_where(order_by="name"):
            if row["name"] not in recorded:
                _record(db, row["name"], row["applied_at"])
        db[LEGACY_TABLE].drop()


def _record(db, name, applied_at=None):
    applied_at = applied_at or str(datetime.now(UTC))  # the form sqlite-utils records
    db[migrations.migrations_table].insert({"migration_set": migrations.name, "name": name, "applied_at": applied_at})


def applied_migrations(db):
    return [migration.name for migration in migrations.applied(db)]


def created_since(db, seconds):
    """Whether every step was applied in the last `seconds`: a database just created (by a command that ran a
    moment before, as `make run`'s check-host does), not one that was upgraded or has been in use."""
    times = [row["applied_at"] for row in db.query(f"SELECT applied_at FROM {migrations.migrations_table}")]
    if not times:
        return False
    oldest = min(datetime.fromisoformat(applied_at) for applied_at in times)
    return (datetime.now(UTC) - oldest).total_seconds() <= seconds


def migrate(db):
    """Apply every step not yet recorded, in order. Returns the names applied (empty when up to date).

    Two processes may start on one database file at once: each step is applied under the write lock, after
    checking again that the other process has not applied it meanwhile. A non-transactional step runs before
    the lock is taken, so it must be harmless to run twice (switching to WAL is)."""
    _carry_over_legacy_names(db)
    with write_transaction(db):
        migrations.ensure_migrations_table(db)
    applied = []
    for step in migrations.pending(db):
        if not step.transactional:
            step.fn(db)
        with write_transaction(db):
            if step.name in applied_migrations(db):
                continue
            if step.transactional:
                step.fn(db)
            _record(db, step.name)
        applied.append(step.name)
    return applied
