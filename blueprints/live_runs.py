"""Live runs: one step per request, Stop, Resume, and the decisions on calls that wait for approval.

With JavaScript the run page drives a run by htmx hops: the element runs/_run_next.html renders asks for the next
step as soon as it is on the page, and each step executes one model request synchronously and answers
runs/_live_update.html: the rounds the page does not have yet, every other part of the run in place, and the
element for the next hop. No background task: a plain threaded WSGI server runs it. A step another request holds
is asked for again a second later, so a second page that shows the run follows it, and takes over its steps if
the first page goes away. Without JavaScript the same forms post plainly and come back to the run's page
(Post/Redirect/Get), the run executed to its next stop.
"""

import json

from flask import Blueprint, flash, redirect, render_template, request, url_for

from blueprints.runs import is_htmx, next_hop_for, released_database, render_run
from engine import ValidationError
from engine.config import MAX_DEPTH
from engine.types import AWAITING, INTERRUPTED, RUNNING
from services import runs as run_service
from services.settings import run_options
from services.tracing import traced
from store import runs as run_store
from store.db import get_db

bp = Blueprint("live_runs", __name__)

DECISIONS = ("approve", "reject", "edit")


def _load(run_id):
    return run_store.get_run(get_db(), run_id)


def _live_update(run, next_hop=None, status=200, **context):
    """The parts of the run's page that changed; `after` (how many rounds the page has) comes with the request."""
    after = request.values.get("after", 0, type=int)
    new_rounds = [round_ for round_ in run["rounds"] if round_["number"] > after]
    return render_template(
        "runs/_live_update.html", run=run, new_rounds=new_rounds, next_hop=next_hop, **context
    ), status


def _to_the_run(run_id, anchor=None):
    return redirect(url_for("runs.show_run", run_id=run_id, _anchor=anchor), 303)


@bp.post("/runs/<int:run_id>/step")
def step(run_id):
    """One step of the run (htmx): the model's next response and the round it brings. `resume`: a person pressed
    Resume on a page that had lost the server (static/live_run.js), so a run found interrupted meanwhile (its server
    died in the middle of a step) is resumed, once the step that died no longer holds it."""
    run = _load(run_id)
    options = run_options()
    resuming = request.values.get("resume") == "1"
    try:
        if resuming and run.get("state") == INTERRUPTED:
            run_service.resume_stored_run(get_db(), run_id, lease_seconds=options["lease_seconds"])
        run = traced(run_service.step_stored_run(released_database(), run_id, **options))
    except run_service.RunConflict:
        run = _load(run_id)  # held by another request, or not running any more
        return _live_update(run, "retry" if run.get("state") == RUNNING else None, resuming=resuming)
    except ValidationError as error:
        return _live_update(_load(run_id), notice=f"The run cannot go on: {error}")
    return _live_update(run, next_hop_for(run))


@bp.post("/runs/<int:run_id>/stop")
def stop(run_id):
    """Stop after the current step: at once when no step holds the run, else as that step ends."""
    _load(run_id)
    try:
        run = traced(run_service.stop_stored_run(get_db(), run_id, registry=run_options()["registry"]))
    except run_service.RunConflict as error:
        run = run_store.get_run(get_db(), run_id)
        if not is_htmx():
            flash(str(error))
    if not is_htmx():
        return _to_the_run(run_id)
    if run["stop_reason"] is not None:
        return _live_update(run)
    # The step in progress brings the stopped run; until then the button says what will happen.
    return render_template("runs/_run_stop.html", run=run, stop_oob=True)


@bp.post("/runs/<int:run_id>/resume")
def resume(run_id):
    """Go on with an interrupted run from its last round."""
    _load(run_id)
    options = run_options()
    try:
        run = run_service.resume_stored_run(get_db(), run_id, lease_seconds=options["lease_seconds"])
    except run_service.RunConflict as error:
        if is_htmx():
            return _live_update(_load(run_id), notice=str(error))
        flash(str(error))
        return _to_the_run(run_id)
    if is_htmx():
        return _live_update(run, "step")
    _continue(run_id, options)
    return _to_the_run(run_id)


def _continue(run_id, options):
    """Without JavaScript, the request goes on with the run to its next stop (unless another request took it)."""
    try:
        traced(run_service.continue_stored_run(released_database(), run_id, **options))
    except run_service.RunConflict as error:
        flash(str(error))


def _posted_decision():
    """(call id, the decision in its JSON form); ValidationError naming what is wrong."""
    call_id = request.form.get("call_id", "")
    choice = request.form.get("decision")
    if choice not in DECISIONS:
        raise ValidationError({"decision": "choose Approve, Reject or Approve with these arguments"})
    if choice == "approve":
        return call_id, {"approve": True}
    if choice == "reject":
        return call_id, {"reject": request.form.get("reason", "")}
    text = request.form.get("arguments", "")
    try:
        arguments = json.loads(text)
    except ValueError as error:
        raise ValidationError(
            {f"decisions.{call_id}.arguments": f"The arguments are not valid JSON: {error}."}
        ) from None
    except RecursionError:  # said beside the arguments, as any other mistake in them
        raise ValidationError(
            {f"decisions.{call_id}.arguments": f"The arguments are nested more than {MAX_DEPTH} levels deep."}
        ) from None
    return call_id, {"approve": True, "arguments": arguments}


@bp.post("/runs/<int:run_id>/decisions")
def decide(run_id):
    """A reviewer's decision on one call that waits for approval; with the last one, the round runs and the run
    goes on."""
    _load(run_id)
    options = run_options()
    edited = request.form.get("arguments") if request.form.get("decision") == "edit" else None
    try:
        call_id, decision = _posted_decision()
        run = traced(
            run_service.decide_stored_run(
                released_database(),
                run_id,
                {call_id: decision},
                complete=False,
                registry=options["registry"],
                lease_seconds=options["lease_seconds"],
            )
        )
    except run_service.RunConflict as error:
        if is_htmx():
            return _live_update(_load(run_id), notice=str(error))
        flash(str(error))
        return _to_the_run(run_id)
    except ValidationError as error:
        run = _load(run_id)
        call_id = request.form.get("call_id", "")
        context = {"decision_errors": {call_id: error.errors[error.field]}, "edits": {call_id: edited}}
        if call_id not in {call["id"] for call in (run.get("pending_round") or {}).get("calls", [])}:
            context["notice"] = str(error)
        if is_htmx():
            return _live_update(run, status=400, **context)
        return render_run(run, status=400, **context)
    if is_htmx():
        return _live_update(run, next_hop_for(run))
    if run.get("state") == RUNNING:
        _continue(run_id, options)
        return _to_the_run(run_id)
    return _to_the_run(run_id, f"run-{run_id}-pending" if run.get("state") == AWAITING else None)
