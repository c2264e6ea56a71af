"""The log (SPEC §9): policy violations and provider errors, each tied to the run that caused it when there is
one. The engine hands the entries back with the run (`run["log"]`); they are written with the run, in its
transaction. Entries from the gate API have no run."""

from . import history, now

LEVELS = ("error", "warning", "info")
PER_PAGE = 50


def add_entries(db, entries, run_id=None, created_at=None):
    """Append log entries ({level, kind, agent_id, message}); the caller holds the transaction if it needs one."""
    created_at = created_at or now()
    db.conn.executemany(
        "INSERT INTO log (created_at, level, kind, agent_id, run_id, message) VALUES (?, ?, ?, ?, ?, ?)",
        [
            (created_at, entry["level"], entry["kind"], entry.get("agent_id"), run_id, entry["message"])
            for entry in entries
        ],
    )


def list_entries(db, agent_id=None, level=None, before=None, after=None, per_page=PER_PAGE):
    """The page of entries below the id `before` or above `after` (or the newest), newest first: a
    store.history.Page."""
    filters = {"agent_id": agent_id, "level": level}
    return history.history_page(db, "log", "log_counts", filters, "*", per_page, before=before, after=after)


def log_agent_ids(db):
    """Every agent id that has log entries, for the filter."""
    return history.agent_ids(db, "log_counts")
