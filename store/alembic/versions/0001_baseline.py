"""The baseline: the whole schema of the last version before Alembic, on an empty database of either engine.

On SQLite it is what the sqlite-utils steps of store/legacy_migrations.py made, statement for statement (a test
compares the two). A database made before Alembic already has it: store/migrations.py first applies the legacy
steps it misses; this step then records the steps that database went through in `schema_history` and drops the
table they were recorded in. On PostgreSQL the same tables, with what PostgreSQL needs instead of SQLite's own:
identity columns for the ids, PL/pgSQL triggers for the counts tables, and the documents' full-text index as a
`tsvector` column with a GIN index (store/search.py reads it) where SQLite has an FTS5 table.
"""

import sqlalchemy as sa
from alembic import op

revision = "0001_baseline"
down_revision = None

LEGACY_TABLE = "_sqlite_migrations"  # where the legacy steps recorded themselves (store/legacy_migrations.py)

HISTORY = """CREATE TABLE schema_history (step TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"""

SQLITE = (
    HISTORY,
    """CREATE TABLE "agents" ( "id" TEXT PRIMARY KEY, "label" TEXT NOT NULL, "data" TEXT NOT NULL, "revision"
    INTEGER NOT NULL, "created_at" TEXT, "updated_at" TEXT )""",
    """CREATE TABLE "agent_tools" ( "agent_id" TEXT REFERENCES "agents"("id"), "tool_name" TEXT, "position"
    INTEGER NOT NULL, "settings" TEXT NOT NULL, PRIMARY KEY ("agent_id", "tool_name") )""",
    """CREATE TABLE "providers" ( "id" TEXT PRIMARY KEY, "label" TEXT NOT NULL, "base_url" TEXT NOT NULL,
    "api_key_env" TEXT NOT NULL DEFAULT 'OPENAI_API_KEY', "default_model" TEXT NOT NULL DEFAULT '',
    "timeout" REAL NOT NULL DEFAULT 60.0 , "max_retries" INTEGER NOT NULL DEFAULT 2, "headers" TEXT NOT NULL
    DEFAULT '{}', "extra_body" TEXT NOT NULL DEFAULT '{}')""",
    """CREATE TABLE "documents" ( "id" TEXT PRIMARY KEY, "title" TEXT NOT NULL, "body" TEXT NOT NULL,
    "updated_at" TEXT )""",
    """CREATE VIRTUAL TABLE "documents_fts" USING FTS5 ( "title", "body", content="documents" )""",
    """CREATE TRIGGER "documents_ai" AFTER INSERT ON "documents" BEGIN INSERT INTO "documents_fts" (rowid,
    "title", "body") VALUES (new.rowid, new."title", new."body"); END""",
    """CREATE TRIGGER "documents_ad" AFTER DELETE ON "documents" BEGIN INSERT INTO "documents_fts"
    ("documents_fts", rowid, "title", "body") VALUES('delete', old.rowid, old."title", old."body"); END""",
    """CREATE TRIGGER "documents_au" AFTER UPDATE ON "documents" BEGIN INSERT INTO "documents_fts"
    ("documents_fts", rowid, "title", "body") VALUES('delete', old.rowid, old."title", old."body"); INSERT
    INTO "documents_fts" (rowid, "title", "body") VALUES (new.rowid, new."title", new."body"); END""",
    """CREATE TABLE "runs" ( "id" INTEGER PRIMARY KEY, "agent_id" TEXT, "message" TEXT, "overrides" TEXT,
    "agent_snapshot" TEXT, "stop_reason" TEXT, "answer" TEXT, "result" TEXT, "tool_calls" INTEGER,
    "rejected_calls" INTEGER, "duration_ms" REAL, "created_at" TEXT , "state" TEXT, "loop_state" TEXT,
    "started_at" REAL, "lease_until" REAL, "stepping" INTEGER NOT NULL DEFAULT 0, "stop_requested" INTEGER
    NOT NULL DEFAULT 0, "source" TEXT, "conversation_key" TEXT, "api" TEXT, "rounds_used" INTEGER,
    "rejections" TEXT)""",
    """CREATE INDEX "idx_runs_agent_id_id" ON "runs" ("agent_id", "id")""",
    """CREATE INDEX "idx_runs_stop_reason" ON "runs" ("stop_reason")""",
    """CREATE TABLE "log" ( "id" INTEGER PRIMARY KEY, "created_at" TEXT, "level" TEXT, "kind" TEXT, "agent_id"
    TEXT, "run_id" INTEGER, "message" TEXT )""",
    """CREATE INDEX "idx_log_agent_id" ON "log" ("agent_id")""",
    """CREATE INDEX "idx_log_level" ON "log" ("level")""",
    """CREATE INDEX "idx_runs_agent_id_stop_reason_id" ON "runs" ("agent_id", "stop_reason", "id")""",
    """CREATE INDEX "idx_log_agent_id_level_id" ON "log" ("agent_id", "level", "id")""",
    """CREATE INDEX "idx_log_run_id" ON "log" ("run_id")""",
    """CREATE TABLE "api_tokens" ( "id" INTEGER PRIMARY KEY, "name" TEXT NOT NULL, "token_hash" TEXT NOT NULL,
    "hint" TEXT NOT NULL, "created_at" TEXT NOT NULL )""",
    """CREATE UNIQUE INDEX "idx_api_tokens_token_hash" ON "api_tokens" ("token_hash")""",
    """CREATE UNIQUE INDEX "idx_api_tokens_name" ON "api_tokens" ("name")""",
    """CREATE TABLE "cases" ( "id" INTEGER PRIMARY KEY, "agent_id" TEXT NOT NULL, "name" TEXT NOT NULL, "data"
    TEXT NOT NULL, "source_run_id" INTEGER, "last_check" TEXT, "created_at" TEXT, "updated_at" TEXT )""",
    """CREATE UNIQUE INDEX "idx_cases_agent_id_name" ON "cases" ("agent_id", "name")""",
    """CREATE INDEX "idx_runs_state" ON "runs" ("state")""",
    """CREATE INDEX "idx_runs_source_id" ON "runs" ("source", "id")""",
    """CREATE INDEX "idx_runs_agent_id_source_id" ON "runs" ("agent_id", "source", "id")""",
    """CREATE INDEX "idx_runs_stop_reason_source_id" ON "runs" ("stop_reason", "source", "id")""",
    """CREATE INDEX "idx_runs_agent_id_stop_reason_source_id" ON "runs" ("agent_id", "stop_reason", "source",
    "id")""",
    """CREATE INDEX "idx_runs_agent_id_conversation_key" ON "runs" ("agent_id", "conversation_key")""",
    """CREATE TABLE run_traces ( run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE, trace_id
    TEXT NOT NULL, span_id TEXT NOT NULL, conversation_id TEXT, rounds_exported INTEGER NOT NULL DEFAULT 0,
    rounds_settled INTEGER NOT NULL DEFAULT 0, ended INTEGER NOT NULL DEFAULT 0 )""",
    """CREATE TABLE "login_sessions" ( "id_hash" TEXT PRIMARY KEY, "password_mark" TEXT NOT NULL, "created_at"
    REAL NOT NULL, "last_used_at" REAL NOT NULL )""",
    """CREATE INDEX "idx_login_sessions_last_used_at" ON "login_sessions" ("last_used_at")""",
    """CREATE TABLE "login_failures" ( "id" INTEGER PRIMARY KEY, "client" TEXT NOT NULL, "failed_at" REAL NOT
    NULL )""",
    """CREATE INDEX "idx_login_failures_client_failed_at" ON "login_failures" ("client", "failed_at")""",
    """CREATE INDEX "idx_login_failures_failed_at" ON "login_failures" ("failed_at")""",
    """CREATE TABLE "tool_servers" ( "id" TEXT PRIMARY KEY, "label" TEXT NOT NULL, "url" TEXT NOT NULL DEFAULT
    '', "command" TEXT NOT NULL DEFAULT '', "headers" TEXT NOT NULL DEFAULT '{}', "timeout" REAL NOT NULL
    DEFAULT 30.0, "tools" TEXT NOT NULL DEFAULT '[]', "vanished" TEXT NOT NULL DEFAULT '[]', "refreshed_at"
    TEXT )""",
    """CREATE TABLE "agent_tool_hints" ( "agent_id" TEXT, "tool_name" TEXT, "settings" TEXT NOT NULL, PRIMARY
    KEY ("agent_id", "tool_name") )""",
    """CREATE TABLE "responses" ( "id" TEXT PRIMARY KEY, "agent_id" TEXT NOT NULL, "run_id" INTEGER, "input"
    TEXT NOT NULL, "response" TEXT NOT NULL, "created_at" TEXT NOT NULL )""",
    """CREATE INDEX "idx_responses_run_id" ON "responses" ("run_id")""",
    """CREATE TABLE run_counts ( agent_id TEXT NOT NULL, stop_reason TEXT NOT NULL, source TEXT NOT NULL, api
    TEXT NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (agent_id, stop_reason, source, api) )""",
    """CREATE TRIGGER run_counts_insert AFTER INSERT ON runs BEGIN INSERT INTO run_counts (agent_id,
    stop_reason, source, api, count) VALUES (coalesce(new.agent_id, ''), coalesce(new.stop_reason, ''),
    coalesce(new.source, ''), coalesce(new.api, ''), 1) ON CONFLICT (agent_id, stop_reason, source, api) DO
    UPDATE SET count = count + 1; END""",
    """CREATE TRIGGER run_counts_delete AFTER DELETE ON runs BEGIN UPDATE run_counts SET count = count - 1
    WHERE agent_id = coalesce(old.agent_id, '') AND stop_reason = coalesce(old.stop_reason, '') AND source =
    coalesce(old.source, '') AND api = coalesce(old.api, ''); DELETE FROM run_counts WHERE agent_id =
    coalesce(old.agent_id, '') AND stop_reason = coalesce(old.stop_reason, '') AND source =
    coalesce(old.source, '') AND api = coalesce(old.api, '') AND count = 0; END""",
    """CREATE TRIGGER run_counts_update AFTER UPDATE OF agent_id, stop_reason, source, api ON runs BEGIN UPDATE
    run_counts SET count = count - 1 WHERE agent_id = coalesce(old.agent_id, '') AND stop_reason =
    coalesce(old.stop_reason, '') AND source = coalesce(old.source, '') AND api = coalesce(old.api, '');
    DELETE FROM run_counts WHERE agent_id = coalesce(old.agent_id, '') AND stop_reason =
    coalesce(old.stop_reason, '') AND source = coalesce(old.source, '') AND api = coalesce(old.api, '') AND
    count = 0; INSERT INTO run_counts (agent_id, stop_reason, source, api, count) VALUES
    (coalesce(new.agent_id, ''), coalesce(new.stop_reason, ''), coalesce(new.source, ''), coalesce(new.api,
    ''), 1) ON CONFLICT (agent_id, stop_reason, source, api) DO UPDATE SET count = count + 1; END""",
    """CREATE INDEX "idx_runs_api_id" ON "runs" ("api", "id")""",
    """CREATE INDEX "idx_runs_agent_id_api_id" ON "runs" ("agent_id", "api", "id")""",
    """CREATE INDEX "idx_runs_stop_reason_api_id" ON "runs" ("stop_reason", "api", "id")""",
    """CREATE INDEX "idx_runs_agent_id_stop_reason_api_id" ON "runs" ("agent_id", "stop_reason", "api", "id")""",
    """CREATE TABLE run_chart_counts ( agent_id TEXT NOT NULL, stop_reason TEXT NOT NULL, source TEXT NOT NULL,
    api TEXT NOT NULL, day TEXT NOT NULL, rounds_used INTEGER NOT NULL, count INTEGER NOT NULL, PRIMARY KEY
    (agent_id, stop_reason, source, api, day, rounds_used) )""",
    """CREATE TABLE rejection_counts ( agent_id TEXT NOT NULL, stop_reason TEXT NOT NULL, source TEXT NOT NULL,
    api TEXT NOT NULL, day TEXT NOT NULL, tool TEXT NOT NULL, reason TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (agent_id, stop_reason, source, api, day, tool, reason) )""",
    """CREATE INDEX run_chart_counts_day ON run_chart_counts (day)""",
    """CREATE TRIGGER run_chart_counts_insert AFTER INSERT ON runs BEGIN INSERT INTO run_chart_counts
    (agent_id, stop_reason, source, api, day, rounds_used, count) VALUES (coalesce(new.agent_id, ''),
    coalesce(new.stop_reason, ''), coalesce(new.source, ''), coalesce(new.api, ''), substr(new.created_at,
    1, 10), coalesce(new.rounds_used, -1), 1) ON CONFLICT (agent_id, stop_reason, source, api, day,
    rounds_used) DO UPDATE SET count = count + 1; INSERT INTO rejection_counts (agent_id, stop_reason,
    source, api, day, tool, reason, count) SELECT coalesce(new.agent_id, ''), coalesce(new.stop_reason, ''),
    coalesce(new.source, ''), coalesce(new.api, ''), substr(new.created_at, 1, 10), json_extract(value,
    '$.tool'), json_extract(value, '$.reason'), json_extract(value, '$.count') FROM
    json_each(coalesce(new.rejections, '[]')) WHERE true ON CONFLICT (agent_id, stop_reason, source, api,
    day, tool, reason) DO UPDATE SET count = count + excluded.count; END""",
    """CREATE TRIGGER run_chart_counts_delete AFTER DELETE ON runs BEGIN UPDATE run_chart_counts SET count =
    count - 1 WHERE agent_id = coalesce(old.agent_id, '') AND stop_reason = coalesce(old.stop_reason, '')
    AND source = coalesce(old.source, '') AND api = coalesce(old.api, '') AND day = substr(old.created_at,
    1, 10) AND rounds_used = coalesce(old.rounds_used, -1);DELETE FROM run_chart_counts WHERE agent_id =
    coalesce(old.agent_id, '') AND stop_reason = coalesce(old.stop_reason, '') AND source =
    coalesce(old.source, '') AND api = coalesce(old.api, '') AND day = substr(old.created_at, 1, 10) AND
    count = 0; UPDATE rejection_counts SET count = count - (SELECT json_extract(value, '$.count') FROM
    json_each(coalesce(old.rejections, '[]')) WHERE json_extract(value, '$.tool') = rejection_counts.tool
    AND json_extract(value, '$.reason') = rejection_counts.reason) WHERE agent_id = coalesce(old.agent_id,
    '') AND stop_reason = coalesce(old.stop_reason, '') AND source = coalesce(old.source, '') AND api =
    coalesce(old.api, '') AND day = substr(old.created_at, 1, 10) AND EXISTS (SELECT 1 FROM
    json_each(coalesce(old.rejections, '[]')) WHERE json_extract(value, '$.tool') = rejection_counts.tool
    AND json_extract(value, '$.reason') = rejection_counts.reason);DELETE FROM rejection_counts WHERE
    agent_id = coalesce(old.agent_id, '') AND stop_reason = coalesce(old.stop_reason, '') AND source =
    coalesce(old.source, '') AND api = coalesce(old.api, '') AND day = substr(old.created_at, 1, 10) AND
    count <= 0; END""",
    """CREATE TRIGGER run_chart_counts_update AFTER UPDATE OF agent_id, stop_reason, source, api, created_at,
    rounds_used, rejections ON runs BEGIN UPDATE run_chart_counts SET count = count - 1 WHERE agent_id =
    coalesce(old.agent_id, '') AND stop_reason = coalesce(old.stop_reason, '') AND source =
    coalesce(old.source, '') AND api = coalesce(old.api, '') AND day = substr(old.created_at, 1, 10) AND
    rounds_used = coalesce(old.rounds_used, -1);DELETE FROM run_chart_counts WHERE agent_id =
    coalesce(old.agent_id, '') AND stop_reason = coalesce(old.stop_reason, '') AND source =
    coalesce(old.source, '') AND api = coalesce(old.api, '') AND day = substr(old.created_at, 1, 10) AND
    count = 0; UPDATE rejection_counts SET count = count - (SELECT json_extract(value, '$.count') FROM
    json_each(coalesce(old.rejections, '[]')) WHERE json_extract(value, '$.tool') = rejection_counts.tool
    AND json_extract(value, '$.reason') = rejection_counts.reason) WHERE agent_id = coalesce(old.agent_id,
    '') AND stop_reason = coalesce(old.stop_reason, '') AND source = coalesce(old.source, '') AND api =
    coalesce(old.api, '') AND day = substr(old.created_at, 1, 10) AND EXISTS (SELECT 1 FROM
    json_each(coalesce(old.rejections, '[]')) WHERE json_extract(value, '$.tool') = rejection_counts.tool
    AND json_extract(value, '$.reason') = rejection_counts.reason);DELETE FROM rejection_counts WHERE
    agent_id = coalesce(old.agent_id, '') AND stop_reason = coalesce(old.stop_reason, '') AND source =
    coalesce(old.source, '') AND api = coalesce(old.api, '') AND day = substr(old.created_at, 1, 10) AND
    count <= 0; INSERT INTO run_chart_counts (agent_id, stop_reason, source, api, day, rounds_used, count)
    VALUES (coalesce(new.agent_id, ''), coalesce(new.stop_reason, ''), coalesce(new.source, ''),
    coalesce(new.api, ''), substr(new.created_at, 1, 10), coalesce(new.rounds_used, -1), 1) ON CONFLICT
    (agent_id, stop_reason, source, api, day, rounds_used) DO UPDATE SET count = count + 1; INSERT INTO
    rejection_counts (agent_id, stop_reason, source, api, day, tool, reason, count) SELECT
    coalesce(new.agent_id, ''), coalesce(new.stop_reason, ''), coalesce(new.source, ''), coalesce(new.api,
    ''), substr(new.created_at, 1, 10), json_extract(value, '$.tool'), json_extract(value, '$.reason'),
    json_extract(value, '$.count') FROM json_each(coalesce(new.rejections, '[]')) WHERE true ON CONFLICT
    (agent_id, stop_reason, source, api, day, tool, reason) DO UPDATE SET count = count + excluded.count;
    END""",
    """CREATE TABLE log_counts ( agent_id TEXT NOT NULL, level TEXT NOT NULL, kind TEXT NOT NULL, count INTEGER
    NOT NULL, PRIMARY KEY (agent_id, level, kind) )""",
    """CREATE TRIGGER log_counts_insert AFTER INSERT ON log BEGIN INSERT INTO log_counts (agent_id, level,
    kind, count) VALUES (coalesce(new.agent_id, ''), coalesce(new.level, ''), coalesce(new.kind, ''), 1) ON
    CONFLICT (agent_id, level, kind) DO UPDATE SET count = count + 1; END""",
    """CREATE TRIGGER log_counts_delete AFTER DELETE ON log BEGIN UPDATE log_counts SET count = count - 1 WHERE
    agent_id = coalesce(old.agent_id, '') AND level = coalesce(old.level, '') AND kind = coalesce(old.kind,
    ''); DELETE FROM log_counts WHERE agent_id = coalesce(old.agent_id, '') AND level = coalesce(old.level,
    '') AND kind = coalesce(old.kind, '') AND count = 0; END""",
    """CREATE TRIGGER log_counts_update AFTER UPDATE OF agent_id, level, kind ON log BEGIN UPDATE log_counts
    SET count = count - 1 WHERE agent_id = coalesce(old.agent_id, '') AND level = coalesce(old.level, '')
    AND kind = coalesce(old.kind, ''); DELETE FROM log_counts WHERE agent_id = coalesce(old.agent_id, '')
    AND level = coalesce(old.level, '') AND kind = coalesce(old.kind, '') AND count = 0; INSERT INTO
    log_counts (agent_id, level, kind, count) VALUES (coalesce(new.agent_id, ''), coalesce(new.level, ''),
    coalesce(new.kind, ''), 1) ON CONFLICT (agent_id, level, kind) DO UPDATE SET count = count + 1; END""",
    """CREATE INDEX "idx_log_kind_id" ON "log" ("kind", "id")""",
    """CREATE INDEX "idx_log_agent_id_kind_id" ON "log" ("agent_id", "kind", "id")""",
    """CREATE INDEX "idx_log_level_kind_id" ON "log" ("level", "kind", "id")""",
    """CREATE INDEX "idx_log_agent_id_level_kind_id" ON "log" ("agent_id", "level", "kind", "id")""",
)

