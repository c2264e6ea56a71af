"""Agent pages: the list, one agent, the create and edit form with each tool's settings, and delete.

The form posts plainly (Post/Redirect/Get); htmx only swaps fragments in: the "Multiple call error message"
field when "Restrict to one call per response" is ticked, an argument rule's values when a rule is chosen, and
the machine name derived from the label. The form lists the agent's tools; the others are added from its picker
(blueprints.forms.tool_picker), like client tools, by posting the form back.
"""

import json
from pathlib import Path

from flask import Blueprint, abort, render_template, request

from blueprints import confirm_delete, done, run_charts, tool_hints
from blueprints.forms import tool_picker
from blueprints.forms.agents import agent_form, agent_form_class
from blueprints.forms.client_tools import client_tool_edit, posted_client_tools
from blueprints.forms.fields import ButtonForm, apply_errors
from blueprints.forms.policy_files import ConfirmImportForm, ImportForm
from blueprints.forms.request_settings import PARALLEL_TOOL_CALLS_LABELS
from engine import texts
from engine.config import AGENT_DEFAULTS, SCRIPTED_PROVIDER, TOOL_NAME_PATTERN, ValidationError, machine_name
from services import policy_files
from services.settings import allowed_networks, schema_url, tool_registry
from store import NotFound, RevisionConflict
from store import agents as agent_store
from store import cases as case_store
from store import providers as provider_store
from store import tool_servers as tool_server_store
from store.db import get_db

bp = Blueprint("agents", __name__)
# The JSON Schema of a policy file, as the repository holds it (services.policy_format.agent_schema builds it).
SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schema" / "agent.json"


def _provider_choices(db):
    choices = [(SCRIPTED_PROVIDER, "Scripted (built-in, offline)")]
    choices += [(row["id"], f"{row['label']} ({row['id']})") for row in provider_store.list_providers(db)]
    return choices


def _agent_form(db, agent=None, client_tools=None):
    tools = tool_hints.form_tools(tool_registry(), agent, request.form)
    return agent_form(tools, _provider_choices(db), agent=agent, client_tools=client_tools)


def _render_form(
    form, agent=None, status=200, form_errors=(), conflict=None, notice="", added_tool=None, origin=None, **hints
):
    """The form with the tools on it, and the picker of the others. `notice`: what an Add or Remove button did;
    `hints`: hint_notice and hint_marks ({tool: settings}) for the tool servers' tools; the marks default to those
    posted, or on a GET to the stored ones. `origin`: the policy file that manages the agent, which makes the form
    read-only."""
    registry = tool_registry()
    servers = tool_server_store.list_tool_servers(get_db())
    shown = tool_picker.tools_on_form(form, request.form)
    vanished = set(registry.vanished_names())
    offered = [name for name in form.tool_names if name not in shown and name not in vanished]
    if "hint_marks" not in hints:
        stored = request.method == "GET" and agent is not None
        hints["hint_marks"] = (
            tool_server_store.hint_marks(get_db(), agent["id"]) if stored else tool_hints.posted_marks(request.form)
        )
    return (
        render_template(
            "agents/form.html",
            form=form,
            agent=agent,
            tools=registry,
            tool_groups=tool_hints.tool_groups(shown, registry, servers),
            picker_groups=tool_hints.tool_groups(offered, registry, servers),
            added_tool=added_tool,
            proposals=tool_hints.proposal_words,
            form_errors=form_errors,
            conflict=conflict,
            derived_machine_name=machine_name(form.label.data or ""),
            notice=notice,
            origin=origin,
            **hints,
        ),
        status,
    )


def _accept_hints_page(db, agent):
    """The form again with one tool server tool's proposed settings filled in, nothing saved; None unless its
    Accept button was pressed."""
    tool_name = request.form.get(tool_hints.ACCEPT)
    if tool_name is None:
        return None
    form = _agent_form(db, client_tools=posted_client_tools(request.form))
    marks = tool_hints.posted_marks(request.form)
    notice = tool_hints.accept(form, tool_name, tool_registry(), marks)
    if notice is None:
        abort(400)
    return _render_form(form, agent=agent, hint_notice=notice, hint_marks=marks)


