"""Agent pages: the list, one agent, the create and edit form with each tool's settings, and delete.

The form posts plainly (Post/Redirect/Get); htmx only swaps fragments in: the "Multiple call error message"
field when "Restrict to one call per response" is ticked, an argument rule's values when a rule is chosen, and
the machine name derived from the label. The form lists the agent's tools; the others are added from its picker
(blueprints.forms.tool_picker), like client tools, by posting the form back.
"""

import json

from flask import Blueprint, abort, render_template, request

from blueprints import confirm_delete, done, run_charts, tool_hints
from blueprints.forms import tool_picker
from blueprints.forms.agents import agent_form, agent_form_class
from blueprints.forms.client_tools import client_tool_edit, posted_client_tools
from blueprints.forms.fields import ButtonForm, apply_errors
from blueprints.forms.request_settings import PARALLEL_TOOL_CALLS_LABELS
from engine import texts
from engine.config import AGENT_DEFAULTS, SCRIPTED_PROVIDER, TOOL_NAME_PATTERN, ValidationError, machine_name
from services.settings import tool_registry
from store import RevisionConflict
from store import agents as agent_store
from store import cases as case_store
from store import providers as provider_store
from store import tool_servers as tool_server_store
from store.db import get_db

bp = Blueprint("agents", __name__)


def _provider_choices(db):
    choices = [(SCRIPTED_PROVIDER, "Scripted (built-in, offline)")]
    choices += [(row["id"], f"{row['label']} ({row['id']})") for row in provider_store.list_providers(db)]
    return choices


def _agent_form(db, agent=None, client_tools=None):
    tools = tool_hints.form_tools(tool_registry(), agent, request.form)
    return agent_form(tools, _provider_choices(db), agent=agent, client_tools=client_tools)


def _render_form(form, agent=None, status=200, form_errors=(), conflict=None, notice="", added_tool=None, **hints):
    """The form with the tools on it, and the picker of the others. `notice`: what an Add or Remove button did;
    `hints`: hint_notice and hint_marks ({tool: settings}) for the tool servers' tools; the marks default to those
    posted, or on a GET to the stored ones."""
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
            agent_store.validate(db, data, tool_registry().parameters_by_name())
            return None, {}, None
        saved = agent_store.save_agent(db, data, tool_registry().parameters_by_name(), create=create)
    except ValidationError as error:
        return None, error.errors, None
    except RevisionConflict as conflict:
        return None, {}, conflict
    marks = tool_hints.kept_marks(tool_hints.posted_marks(request.form), saved, tool_registry())
    tool_server_store.save_hint_marks(db, saved["id"], marks)
    return saved, {}, None


@bp.get("/")
@bp.get("/agents")
def list_agents():
    return render_template("agents/list.html", agents=agent_store.list_agents(get_db()))


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
    )


@bp.route("/agents/<agent_id>/edit", methods=["GET", "POST"])
def edit_agent(agent_id):
    db = get_db()
    agent = agent_store.get_agent(db, agent_id)
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
