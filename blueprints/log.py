"""The log page: policy violations and provider errors, newest first, filtered by agent and level."""

from flask import Blueprint, render_template, request

from db import get_db
from store import log as log_store

bp = Blueprint("log", __name__)

KIND_TEXTS = {"policy_violation": "Policy violation", "provider_error": "Provider error"}


@bp.get("/log")
def list_log():
    db = get_db()
    agent_id = request.args.get("agent", "").strip() or None
    level = request.args.get("level", "").strip() or None
    if level is not None and level not in log_store.LEVELS:
        level = None
    page = request.args.get("page", 1, type=int)
    entries, total, pages = log_store.list_entries(db, agent_id=agent_id, level=level, page=page)
    return render_template(
        "log/list.html",
        entries=entries,
        total=total,
        pages=pages,
        page=min(max(1, page), pages),
        agent_id=agent_id,
        level=level,
        agent_ids=log_store.log_agent_ids(db),
        levels=log_store.LEVELS,
        kind_texts=KIND_TEXTS,
    )
