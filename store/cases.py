"""Regression cases, stored on their agent: the case's JSON form (engine.cases) in and out, one `cases` row each,
with the result of its latest check.

Every write validates with engine.cases.validate_case; saving a run as a case and importing also check what only
storage knows (the agent exists and the case's overrides make a valid run of it), and a new name must be free
among the agent's cases (an import replaces the case of that name instead). A case read back is its JSON form
plus `id`, `source_run_id`, `last_check`, `created_at` and `updated_at`.
"""

import copy
import json
import sqlite3

from engine.cases import CASE_FIELDS, OPTIONAL_FIELDS, case_from_run, replay_overrides, validate_case
from engine.config import CONTROL_CHARACTER, ValidationError, load_agent

from . import NotFound, get_row, now
from . import agents as agent_store
from . import runs as run_store
from .db import write_transaction

DATA_FIELDS = tuple(key for key in CASE_FIELDS if key not in ("agent_id", "name"))
DEFAULT_NAME_LENGTH = 60


def _case_from_row(row):
    return {
        "id": row["id"],
        "agent_id": row["agent_id"],
        "name": row["name"],
        **copy.deepcopy(OPTIONAL_FIELDS),  # a case stored before a field was added has its default
        **json.loads(row["data"]),
        "source_run_id": row["source_run_id"],
        "last_check": json.loads(row["last_check"]) if row["last_check"] else None,
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


def case_json(case):
    """A case's JSON form alone, as exported: what `validate` takes back."""
    return {key: case[key] for key in CASE_FIELDS}


def get_case(db, case_id):
    """The stored case. Raises NotFound."""
    return _case_from_row(get_row(db, "cases", case_id, f"No case with id {case_id}."))


def list_cases(db, agent_id=None):
    """The cases of one agent (every case when None), by name."""
    where, parameters = ("agent_id = ?", [agent_id]) if agent_id else (None, [])
    return [
        _case_from_row(row)
        for row in db["cases"].rows_where(where, parameters, order_by="agent_id, name COLLATE NOCASE, id")
    ]


def sample_message(db, agent_id):
    """The message of the agent's first case, or "": what its run page offers, so a first Run has something to
    say (each demo agent ships with a case)."""
    rows = list(db.query("SELECT data FROM cases WHERE agent_id = ? ORDER BY id LIMIT 1", [agent_id]))
    return json.loads(rows[0]["data"])["message"] if rows else ""


def case_agent_ids(db):
    """Every agent id that has cases."""
    return [row["agent_id"] for row in db.query("SELECT DISTINCT agent_id FROM cases ORDER BY agent_id")]


def _name_taken(db, agent_id, name, case_id=None):
    rows = db.query("SELECT id FROM cases WHERE agent_id = ? AND name = ?", [agent_id, name])
    return any(row["id"] != case_id for row in rows)


def _check_name(db, case, case_id=None):
    if _name_taken(db, case["agent_id"], case["name"], case_id):
        raise ValidationError({"name": f'is already used by another case of the agent "{case["agent_id"]}"'})


def validate(db, data, known_tools):
    """engine.cases.validate_case, plus: the agent exists and the case runs against it as stored now. Returns the
    case; raises ValidationError. (Whether the name is free depends on the write: an import replaces.)"""
    case = validate_case(data)
    try:
        agent = agent_store.get_agent(db, case["agent_id"])
    except NotFound:
        raise ValidationError({"agent_id": f'no agent has the id "{case["agent_id"]}"'}) from None
    try:
        load_agent(agent, replay_overrides(case), known_tools=set(known_tools))
    except ValidationError as error:
        raise ValidationError(
            {
                key if key.startswith("overrides.") else f"overrides.{key}": message
                for key, message in error.errors.items()
            }
        ) from None
    return case


def _row(case):
    return {"agent_id": case["agent_id"], "name": case["name"], "data": json.dumps({k: case[k] for k in DATA_FIELDS})}


def _insert(db, case, source_run_id=None):
    timestamp = now()
    try:
        return (
            db["cases"]
            .insert({**_row(case), "source_run_id": source_run_id, "created_at": timestamp, "updated_at": timestamp})
            .last_pk
        )
    except sqlite3.IntegrityError:  # the same name, saved by someone else since `validate`
        raise ValidationError({"name": f'is already used by another case of the agent "{case["agent_id"]}"'}) from None


def free_name(db, agent_id, name):
    """`name`, or `name (2)`, `name (3)`... the first not used by the agent's cases."""
    candidate, number = name, 1
    while _name_taken(db, agent_id, candidate):
        number += 1
        candidate = f"{name} ({number})"
    return candidate


def default_name(db, run):
    message = " ".join(CONTROL_CHARACTER.sub(" ", run["message"]).split())  # a name is one line
    if len(message) > DEFAULT_NAME_LENGTH:
        message = message[: DEFAULT_NAME_LENGTH - 1] + "…"
    return free_name(db, run["agent_id"], f"Run #{run['id']}: {message}")


def save_case_from_run(db, run_id, known_tools, name=None):
    """Store the stored run `run_id` as a case of its agent; returns the case. Raises NotFound, or
    ValidationError (`run` when the scripted model could not replay it, `name`, `agent_id`)."""
    run = run_store.get_run(db, run_id)
    name = name.strip() if isinstance(name, str) and name.strip() else default_name(db, run)
    case = validate(db, case_from_run(run, name), known_tools)
    _check_name(db, case)
    with write_transaction(db):
        case_id = _insert(db, case, source_run_id=run_id)
    return get_case(db, case_id)


def update_case(db, case_id, changes):
    """Change a stored case (its name, its unpinned keys); returns it. Raises NotFound or ValidationError. The
    agent is not consulted: a case whose agent changed since can still be renamed."""
    case = get_case(db, case_id)
    updated = validate_case({**case_json(case), **changes})
    _check_name(db, updated, case_id)
    with write_transaction(db):
        try:
            db["cases"].update(case_id, {**_row(updated), "updated_at": now()})
        except sqlite3.IntegrityError:
            raise ValidationError({"name": "is already used by another case of this agent"}) from None
    return get_case(db, case_id)


def import_cases(db, cases):
    """Write cases checked by `validate`, in one transaction: a case replaces the agent's case of the same name
    (its latest check is dropped), else it is added. Returns (the ids added, the ids replaced)."""
    added, replaced = [], []
    with write_transaction(db):
        for case in cases:
            existing = list(
                db.query("SELECT id FROM cases WHERE agent_id = ? AND name = ?", [case["agent_id"], case["name"]])
            )
            if existing:
                db["cases"].update(existing[0]["id"], {**_row(case), "last_check": None, "updated_at": now()})
                replaced.append(existing[0]["id"])
            else:
                added.append(_insert(db, case))
    return added, replaced


def record_checks(db, results):
    """Store the latest check of each case: {case id: result}."""
    with write_transaction(db):
        for case_id, result in results.items():
            db["cases"].update(case_id, {"last_check": json.dumps(result)})


def delete_case(db, case_id):
    with write_transaction(db):
        if not db["cases"].count_where("id = ?", [case_id]):
            raise NotFound(f"No case with id {case_id}.")
        db["cases"].delete(case_id)
