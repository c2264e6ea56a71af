"""The log page: policy violations and provider errors, newest first, filtered by agent and level, paged by id."""

from flask import Blueprint, render_template

from blueprints import keyset_ids_or_400, list_filters
from store import log as log_store
from store.db import get_db

bp = Blueprint("log", __name__)

KIND_TEXTS = {
    "policy_violation": "Policy violation",
    "provider_error": "Provider error",
    "proxy_refused": "Proxy request refused",
}


@bp.get("/log")
def list_log():
    db = get_db()
    agent_id, level = list_filters("level", log_store.LEVELS)
    before, after = keyset_ids_or_400()
    return render_template(
        "log/list.html",
        page=log_store.list_entries(db, agent_id=agent_id, level=level, before=before, after=after),
        agent_id=agent_id,
        level=level,
        agent_ids=log_store.log_agent_ids(db),
        levels=log_store.LEVELS,
        kind_texts=KIND_TEXTS,
    )