COUNTED = (
    # (counts table, table counted, the columns counted by)
    ("run_counts", "runs", ("agent_id", "stop_reason", "source", "api")),
    ("log_counts", "log", ("agent_id", "level", "kind")),
)


def _counts_sql(counts, table, columns):
    """A counts table and the trigger that keeps it in step with `table`, as step 0008 made them on SQLite."""
    names = ", ".join(columns)
    matches = " AND ".join(f"{column} = coalesce(OLD.{column}, '')" for column in columns)
    key = ", ".join(f"coalesce(NEW.{column}, '')" for column in columns)
    definitions = ", ".join(f"{column} TEXT NOT NULL" for column in columns)
    return (
        f"CREATE TABLE {counts} ({definitions}, count BIGINT NOT NULL, PRIMARY KEY ({names}))",
        f"""CREATE FUNCTION {counts}_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('DELETE', 'UPDATE') THEN
                UPDATE {counts} SET count = count - 1 WHERE {matches};
                DELETE FROM {counts} WHERE {matches} AND count = 0;
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') THEN
                INSERT INTO {counts} ({names}, count) VALUES ({key}, 1)
                    ON CONFLICT ({names}) DO UPDATE SET count = {counts}.count + 1;
            END IF;
            RETURN NULL;
        END $$""",
        f"CREATE TRIGGER {counts}_change AFTER INSERT OR DELETE OR UPDATE OF {names} ON {table} "
        f"FOR EACH ROW EXECUTE FUNCTION {counts}_change()",
    )


