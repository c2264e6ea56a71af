"""One module per area: parse the request, call store/ and engine/, render a template or JSON.

Shared here: the error pages and the errors every view may raise, mapped once (JSON under /api/, the client's API's
shape under /proxy/, a page elsewhere), template helpers, and the steps the pages repeat: save a posted form,
Post/Redirect/Get, the delete confirmation, the history lists' query string.
"""

import logging
import re
from types import SimpleNamespace

from flask import abort, current_app, flash, jsonify, redirect, render_template, request, url_for
from flask_wtf.csrf import CSRFError
from markupsafe import Markup
from werkzeug.exceptions import HTTPException, InternalServerError
from werkzeug.exceptions import NotFound as HTTPNotFound

from blueprints import setting_summaries
from blueprints.forms.fields import ButtonForm, apply_errors
from engine import approvals
from engine.config import SCRIPTED_PROVIDER
from engine.proxy import chat_completions, messages
from engine.proxy.recording import PROXY_SOURCE
from engine.round import AWAITING_CLIENT, CANCELLED, ERROR, STOPPED
from engine.types import ABANDONED, ALLOWED, AWAITING, AWAITING_APPROVAL, EXECUTED, INTERRUPTED, REJECTED, RUNNING
from engine.types import ERROR as CALL_ERROR
from services import proxy as proxy_service
from services.runs import RunConflict
from store import ManagedByFile, NotFound, RevisionConflict, ValidationError
from store.db import DatabaseBusy, get_db
from store.history import ID_MAX

logger = logging.getLogger("toolgate")
MESSAGES_PATH = re.compile(r"/proxy/[^/]+/v1/messages(/|$)")  # Anthropic's Messages API and what lies under it
PATH_LOGGED = 300  # characters of a refused proxy request's path that its log entry keeps


def done(message, endpoint, **values):
    """Post/Redirect/Get: flash what was done, then 303 to the page that shows it."""
    flash(message)
    return redirect(url_for(endpoint, **values), 303)


def save_posted(form, save, *args):
    """A create or edit form's POST: the form's own checks, then `save(*args)`, a store function whose
    ValidationError is put beside the fields. Returns (the saved row, no messages), or (None, the messages that
    belong to no field) for the form to be shown again (a row deleted meanwhile is the 404 page). Nothing is saved
    while the form's own checks fail."""
    if not form.validate():
        return None, []
    try:
        return save(*args), []
    except ValidationError as error:
        return None, apply_errors(form, error.errors)


def confirm_delete(template, delete, message, endpoint, **context):
    """A delete page: GET asks for confirmation; a POST with the form's token calls `delete()`, then goes on to
    `endpoint` saying `message`."""
    form = ButtonForm()
    if form.validate_on_submit():
        delete()
        return done(message, endpoint)
    return render_template(template, form=form, **context)


def confirm_delete_unless_used(template, delete, users, message, endpoint, **context):
    """confirm_delete for a row that agents use (a provider connection, a tool server): while `users` (the agents'
    ids) is not empty the page names them and a POST answers 409; a row another request put to use meanwhile is a
    409 too."""
    form = ButtonForm()
    if form.validate_on_submit() and not users:
        try:
            delete()
        except (NotFound, ValidationError):
            abort(409)
        return done(message, endpoint)
    status = 409 if request.method == "POST" else 200
    return render_template(template, form=form, users=users, **context), status


def list_filters(name, choices):
    """A history list's query string: ?agent= and ?NAME= (one of `choices`; anything else filters nothing), as
    (agent id or None, choice or None)."""
    agent_id = request.args.get("agent", "").strip() or None
    choice = request.args.get(name, "").strip() or None
    if choice not in choices:
        choice = None
    return agent_id, choice


def whole_number(text, lowest, highest):
    """`text` as an int when it is written in ASCII digits and lies in [lowest, highest], else None."""
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(highest)):
        return None
    number = int(text)
    return number if lowest <= number <= highest else None


