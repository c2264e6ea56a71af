"""One module per area: parse the request, call store/ and engine/, render a template or JSON.

Shared here: the tool registry the app uses, the error pages (JSON under /api/), and template helpers.
"""

import logging

from flask import current_app, jsonify, render_template, request
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException, InternalServerError

from engine.tools import default_registry

logger = logging.getLogger("toolgate")


def tool_registry():
    """The app's tool registry: TOOL_REGISTRY from the config (tests inject one), else the default."""
    return current_app.config.get("TOOL_REGISTRY") or default_registry()


def _is_api_request():
    return request.path == "/api" or request.path.startswith("/api/")


def _error_response(code, title, message):
    if _is_api_request():
        return jsonify({"error": message}), code
    return render_template("errors/error.html", code=code, title=title, message=message), code


def register_error_handlers(app):
    @app.errorhandler(CSRFError)
    def csrf_error(error):
        return _error_response(
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
        message = messages.get(error.code) or error.description
        return _error_response(error.code, titles.get(error.code, error.name), message)

    @app.errorhandler(InternalServerError)
    def server_error(error):
        logger.error("Unhandled error on %s %s", request.method, request.path, exc_info=error.original_exception)
        return _error_response(
            500, "Something went wrong", "An unexpected error happened and was logged. Go back and try again."
        )


def has_endpoint(name):
    return name in current_app.view_functions


def register_template_helpers(app):
    app.jinja_env.globals["has_endpoint"] = has_endpoint
    app.jinja_env.trim_blocks = True
    app.jinja_env.lstrip_blocks = True
