"""The OpenTelemetry trace of each exported run (services/tracing.py): its trace id and the span id of the run's own
span, kept with the run so that every request that steps it, or continues its proxied conversation, adds to one
trace; and how far it was exported, so each request exports only what is new and two requests never export the
same round twice."""

from . import execute, select_rows, select_value
from .db import write_transaction

CURSOR = ("rounds_exported", "rounds_settled", "ended")


def trace_of(db, run_id):
    """The run's trace row ({"run_id", "trace_id", "span_id", "conversation_id", *CURSOR}), or None when nothing of
    it was exported."""
    rows = select_rows(db, "SELECT * FROM run_traces WHERE run_id = :run_id", {"run_id": run_id})
    return rows[0] if rows else None


def start_trace(db, run_id, trace, cursor):
    """Store the run's trace (`trace`: its trace_id, span_id and conversation_id) with the cursor of its first
    export; False, and nothing changed, when another request stored it first."""
    with write_transaction(db):
        inserted = execute(
            db,
            "INSERT INTO run_traces (run_id, trace_id, span_id, conversation_id, rounds_exported, rounds_settled, "
            "ended) VALUES (:run_id, :trace_id, :span_id, :conversation_id, :rounds_exported, :rounds_settled, "
            ":ended) ON CONFLICT (run_id) DO NOTHING",
            {
                "run_id": run_id,
                "trace_id": trace["trace_id"],
                "span_id": trace["span_id"],
                "conversation_id": trace["conversation_id"],
                **{key: int(cursor[key]) for key in CURSOR},
            },
        )
    return inserted.rowcount == 1


def advance(db, run_id, before, after):
    """Move the run's cursor from `before` to `after` (dicts of CURSOR); False, and nothing changed, when another
    request moved it first — that request exports what lies between."""
    with write_transaction(db):
        cursor = execute(
            db,
            "UPDATE run_traces SET rounds_exported = :rounds_exported, rounds_settled = :rounds_settled, "
            "ended = :ended WHERE run_id = :run_id AND rounds_exported = :was_exported "
            "AND rounds_settled = :was_settled AND ended = :was_ended",
            {
                **{key: int(after[key]) for key in CURSOR},
                "run_id": run_id,
                "was_exported": int(before["rounds_exported"]),
                "was_settled": int(before["rounds_settled"]),
                "was_ended": int(before["ended"]),
            },
        )
    return cursor.rowcount == 1


def trace_id_of(db, run_id):
    """The run's trace id (32 hex digits), or None when none of it was exported."""
    return select_value(db, "SELECT trace_id FROM run_traces WHERE run_id = :run_id", {"run_id": run_id})
