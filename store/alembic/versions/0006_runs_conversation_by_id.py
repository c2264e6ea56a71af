"""The proxy's look-up of the run a conversation continues (and of a held one: store.runs.conversation_lookup) reads
the agent's latest run with a conversation key. Its index held the agent and the key but not the id, so PostgreSQL
had to find every run with that key and sort them, or, in the generic plan psycopg's prepared statement gets once
many runs share a key (an agent whose conversations all open alike), walk the runs table backwards by id until one
matched: 0.39 ms a request at 2,000 runs of one opening, growing with the table. With the id in the index the look-up
reads one entry, or none (tests/integration/test_conversation_lookup.py). SQLite's index held the id already, as the
rowid every index ends with; it gets the same index, so both engines keep one schema."""

from alembic import op

revision = "0006_runs_conversation_by_id"  # at most 32 characters: alembic_version is VARCHAR(32) on PostgreSQL
down_revision = "0005_tokens_in_generation"


def upgrade():
    op.execute('CREATE INDEX "idx_runs_agent_id_conversation_key_id" ON "runs" ("agent_id", "conversation_key", "id")')
    op.execute('DROP INDEX "idx_runs_agent_id_conversation_key"')
