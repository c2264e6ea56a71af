"""The policy proxy (SPEC §8): `/proxy/<agent id>/v1` is an OpenAI-compatible base URL, so any app that speaks
OpenAI's API gets the agent's tool policy by changing its base URL.

`POST …/chat/completions` answers through services.proxy (the agent's provider, the gate, the run
recorded); `GET …/models` lists the model it answers with. Answers and errors are in OpenAI's shapes, not the
JSON API's — `{"error": {"message", "type", "param", "code"}}` — since the client is an OpenAI client; every
answer that recorded a run names it in `X-Toolgate-Run`. JSON only, so the blueprint needs no CSRF token. With the
login on, the key a client sends must be an API token (blueprints.auth), and a kept response is read and continued
only with the token that created it.
"""

import io
from itertools import chain

from flask import Blueprint, Response, current_app, g, jsonify, request, stream_with_context, url_for

from blueprints import log_proxy_refusal, run_page_url_pattern
from blueprints.auth import confirmed_proxy_refusal, request_credential
from engine.config import SCRIPTED_PROVIDER, ValidationError
from engine.proxy import chat_completions as chat_completions_api
from engine.proxy import messages as messages_api
from engine.proxy import responses as responses_api
from services import proxy as proxy_service
from services.settings import allowed_networks, key_environ, tool_secrets
from services.tracing import traced
from store import NotFound
from store import agents as agent_store
from store import providers as provider_store
from store.db import close_db, get_db

bp = Blueprint("proxy", __name__, url_prefix="/proxy/<agent_id>/v1")
# The checks a client makes that its base URL answers before it starts (Claude Code sends HEAD to its base URL,
# …/proxy/<agent id>, and to api/hello under it).
probes = Blueprint("proxy_probes", __name__, url_prefix="/proxy/<agent_id>")
RUN_HEADER = "X-Toolgate-Run"


class TakingTurns:
    """WSGI middleware: a proxied request (a POST under /proxy/) takes one of the process's turns
    (services.proxy.TURNS) before anything of it runs, its token check and the connection it reads with included,
    so that in a burst of proxied requests a page waits for a few of them, not for all. Its body is read first: a
    client that sends slowly holds no turn meanwhile. The turn is given back when the view returns (a stream's, before
    it streams) and whenever the request waits for its model or for a decision. It is counted under way until its
    answer's last byte is written (services.proxy.count_under_way)."""

    def __init__(self, wsgi_app, max_body_bytes):
        self.wsgi_app = wsgi_app
        self.max_body_bytes = max_body_bytes

    def __call__(self, environ, start_response):
        if environ.get("REQUEST_METHOD") != "POST" or not environ.get("PATH_INFO", "").startswith("/proxy/"):
            return self.wsgi_app(environ, start_response)
        proxy_service.count_under_way(1)
        try:
            self._read_body(environ)
            with proxy_service.turn():
                answer = self.wsgi_app(environ, start_response)
        except BaseException:
            proxy_service.count_under_way(-1)
            raise
        return _CountedOut(answer)

    def _read_body(self, environ):
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return  # the app refuses it
        if 0 < length <= self.max_body_bytes:  # a longer one is refused (413) without being read
            environ["wsgi.input"] = io.BytesIO(environ["wsgi.input"].read(length))


class _CountedOut:
    """The answer, its request counted out once its last byte is written or once the server closes it (a client that
    hung up, perhaps before a byte was written), whichever comes first, and once only."""

    def __init__(self, answer):
        self.answer = answer
        self.counted = True

    def __iter__(self):
        try:
            yield from self.answer
        finally:
            self._count_out()

    def close(self):
        try:
            if hasattr(self.answer, "close"):
                self.answer.close()
        finally:
            self._count_out()

    def _count_out(self):
        if self.counted:
            self.counted = False
            proxy_service.count_under_way(-1)


def _api_error(api, status, message, **fields):
    response = jsonify(api.error_body(status, message, **fields))
    response.status_code = status
    return response


def _refused(api, status, message, **fields):
    """A request the proxy cannot serve: in the log (blueprints.log_proxy_refusal), and answered in the API's
    error shape."""
    log_proxy_refusal(status, message)
    return _api_error(api, status, message, **fields)


def answer_in(api, agent_id):
    """Answer the request in the client's API (a module of engine.proxy: chat_completions, …) and name the run it
    recorded. A body that is not sent as JSON is refused before anything is read: a web page can post text/plain
    across sites without asking, and this endpoint spends the server's model account."""
    if not request.is_json:
        return _refused(api, 415, "The body must be sent as JSON (Content-Type: application/json).")
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return _refused(api, 400, "The body must be a JSON object.")
    services = {
        # The tool servers' tools are added by the service, and only when the settings changed since it last did
        "registry": current_app.config["TOOL_REGISTRY"],
        "tool_secrets": tool_secrets(),
        "environ": key_environ(),
        # What the token was checked under, with the login on (blueprints.auth); the service confirms it.
        "settings_generation": g.get("settings_generation"),
        "generation_confirmed": g.get("generation_confirmed", False),
        "transport": current_app.config.get("MODEL_TRANSPORT"),
        "creator": request_credential(),  # a kept response is read and continued by its creator alone
        # Where the approval webhook's link leads, and what its address may be besides the rule's.
        "run_url": run_page_url_pattern(),
        "allowed_networks": allowed_networks(),
    }
    database = current_app.config["DATABASE_URL"]
    close_db()  # what the checks before this read: the proxied request holds no connection while its model answers
    try:
        try:
            return _answered(api, database, agent_id, body, services)
        except proxy_service.SettingsChanged as changed:  # nothing was sent or stored: again, under the new settings
            refusal = confirmed_proxy_refusal(changed.generation)
            if refusal is not None:
                return refusal
            close_db()
            services.update(
                settings_generation=changed.generation, generation_confirmed=True, creator=request_credential()
            )
            return _answered(api, database, agent_id, body, services)
    except NotFound as error:
        return _refused(api, 404, str(error), code="agent_not_found")
    except ValidationError as error:
        return _refused(api, 400, str(error), code="invalid_value", param=error.field)
    except responses_api.NotStored as error:
        return _refused(api, error.status, error.message, code=error.code, param=error.param)