def keyset_ids():
    """A history list's ?before= or ?after= (the id its older or newer page starts beyond), as (before, after):
    None when absent; a ValidationError naming the parameter when it is not an id, or when both are given."""
    ids = {}
    for name in ("before", "after"):
        text = request.args.get(name, "").strip()
        if not text:
            continue
        ids[name] = whole_number(text, 1, ID_MAX)
        if ids[name] is None:
            raise ValidationError({name: f"must be an id: a whole number from 1 to {ID_MAX}"})
    if len(ids) == 2:
        raise ValidationError({"after": "give before (older rows) or after (newer rows), not both"})
    return ids.get("before"), ids.get("after")


def keyset_ids_or_400():
    """keyset_ids() for the pages: a bad id is the 400 page, saying what is wrong."""
    try:
        return keyset_ids()
    except ValidationError as error:
        abort(400, description=f"{error}.")


def run_page_url_pattern():
    """The address of a run's page with {run_id} in place of its id: the link an approval webhook is sent."""
    return url_for("runs.show_run", run_id=0, _external=True).removesuffix("/0") + "/{run_id}"


def json_error(status, message, field=None, errors=None, **extra):
    """Every JSON API error, in one shape: {"error": "field: message", "field": field or null, "errors": {field:
    message}}, with its 4xx status. `message` is the text without the field's name."""
    text = f"{field}: {message}" if field is not None else message
    errors = errors if errors is not None else ({field: message} if field is not None else {})
    return jsonify({"error": text, "field": field, "errors": errors, **extra}), status


def json_validation_error(error, status=400):
    """A ValidationError as a JSON error: its first field named, every field in `errors`."""
    return json_error(status, error.errors[error.field], error.field, error.errors)


def is_api_request():
    return request.path == "/api" or request.path.startswith("/api/")


def is_proxy_request():
    return request.path.startswith("/proxy/")


def openai_error(status, message, code=None, param=None, error_type=None):
    """An error in OpenAI's shape, which OpenAI clients read: the policy proxy's (blueprints.proxy)."""
    return jsonify(chat_completions.error_body(status, message, error_type, code, param)), status


def proxy_api():
    """The API a request to the policy proxy speaks, by its path: Anthropic's Messages API under …/v1/messages,
    OpenAI's anywhere else. Its errors come in that API's shape, whoever answers them (a route, the login, a 404)."""
    return messages if MESSAGES_PATH.match(request.path) else chat_completions


def proxy_error(status, message, code=None):
    """An error of the policy proxy in the shape of the API its path speaks."""
    return jsonify(proxy_api().error_body(status, message, code=code)), status


def log_proxy_refusal(status, message):
    """Put a request under /proxy/<agent id>/ that the proxy refuses in the log, naming the agent, the path and why
    (services.proxy.log_refusal)."""
    agent_id = request.path.split("/")[2] if request.path.count("/") >= 2 else ""
    path = request.path[:PATH_LOGGED]
    proxy_service.log_refusal(get_db(), agent_id or None, request.method, path, status, message)


def error_response(code, title, message):
    """An error as the API's JSON, an htmx notice or a page; in the client's API's shape for the policy proxy."""
    if is_proxy_request():
        if code < 500:
            log_proxy_refusal(code, message)
        return proxy_error(code, message)
    if is_api_request():
        return json_error(code, message)
    if request.headers.get("HX-Request") == "true":
        # htmx swaps error responses too (base.html's htmx-config): a notice, not a page inside the page.
        return render_template("errors/_error.html", code=code, title=title, message=message), code
    return render_template("errors/error.html", code=code, title=title, message=message), code