CHART_KEY = "agent_id, stop_reason, source, api, day"
OLD_CHART_MATCH = (
    "agent_id = coalesce(OLD.agent_id, '') AND stop_reason = coalesce(OLD.stop_reason, '') "
    "AND source = coalesce(OLD.source, '') AND api = coalesce(OLD.api, '') AND day = substr(OLD.created_at, 1, 10)"
)
NEW_CHART_KEY = (
    "coalesce(NEW.agent_id, ''), coalesce(NEW.stop_reason, ''), coalesce(NEW.source, ''), coalesce(NEW.api, ''), "
    "substr(NEW.created_at, 1, 10)"
)

POSTGRESQL = (
    HISTORY,
    """CREATE TABLE agents (
        id TEXT PRIMARY KEY, label TEXT NOT NULL, data TEXT NOT NULL, revision BIGINT NOT NULL, created_at TEXT,
        updated_at TEXT
    )""",
    """CREATE TABLE agent_tools (
        agent_id TEXT REFERENCES agents (id), tool_name TEXT, position INTEGER NOT NULL, settings TEXT NOT NULL,
        PRIMARY KEY (agent_id, tool_name)
    )""",
    """CREATE TABLE providers (
        id TEXT PRIMARY KEY, label TEXT NOT NULL, base_url TEXT NOT NULL,
        api_key_env TEXT NOT NULL DEFAULT 'OPENAI_API_KEY', default_model TEXT NOT NULL DEFAULT '',
        timeout DOUBLE PRECISION NOT NULL DEFAULT 60.0, max_retries INTEGER NOT NULL DEFAULT 2,
        headers TEXT NOT NULL DEFAULT '{}', extra_body TEXT NOT NULL DEFAULT '{}'
    )""",
    # The full-text index: title and body weighted A and B, without stemming (as SQLite's unicode61 tokenizer).
    """CREATE TABLE documents (
        id TEXT PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL, updated_at TEXT,
        search tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('simple', title), 'A') || setweight(to_tsvector('simple', body), 'B')
        ) STORED
    )""",
    "CREATE INDEX documents_search ON documents USING GIN (search)",
    """CREATE TABLE runs (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, agent_id TEXT, message TEXT, overrides TEXT,
        agent_snapshot TEXT, stop_reason TEXT, answer TEXT, result TEXT, tool_calls INTEGER, rejected_calls INTEGER,
        duration_ms DOUBLE PRECISION, created_at TEXT, state TEXT, loop_state TEXT, started_at DOUBLE PRECISION,
        lease_until DOUBLE PRECISION, stepping INTEGER NOT NULL DEFAULT 0, stop_requested INTEGER NOT NULL DEFAULT 0,
        source TEXT, conversation_key TEXT, api TEXT, rounds_used INTEGER, rejections TEXT
    )""",
    """CREATE TABLE log (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, created_at TEXT, level TEXT, kind TEXT,
        agent_id TEXT, run_id BIGINT, message TEXT
    )""",
    """CREATE TABLE api_tokens (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, name TEXT NOT NULL, token_hash TEXT NOT NULL,
        hint TEXT NOT NULL, created_at TEXT NOT NULL
    )""",
    "CREATE UNIQUE INDEX idx_api_tokens_token_hash ON api_tokens (token_hash)",
    "CREATE UNIQUE INDEX idx_api_tokens_name ON api_tokens (name)",
    """CREATE TABLE cases (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, agent_id TEXT NOT NULL, name TEXT NOT NULL,
        data TEXT NOT NULL, source_run_id BIGINT, last_check TEXT, created_at TEXT, updated_at TEXT
    )""",
    "CREATE UNIQUE INDEX idx_cases_agent_id_name ON cases (agent_id, name)",
    """CREATE TABLE run_traces (
        run_id BIGINT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE, trace_id TEXT NOT NULL,
        span_id TEXT NOT NULL, conversation_id TEXT, rounds_exported INTEGER NOT NULL DEFAULT 0,
        rounds_settled INTEGER NOT NULL DEFAULT 0, ended INTEGER NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE login_sessions (
        id_hash TEXT PRIMARY KEY, password_mark TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
        last_used_at DOUBLE PRECISION NOT NULL
    )""",
    "CREATE INDEX idx_login_sessions_last_used_at ON login_sessions (last_used_at)",
    """CREATE TABLE login_failures (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, client TEXT NOT NULL,
        failed_at DOUBLE PRECISION NOT NULL
    )""",
    "CREATE INDEX idx_login_failures_client_failed_at ON login_failures (client, failed_at)",
    "CREATE INDEX idx_login_failures_failed_at ON login_failures (failed_at)",
    """CREATE TABLE tool_servers (
        id TEXT PRIMARY KEY, label TEXT NOT NULL, url TEXT NOT NULL DEFAULT '', command TEXT NOT NULL DEFAULT '',
        headers TEXT NOT NULL DEFAULT '{}', timeout DOUBLE PRECISION NOT NULL DEFAULT 30.0,
        tools TEXT NOT NULL DEFAULT '[]', vanished TEXT NOT NULL DEFAULT '[]', refreshed_at TEXT
    )""",
    """CREATE TABLE agent_tool_hints (
        agent_id TEXT, tool_name TEXT, settings TEXT NOT NULL, PRIMARY KEY (agent_id, tool_name)
    )""",
    """CREATE TABLE responses (
        id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, run_id BIGINT, input TEXT NOT NULL, response TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX idx_responses_run_id ON responses (run_id)",
    *(
        f"CREATE INDEX idx_{table}_{'_'.join(columns)} ON {table} ({', '.join(columns)})"
        for table, columns in (
            ("runs", ("agent_id", "id")),
            ("runs", ("stop_reason",)),
            ("runs", ("agent_id", "stop_reason", "id")),
            ("runs", ("state",)),
            ("runs", ("source", "id")),
            ("runs", ("agent_id", "source", "id")),
            ("runs", ("stop_reason", "source", "id")),
            ("runs", ("agent_id", "stop_reason", "source", "id")),
            ("runs", ("agent_id", "conversation_key")),
            ("runs", ("api", "id")),
            ("runs", ("agent_id", "api", "id")),
            ("runs", ("stop_reason", "api", "id")),
            ("runs", ("agent_id", "stop_reason", "api", "id")),
            ("log", ("agent_id",)),
            ("log", ("level",)),
            ("log", ("agent_id", "level", "id")),
            ("log", ("run_id",)),
            ("log", ("kind", "id")),
            ("log", ("agent_id", "kind", "id")),
            ("log", ("level", "kind", "id")),
            ("log", ("agent_id", "level", "kind", "id")),
        )
    ),
    *(statement for counted in COUNTED for statement in _counts_sql(*counted)),
    f"""CREATE TABLE run_chart_counts (
        agent_id TEXT NOT NULL, stop_reason TEXT NOT NULL, source TEXT NOT NULL, api TEXT NOT NULL, day TEXT NOT NULL,
        rounds_used INTEGER NOT NULL, count BIGINT NOT NULL, PRIMARY KEY ({CHART_KEY}, rounds_used)
    )""",
    f"""CREATE TABLE rejection_counts (
        agent_id TEXT NOT NULL, stop_reason TEXT NOT NULL, source TEXT NOT NULL, api TEXT NOT NULL, day TEXT NOT NULL,
        tool TEXT NOT NULL, reason TEXT NOT NULL, count BIGINT NOT NULL, PRIMARY KEY ({CHART_KEY}, tool, reason)
    )""",
    "CREATE INDEX run_chart_counts_day ON run_chart_counts (day)",
    f"""CREATE FUNCTION run_chart_counts_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP IN ('DELETE', 'UPDATE') THEN
            UPDATE run_chart_counts SET count = count - 1
                WHERE {OLD_CHART_MATCH} AND rounds_used = coalesce(OLD.rounds_used, -1);
            DELETE FROM run_chart_counts WHERE {OLD_CHART_MATCH} AND count = 0;
            UPDATE rejection_counts SET count = rejection_counts.count - (rejected.value ->> 'count')::bigint
                FROM json_array_elements(coalesce(OLD.rejections, '[]')::json) AS rejected
                WHERE {OLD_CHART_MATCH} AND tool = rejected.value ->> 'tool' AND reason = rejected.value ->> 'reason';
            DELETE FROM rejection_counts WHERE {OLD_CHART_MATCH} AND count <= 0;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
            INSERT INTO run_chart_counts ({CHART_KEY}, rounds_used, count)
                VALUES ({NEW_CHART_KEY}, coalesce(NEW.rounds_used, -1), 1)
                ON CONFLICT ({CHART_KEY}, rounds_used) DO UPDATE SET count = run_chart_counts.count + 1;
            INSERT INTO rejection_counts ({CHART_KEY}, tool, reason, count)
                SELECT {NEW_CHART_KEY}, rejected.value ->> 'tool', rejected.value ->> 'reason',
                    (rejected.value ->> 'count')::bigint
                FROM json_array_elements(coalesce(NEW.rejections, '[]')::json) AS rejected
                ON CONFLICT ({CHART_KEY}, tool, reason) DO UPDATE SET count = rejection_counts.count + excluded.count;
        END IF;
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER run_chart_counts_change AFTER INSERT OR DELETE OR UPDATE OF "
    "agent_id, stop_reason, source, api, created_at, rounds_used, rejections ON runs "
    "FOR EACH ROW EXECUTE FUNCTION run_chart_counts_change()",
)


def upgrade():
    bind = op.get_bind()
    if LEGACY_TABLE in sa.inspect(bind).get_table_names():
        _record_legacy_steps()
        return
    for statement in POSTGRESQL if bind.dialect.name == "postgresql" else SQLITE:
        op.execute(statement)


def _record_legacy_steps():
    """The database was made before Alembic, and is up to date with every legacy step: record them, then drop the
    legacy table (and its index)."""
    op.execute(HISTORY)
    op.execute(f"INSERT INTO schema_history (step, applied_at) SELECT name, applied_at FROM {LEGACY_TABLE}")
    op.execute(f"DROP TABLE {LEGACY_TABLE}")
