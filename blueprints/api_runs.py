"""The runs and gate API (SPEC §8), for programs: run a stored agent, read a stored run, or ask the gate about
one response's tool calls without executing anything (for clients that drive their own loop).

A run goes through `store.run_service.execute_and_store_run`, the path the run page takes too, so the page
renders what this API returns. A run that needs approval comes back waiting (`state` "awaiting_approval");
`POST /api/runs/<id>/decisions` decides on its calls and goes on to the next stop; `POST /api/runs/<id>/stop` is the
run page's Stop. Errors are JSON in the API's
one shape (blueprints.json_error): 400 for bad input (nothing is stored then), 404 for an unknown agent or run,
409 for a run that cannot do it now. Like the agents API, writes must be `application/json`
(blueprints.request_checks), which is why the blueprint needs no CSRF token.
"""

from flask import Blueprint, jsonify, request, url_for

from blueprints import json_error, keyset_ids, run_page_url_pattern, whole_number
from blueprints.runs import released_database
from engine import STOP_REASONS
from engine.types import RUNNING
from services import runs as run_service
from services.settings import allowed_networks, run_options
from services.tracing import traced
from store import runs as run_store
from store.db import get_db

bp = Blueprint("api_runs", __name__, url_prefix="/api")

RUN_FIELDS = ("message", "overrides")
DECISION_FIELDS = ("decisions",)
GATE_FIELDS = ("tool_calls", "overrides", "calls_so_far", "artifacts", "request_id")
REQUEST_ID_MAX = 200
MAX_NUMBERED_PAGE = 50  # ?page= reads through the runs before it: further back, pages go by id


def _json_object(allowed):
    """The request's JSON object, or an error response naming what is wrong with it."""
    data = request.get_json(silent=True)
    if not isinstance(data, dict):
        return None, json_error(400, "must be a JSON object", "body")
    unknown = [key for key in data if key not in allowed]
    if unknown:
        message = f"is not a field of this request (expected: {', '.join(allowed)})"
        return None, json_error(400, message, unknown[0])
    return data, None


@bp.post("/agents/<agent_id>/runs")
def create_run(agent_id):
    """Run the agent on {"message", "overrides"} and answer the stored run (201)."""
    data, failure = _json_object(RUN_FIELDS)
    if failure:
        return failure
    options = run_options()  # the tool registry is read from the database too
    run = traced(
        run_service.execute_and_store_run(
            released_database(), agent_id, data.get("message"), data.get("overrides"), source="api", **options
        )
    )
    response = jsonify(run)
    response.status_code = 201
    response.headers["Location"] = url_for("api_runs.get_run", run_id=run["id"])
    return response


@bp.get("/runs/<int:run_id>")
def get_run(run_id):
    return jsonify(run_store.get_run(get_db(), run_id))


@bp.post("/runs/<int:run_id>/decisions")
def decide(run_id):
    """{"decisions": {call id: {"approve": true} | {"approve": true, "arguments": {...}} | {"reject": "reason"}}}
    for every call that waits; the run goes on to its next stop and is answered (200)."""
    data, failure = _json_object(DECISION_FIELDS)
    if failure:
        return failure
    if "decisions" not in data:
        return json_error(400, "is required (an object mapping each waiting call's id to its decision)", "decisions")
    options = run_options()
    run = traced(
        run_service.decide_stored_run(
            released_database(),
            run_id,
            data["decisions"],
            registry=options["registry"],
            lease_seconds=options["lease_seconds"],
        )
    )
    if run["state"] == RUNNING:
        run = traced(run_service.continue_stored_run(released_database(), run_id, **options))
    return jsonify(run)


@bp.post("/runs/<int:run_id>/stop")
def stop(run_id):
    """Stop the run, as the run page's Stop does (stop reason `stopped`): at once when no step holds it, else as that
    step ends; a proxied run whose response waits for approval ends at once, its client answered with the stop.
    Answers the run (200); 409 when it has already ended. The body is an empty JSON object."""
    data = request.get_json(silent=True)
    if data != {}:
        return json_error(400, "must be an empty JSON object: Stop takes no fields", "body")
    return jsonify(traced(run_service.stop_stored_run(get_db(), run_id, registry=run_options()["registry"])))


