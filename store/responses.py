"""Responses the proxy kept (SPEC §8): what an OpenAI Responses API client answered through an agent's proxy can
be continued by `previous_response_id`, referred to by `item_reference` and read back by `GET /responses/<id>`.

A kept response belongs to its agent: another agent's proxy never finds it. With the login on it belongs to the
credential that created it too (`creator`, "token:<id>"): any other finds nothing.
"""

import json

from . import NotFound, insert_row, now, select_rows
from .db import write_transaction


def save_response(db, agent_id, run_id, kept, creator=None):
    """Keep a response (engine.proxy.responses.kept: {"id", "response", "input"}) of the agent's run, created by
    `creator` (None with the login off)."""
    row = {
        "id": kept["id"],
        "agent_id": agent_id,
        "run_id": run_id,
        "input": json.dumps(kept["input"], ensure_ascii=False),
        "response": json.dumps(kept["response"], ensure_ascii=False),
        "created_at": now(),
        "creator": creator,
    }
    with write_transaction(db):
        insert_row(db, "responses", row)


def find_response(db, agent_id, response_id, creator=None):
    """{"response", "input", "run_id"} of the agent's kept response with that id, or None. With a `creator` (the
    login on), only a response that credential created is found."""
    query = "SELECT input, response, run_id FROM responses WHERE id = :id AND agent_id = :agent_id"
    parameters = {"id": response_id, "agent_id": agent_id}
    if creator is not None:
        query += " AND creator = :creator"
        parameters["creator"] = creator
    rows = select_rows(db, query, parameters)
    if not rows:
        return None
    return {
        "response": json.loads(rows[0]["response"]),
        "input": json.loads(rows[0]["input"]),
        "run_id": rows[0]["run_id"],
    }


def get_response(db, agent_id, response_id, creator=None):
    """The response object the client got; raises NotFound (for another credential's response too)."""
    found = find_response(db, agent_id, response_id, creator)
    if found is None:
        raise NotFound(f"Response with id '{response_id}' not found.")
    return found["response"]
