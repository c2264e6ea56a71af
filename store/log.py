"""The log (SPEC §9): policy violations and provider errors, each tied to the run that caused it when there is
one. The engine hands the entries back with the run (`run["log"]`); they are written with the run, in its
transaction. Entries from the gate API have no run."""

from . import execute, history, now

LEVELS = ("error", "warning", "info")
# What the policy and the proxy log, by kind: the restriction (the seed's policy violation), every other rejection,
# and the requests that failed. The log page offers these, and any other kind its entries have.
KINDS = (
    "policy_violation",
    "argument_not_allowed",
    "repeated_call",
    "call_limit",
    "unknown_tool",
    "invalid_arguments",
    "tools_disabled",
    "reviewer_rejected",
    "proxy_error",
    "provider_error",
)
PER_PAGE = 50


def add_entries(db, entries, run_id=None, created_at=None):
    """Append log entries ({level, kind, agent_id, message}); the caller holds the transaction if it needs one."""
    add_rows(db, entry_rows(entries, run_id, created_at or now()))


def entry_rows(entries, run_id, created_at):
    """The log rows of entries ({level, kind, agent_id, message}) of the run `run_id` (None: of no run)."""
    return [
        {
            "created_at": created_at,
            "level": entry["level"],
            "kind": entry["kind"],
            "agent_id": entry.get("agent_id"),
            "run_id": run_id,
            "message": entry["message"],
        }
        for entry in entries
    ]


def add_rows(db, rows):
    """Append log rows (entry_rows): one statement run for each row, which psycopg sends together."""
    if rows:
        execute(
            db,
            "INSERT INTO log (created_at, level, kind, agent_id, run_id, message) "
            "VALUES (:created_at, :level, :kind, :agent_id, :run_id, :message)",
            rows,
        )


def list_entries(db, agent_id=None, level=None, before=None, after=None, per_page=PER_PAGE, kind=None):
    """The page of entries below the id `before` or above `after` (or the newest), newest first: a
    store.history.Page."""
    filters = {"agent_id": agent_id, "level": level, "kind": kind}
    return history.history_page(db, "log", "log_counts", filters, "*", per_page, before=before, after=after)


def log_kinds(db):
    """KINDS, then any other kind the entries have, for the filter."""
    found = execute(db, "SELECT DISTINCT kind FROM log_counts ORDER BY kind").scalars().all()
    return [*KINDS, *(kind for kind in found if kind and kind not in KINDS)]


def log_agent_ids(db):
    """Every agent id that has log entries, for the filter."""
    return history.agent_ids(db, "log_counts")
