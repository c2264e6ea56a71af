"""Runs (SPEC §9): every run stored whole — rounds, calls, transcript, overrides and the agent snapshot it ran
with — so its page renders from the stored run alone, after the agent was edited or deleted.

A run read back is the dict `engine.run_agent` returned plus `id` and `created_at`. It is stored with each fact
once (store/run_format.py): the listing columns, the agent snapshot and the rest of the run in `result`.

A run driven step by step (store/run_service.py) is stored when it starts and updated after every step, each
time in its own short transaction, with `loop_state`, what the engine needs to go on. A step holds the run until
its lease ends (`lease_until`, Unix time), so two requests never step one run at once; a running run whose lease
has passed was left by a process that died or a page that stopped asking, and reads `interrupted`.
"""

import json
import time
from dataclasses import replace

from engine.round import AWAITING_CLIENT
from engine.types import ABANDONED, AWAITING, FINISHED, INTERRUPTED, RUNNING

from . import (
    execute,
    get_row,
    history,
    insert_row,
    insert_rows,
    now,
    select_rows,
    select_value,
    settings_generation,
    update_row,
)
from . import log as log_store
from .db import write_many_together, write_together, write_transaction
from .run_charts import chart_columns
from .run_format import run_from_row, stored_row

PER_PAGE = 20
SUMMARY = (
    "id, agent_id, message, stop_reason, answer, tool_calls, rejected_calls, duration_ms, source, created_at, "
    "state, lease_until, api"
)
# A proxied run waiting for its client reads `abandoned` once the client has sent no request for this long: its
# `lease_until` is set this far ahead at every request, as a step's lease is for a live run.
ABANDONED_AFTER_SECONDS = 30 * 60
# The states the runs list filters by besides the stop reasons, each a condition on the runs (`:now`: Unix time).
# Runs in them are few (they have not ended, or not for long), so their list is one page of the newest.
STATE_CONDITIONS = {
    RUNNING: "state = 'running' AND lease_until >= :now",
    AWAITING: "state = 'awaiting_approval'",
    INTERRUPTED: "state = 'running' AND lease_until < :now",
    ABANDONED: "stop_reason = 'awaiting_client' AND lease_until < :now",
}
STATES = tuple(STATE_CONDITIONS)
STATE_PAGE = 200  # the newest runs in one state a list shows
SOURCES = ("page", "api", "cli", "proxy", "case")  # where a run came from (SPEC §8)
APIS = ("chat_completions", "responses", "messages")  # the API a proxied run's client spoke (SPEC §8)


def _row(run):
    """The runs row of a run dict, but its id and creation time: run_format's (what step 0007 writes, which must
    not change), the run's state, where it came from (in its column only, like run_format's columns: a null in
    `result`), for a proxied run its conversation's key and the API its client spoke (in its column only too), and
    what the charts count it by (store/run_charts.py)."""
    conversation = run.get("conversation")
    source, api = run.get("source"), run.get("api")
    in_columns = {key: None for key, value in (("source", source), ("api", api)) if isinstance(value, str)}
    return {
        **stored_row({**run, **in_columns}),
        "state": run.get("state", FINISHED),
        "source": source,
        "api": api if isinstance(api, str) else None,
        "conversation_key": conversation.get("key") if isinstance(conversation, dict) else None,
        **chart_columns(run),
        **({"lease_until": time.time() + ABANDONED_AFTER_SECONDS} if run.get("stop_reason") == AWAITING_CLIENT else {}),
    }


def save_run(db, run, loop_state=None, gather=False):
    """Store a run and its log entries together (store.db.write_together); returns the run with `id` and
    `created_at`. `loop_state`: what a proxied request held for approval needs to carry on. `db` may be the
    database's URL, for a request that holds no connection (store.db.write_many_together): so may continue_run's
    and hold_proxied_run's. `gather`: other requests are about to record theirs (store.db.write_many_together)."""
    created_at = now()
    result = {key: value for key, value in run.items() if key not in ("id", "created_at")}
    # Every run row has the same columns, so those committed together are inserted by one statement.
    row = {"lease_until": None, **_row(result), "created_at": created_at}
    row["loop_state"] = None if loop_state is None else json.dumps(loop_state)
    log = run.get("log") or []
    return {
        "id": write_many_together(db, _insert_runs, (row, log), gather, one_statement=not log),
        **result,
        "created_at": created_at,
    }


