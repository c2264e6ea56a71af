"""The log page: what the policy rejected and the requests that failed, newest first, filtered by agent, level and
kind, paged by id."""

from flask import Blueprint, render_template, request

from blueprints import keyset_ids_or_400, list_filters
from store import log as log_store
from store.db import get_db

bp = Blueprint("log", __name__)

KIND_TEXTS = {
    "policy_violation": "Policy violation",
    "argument_not_allowed": "Value not allowed",
    "repeated_call": "Repeated identical call",
    "call_limit": "Call limit reached",
    "unknown_tool": "Unknown tool",
    "invalid_arguments": "Invalid arguments",
    "tools_disabled": "Tools were not offered",
    "reviewer_rejected": "Rejected by a reviewer",
    "proxy_error": "Proxy error",
    "provider_error": "Provider error",
    "proxy_refused": "Proxy request refused",
}


@bp.get("/log")
def list_log():
    db = get_db()
    agent_id, level = list_filters("level", log_store.LEVELS)
    kinds = log_store.log_kinds(db)
    kind = request.args.get("kind") if request.args.get("kind") in kinds else None
    before, after = keyset_ids_or_400()
    return render_template(
        "log/list.html",
        page=log_store.list_entries(db, agent_id=agent_id, level=level, kind=kind, before=before, after=after),
        agent_id=agent_id,
        level=level,
        kind=kind,
        agent_ids=log_store.log_agent_ids(db),
        levels=log_store.LEVELS,
        kinds=kinds,
        kind_texts=KIND_TEXTS,
    )
