"""Alembic's entry point for store/migrations.py: the steps run on the connection `migrate` hands in, inside the
write transaction it holds, so two processes that start at once apply each step once."""

from alembic import context

context.configure(
    connection=context.config.attributes["connection"],
    render_as_batch=True,  # SQLite changes a table by copying it: `op.batch_alter_table` does that for a step
    on_version_apply=context.config.attributes["on_version_apply"],
)
with context.begin_transaction():
    context.run_migrations()