def _insert_runs(db, runs):
    """Insert runs ([(runs row, log entries)]) and their log entries: the runs by insert_rows, then every entry by
    one statement; their ids in order."""
    ids = insert_rows(db, "runs", [row for row, _ in runs])
    entries = [
        entry
        for (row, log), run_id in zip(runs, ids, strict=True)
        for entry in log_store.entry_rows(log, run_id, row["created_at"])
    ]
    log_store.add_rows(db, entries)
    return ids


def insert_started_run(db, run, loop_state, lease_until):
    """Store a run that has just started (no stop reason yet), alive until `lease_until` for its first step."""
    values = {
        **_row(run),
        "created_at": now(),
        "loop_state": json.dumps(loop_state),
        "started_at": time.time(),
        "lease_until": lease_until,
    }
    with write_transaction(db):
        run_id = insert_row(db, "runs", values)
        log_store.add_entries(db, run.get("log") or [], run_id=run_id, created_at=values["created_at"])
    return run_id


# Which runs a request may hold, by what it is about to do (`now`: the current Unix time). A step takes a running
# run nobody holds whose lease has not passed; a run whose lease has passed is interrupted, and only Resume takes it.
CLAIMS = {
    "step": "state = 'running' AND stepping = 0 AND lease_until >= :now",
    "resume": "state = 'running' AND lease_until < :now",
    "decide": "state = 'awaiting_approval' AND (stepping = 0 OR lease_until < :now)",
    "stop": "state != 'finished' AND (stepping = 0 OR lease_until < :now)",
    # A proxied request held for approval carries out the decisions (release), or a request of the same conversation
    # takes over the wait (attach).
    "release": "state = 'awaiting_approval' AND stepping = 0",
    "attach": "state = 'awaiting_approval' AND (stepping = 0 OR lease_until < :now)",
}


def claim_run(db, run_id, claim, lease_until):
    """Hold the run until `lease_until` for one of CLAIMS, if it may be held for it now. True when the caller now
    holds it."""
    with write_transaction(db):
        cursor = execute(
            db,
            f"UPDATE runs SET stepping = 1, lease_until = :lease_until WHERE id = :id AND {CLAIMS[claim]}",
            {"lease_until": lease_until, "id": run_id, "now": time.time()},
        )
    return cursor.rowcount == 1


def step_input(db, run_id):
    """(the stored run, its loop state) of a run the caller holds."""
    row = get_row(db, "runs", run_id, f"No run with id {run_id}.")
    return _run_from_row(row), json.loads(row["loop_state"]) if row["loop_state"] else None


def save_step(db, run_id, next_state, lease_until, logged, hold=False):
    """Store a step's outcome and let the run go (or, `hold`, keep holding it while it runs on), alive until
    `lease_until` for the next step. `logged`: how many of the run's log entries were stored before.

    `next_state(stop_requested)` returns the engine's state to store: it is called under the write lock, so a Stop
    that came in during the step is either seen here or finds the run let go (and stops it itself)."""
    with write_transaction(db):
        # A write first, so that the transaction holds the write lock before it reads.
        stop_requested = select_value(
            db, "UPDATE runs SET stepping = 0 WHERE id = :id RETURNING stop_requested", {"id": run_id}
        )
        state = next_state(bool(stop_requested))
        run = state["run"]
        finished = run["state"] == FINISHED
        update_row(
            db,
            "runs",
            run_id,
            {
                **_row(run),
                "loop_state": None if finished else json.dumps(state["loop"]),
                "lease_until": None if finished else lease_until,
                "stepping": int(hold and run["state"] == RUNNING),
            },
        )
        log_store.add_entries(db, (run.get("log") or [])[logged:], run_id=run_id)
    return get_run(db, run_id)


def let_go(db, run_id):
    """A step that failed before it could store anything lets the run go as it was."""
    with write_transaction(db):
        execute(db, "UPDATE runs SET stepping = 0 WHERE id = :id", {"id": run_id})


def request_stop(db, run_id):
    """Mark a run that has not ended to stop after its current step. False when it has ended (or does not exist)."""
    with write_transaction(db):
        cursor = execute(
            db,
            "UPDATE runs SET stop_requested = 1 WHERE id = :id AND state != :finished",
            {"id": run_id, "finished": FINISHED},
        )
    return cursor.rowcount == 1


