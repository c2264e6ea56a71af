"""The token usage of stored runs, for the runs list. It is read from each run's stored result, so storing a run
needs no column of its own for it."""


def total_tokens_by_run(db, run_ids):
    """{run id: total tokens, or None when the run's provider reported no usage} for these runs."""
    if not run_ids:
        return {}
    placeholders = ", ".join("?" for _ in run_ids)
    sql = "SELECT id, json_extract(result, '$.usage.total_tokens') AS total_tokens FROM runs WHERE id IN ({})"
    rows = db.query(sql.format(placeholders), list(run_ids))
    return {row["id"]: row["total_tokens"] for row in rows}
