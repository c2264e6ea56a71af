"""A number that changes whenever what a proxied request reads of the settings changes: the agents, their tools, the
provider connections and the tool servers. `settings_generation` holds one row, and a trigger on each of those tables
adds one to it in the transaction that writes them, whoever writes (the pages, the API, `flask apply`, copy-database,
a replica elsewhere). A process keeps what it read of an agent under the generation it read it at, and reads one
small row per request instead of four (services/proxy.py).

On PostgreSQL the trigger runs BEFORE each statement, so every transaction that writes the settings takes the row's
lock before any other row of theirs: two such transactions wait for each other in one order, never in a circle.
"""

from alembic import op

revision = "0004_settings_generation"  # at most 32 characters: alembic_version is VARCHAR(32) on PostgreSQL
down_revision = "0003_counts_per_statement"

SETTINGS_TABLES = ("agents", "agent_tools", "providers", "tool_servers")
BUMP = "UPDATE settings_generation SET generation = generation + 1"


def upgrade():
    op.execute("CREATE TABLE settings_generation (id INTEGER PRIMARY KEY, generation BIGINT NOT NULL)")
    op.execute("INSERT INTO settings_generation (id, generation) VALUES (1, 0)")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            f"CREATE FUNCTION settings_changed() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN {BUMP}; RETURN NULL; END $$"
        )
        for table in SETTINGS_TABLES:
            op.execute(
                f"CREATE TRIGGER {table}_settings_changed BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} "
                "FOR EACH STATEMENT EXECUTE FUNCTION settings_changed()"
            )
        return
    for table in SETTINGS_TABLES:
        for event in ("INSERT", "UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER {table}_settings_changed_{event.lower()} AFTER {event} ON {table} BEGIN {BUMP}; END"
            )
