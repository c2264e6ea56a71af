"""A token limited to the proxy of named agents, the credential that created a kept response, and the policy file an
agent was applied from: nullable TEXT columns on both engines.

- `api_tokens.agents`: the ids of the agents whose proxy alone the token reaches, as a JSON list; null (every token
  made before) opens the whole API and every proxy.
- `responses.creator`: the credential that created a kept response ("token:<id>"), the one that reads or continues
  it; null for a response kept with the login off (or before this step), which then no token reaches.
- `agents.origin_path`, `agents.origin_digest`: the policy file an agent was applied from (flask apply) and the
  SHA-256 of its content; while origin_path is set, the pages, the API and import-agent refuse to change it.

A SQLite database made by a version that added these columns with the sqlite-utils steps of the same names (0070,
0071, before the store moved to Alembic) has them already: the baseline recorded those steps in `schema_history`,
and each part of this step that one of them did is skipped. The SQL is what sqlite-utils ran, so the schema is the
same either way.
"""

from alembic import op

revision = "0002_token_scope_agent_origin"  # at most 32 characters: alembic_version is VARCHAR(32) on PostgreSQL
down_revision = "0001_baseline"

PARTS = {
    "0070_token_agents_and_response_creators": (("api_tokens", "agents"), ("responses", "creator")),
    "0071_agent_origin": (("agents", "origin_path"), ("agents", "origin_digest")),
}


def upgrade():
    done = {row.step for row in op.get_bind().exec_driver_sql("SELECT step FROM schema_history")}
    for legacy_step, columns in PARTS.items():
        if legacy_step in done:
            continue
        for table, column in columns:
            op.execute(f'ALTER TABLE "{table}" ADD COLUMN "{column}" TEXT')
