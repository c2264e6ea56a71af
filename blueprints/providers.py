"""Provider connections (SPEC §7): any OpenAI-compatible server. The API key is read from the environment
variable a connection names; it is never stored nor shown, the page only says whether the variable is set.
"Test connection" sends one tiny request through the saved connection and says what came back."""

from flask import Blueprint, abort, current_app, render_template, request

from blueprints import confirm_delete_unless_used, done, save_posted
from blueprints.forms.fields import ButtonForm
from blueprints.forms.providers import ProviderForm, provider_to_form_data
from engine.config import machine_name
from engine.providers import ProviderError, check_connection
from services.settings import allowed_networks, configured_names
from store import agents as agent_store
from store import providers as provider_store
from store.db import get_db

bp = Blueprint("providers", __name__)

# After a save: where the next step is, on the list the user lands on.
TEST_IT = "Press Test on its row to send it one tiny request and read what comes back."


@bp.get("/providers")
def list_providers():
    providers = provider_store.list_providers(get_db())
    key_variables = configured_names("KEY_VARIABLES")
    for provider in providers:
        provider["api_key_allowed"] = provider_store.key_variable_allowed(provider["api_key_env"], key_variables)
        provider["api_key_set"] = provider_store.api_key_is_set(provider, key_variables)
    return render_template("providers/list.html", providers=providers, check_form=ButtonForm())


def _render_form(form, provider=None, status=200, form_errors=(), check=None):
    return (
        render_template(
            "providers/form.html",
            form=form,
            provider=provider,
            form_errors=form_errors,
            check_form=ButtonForm(),
            check=check,
        ),
        status,
    )


@bp.route("/providers/new", methods=["GET", "POST"])
def new_provider():
    form = ProviderForm()
    if request.method == "GET":
        return _render_form(form)
    provider_id = (form.id.data or "").strip() or machine_name(form.label.data or "")
    data = form.provider_data(provider_id)
    key_variables = configured_names("KEY_VARIABLES")
    provider, form_errors = save_posted(
        form, provider_store.create_provider, get_db(), data, key_variables, allowed_networks()
    )
    if provider is None:
        return _render_form(form, status=400, form_errors=form_errors)
    return done(f'Created the provider connection "{provider["label"]}". {TEST_IT}', "providers.list_providers")


@bp.route("/providers/<provider_id>/edit", methods=["GET", "POST"])
def edit_provider(provider_id):
    db = get_db()
    provider = provider_store.get_provider(db, provider_id)
    if request.method == "GET":
        form = ProviderForm(data=provider_to_form_data(provider))
        return _render_form(form, provider=provider)
    form = ProviderForm()
    data = form.provider_data(provider_id)
    key_variables = configured_names("KEY_VARIABLES")
    saved, form_errors = save_posted(
        form, provider_store.update_provider, db, provider_id, data, key_variables, allowed_networks()
    )
    if saved is None:
        return _render_form(form, provider=provider, status=400, form_errors=form_errors)
    return done(f'Saved the provider connection "{saved["label"]}". {TEST_IT}', "providers.list_providers")


@bp.post("/providers/<provider_id>/test")
def check_provider(provider_id):
    provider = provider_store.get_provider(get_db(), provider_id)
    if not ButtonForm().validate_on_submit():
        abort(400)
    try:
        response, latency_ms = check_connection(
            provider,
            environ=current_app.config.get("MODEL_ENVIRON"),
            transport=current_app.config.get("MODEL_TRANSPORT"),
        )
    except ProviderError as error:
        check = {"error": str(error)}
    else:
        check = {"answer": response.content or "(no text)", "latency_ms": latency_ms, "usage": response.usage}
    if request.headers.get("HX-Request") == "true":
        return render_template("providers/_connection_check.html", check=check, provider=provider)
    form = ProviderForm(data=provider_to_form_data(provider))
    return _render_form(form, provider=provider, check=check)


@bp.route("/providers/<provider_id>/delete", methods=["GET", "POST"])
def delete_provider(provider_id):
    """A connection some agent uses cannot be deleted: the page names the agents, and a POST answers 409."""
    db = get_db()
    provider = provider_store.get_provider(db, provider_id)
    return confirm_delete_unless_used(
        "providers/delete.html",
        lambda: provider_store.delete_provider(db, provider_id),
        agent_store.agents_using_provider(db, provider_id),
        f'Deleted the provider connection "{provider["label"]}".',
        "providers.list_providers",
        provider=provider,
    )
