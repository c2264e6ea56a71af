"""The login: off on a machine of one's own, on as soon as TOOLGATE_ADMIN_PASSWORD (or _HASH, a werkzeug password
hash) is set. With it on, every page and fragment needs the session: a page request is sent to the login page, an
htmx request gets a 401 that static/login-redirect.js turns into the same redirect, and the JSON API needs an API
token (`Authorization: Bearer …`, see the Tokens page) instead, and so does the policy proxy, as the API key its
clients send (a bearer token, or `X-Api-Key`, as Anthropic's clients send it).

A token limited to the proxy of named agents (store/tokens.py) is refused, with a 403 in the caller's API shape,
anywhere but under /proxy/<one of its agents>/. The request's credential (`request_credential`) is what a kept
response records as its creator, so that only it reads or continues that response.

Sessions are kept on the server (store/sessions.py): the signed cookie only names one. Log out ends every copy of
that cookie; a session ends after SESSION_IDLE_MINUTES without a request; and each records an HMAC of the password
it was opened under, so changing the password ends every session.
"""

import hashlib
import hmac
import re

from flask import Blueprint, current_app, g, redirect, render_template, request, session, url_for
from flask.sessions import SecureCookieSessionInterface
from flask_wtf import FlaskForm
from werkzeug.security import check_password_hash
from wtforms import PasswordField

from blueprints import error_response, is_api_request, is_proxy_request, json_error, login_throttle, proxy_error
from services.settings import login_enabled
from store import login_failures as failure_store
from store import sessions as session_store
from store import settings_generation
from store import tokens as token_store
from store.db import get_db, open_db

bp = Blueprint("auth", __name__)

SESSION_KEY = "session_id"
# The schema serves editors, which hold no login; a client's probe of the proxy is answered whatever its key.
OPEN_ENDPOINTS = ("auth.login", "static", "agents.agent_schema", "proxy_probes.probe")
# The policy proxy's endpoints that answer a client through services.proxy, whose look-up confirms the settings'
# generation the request's token was checked under.
ANSWERING_ENDPOINTS = ("proxy.chat_completions", "proxy.messages", "proxy.responses")
MAX_IDLE_MINUTES = 366 * 24 * 60
# A path on this site: "/" then anything but a second slash or backslash (browsers read "//x" and "/\\x" as another
# site), and no control character or space (a browser drops tabs and line breaks, and a header cannot hold them).
SITE_PATH = re.compile(r"/(?![/\\])[^\x00-\x20\x7f\\]*")


class LoginForm(FlaskForm):
    password = PasswordField("Password")


class SessionCookies(SecureCookieSessionInterface):
    """Flask's signed cookie, marked Secure whenever the request came over HTTPS (SESSION_COOKIE_SECURE forces
    it, behind a proxy that terminates TLS)."""

    def get_cookie_secure(self, app):
        return super().get_cookie_secure(app) or request.is_secure

    def open_session(self, app, request):
        # A request without the cookie (every proxied and API request) gets its empty session without the signing
        # serializer Flask builds for each request first: 25 microseconds of a proxied request's CPU.
        if app.secret_key and not request.cookies.get(self.get_cookie_name(app)):
            return self.session_class()
        return super().open_session(app, request)


def _bytes(text):
    # An environment variable holding bytes that are not UTF-8 reaches Python as lone surrogates: keep them.
    return text.encode("utf-8", "surrogateescape")


def _credential():
    return current_app.config.get("ADMIN_PASSWORD_HASH") or current_app.config["ADMIN_PASSWORD"]


def _password_matches(password):
    if current_app.config.get("ADMIN_PASSWORD_HASH"):
        return check_password_hash(current_app.config["ADMIN_PASSWORD_HASH"], password)
    return hmac.compare_digest(_bytes(password), _bytes(current_app.config["ADMIN_PASSWORD"]))


def _session_mark():
    key = current_app.secret_key
    key = key if isinstance(key, bytes) else _bytes(key)
    return hmac.new(key, _bytes(_credential()), hashlib.sha256).hexdigest()


def _idle_seconds():
    return current_app.config["SESSION_IDLE_MINUTES"] * 60