def register_error_handlers(app):
    @app.errorhandler(CSRFError)
    def csrf_error(error):
        return error_response(
            400,
            "The form could not be sent",
            "It was missing its security token, or the token had expired. Go back, reload the page and try "
            "again; nothing was saved.",
        )

    @app.errorhandler(HTTPException)
    def http_error(error):
        titles = {404: "Not found", 405: "Method not allowed", 413: "Too large"}
        messages = {
            404: "There is nothing at this address. It may have been deleted, or the link is wrong.",
            413: "What was sent is larger than this server accepts; nothing was saved.",
        }
        if error.code == 413 and is_api_request():
            limit = current_app.config["MAX_CONTENT_LENGTH"] // (1024 * 1024)
            return json_error(413, f"is larger than this server accepts ({limit} MB); nothing was saved", "body")
        message = messages.get(error.code) or error.description
        return error_response(error.code, titles.get(error.code, error.name), message)

    @app.errorhandler(NotFound)
    def row_not_found(error):
        """A row a view asked the store for that is not there: what the address names does not exist."""
        if is_api_request():
            return json_error(404, str(error), next(iter(request.view_args or {}), None))
        if is_proxy_request():
            return proxy_error(404, str(error), code="agent_not_found")
        return http_error(HTTPNotFound())

    @app.errorhandler(ValidationError)
    def invalid_input(error):
        """Bad input the engine or the store refused, naming the field: nothing was changed."""
        if is_api_request():
            return json_validation_error(error)
        if is_proxy_request():
            return jsonify(proxy_api().error_body(400, str(error), code="invalid_value", param=error.field)), 400
        return error_response(400, "Not valid", f"{error}.")

    @app.errorhandler(RevisionConflict)
    def stale_revision(conflict):
        if is_api_request():
            return json_error(409, str(conflict), "revision", revision=conflict.current_revision)
        return error_response(409, "Changed meanwhile", str(conflict))

    @app.errorhandler(ManagedByFile)
    def managed_by_file(error):
        """A change from the pages or the API to an agent a policy file manages: the file is where it changes."""
        if is_api_request():
            return json_error(409, str(error), managed_by=error.path)
        return error_response(409, "Managed by a policy file", str(error))

    @app.errorhandler(RunConflict)
    def run_busy(error):
        if is_api_request():
            return json_error(409, str(error), "state")
        return error_response(409, "The run cannot do that now", str(error))

    @app.errorhandler(DatabaseBusy)
    def database_busy(error):
        """Every connection this process may open to the database stayed in use while the request waited for one (on
        PostgreSQL, store/db.py): a moment later there is one."""
        logger.warning("No database connection in time for %s %s", request.method, request.path)
        response, status = error_response(503, "Busy", str(error))
        response = current_app.make_response((response, status))
        response.headers["Retry-After"] = "1"
        return response

    @app.errorhandler(RecursionError)
    def too_deeply_nested(error):
        # JSON nested thousands of levels deep (a body, a script) exhausts the parser or the validation.
        logger.warning("Input nested too deeply on %s %s", request.method, request.path)
        return error_response(
            400, "Nested too deeply", "What was sent is nested too deeply to be read; nothing was saved."
        )

    @app.errorhandler(InternalServerError)
    def server_error(error):
        logger.error("Unhandled error on %s %s", request.method, request.path, exc_info=error.original_exception)
        return error_response(
            500, "Something went wrong", "An unexpected error happened and was logged. Go back and try again."
        )


def timestamp(value, zone=True):
    """A stored UTC time ("2026-01-02T03:04:05+00:00") as a <time> element that reads "2026-01-02 03:04:05 UTC";
    the lists' columns leave out the zone (`zone=False`). Nothing for no time."""
    if not value:
        return ""
    text = value.replace("T", " ").replace("+00:00", " UTC" if zone else "")
    return Markup('<time datetime="{}">{}</time>').format(value, text)


# The names the templates compare with, from where each is defined, so no template spells one as a literal.
TEMPLATE_NAMES = SimpleNamespace(
    SCRIPTED=SCRIPTED_PROVIDER,
    PROXY=PROXY_SOURCE,
    RUNNING=RUNNING,
    AWAITING_APPROVAL=AWAITING,
    INTERRUPTED=INTERRUPTED,
    ABANDONED=ABANDONED,
    ERROR=ERROR,
    STOPPED=STOPPED,
    AWAITING_CLIENT=AWAITING_CLIENT,
    CANCELLED=CANCELLED,
    EXECUTED=EXECUTED,
    REJECTED=REJECTED,
    ALLOWED=ALLOWED,
    CALL_ERROR=CALL_ERROR,
    CALL_AWAITING_APPROVAL=AWAITING_APPROVAL,
    REVIEW_REJECTED=approvals.REJECTED,
)


def register_template_helpers(app):
    app.jinja_env.globals["names"] = TEMPLATE_NAMES
    app.jinja_env.filters["timestamp"] = timestamp
    app.jinja_env.globals["tool_settings_summary"] = setting_summaries.tool_settings_summary
    app.jinja_env.trim_blocks = True
    app.jinja_env.lstrip_blocks = True
