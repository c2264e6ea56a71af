"""The API tokens join the settings' generation (0004): a proxied request checks its token against what its process
read under the current generation, and a token revoked anywhere (the Tokens page, the API, another replica) changes
the generation in the transaction that deletes it, so the next request of every process reads the tokens again."""

from alembic import op

revision = "0005_tokens_in_generation"  # at most 32 characters: alembic_version is VARCHAR(32) on PostgreSQL
down_revision = "0004_settings_generation"

BUMP = "UPDATE settings_generation SET generation = generation + 1"


def upgrade():
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE TRIGGER api_tokens_settings_changed BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON api_tokens "
            "FOR EACH STATEMENT EXECUTE FUNCTION settings_changed()"
        )
        return
    for event in ("INSERT", "UPDATE", "DELETE"):
        op.execute(
            f"CREATE TRIGGER api_tokens_settings_changed_{event.lower()} AFTER {event} ON api_tokens BEGIN {BUMP}; END"
        )
