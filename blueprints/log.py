"""The log page: policy violations and provider errors, newest first, filtered by agent and level."""

from flask import Blueprint, render_template

from blueprints import list_filters
from store import log as log_store
from store.db import get_db

bp = Blueprint("log", __name__)

KIND_TEXTS = {"policy_violation": "Policy violation", "provider_error": "Provider error"}


@bp.get("/log")
def list_log():
    db = get_db()
    agent_id, level, page = list_filters("level", log_store.LEVELS)
    entries, total, page, pages = log_store.list_entries(db, agent_id=agent_id, level=level, page=page)
    return render_template(
        "log/list.html",
        entries=entries,
        total=total,
        page=page,
        pages=pages,
        agent_id=agent_id,
        level=level,
        agent_ids=log_store.log_agent_ids(db),
        levels=log_store.LEVELS,
        kind_texts=KIND_TEXTS,
    )