def _first_wait():
    return current_app.config["LOGIN_THROTTLE_SECONDS"]


def _is_number(value):
    return not isinstance(value, bool) and isinstance(value, int | float)


def check_password_settings(config):
    """Refuse to start with a password hash that no password could match (a typo would lock everyone out), or with
    an idle time or a login wait that is not a number in its range."""
    idle = config.get("SESSION_IDLE_MINUTES")
    if not (_is_number(idle) and 1 <= idle <= MAX_IDLE_MINUTES):
        raise ValueError(
            f"TOOLGATE_SESSION_IDLE_MINUTES must be a number of minutes from 1 to {MAX_IDLE_MINUTES} (got {idle!r})."
        )
    first_wait = config.get("LOGIN_THROTTLE_SECONDS")
    if not (_is_number(first_wait) and 0 < first_wait <= login_throttle.MAX_WAIT_SECONDS):
        raise ValueError(
            "TOOLGATE_LOGIN_THROTTLE_SECONDS must be a number of seconds above 0, at most "
            f"{login_throttle.MAX_WAIT_SECONDS} (got {first_wait!r})."
        )
    password_hash = config.get("ADMIN_PASSWORD_HASH")
    if not password_hash:
        return
    try:
        check_password_hash(password_hash, "")
        readable = password_hash.count("$") == 2
    except ValueError:
        readable = False
    if not readable:
        raise ValueError(
            "TOOLGATE_ADMIN_PASSWORD_HASH is not a password hash: make one with `flask --app app hash-password`."
        )


def signed_in():
    """Whether the request's cookie names a live session (asked once per request: it counts as a use)."""
    if "signed_in" not in g:
        g.signed_in = session_store.session_is_live(
            get_db(), session.get(SESSION_KEY), _session_mark(), _idle_seconds()
        )
    return g.signed_in


def _safe_next(target):
    """Where to go after logging in: a path on this site only, never another site."""
    return target if target and SITE_PATH.fullmatch(target) else url_for("agents.list_agents")


def _api_token(api_key_header=False, generation=None):
    """The valid API token the request carries, or None: as `Authorization: Bearer …`, or with `api_key_header`
    (the policy proxy) as `X-Api-Key: …`, where Anthropic's clients send their key; as found under the settings'
    `generation` (store.tokens.find_token), when given. Kept on `g` for request_credential."""
    authorization = request.authorization
    if authorization is not None and authorization.type == "bearer" and authorization.token:
        secret = authorization.token
    else:
        secret = request.headers.get("X-Api-Key") if api_key_header else None
    g.api_token = token_store.find_token(get_db(), secret, generation) if secret else None
    return g.api_token


def _proxy_refusal():
    """The policy proxy's answer to a request whose token is refused under the settings' generation on `g`, or None
    when it may go on."""
    token = _api_token(api_key_header=True, generation=g.settings_generation)
    if token is not None:
        refusal = _limited_to(token)
        return None if refusal is None else proxy_error(403, refusal, code="permission_denied")
    message = "The policy proxy needs an API token as the API key (see the Tokens page)."
    response, status = proxy_error(401, message, code="invalid_api_key")
    response.headers["WWW-Authenticate"] = 'Bearer realm="Toolgate policy proxy"'
    return response, status


def _check_proxy_token():
    """The refusal of a proxied request's token, or None. The settings' generation it is checked under (and the
    agent's settings read, services.proxy) is read once for both; a request the proxy answers goes on under the one
    its process saw last instead, which its look-up confirms (services.proxy.SettingsChanged) — one round trip fewer
    on PostgreSQL. A token refused under that one is checked again under the current one: it may have been made, or
    widened, elsewhere meanwhile."""
    db = get_db()
    if request.endpoint in ANSWERING_ENDPOINTS:
        g.settings_generation, g.generation_confirmed = settings_generation.to_go_on_under(db)
    else:
        g.settings_generation, g.generation_confirmed = settings_generation.current(db), True
    refusal = _proxy_refusal()
    return refusal if refusal is None or g.generation_confirmed else confirmed_proxy_refusal()


