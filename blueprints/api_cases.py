"""The cases API: list an agent's regression cases, and check them all (SPEC §8, "Regression cases"), for CI
and programs. Checking replays each case against the agent as stored now, like the agent page's "Check all"
and `flask check-cases`; the answer says which passed and what differs in those that did not. Errors are JSON in
the API's one shape (blueprints.json_error). No request here has a body; the POST must still be sent as
`Content-Type: application/json` (blueprints.request_checks), which is why none needs a CSRF token."""

from flask import Blueprint, jsonify

from blueprints import json_error
from services import cases as case_service
from services.settings import tool_registry
from store import agents as agent_store
from store import cases as case_store
from store.db import get_db

bp = Blueprint("api_cases", __name__, url_prefix="/api")


def _summary(case):
    check = case["last_check"]
    return {
        "id": case["id"],
        "name": case["name"],
        "passed": check["passed"] if check else None,
        "error": check["error"] if check else None,
        "differences": check["differences"] if check else [],
        "checked_at": check["checked_at"] if check else None,
    }


@bp.get("/agents/<agent_id>/cases")
def list_cases(agent_id):
    """The agent's cases in their JSON form (what export-cases writes), each with its id and latest result."""
    db = get_db()
    if not agent_store.agent_exists(db, agent_id):
        return json_error(404, f'No agent with id "{agent_id}".', "agent_id")
    cases = case_store.list_cases(db, agent_id)
    return jsonify(
        {"cases": [{"id": case["id"], **case_store.case_json(case), "latest": _summary(case)} for case in cases]}
    )


@bp.post("/agents/<agent_id>/cases/check")
def check_cases(agent_id):
    """Check every case of the agent: {"agent_id", "passed", "total", "failed", "cases": [...]}, 200 whether or not
    they pass (`passed` says; it is true when the agent has no case)."""
    cases = case_service.check_agent_cases(get_db(), agent_id, tool_registry())
    summaries = [_summary(case) for case in cases]
    failed = sum(1 for summary in summaries if not summary["passed"])
    return jsonify(
        {"agent_id": agent_id, "passed": failed == 0, "total": len(summaries), "failed": failed, "cases": summaries}
    )
