"""Runs (SPEC §9): every run stored whole — rounds, calls, transcript, overrides and the agent snapshot it ran
with — so its page renders from the stored run alone, after the agent was edited or deleted.

A run read back is the dict `engine.run_agent` returned plus `id` and `created_at`. It is stored with each fact
once (store/run_format.py): the listing columns, the agent snapshot and the rest of the run in `result`.
"""

from . import get_row, history, now
from . import log as log_store
from .db import write_transaction
from .run_format import run_from_row, stored_row

PER_PAGE = 20
SUMMARY = "id, agent_id, message, stop_reason, answer, tool_calls, rejected_calls, duration_ms, created_at"


def save_run(db, run):
    """Store a run and its log entries in one transaction; returns the run with `id` and `created_at`."""
    created_at = now()
    result = {key: value for key, value in run.items() if key not in ("id", "created_at")}
    with write_transaction(db):
        run_id = db["runs"].insert({**stored_row(result), "created_at": created_at}).last_pk
        log_store.add_entries(db, run.get("log") or [], run_id=run_id, created_at=created_at)
    return {"id": run_id, **result, "created_at": created_at}


def get_run(db, run_id):
    """The stored run dict with its `id` and `created_at`. Raises NotFound."""
    return run_from_row(get_row(db["runs"], run_id, f"No run with id {run_id}."))


def list_runs(db, agent_id=None, stop_reason=None, before=None, after=None, per_page=PER_PAGE):
    """The page of run summaries below the run id `before` or above `after` (or the newest), newest first: a
    store.history.Page. Summaries carry the listing columns only, never the whole run."""
    filters = {"agent_id": agent_id, "stop_reason": stop_reason}
    return history.history_page(db, "runs", "run_counts", filters, SUMMARY, per_page, before=before, after=after)


def numbered_runs_page(db, agent_id=None, stop_reason=None, number=1, per_page=PER_PAGE):
    """Page `number` of run summaries (1 is the newest), for the API's `?page=`: (Page, number, page count)."""
    filters = {"agent_id": agent_id, "stop_reason": stop_reason}
    return history.numbered_page(db, "runs", "run_counts", filters, SUMMARY, per_page, number)


def run_agent_ids(db):
    """Every agent id that has runs, for the filter; deleted agents included."""
    return history.agent_ids(db, "run_counts")


def previous_run_id(db, run):
    """The id of the agent's run just before this one, or None."""
    rows = list(db.query("SELECT MAX(id) AS id FROM runs WHERE agent_id = ? AND id < ?", [run["agent_id"], run["id"]]))
    return rows[0]["id"] if rows else None


def prune_runs(db, created_before, agent_id=None):
    """Delete the runs created before the ISO timestamp `created_before` (of one agent, or of all) and their log
    entries, in one transaction: (runs deleted, log entries deleted). Entries from the gate API have no run and
    stay."""
    where = "created_at < ?" + (" AND agent_id = ?" if agent_id is not None else "")
    parameters = [created_before, *([agent_id] if agent_id is not None else [])]
    with write_transaction(db):
        entries = db.execute(f"DELETE FROM log WHERE run_id IN (SELECT id FROM runs WHERE {where})", parameters)
        runs = db.execute(f"DELETE FROM runs WHERE {where}", parameters)
    return runs.rowcount, entries.rowcount