def confirmed_proxy_refusal(generation=None):
    """With the login on, a proxied request whose token was checked under a settings' generation not read for it:
    its token checked again under the current one (`generation` when the caller read it, else read now); the
    refusal to answer with, or None. Before anything but its answer is sent (an error found before its look-up), so
    that a token revoked elsewhere a moment ago is told so, and a request the proxy serves again under the new
    generation is still allowed to."""
    if not login_enabled() or g.get("generation_confirmed", True):
        return None
    g.settings_generation = settings_generation.current(get_db()) if generation is None else generation
    g.generation_confirmed = True
    return _proxy_refusal()


def _limited_to(token):
    """The sentence that refuses a token limited to agents here, or None when it may go on."""
    agents = token["agents"]
    if not agents or (is_proxy_request() and request.path.split("/")[2] in agents):
        return None
    return f"This API token may only reach the policy proxy of the agent(s) {', '.join(agents)} (/proxy/<agent>/v1)."


def request_credential():
    """Who is asking, as a kept response records its creator: "token:<id>" for an API token; None with the login
    off, when everything is open to everyone."""
    if not login_enabled():
        return None
    token = g.get("api_token")
    return f"token:{token['id']}" if token is not None else None


@bp.before_app_request
def require_login():
    if not login_enabled() or request.endpoint in OPEN_ENDPOINTS:
        return None
    if is_proxy_request():  # an OpenAI or Anthropic client: its API key is the token
        return _check_proxy_token()
    if is_api_request():
        token = _api_token()
        if token is not None:
            refusal = _limited_to(token)
            return None if refusal is None else json_error(403, refusal, "Authorization")
        response, status = json_error(
            401, "needs an API token: send 'Authorization: Bearer <token>' (see the Tokens page)", "Authorization"
        )
        response.headers["WWW-Authenticate"] = 'Bearer realm="Toolgate API"'
        return response, status
    if signed_in():
        return None
    if request.headers.get("HX-Request") == "true":
        body, status = error_response(401, "Logged out", "Your session has ended: log in again.")
        return body, status, {"X-Login-URL": url_for("auth.login")}
    target = request.full_path.removesuffix("?") if request.method == "GET" else request.path
    return redirect(url_for("auth.login", next=target), 303)


@bp.app_context_processor
def login_state():
    enabled = login_enabled()
    return {"login_enabled": enabled, "signed_in": enabled and signed_in()}


@bp.route("/login", methods=["GET", "POST"])
def login():
    next_url = _safe_next(request.args.get("next"))
    if not login_enabled() or signed_in():
        return redirect(next_url, 303)
    form = LoginForm()
    if not form.validate_on_submit():
        return render_template("auth/login.html", form=form), 400 if request.method == "POST" else 200
    client = request.remote_addr or "unknown"
    wait = failure_store.start_attempt(get_db(), client, login_throttle.wait_rule(_first_wait()))
    if wait is not None:
        form.password.errors = [login_throttle.message(wait)]
        headers = {"Retry-After": login_throttle.retry_after(wait)}
        return render_template("auth/login.html", form=form), 429, headers
    if not _password_matches(form.password.data or ""):
        form.password.errors = ["Password is not right."]
        return render_template("auth/login.html", form=form), 400
    failure_store.attempt_succeeded(get_db(), client)
    session.clear()  # nothing from before the login carries over into the signed-in session
    session[SESSION_KEY] = session_store.start_session(get_db(), _session_mark(), _idle_seconds())
    return redirect(next_url, 303)


@bp.post("/logout")
def logout():
    session_store.end_session(get_db(), session.get(SESSION_KEY))  # every copy of the cookie, not just this one
    session.clear()
    return redirect(url_for("auth.login") if login_enabled() else url_for("agents.list_agents"), 303)


def _end_sessions_of_other_passwords(app):
    """A password changed while the app was stopped (or the login turned off) ends every session of the old one."""
    connection = open_db(app.config["DATABASE_URL"])
    try:
        with app.app_context():
            session_store.end_sessions_of_other_passwords(connection, _session_mark() if login_enabled() else None)
    finally:
        connection.close()


def init_app(app):
    check_password_settings(app.config)
    _end_sessions_of_other_passwords(app)
    app.session_interface = SessionCookies()
    app.register_blueprint(bp)
