"""The run page, run history and the permanent page of a run.

The run page's form posts plainly and the full page comes back with the run, executed to its end (or to a round
that waits for approval). With htmx the run panel (`runs/_run.html`) is swapped in instead: the run page's form
asks for a live run (`live`), which comes back as soon as it is stored, before its first model request, and then
takes its steps one request at a time (blueprints/live_runs.py); without `live` the panel of the run executed to
its end. A form with errors replaces the form instead. The run page, the permalink and the htmx fragments render
one run dict with that one partial and its parts, so they read the same.
"""

import json
import time
from datetime import UTC, datetime

from flask import Blueprint, abort, current_app, flash, redirect, render_template, request, url_for

from blueprints import folded_text, keyset_ids_or_400, list_filters, run_charts, timestamp
from blueprints.forms.cases import SaveCaseForm
from blueprints.forms.fields import ButtonForm, apply_errors
from blueprints.forms.runs import run_form
from engine import STOP_REASONS, ValidationError
from engine.config import load_agent, overrides_between
from engine.proxy.recording import PROXY_SOURCE
from engine.types import RUNNING
from services import run_texts
from services import runs as run_service
from services.settings import run_options, tool_registry
from services.tracing import traced
from store import NotFound, run_usage
from store import agents as agent_store
from store import cases as case_store
from store import runs as run_store
from store.db import close_db, get_db

bp = Blueprint("runs", __name__)


