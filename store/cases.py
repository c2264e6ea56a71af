"""Regression cases, stored on their agent: the case's JSON form (engine.cases) in and out, one `cases` row each,
with the result of its latest check.

Every write validates with engine.cases.validate_case; saving a run as a case and importing also check what only
storage knows (the agent exists and the case's overrides make a valid run of it), and a new name must be free
among the agent's cases (an import replaces the case of that name instead). A case read back is its JSON form
plus `id`, `source_run_id`, `last_check`, `created_at` and `updated_at`.
"""

import copy
import json

from sqlalchemy.exc import IntegrityError

from engine.cases import CASE_FIELDS, OPTIONAL_FIELDS, case_from_run, replay_overrides, validate_case
from engine.config import CONTROL_CHARACTER, ValidationError, load_agent

from . import NotFound, execute, get_row, insert_row, now, select_rows, select_value, update_row
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
    where = " WHERE agent_id = :agent_id" if agent_id else ""
    rows = select_rows(db, f"SELECT * FROM cases{where} ORDER BY agent_id, lower(name), id", {"agent_id": agent_id})
    return [_case_from_row(row) for row in rows]


def sample_message(db, agent_id):
    """The message of the agent's first case, or "": what its run page offers, so a first Run has something to
    say (each demo agent ships with a case)."""
    data = select_value(
        db, "SELECT data FROM cases WHERE agent_id = :agent_id ORDER BY id LIMIT 1", {"agent_id": agent_id}
    )
    return json.loads(data)["message"] if data is not None else ""


def case_agent_ids(db):
    """Every agent id that has cases."""
    return execute(db, "SELECT DISTINCT agent_id FROM cases ORDER BY agent_id").scalars().all()


def _name_taken(db, agent_id, name, case_id=None):
    rows = select_rows(
        db, "SELECT id FROM cases WHERE agent_id = :agent_id AND name = :name", {"agent_id": agent_id, "name": name}
    )
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
        return insert_row(
            db,
            "cases",
            {**_row(case), "source_run_id": source_run_id, "created_at": timestamp, "updated_at": timestamp},
        )
    except IntegrityError:  # the same name, saved by someone else since `validate`
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
            update_row(db, "cases", case_id, {**_row(updated), "updated_at": now()})
        except IntegrityError:
            raise ValidationError({"name": "is already used by another case of this agent"}) from None
    return get_case(db, case_id)


def import_cases(db, cases):
    """Write cases checked by `validate`, in one transaction: a case replaces the agent's case of the same name
    (its latest check is dropped), else it is added. Returns (the ids added, the ids replaced)."""
    added, replaced = [], []
    with write_transaction(db):
        for case in cases:
            existing = select_value(
                db,
                "SELECT id FROM cases WHERE agent_id = :agent_id AND name = :name",
                {"agent_id": case["agent_id"], "name": case["name"]},
            )
            if existing is not None:
                update_row(db, "cases", existing, {**_row(case), "last_check": None, "updated_at": now()})
                replaced.append(existing)
            else:
                added.append(_insert(db, case))
    return added, replaced


def record_checks(db, results):
    """Store the latest check of each case: {case id: result}."""
    with write_transaction(db):
        for case_id, result in results.items():
            update_row(db, "cases", case_id, {"last_check": json.dumps(result)})


def delete_case(db, case_id):
    with write_transaction(db):
        if not execute(db, "DELETE FROM cases WHERE id = :id", {"id": case_id}).rowcount:
            raise NotFound(f"No case with id {case_id}.")