@bp.get("/runs")
def list_runs():
    """Run summaries, newest first: ?agent=&stop_reason=&source=&api= (or &state=, one of store.runs.STATES: one
    page), then ?before=ID or ?after=ID (the `older` and `newer` links of each answer), or ?page=N for the first pages.
    Every answer has the same keys; `page` is null on a page reached by id."""
    stop_reason = request.args.get("stop_reason") or None
    if stop_reason is not None and stop_reason not in STOP_REASONS:
        return json_error(400, f"must be one of {', '.join(STOP_REASONS)}", "stop_reason")
    source = request.args.get("source") or None
    if source is not None and source not in run_store.SOURCES:
        return json_error(400, f"must be one of {', '.join(run_store.SOURCES)}", "source")
    state = request.args.get("state") or None
    if state is not None and state not in run_store.STATES:
        return json_error(400, f"must be one of {', '.join(run_store.STATES)}", "state")
    api = request.args.get("api") or None
    if api is not None and api not in run_store.APIS:
        return json_error(400, f"must be one of {', '.join(run_store.APIS)}", "api")
    before, after = keyset_ids()
    filters = {"agent_id": request.args.get("agent") or None, "stop_reason": stop_reason, "source": source, "api": api}
    if state is not None:
        # Runs in a state are few: the newest of them, on one page.
        page = run_store.runs_in_state(get_db(), state, agent_id=filters["agent_id"], source=source, api=api)
        return jsonify({"runs": page.rows, "total": page.total, "page": 1, "pages": 1, "newer": None, "older": None})
    page_text = request.args.get("page", "").strip()
    number = whole_number(page_text, 1, MAX_NUMBERED_PAGE)
    db = get_db()
    if not page_text:
        page = run_store.list_runs(db, **filters, before=before, after=after)
        number = None if before or after else 1
    elif before or after:
        return json_error(400, "give page, or before or after, not both", "page")
    elif number is None:
        message = f"must be a whole number from 1 to {MAX_NUMBERED_PAGE}; further back, follow `older` (?before=ID)"
        return json_error(400, message, "page")
    else:
        page, number, _ = run_store.numbered_runs_page(db, **filters, number=number)
    query = {"agent": filters["agent_id"], "stop_reason": stop_reason, "source": source, "api": api}
    return jsonify(
        {
            "runs": page.rows,
            "total": page.total,
            "page": number,
            "pages": max(1, -(-page.total // run_store.PER_PAGE)),
            "newer": url_for("api_runs.list_runs", **query, after=page.newer) if page.newer else None,
            "older": url_for("api_runs.list_runs", **query, before=page.older) if page.older else None,
        }
    )


@bp.post("/agents/<agent_id>/gate")
def review_gate(agent_id):
    """The gate's verdict on {"tool_calls", "overrides", "calls_so_far", "artifacts", "request_id"}; nothing
    executes. Calls that await approval: the same `request_id` asked again answers with the decisions once taken."""
    data, failure = _json_object(GATE_FIELDS)
    if failure:
        return failure
    if "tool_calls" not in data:
        return json_error(400, "is required (the tool calls of one model response)", "tool_calls")
    request_id = data.get("request_id")
    if request_id is not None and not (
        isinstance(request_id, str) and 0 < len(request_id) <= REQUEST_ID_MAX and request_id.isprintable()
    ):
        return json_error(400, f"must be a string of 1 to {REQUEST_ID_MAX} printable characters", "request_id")
    options = run_options()
    review = run_service.review_and_log_gate(
        get_db(),
        agent_id,
        data["tool_calls"],
        data.get("overrides"),
        data.get("calls_so_far"),
        artifacts=data.get("artifacts"),
        registry=options["registry"],
        request_id=request_id,
        lease_seconds=options["lease_seconds"],
        run_url=run_page_url_pattern(),
        allowed_networks=allowed_networks(),
    )
    return jsonify(review)
