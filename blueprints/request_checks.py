"""Checks on what a request sends, before any view reads it: its address is not over-long, every name and value in
the query string, a form or a JSON body must be valid Unicode text, and the JSON API takes writes in JSON only.

An address longer than MAX_ADDRESS_BYTES is refused with a 414 in the caller's shape (the client's API's error under
/proxy/, JSON under /api/, a page elsewhere). `make run` lets gunicorn read request lines up to its highest bounded
limit (`--limit-request-line=8190`; 0 would read any length, and its parser copies the line anew with every read), so
every address over this limit that gunicorn lets through is answered here, not by gunicorn's bare HTML page.

Without them, werkzeug turns bytes that are not UTF-8 into U+FFFD (a multipart form) or keeps them as "%FF" (a
URL-encoded one), so the text would be stored changed without a word; and JSON may carry a lone surrogate
("\\ud800"), which SQLite cannot store, or NaN, which is not JSON. Each is refused with a 400 naming the field, so
nothing is stored.
Requiring `Content-Type: application/json` for API writes means a cross-site HTML form cannot post to the API,
which needs no CSRF token: a browser sends such a request cross-site only after a CORS preflight, which we never
answer.
"""

import re
from urllib.parse import unquote_to_bytes

from flask import request
from werkzeug.sansio.multipart import Data, Epilogue, Field, File, MultipartDecoder, NeedData

from blueprints import error_response, is_api_request, json_error
from engine.config import json_value_problem

API_WRITE_METHODS = ("POST", "PUT", "PATCH")
MAX_ADDRESS_BYTES = 8_000  # the path and the query string, as sent; below gunicorn's 8,190-byte request line


def _refuse(field, message):
    if is_api_request():
        return json_error(400, message, field)
    return error_response(400, "Not valid text", f'The field "{field}" {message}; nothing was saved.')


def _decoded(part, errors="strict"):
    return unquote_to_bytes(part.replace(b"+", b" ")).decode("utf-8", errors)


def bad_urlencoded_field(raw):
    """The first name in `a=1&b=2` (a query string or a form body) whose name or value is not UTF-8, or None."""
    for pair in raw.split(b"&"):
        name, _, value = pair.partition(b"=")
        try:
            _decoded(name)
            _decoded(value)
        except UnicodeDecodeError:
            return _decoded(name, errors="replace")
    return None


def bad_multipart_field(raw, boundary):
    """The first field of a multipart form whose value is not UTF-8 ("body" when a part's headers are not), or
    None. Uploaded files are not text and not checked."""
    decoder = MultipartDecoder(boundary.encode("latin-1"))
    decoder.receive_data(raw)
    decoder.receive_data(None)
    name, chunks = None, []
    while True:
        try:
            event = decoder.next_event()
        except UnicodeDecodeError:
            return "body"
        except ValueError:  # not a well-formed form: werkzeug reads it as an empty one
            return None
        if isinstance(event, Field):
            name, chunks = event.name, []
        elif isinstance(event, File):
            name = None
        elif isinstance(event, Data) and name is not None:
            chunks.append(event.data)
            if not event.more_data and not _is_utf8(b"".join(chunks)):
                return name
        elif isinstance(event, (Epilogue, NeedData)):
            return None


def _is_utf8(data):
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def refuse_over_long_addresses():
    address = request.environ.get("RAW_URI") or request.environ.get("REQUEST_URI") or request.full_path
    length = len(address.encode("latin-1", "replace"))
    if length <= MAX_ADDRESS_BYTES:
        return None
    return error_response(
        414,
        "Address too long",
        f"The address is {length:,} bytes long; this server takes addresses of at most {MAX_ADDRESS_BYTES:,} bytes. "
        "Shorten it (a search, for instance) and try again.",
    )


def require_json_for_api_writes():
    if request.routing_exception is None and is_api_request() and request.method in API_WRITE_METHODS:
        if not request.is_json:
            return json_error(415, 'must be JSON, sent with the header "Content-Type: application/json"', "body")
    return None


def refuse_text_that_is_not_unicode():
    if request.routing_exception is not None:
        return None  # a 404 or 405 follows; nothing will read the request
    name = bad_urlencoded_field(request.query_string)
    if name is not None:
        return _refuse(name, "is not valid UTF-8 text")
    if request.mimetype == "application/x-www-form-urlencoded":
        name = bad_urlencoded_field(request.get_data())
    elif request.mimetype == "multipart/form-data" and "boundary" in request.mimetype_params:
        name = bad_multipart_field(request.get_data(), request.mimetype_params["boundary"])
    elif request.is_json:
        return _json_problem()
    return _refuse(name, "is not valid UTF-8 text") if name is not None else None


# What in JSON text can parse into a value json_value_problem refuses: an escape of a surrogate (a lone one, or half
# of a pair, which is fine), or NaN and Infinity (in a string, too: the walk then decides). A body without any is
# not walked: a proxied conversation is sent whole with every request, and walking it grew with its length.
_MAYBE_REFUSED = re.compile(rb"\\u[dD][89a-fA-F]|NaN|Infinity")


def _json_problem():
    data = request.get_data()
    if not _is_utf8(data):
        return _refuse("body", "is not valid UTF-8 text")
    try:
        value = request.get_json(silent=True)  # parsed once: the view gets this value
    except RecursionError:
        return _refuse("body", "is nested too deeply to be read")
    if not _MAYBE_REFUSED.search(data):
        return None
    problem = json_value_problem(value, max_depth=None)  # how deep a field may go is the field's business
    return _refuse(problem[0].removeprefix(".") or "body", problem[1]) if problem else None


def init_app(app):
    app.before_request(refuse_over_long_addresses)
    app.before_request(require_json_for_api_writes)
    app.before_request(refuse_text_that_is_not_unicode)