def _client_tool_edit_page(db, agent):
    """The form again after one of its Client tools buttons (Add, Remove), nothing saved; None after Save."""
    edit = client_tool_edit(request.form)
    if edit is None:
        return None
    form = _agent_form(db, client_tools=edit.client_tools)
    typed_in = form.client_tools[edit.tool].new_argument if edit.tool else form.new_client_tool
    if edit.error:
        typed_in.errors = [edit.error]
        return _render_form(form, agent=agent, status=400)
    typed_in.data = ""
    return _render_form(form, agent=agent, notice=edit.notice)


def _add_tool_page(db, agent):
    """The form again with one more tool on it, enabled and its settings open, nothing saved; None unless an Add
    button of the picker was pressed."""
    if tool_picker.ADD not in request.form:
        return None
    form = _agent_form(db, client_tools=posted_client_tools(request.form))
    try:
        tool_name = tool_picker.tool_to_add(request.form, form.tool_names, tool_registry().vanished_names())
    except ValueError:
        abort(400)
    form.tools[tool_name].enabled.data = True
    notice = f'Added the tool "{tool_name}": set its settings below, then save the agent to keep it.'
    return _render_form(form, agent=agent, notice=notice, added_tool=tool_name)


def _submit(db, form, agent_id, create):
    """Validate the posted form (its own shape checks, then engine.config through the store) and save it.
    Returns (saved agent or None, errors by field, conflict or None)."""
    form.validate()
    data = form.agent_data(agent_id)
    try:
        if form.errors:
            agent_store.validate(db, data, tool_registry().parameters_by_name(), allowed_networks())
            return None, {}, None
        saved = agent_store.save_agent(
            db, data, tool_registry().parameters_by_name(), create=create, allowed_networks=allowed_networks()
        )
    except ValidationError as error:
        return None, error.errors, None
    except RevisionConflict as conflict:
        return None, {}, conflict
    marks = tool_hints.kept_marks(tool_hints.posted_marks(request.form), saved, tool_registry())
    tool_server_store.save_hint_marks(db, saved["id"], marks)
    return saved, {}, None


@bp.get("/schema/agent.json")
def agent_schema():
    """The schema editors fetch for the `# yaml-language-server: $schema=…` line every policy file starts with."""
    return SCHEMA_FILE.read_bytes(), {"Content-Type": "application/schema+json"}


@bp.get("/")
@bp.get("/agents")
def list_agents():
    db = get_db()
    return render_template("agents/list.html", agents=agent_store.list_agents(db), origins=agent_store.origins(db))


@bp.route("/agents/new", methods=["GET", "POST"])
def new_agent():
    db = get_db()
    if request.method == "GET":
        return _render_form(_agent_form(db, agent={**AGENT_DEFAULTS, "id": ""}))
    edited = _client_tool_edit_page(db, None) or _add_tool_page(db, None) or _accept_hints_page(db, None)
    if edited:
        return edited
    form = _agent_form(db, client_tools=posted_client_tools(request.form))
    agent_id = (form.id.data or "").strip() or machine_name(form.label.data or "")
    agent, errors, _conflict = _submit(db, form, agent_id, create=True)
    if agent:
        return done(f'Created the agent "{agent["label"]}".', "agents.view_agent", agent_id=agent["id"])
    return _render_form(form, status=400, form_errors=apply_errors(form, errors))


@bp.get("/agents/export")
def export_agents():
    """Every agent's policy file, in one zip (flask --app app export-agents writes the same files)."""
    archive = policy_files.export_zip(get_db(), schema_url())
    return archive, {"Content-Type": "application/zip", "Content-Disposition": "attachment; filename=agents.zip"}


@bp.get("/agents/<agent_id>/export")
def export_agent(agent_id):
    """One agent's policy file, ID.yaml."""
    try:
        [(name, text)] = policy_files.export(get_db(), [agent_id], schema_url())
    except NotFound:
        abort(404)
    headers = {"Content-Type": "application/yaml; charset=utf-8", "Content-Disposition": f"attachment; filename={name}"}
    return text.encode("utf-8"), headers