def _state(row):
    """The run's state as people read it: a running run whose lease has passed is interrupted; a proxied run whose
    client has not come back within ABANDONED_AFTER_SECONDS is abandoned."""
    state = row.get("state") or FINISHED
    lease_until = row.get("lease_until")
    passed = lease_until is not None and lease_until < time.time()
    if state == RUNNING and passed:
        return INTERRUPTED
    if row.get("stop_reason") == AWAITING_CLIENT and passed:
        return ABANDONED
    return state


def _run_from_row(row):
    run = run_from_row(row)
    if "source" in run and run["source"] is None:
        run["source"] = row["source"]
    if row["api"] is not None:  # a proxied run stored before it was recorded reads as chat_completions (step 0067)
        run["api"] = row["api"]
    if "state" in run or row["state"] != FINISHED:  # a run stored before states existed reads as it was stored
        run["state"] = _state(row)
    if run.get("state", FINISHED) not in (FINISHED, ABANDONED):
        run["started_at"] = row["started_at"]
        run["stop_requested"] = bool(row["stop_requested"])
    return run


def continue_run(db, run_id, run, conversation_key, new_log, loop_state=None, gather=False):
    """Replace a proxied run that a client request continued, and add that request's log entries, in one
    transaction — unless another request continued it first (its conversation key is no longer
    `conversation_key`): then nothing is written and the answer is None. Returns the run as stored. `loop_state`:
    what a request held for approval needs to carry on (None once it is not held); the run is let go."""
    result = {key: value for key, value in run.items() if key not in ("id", "created_at")}
    row = {**_row(result), "loop_state": None if loop_state is None else json.dumps(loop_state), "stepping": 0}
    assignments = ", ".join(f"{column} = :{column}" for column in row)

    def write(db):
        created_at = select_value(
            db,
            f"UPDATE runs SET {assignments} WHERE id = :run_id AND conversation_key = :was_key RETURNING created_at",
            {**row, "run_id": run_id, "was_key": conversation_key},
        )
        if created_at is not None:
            log_store.add_entries(db, new_log, run_id=run_id, created_at=now())
        return created_at

    created_at = write_together(db, write, gather, one_statement=not new_log)
    return None if created_at is None else {"id": run_id, **result, "created_at": created_at}


def hold_proxied_run(db, run_id, run, conversation_key, loop_state, new_log, gather=False):
    """Store a proxied run whose request is held for approval, with its `loop_state`: in place of run `run_id` as
    continue_run does, or as a new run when `run_id` is None or another request continued that run first. Returns
    the run as stored."""
    if run_id is not None:
        saved = continue_run(db, run_id, run, conversation_key, new_log, loop_state, gather)
        if saved is not None:
            return saved
    return save_run(db, run, loop_state, gather)


def held_state(db, run_id):
    """(the run's state, its loop state) of a proxied run held for approval: what its waiting request asks for."""
    rows = select_rows(db, "SELECT state, loop_state FROM runs WHERE id = :run_id", {"run_id": run_id})
    if not rows:
        return None, None
    return rows[0]["state"], json.loads(rows[0]["loop_state"]) if rows[0]["loop_state"] else None


def save_loop_state(db, run_id, loop_state):
    """Store the loop state of a run the caller holds, and let it go."""
    with write_transaction(db):
        execute(
            db,
            "UPDATE runs SET loop_state = :loop_state, stepping = 0 WHERE id = :run_id",
            {"loop_state": json.dumps(loop_state), "run_id": run_id},
        )


def conversation_lookup(count):
    """The statement that reads the agent's (:agent_id) latest run with each of `count` conversation keys (:key0,
    :key1, …), and the settings' current generation: one statement, so one round trip to PostgreSQL, for all a
    proxied request reads before its model is asked (the run its conversation continues, one held for approval, and
    the generation that confirms the settings it went on under: store.settings_generation). Each run is found through
    the index on (agent_id, conversation_key, id): one entry read, however many runs share the key (0006). The
    generation's one row is joined to the runs found, so it comes back when none is."""
    latest = " UNION ALL ".join(
        f"SELECT * FROM (SELECT * FROM runs WHERE agent_id = :agent_id AND conversation_key = :key{number} "
        f"ORDER BY id DESC LIMIT 1) AS latest{number}"
        for number in range(count)
    )
    return (
        "SELECT settings_generation.generation AS settings_generation, found.* FROM settings_generation "
        f"LEFT JOIN ({latest}) AS found ON 1 = 1 WHERE settings_generation.id = 1"
    )


