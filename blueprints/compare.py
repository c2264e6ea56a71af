"""Two runs side by side: "Compare with…" on a run's page picks the other run (the agent's previous run, the run
this one repeats, or any run by its number or from the agent's history), and `/runs/<a>/compare/<b>` shows both
round by round and call by call, what differs marked, and the settings that differ between their snapshots."""

from flask import Blueprint, redirect, render_template, request, url_for

from blueprints import keyset_ids_or_400
from engine.run_diff import compare_runs
from store import NotFound
from store import runs as run_store
from store.db import get_db

bp = Blueprint("compare", __name__)


@bp.get("/runs/<int:run_id>/compare")
def pick_run(run_id):
    """The choice of the run to compare with; ?with=N (the form's run number) goes straight to the comparison."""
    db = get_db()
    run = run_store.get_run(db, run_id)
    error = None
    if "with" in request.args:
        other = request.args.get("with", type=int)
        if other is None:
            error = "Run number must be a whole number, like 12."
        else:
            try:
                run_store.get_run(db, other)
            except NotFound:
                error = f"Run number: there is no run #{other}."
            else:
                return redirect(url_for("compare.compare", first_id=run_id, second_id=other), 303)
    before, after = keyset_ids_or_400()
    return (
        render_template(
            "compare/pick.html",
            run=run,
            previous_id=run_store.previous_run_id(db, run),
            page=run_store.list_runs(db, agent_id=run["agent_id"], before=before, after=after),
            error=error,
        ),
        400 if error else 200,
    )


@bp.get("/runs/<int:first_id>/compare/<int:second_id>")
def compare(first_id, second_id):
    db = get_db()
    first = run_store.get_run(db, first_id)
    second = run_store.get_run(db, second_id)
    return render_template("compare/compare.html", first=first, second=second, comparison=compare_runs(first, second))