def _import_page(upload=None, planned=None, files=(), problems=(), notice="", status=200):
    confirm = ConfirmImportForm(formdata=None, fingerprint=planned.fingerprint() if planned else "")
    return (
        render_template(
            "agents/import.html",
            upload=upload or ImportForm(formdata=None),
            confirm=confirm,
            planned=planned,
            files=policy_files.carried(files),
            problems=problems,
            notice=notice,
        ),
        status,
    )


def _plan(files):
    return policy_files.plan(get_db(), files, tool_registry().parameters_by_name())


@bp.route("/agents/import", methods=["GET", "POST"])
def import_agents():
    """Upload policy files: the page shows what applying them would change (as apply --dry-run prints it), and
    applies it on confirmation. Nothing changes before that."""
    upload = ImportForm()
    if not upload.validate_on_submit():
        return _import_page(upload)
    try:
        files = policy_files.uploaded((file.filename, file.read()) for file in upload.files.data or [])
        planned = _plan(files)
    except policy_files.PolicyInputError as error:
        return _import_page(upload, problems=error.problems, status=400)
    return _import_page(upload, planned=planned, files=files)


@bp.post("/agents/import/apply")
def apply_imported_agents():
    """Apply the files of a preview, if applying them still does what the preview showed."""
    confirm = ConfirmImportForm()
    if not confirm.validate_on_submit():
        abort(400)
    try:
        files = policy_files.from_carried(request.form.getlist("file_name"), request.form.getlist("file_content"))
        planned = _plan(files)
    except policy_files.PolicyInputError as error:
        return _import_page(problems=error.problems, status=400)
    changed_meanwhile = "Not applied: the agents changed since the preview. This is what applying the files does now."
    if planned.fingerprint() != confirm.fingerprint.data:
        return _import_page(planned=planned, files=files, notice=changed_meanwhile, status=409)
    try:
        policy_files.apply(get_db(), planned)
    except (RevisionConflict, ValidationError, NotFound):
        return _import_page(planned=_plan(files), files=files, notice=changed_meanwhile, status=409)
    applied = len(planned.changes)
    return done(f"Applied {applied} change{'s' if applied != 1 else ''} from the policy files.", "agents.list_agents")


@bp.get("/agents/new/machine-name")
def machine_name_field():
    """The machine name field, derived from the label while the user has not typed a name of their own."""
    label = request.args.get("label", "")
    current = request.args.get("id", "").strip()
    derived_before = request.args.get("id_derived", "")
    derived = machine_name(label)
    if current and current != derived_before:
        derived, value = derived_before, current
    else:
        value = derived
    form = agent_form_class({})(data={"id": value}, meta={"csrf": False})
    return render_template("agents/_machine_name_field.html", form=form, derived_machine_name=derived)


@bp.get("/agents/<agent_id>")
def view_agent(agent_id):
    db = get_db()
    agent = agent_store.get_agent(db, agent_id)
    registry = tool_registry()
    return render_template(
        "agents/view.html",
        agent=agent,
        charts=run_charts.charts(db, agent_id=agent_id),
        cases=case_store.list_cases(db, agent_id),
        check_cases_form=ButtonForm(),
        tools={tool.name: tool for tool in registry},
        vanished=registry.vanished_names(),
        hint_marks=tool_hints.kept_marks(tool_server_store.hint_marks(db, agent_id), agent, registry),
        script_json=json.dumps(agent["script"], indent=2, ensure_ascii=False),
        parallel_tool_calls_labels=PARALLEL_TOOL_CALLS_LABELS,
        default_max_rounds_message=texts.MAX_ROUNDS,
        origin=agent_store.origin(db, agent_id),
    )