def proxied_runs_and_generation(db, agent_id, conversation_keys):
    """({key: the agent's latest proxied run whose client holds that conversation, or None} for each key, the
    settings' current generation). Each run is read in the one query: a run found by its key and then read again
    could have been continued by another request in between, and its transcript would then already hold the results
    this request brings."""
    parameters = {f"key{number}": key for number, key in enumerate(conversation_keys)}
    rows = select_rows(db, conversation_lookup(len(parameters)), {"agent_id": agent_id, **parameters})
    generation = settings_generation.saw(db, rows[0]["settings_generation"])
    found = {row["conversation_key"]: _run_from_row(row) for row in rows if row["id"] is not None}
    return {key: found.get(key) for key in conversation_keys}, generation


def proxied_run_with_conversation(db, agent_id, conversation_key):
    """The agent's latest proxied run whose client holds this conversation, or None."""
    return proxied_runs_and_generation(db, agent_id, [conversation_key])[0][conversation_key]


def get_run(db, run_id):
    """The stored run dict with its `id` and `created_at`. Raises NotFound."""
    return _run_from_row(get_row(db, "runs", run_id, f"No run with id {run_id}."))


def list_runs(db, agent_id=None, stop_reason=None, before=None, after=None, per_page=PER_PAGE, source=None, api=None):
    """The page of run summaries below the run id `before` or above `after` (or the newest), newest first: a
    store.history.Page. Summaries carry the listing columns only, never the whole run."""
    filters = {"agent_id": agent_id, "stop_reason": stop_reason, "source": source, "api": api}
    return _summaries(history.history_page(db, "runs", "run_counts", filters, SUMMARY, per_page, before, after))


def runs_in_state(db, state, agent_id=None, source=None, api=None):
    """The newest STATE_PAGE run summaries in one of STATES (and the filters), newest first, as a one-page
    store.history.Page."""
    conditions = [STATE_CONDITIONS[state]]
    parameters = {"now": time.time()}
    for column, value in (("agent_id", agent_id), ("source", source), ("api", api)):
        if value:
            conditions.append(f"{column} = :{column}")
            parameters[column] = value
    where = " AND ".join(conditions)
    rows = select_rows(db, f"SELECT {SUMMARY} FROM runs WHERE {where} ORDER BY id DESC LIMIT {STATE_PAGE}", parameters)
    total = select_value(db, f"SELECT count(*) FROM runs WHERE {where}", parameters)
    return _summaries(history.Page(rows, total, newer=None, older=None))


def numbered_runs_page(db, agent_id=None, stop_reason=None, number=1, per_page=PER_PAGE, source=None, api=None):
    """Page `number` of run summaries (1 is the newest), for the API's `?page=`: (Page, number, page count)."""
    filters = {"agent_id": agent_id, "stop_reason": stop_reason, "source": source, "api": api}
    page, number, pages = history.numbered_page(db, "runs", "run_counts", filters, SUMMARY, per_page, number)
    return _summaries(page), number, pages


def _summaries(page):
    """The page with each run's state as people read it, and nothing of its lease."""
    rows = [
        {**{key: value for key, value in row.items() if key != "lease_until"}, "state": _state(row)}
        for row in page.rows
    ]
    return replace(page, rows=rows)


def run_agent_ids(db):
    """Every agent id that has runs, for the filter; deleted agents included."""
    return history.agent_ids(db, "run_counts")


def previous_run_id(db, run):
    """The id of the agent's run just before this one, or None."""
    return select_value(
        db,
        "SELECT MAX(id) FROM runs WHERE agent_id = :agent_id AND id < :id",
        {"agent_id": run["agent_id"], "id": run["id"]},
    )


def prune_runs(db, created_before, agent_id=None):
    """Delete the runs created before the ISO timestamp `created_before` (of one agent, or of all), their log
    entries and the proxy's responses kept of them, in one transaction: (runs deleted, log entries deleted).
    Entries from the gate API have no run and stay."""
    where = "created_at < :created_before" + (" AND agent_id = :agent_id" if agent_id is not None else "")
    parameters = {"created_before": created_before, "agent_id": agent_id}
    with write_transaction(db):
        entries = execute(db, f"DELETE FROM log WHERE run_id IN (SELECT id FROM runs WHERE {where})", parameters)
        execute(db, f"DELETE FROM responses WHERE run_id IN (SELECT id FROM runs WHERE {where})", parameters)
        runs = execute(db, f"DELETE FROM runs WHERE {where}", parameters)
    return runs.rowcount, entries.rowcount