def _answered(api, database, agent_id, body, services):
    if body.get("stream") is True:
        return _streamed(api, database, agent_id, body, services)
    client_request, exchange, run = proxy_service.answer_and_record(database, agent_id, body, api, **services)
    g.generation_confirmed = True
    traced(run)
    if exchange.error is not None:
        response = _upstream_error(api, exchange.error)
    else:
        response = jsonify(api.answer(exchange, client_request))
    response.headers[RUN_HEADER] = str(run["id"])
    return response


def _upstream_error(api, error):
    return _api_error(api, error.status, error.message, error_type=error.type, code=error.code)


def _streamed(api, database, agent_id, body, services):
    """A streamed answer, live: the response starts with the upstream's first chunk. An upstream that fails before
    it says anything is answered as an error with its status, like a request that was not streamed."""
    keep_alive_seconds = current_app.config["PROXY_KEEP_ALIVE_SECONDS"]
    client_request, streamed, pieces = proxy_service.stream_and_record(
        database, agent_id, body, api, keep_alive_seconds=keep_alive_seconds, **services
    )
    g.generation_confirmed = True
    with proxy_service.without_turn():  # the upstream's first chunk takes the model's time, not this process's
        first = next(pieces, None)
    if first is None:  # the stream ended before it began: the upstream failed, and the run is recorded
        traced(streamed.run)
        response = _upstream_error(api, streamed.live.exchange.error)
        response.headers[RUN_HEADER] = str(streamed.run["id"])
        return response

    def events():
        sent = api.stream(chain([first], pieces), client_request)
        try:
            yield from sent
        finally:  # a client that went away: the upstream request stops, and the run records how far it got
            sent.close()
            pieces.close()
            if streamed.run is not None:
                traced(streamed.run)

    response = Response(stream_with_context(events()), mimetype="text/event-stream")
    response.headers["Cache-Control"] = "no-cache"
    return response


@bp.after_request
def refused_as_a_token_first(response):
    """An answer refused before the request's look-up confirmed the settings' generation its token was checked under (a
    body not sent as JSON, one too large; not a busy database's 503): its token checked again first, so that a token
    revoked elsewhere a moment ago is refused as such (blueprints.auth.confirmed_proxy_refusal). Before the app's own
    after-request functions, which add the security headers to whichever answer goes."""
    if not 400 <= response.status_code < 500 or g.get("generation_confirmed", True):
        return response
    refusal = confirmed_proxy_refusal()
    return response if refusal is None else current_app.make_response(refusal)


@bp.post("/chat/completions")
def chat_completions(agent_id):
    return answer_in(chat_completions_api, agent_id)


@bp.post("/messages")
def messages(agent_id):
    return answer_in(messages_api, agent_id)


@bp.post("/responses")
def responses(agent_id):
    return answer_in(responses_api, agent_id)


@bp.get("/responses/<response_id>")
def response(agent_id, response_id):
    """A response the agent's proxy kept (OpenAI's `GET /responses/<id>`)."""
    try:
        return jsonify(proxy_service.kept_response(get_db(), agent_id, response_id, request_credential()))
    except NotFound as error:
        return _refused(responses_api, 404, str(error), code="not_found")


@bp.get("/models")
def models(agent_id):
    """The model the proxy answers with: the agent's, else its connection's default (`scripted` for the scripted
    model). With neither, it answers with the model each client asks for, and lists none."""
    db = get_db()
    try:
        agent = agent_store.get_agent(db, agent_id)
    except NotFound as error:
        return _refused(chat_completions_api, 404, str(error), code="agent_not_found")
    model = agent["model"] or _default_model(db, agent["provider"])
    data = [{"id": model, "object": "model", "created": 0, "owned_by": "toolgate"}] if model else []
    return jsonify({"object": "list", "data": data})


def _default_model(db, provider_id):
    if provider_id == SCRIPTED_PROVIDER:
        return SCRIPTED_PROVIDER
    try:
        return provider_store.get_provider(db, provider_id)["default_model"]
    except NotFound:
        return ""


@probes.route("/", methods=["HEAD"], strict_slashes=False)
@probes.route("/api/hello", methods=["HEAD"])
def probe(agent_id):
    """Answered as an API server answers a HEAD on its base: 200, whatever the key and without looking the agent up
    (so it tells no one which agents exist), and not logged as a refused request."""
    return Response(status=200, mimetype="application/json")


@bp.app_context_processor
def proxy_helpers():
    return {"proxy_base_url": proxy_base_url, "anthropic_base_url": anthropic_base_url}


def proxy_base_url(agent_id):
    """The base URL an OpenAI client is given for the agent: …/proxy/<agent id>/v1."""
    return url_for("proxy.models", agent_id=agent_id, _external=True).removesuffix("/models")


def anthropic_base_url(agent_id):
    """The base URL an Anthropic client is given for the agent (ANTHROPIC_BASE_URL): …/proxy/<agent id>, since the
    SDK and Claude Code add /v1/messages themselves."""
    return url_for("proxy.messages", agent_id=agent_id, _external=True).removesuffix("/v1/messages")