@bp.route("/agents/<agent_id>/edit", methods=["GET", "POST"])
def edit_agent(agent_id):
    db = get_db()
    agent = agent_store.get_agent(db, agent_id)
    origin = agent_store.origin(db, agent_id)
    if origin:  # its settings, read-only: a POST changes nothing (and answers 409)
        status = 409 if request.method == "POST" else 200
        return _render_form(_agent_form(db, agent=agent), agent=agent, origin=origin, status=status)
    if request.method == "GET":
        return _render_form(_agent_form(db, agent=agent), agent=agent)
    edited = _client_tool_edit_page(db, agent) or _add_tool_page(db, agent) or _accept_hints_page(db, agent)
    if edited:
        return edited
    form = _agent_form(db, client_tools=posted_client_tools(request.form))
    saved, errors, conflict = _submit(db, form, agent_id, create=False)
    if saved:
        message = f'Saved the agent "{saved["label"]}" (revision {saved["revision"]}).'
        return done(message, "agents.view_agent", agent_id=agent_id)
    if conflict:
        # Keep the user's input; the next save, made knowing this, goes over the current revision.
        form.revision.data = str(conflict.current_revision)
        return _render_form(form, agent=agent, status=409, conflict=conflict)
    return _render_form(form, agent=agent, status=400, form_errors=apply_errors(form, errors))


@bp.route("/agents/<agent_id>/delete", methods=["GET", "POST"])
def delete_agent(agent_id):
    db = get_db()
    agent = agent_store.get_agent(db, agent_id)
    return confirm_delete(
        "agents/delete.html",
        lambda: agent_store.delete_agent(db, agent_id),
        f'Deleted the agent "{agent["label"]}".',
        "agents.list_agents",
        agent=agent,
    )


@bp.get("/agents/tool-settings/<tool_name>/error-message")
def error_message_field(tool_name):
    """The "Multiple call error message" fragment of one tool, from the form bound to the query string: the
    textarea while the restriction is ticked, an empty wrapper (the next swap's target) when it is not. The run
    page's per-run settings reveal it through here too: their fields have the same names."""
    return render_template(
        "agents/_error_message_field.html",
        tool_name=tool_name,
        tool_form=_tool_form_from_query(tool_name),
        in_fragment=True,
    )


@bp.get("/agents/tool-settings/<tool_name>/arguments/<argument>/rule")
def argument_rule_field(tool_name, argument):
    """The values (and, for a forced value, "Hide from the model") of one argument's rule, from the form bound to
    the query string: shown once a rule is chosen, an empty wrapper (the next swap's target) without one. Like
    the error message, the run page's per-run settings reveal it through here too."""
    arguments = _tool_form_from_query(tool_name).arguments
    if argument not in arguments.form:
        abort(404)
    return render_template(
        "agents/_argument_rule_field.html",
        tool_name=tool_name,
        argument=argument,
        rule_form=arguments[argument],
        in_fragment=True,
    )


def _tool_form_from_query(tool_name):
    """One tool's settings sub-form, bound to the query string an htmx reveal sends; a 404 for an unknown tool."""
    tools = tool_registry().parameters_by_name()
    if tool_name not in tools:
        abort(404)
    form = agent_form_class({tool_name: tools[tool_name]})(formdata=request.args, meta={"csrf": False})
    return form.tools[tool_name]


def _client_tool_form_from_query(tool_name, arguments=()):
    """One client tool's settings sub-form, bound to the query string an htmx reveal sends."""
    if not TOOL_NAME_PATTERN.match(tool_name):
        abort(404)
    form_class = agent_form_class({}, {tool_name: list(arguments)})
    return form_class(formdata=request.args, meta={"csrf": False}).client_tools[tool_name]


@bp.get("/agents/client-tool-settings/<tool_name>/error-message")
def client_error_message_field(tool_name):
    """error_message_field, for a client tool."""
    return render_template(
        "agents/_error_message_field.html",
        tool_name=tool_name,
        tool_form=_client_tool_form_from_query(tool_name),
        client=True,
        in_fragment=True,
    )


@bp.get("/agents/client-tool-settings/<tool_name>/arguments/<argument>/rule")
def client_argument_rule_field(tool_name, argument):
    """argument_rule_field, for an argument of a client tool."""
    if not TOOL_NAME_PATTERN.match(argument):
        abort(404)
    return render_template(
        "agents/_argument_rule_field.html",
        tool_name=tool_name,
        argument=argument,
        rule_form=_client_tool_form_from_query(tool_name, [argument]).arguments[argument],
        client=True,
        in_fragment=True,
    )
