"""On PostgreSQL the counts tables count the rows an INSERT adds once per statement, not once per row: runs committed
together (store.db.write_many_together) are one INSERT, and a PL/pgSQL trigger run for each of its rows cost more
than the INSERT itself. An AFTER INSERT trigger FOR EACH STATEMENT reads the rows added (a transition table) and
adds their counts grouped by key, one upsert per counts table; the row triggers of 0001 go on counting deletes and
updates. SQLite is unchanged: its triggers run in the same process, with no call into PL/pgSQL.
"""

from alembic import op

revision = "0003_counts_per_statement"  # at most 32 characters: alembic_version is VARCHAR(32) on PostgreSQL
down_revision = "0002_token_scope_agent_origin"

# (counts table, table counted, the columns counted by): 0001's COUNTED
COUNTED = (
    ("run_counts", "runs", ("agent_id", "stop_reason", "source", "api")),
    ("log_counts", "log", ("agent_id", "level", "kind")),
)
CHART_KEY = "agent_id, stop_reason, source, api, day"
ADDED_CHART_KEY = (
    "coalesce(added.agent_id, ''), coalesce(added.stop_reason, ''), coalesce(added.source, ''), "
    "coalesce(added.api, ''), substr(added.created_at, 1, 10)"
)
CHART_COLUMNS = "agent_id, stop_reason, source, api, created_at, rounds_used, rejections"


def _counts_sql(counts, table, columns):
    names = ", ".join(columns)
    key = ", ".join(f"coalesce(added.{column}, '')" for column in columns)
    return (
        f"""CREATE FUNCTION {counts}_added() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO {counts} ({names}, count)
                SELECT {key}, count(*) FROM added GROUP BY {key}
                ON CONFLICT ({names}) DO UPDATE SET count = {counts}.count + excluded.count;
            RETURN NULL;
        END $$""",
        f"DROP TRIGGER {counts}_change ON {table}",
        f"CREATE TRIGGER {counts}_change AFTER DELETE OR UPDATE OF {names} ON {table} "
        f"FOR EACH ROW EXECUTE FUNCTION {counts}_change()",
        f"CREATE TRIGGER {counts}_added AFTER INSERT ON {table} REFERENCING NEW TABLE AS added "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {counts}_added()",
    )


POSTGRESQL = (
    *(statement for counted in COUNTED for statement in _counts_sql(*counted)),
    f"""CREATE FUNCTION run_chart_counts_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO run_chart_counts ({CHART_KEY}, rounds_used, count)
            SELECT {ADDED_CHART_KEY}, coalesce(added.rounds_used, -1), count(*) FROM added
            GROUP BY {ADDED_CHART_KEY}, coalesce(added.rounds_used, -1)
            ON CONFLICT ({CHART_KEY}, rounds_used) DO UPDATE SET count = run_chart_counts.count + excluded.count;
        INSERT INTO rejection_counts ({CHART_KEY}, tool, reason, count)
            SELECT {ADDED_CHART_KEY}, rejected.value ->> 'tool', rejected.value ->> 'reason',
                sum((rejected.value ->> 'count')::bigint)
            FROM added, json_array_elements(coalesce(added.rejections, '[]')::json) AS rejected
            GROUP BY {ADDED_CHART_KEY}, rejected.value ->> 'tool', rejected.value ->> 'reason'
            ON CONFLICT ({CHART_KEY}, tool, reason) DO UPDATE SET count = rejection_counts.count + excluded.count;
        RETURN NULL;
    END $$""",
    "DROP TRIGGER run_chart_counts_change ON runs",
    f"CREATE TRIGGER run_chart_counts_change AFTER DELETE OR UPDATE OF {CHART_COLUMNS} ON runs "
    "FOR EACH ROW EXECUTE FUNCTION run_chart_counts_change()",
    "CREATE TRIGGER run_chart_counts_added AFTER INSERT ON runs REFERENCING NEW TABLE AS added "
    "FOR EACH STATEMENT EXECUTE FUNCTION run_chart_counts_added()",
)


def upgrade():
    if op.get_bind().dialect.name == "postgresql":
        for statement in POSTGRESQL:
            op.execute(statement)
