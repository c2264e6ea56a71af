"""Responses the proxy kept (SPEC §8): what an OpenAI Responses API client answered through an agent's proxy can
be continued by `previous_response_id`, referred to by `item_reference` and read back by `GET /responses/<id>`.

A kept response belongs to its agent: another agent's proxy never finds it.
"""

import json

from . import NotFound, insert_row, now, select_rows
from .db import write_transaction


def save_response(db, agent_id, run_id, kept):
    """Keep a response (engine.proxy.responses.kept: {"id", "response", "input"}) of the agent's run."""
    row = {
        "id": kept["id"],
        "agent_id": agent_id,
        "run_id": run_id,
        "input": json.dumps(kept["input"], ensure_ascii=False),
        "response": json.dumps(kept["response"], ensure_ascii=False),
        "created_at": now(),
    }
    with write_transaction(db):
        insert_row(db, "responses", row)


def find_response(db, agent_id, response_id):
    """{"response", "input", "run_id"} of the agent's kept response with that id, or None."""
    rows = select_rows(
        db,
        "SELECT input, response, run_id FROM responses WHERE id = :id AND agent_id = :agent_id",
        {"id": response_id, "agent_id": agent_id},
    )
    if not rows:
        return None
    return {
        "response": json.loads(rows[0]["response"]),
        "input": json.loads(rows[0]["input"]),
        "run_id": rows[0]["run_id"],
    }


def get_response(db, agent_id, response_id):
    """The response object the client got; raises NotFound."""
    found = find_response(db, agent_id, response_id)
    if found is None:
        raise NotFound(f"Response with id '{response_id}' not found.")
    return found["response"]
