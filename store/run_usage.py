"""The token usage of stored runs, for the runs list. It is read from each run's stored result, so storing a run
needs no column of its own for it."""

from . import select_rows

# The run's total tokens out of its stored result, per engine (PostgreSQL's `json` keeps the text as written, so a
# NUL escaped in a transcript does not stop it the way `jsonb` would).
TOTAL_TOKENS = {
    "sqlite": "json_extract(result, '$.usage.total_tokens')",
    "postgresql": "(result::json #>> '{usage,total_tokens}')::bigint",
}


def total_tokens_by_run(db, run_ids):
    """{run id: total tokens, or None when the run's provider reported no usage} for these runs."""
    if not run_ids:
        return {}
    placeholders = ", ".join(f":id{number}" for number in range(len(run_ids)))
    rows = select_rows(
        db,
        f"SELECT id, {TOTAL_TOKENS[db.dialect.name]} AS total_tokens FROM runs WHERE id IN ({placeholders})",
        {f"id{number}": run_id for number, run_id in enumerate(run_ids)},
    )
    return {row["id"]: row["total_tokens"] for row in rows}
