"""Regression cases' pages: save a run as a case, a case's page (its script, its expectations with the pinned
ones ticked, its latest check), rename it and untick expectations, check one case or all of an agent's, delete.

Every form posts plainly (Post/Redirect/Get); checking runs synchronously, like a run.
"""

import json

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for

from blueprints import done
from blueprints.forms.cases import SaveCaseForm, case_form
from blueprints.forms.fields import ButtonForm, apply_errors
from engine.cases import expectation_key, expectation_values, replay_refusal
from services import cases as case_service
from services.settings import tool_registry
from store import ValidationError
from store import agents as agent_store
from store import cases as case_store
from store import runs as run_store
from store.db import get_db

bp = Blueprint("cases", __name__)


@bp.app_context_processor
def case_helpers():
    return {"case_refusal": replay_refusal, "case_expectation_key": expectation_key}


def _require_token():
    if not ButtonForm().validate_on_submit():
        abort(400)


@bp.post("/runs/<int:run_id>/case")
def save_case(run_id):
    db = get_db()
    run_store.get_run(db, run_id)
    form = SaveCaseForm()
    if not form.validate_on_submit():
        abort(400)
    try:
        case = case_store.save_case_from_run(db, run_id, tool_registry().names(), form.name.data)
    except ValidationError as error:
        flash(f"Not saved as a case: {error}.")
        return redirect(url_for("runs.show_run", run_id=run_id), 303)
    message = f'Saved the case "{case["name"]}". Check it after you change the agent.'
    return done(message, "cases.show_case", case_id=case["id"])


def _render_case(db, case, form, status=200, form_errors=()):
    return (
        render_template(
            "cases/show.html",
            case=case,
            form=form,
            form_errors=form_errors,
            check_form=ButtonForm(),
            agent_exists=agent_store.agent_exists(db, case["agent_id"]),
            script_json=json.dumps(case["script"], indent=2, ensure_ascii=False),
        ),
        status,
    )


@bp.route("/cases/<int:case_id>", methods=["GET", "POST"])
def show_case(case_id):
    """The case; its form saves the name and which expectations stay pinned (the ticked ones)."""
    db = get_db()
    case = case_store.get_case(db, case_id)
    keys = list(expectation_values(case["expected"]))
    if request.method == "GET":
        return _render_case(db, case, case_form(case, keys))
    form = case_form(case, keys)
    if not form.validate_on_submit():
        abort(400)
    ticked = set(form.pinned.data or [])
    changes = {"name": form.name.data or "", "unpinned": [key for key in keys if key not in ticked]}
    try:
        saved = case_store.update_case(db, case_id, changes)
    except ValidationError as error:
        return _render_case(db, case, form, status=400, form_errors=apply_errors(form, error.errors))
    return done(f'Saved the case "{saved["name"]}".', "cases.show_case", case_id=case_id)


@bp.post("/cases/<int:case_id>/check")
def check_case(case_id):
    db = get_db()
    case_store.get_case(db, case_id)
    _require_token()
    case = case_service.check_one_case(db, case_id, tool_registry())
    flash("The case passed." if case["last_check"]["passed"] else "The case failed: see what changed below.")
    return redirect(url_for("cases.show_case", case_id=case_id, _anchor="latest-check"), 303)


@bp.post("/agents/<agent_id>/cases/check")
def check_agent_cases(agent_id):
    db = get_db()
    _require_token()
    cases = case_service.check_agent_cases(db, agent_id, tool_registry())
    flash(case_service.checked_summary(cases))
    return redirect(url_for("agents.view_agent", agent_id=agent_id, _anchor="cases"), 303)


@bp.route("/cases/<int:case_id>/delete", methods=["GET", "POST"])
def delete_case(case_id):
    db = get_db()
    case = case_store.get_case(db, case_id)
    form = ButtonForm()
    if form.validate_on_submit():
        case_store.delete_case(db, case_id)
        message = f'Deleted the case "{case["name"]}".'
        if agent_store.agent_exists(db, case["agent_id"]):
            return done(message, "agents.view_agent", agent_id=case["agent_id"])
        return done(message, "agents.list_agents")
    return render_template("cases/delete.html", form=form, case=case)