@bp.app_template_filter("pretty_json")
def pretty_json(value):
    """JSON pretty-printed; a string holding JSON is parsed first, any other string (JSON nested too deeply to read
    included: a model may send such arguments) is shown as it is."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
            return parsed if isinstance(parsed, str) else json.dumps(parsed, indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):
            return value
    return json.dumps(value, indent=2, ensure_ascii=False)


@bp.app_template_filter("unix_time")
def unix_time(seconds):
    """A time a run records in Unix seconds (a decision's `decided_at`) as the pages show stored times."""
    return timestamp(datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds"))


bp.add_app_template_global(folded_text.text_parts, "text_parts")
bp.add_app_template_global(folded_text.folds_whole, "folds_whole")


@bp.app_context_processor
def run_text_helpers():
    return {
        "stop_reason_text": run_texts.stop_reason_text,
        "stop_reason_label": run_texts.stop_reason_label,
        "reason_text": run_texts.reason_text,
        "status_text": run_texts.status_text,
        "usage_text": run_texts.usage_text,
        "cut_off_texts": run_texts.CUT_OFF_TEXTS,
        "error_preview": run_texts.ERROR_PREVIEW_CHARS,
        "review_text": run_texts.review_text,
        "elapsed_ms": elapsed_ms,
        "source_label": run_texts.source_label,
        "override_lines": run_texts.override_lines,
        "api_label": run_texts.api_label,
        "abandoned_after_minutes": run_store.ABANDONED_AFTER_SECONDS // 60,
    }


def elapsed_ms(run):
    """Milliseconds since a run that has not ended started, for its live clock."""
    return round(max(0.0, time.time() - run.get("started_at", time.time())) * 1000)


def is_htmx():
    return request.headers.get("HX-Request") == "true"


def next_hop_for(run):
    """What a page that shows this run asks for next: its next step while it runs (a step another request holds is
    asked for again a moment later, so a page that watches a run drives it once the request that did has gone)."""
    return "step" if run.get("state") == RUNNING else None


def render_run(run, status=200, **context):
    """The permanent page of a run."""
    db = get_db()
    return render_template(
        "runs/show.html",
        run=run,
        agent_exists=agent_store.agent_exists(db, run["agent_id"]),
        again_form=ButtonForm(),
        save_case_form=SaveCaseForm(),
        next_hop=next_hop_for(run),
        **context,
    ), status


def _run_form_context(agent, form, form_errors):
    """What runs/_run_form.html needs, within the run page or alone for htmx: with `changed`, the settings the form
    holds that differ from the stored agent (a previous run's, or what was posted back), to mark them."""
    return {
        "agent": agent,
        "form": form,
        "form_errors": form_errors,
        "tools": tool_registry(),
        "changed": overrides_between(agent, form.run_settings()),
    }


def _render_run_page(agent, form, run=None, status=200, form_errors=()):
    return render_template("runs/run.html", run=run, **_run_form_context(agent, form, form_errors)), status


def released_database():
    """The database's URL, for a service that may wait on a model or a tool (services/runs.py): the request's
    connection is given back first, so that it holds none while it waits, as a proxied request does; a later get_db()
    takes another. Call it once the request has read what it needs (run_options() reads the tool servers: the
    request would take a connection again and hold it)."""
    close_db()
    return current_app.config["DATABASE_URL"]


def _repeated_run_id(db, agent_id):
    """The run that "Change and run again" started from (?from= on the form's address), if it is this agent's."""
    run_id = request.args.get("from", type=int)
    if run_id is None:
        return None
    try:
        return run_id if run_store.get_run(db, run_id)["agent_id"] == agent_id else None
    except NotFound:
        return None


@bp.route("/agents/<agent_id>/run", methods=["GET", "POST"])
def run_agent_page(agent_id):
    db = get_db()
    agent = agent_store.get_agent(db, agent_id)
    tools = tool_registry().parameters_by_name()
    if request.method == "GET":
        message, overrides = case_store.sample_message(db, agent_id), None
        previous_id = request.args.get("from", type=int)
        if previous_id is not None:
            previous = run_store.get_run(db, previous_id)
            if previous["agent_id"] == agent_id:
                message, overrides = previous["message"], previous["overrides"]
        return _render_run_page(agent, run_form(agent, tools, message=message, overrides=overrides))

    form = run_form(agent, tools)
    errors, run = {}, None
    form_is_valid = form.validate()
    overrides = overrides_between(agent, form.run_settings())
    if not form_is_valid:
        # Check the settings too, so one submit shows every error, not the form's first and the engine's later.
        try:
            load_agent(agent, overrides, known_tools=tools)
        except ValidationError as error:
            errors = error.errors
    else:
        try:
            run = _start_or_execute(db, agent_id, form.run_message(), overrides, _repeated_run_id(db, agent_id))
        except ValidationError as error:
            errors = error.errors
    form_errors = apply_errors(form, errors) if errors else []
    if run is None:
        if is_htmx():
            response = current_app.make_response(
                render_template("runs/_run_form.html", **_run_form_context(agent, form, form_errors))
            )
            # The errors belong next to the fields: swap the form, not the run panel.
            response.headers["HX-Retarget"] = "#run-form"
            response.headers["HX-Reswap"] = "outerHTML"
            return response
        return _render_run_page(agent, form, status=400, form_errors=form_errors)
    if is_htmx():
        return render_template("runs/_run.html", run=run, next_hop=next_hop_for(run))
    return _render_run_page(agent, form, run=run)


def _start_or_execute(db, agent_id, message, overrides, repeated_from):
    """A live run (htmx asked for one) only started, its steps to come one request each; any other run executed
    until it ends or waits for approval."""
    options = run_options()
    if is_htmx() and request.form.get("live"):
        run_id = run_service.start_stored_run(
            db,
            agent_id,
            message,
            overrides,
            source="page",
            registry=options["registry"],
            repeated_from=repeated_from,
            lease_seconds=options["lease_seconds"],
        )
        return run_store.get_run(db, run_id)
    return traced(
        run_service.execute_and_store_run(
            released_database(), agent_id, message, overrides, source="page", repeated_from=repeated_from, **options
        )
    )


@bp.get("/runs")
def list_runs():
    db = get_db()
    agent_id, stop_reason = list_filters("stop_reason", STOP_REASONS)
    source = request.args.get("source") if request.args.get("source") in run_store.SOURCES else None
    state = request.args.get("state") if request.args.get("state") in run_store.STATES else None
    api = request.args.get("api") if request.args.get("api") in run_store.APIS else None
    before, after = keyset_ids_or_400()
    if state:
        page = run_store.runs_in_state(db, state, agent_id=agent_id, source=source, api=api)
        stop_reason = None
    else:
        page = run_store.list_runs(
            db, agent_id=agent_id, stop_reason=stop_reason, before=before, after=after, source=source, api=api
        )
    tokens = run_usage.total_tokens_by_run(db, [run["id"] for run in page.rows])
    return render_template(
        "runs/list.html",
        charts=run_charts.charts(
            db,
            agent_id=agent_id,
            stop_reason=run_charts.chart_stop_reason(stop_reason, state),
            source=source,
            api=api,
        ),
        state=state,
        states=run_store.STATES,
        api=api,
        apis=run_store.APIS,
        tokens=tokens,
        page=page,
        agent_id=agent_id,
        stop_reason=stop_reason,
        source=source,
        agent_ids=run_store.run_agent_ids(db),
        stop_reasons=STOP_REASONS,
        sources=run_store.SOURCES,
    )


@bp.get("/runs/<int:run_id>")
def show_run(run_id):
    return render_run(run_store.get_run(get_db(), run_id))


@bp.post("/runs/<int:run_id>/again")
def run_again(run_id):
    """Run again with the same message and overrides, against the agent as it is stored now."""
    db = get_db()
    previous = run_store.get_run(db, run_id)
    form = ButtonForm()
    if not form.validate_on_submit():
        abort(400)
    if previous.get("source") == PROXY_SOURCE:
        flash("A proxied run cannot be run again here: its client ran its tool calls.", "error")
        return redirect(url_for("runs.show_run", run_id=run_id), 303)
    try:
        options = run_options()
        run = traced(run_service.repeat_and_store_run(released_database(), run_id, **options))
    except NotFound:
        flash(f'The agent "{previous["agent_id"]}" no longer exists, so this run cannot be repeated.', "error")
    except ValidationError as error:
        flash(f"This run cannot be repeated with the agent as it is now: {error}", "error")
    else:
        return redirect(url_for("runs.show_run", run_id=run["id"]), 303)
    return redirect(url_for("runs.show_run", run_id=run_id), 303)
