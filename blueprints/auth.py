"""The login: off on a machine of one's own, on as soon as TOOLGATE_ADMIN_PASSWORD (or _HASH, a werkzeug password
hash) is set. With it on, every page and fragment needs the session: a page request is sent to the login page, an
htmx request gets a 401 that static/login-redirect.js turns into the same redirect, and the JSON API needs an API
token (`Authorization: Bearer …`, see the Tokens page) instead, and so does the policy proxy, as the API key its
clients send (a bearer token, or `X-Api-Key`, as Anthropic's clients send it).

The session records an HMAC of the configured password, so changing the password ends every session.
"""

import hashlib
import hmac
import re

from flask import Blueprint, current_app, redirect, render_template, request, session, url_for
from flask.sessions import SecureCookieSessionInterface
from flask_wtf import FlaskForm
from werkzeug.security import check_password_hash
from wtforms import PasswordField

from blueprints import error_response, is_api_request, is_proxy_request, json_error, proxy_error
from services.settings import login_enabled
from store import tokens as token_store
from store.db import get_db

bp = Blueprint("auth", __name__)

SESSION_KEY = "signed_in"
OPEN_ENDPOINTS = ("auth.login", "static")
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


def check_password_settings(config):
    """Refuse to start with a password hash that no password could match (a typo would lock everyone out)."""
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
    mark = session.get(SESSION_KEY)
    return isinstance(mark, str) and hmac.compare_digest(mark, _session_mark())


def _safe_next(target):
    """Where to go after logging in: a path on this site only, never another site."""
    return target if target and SITE_PATH.fullmatch(target) else url_for("agents.list_agents")


def _api_token_is_valid(api_key_header=False):
    """Whether the request carries a valid API token: as `Authorization: Bearer …`, or with `api_key_header` (the
    policy proxy) as `X-Api-Key: …`, where Anthropic's clients send their key."""
    authorization = request.authorization
    if authorization is not None and authorization.type == "bearer" and authorization.token:
        token = authorization.token
    else:
        token = request.headers.get("X-Api-Key") if api_key_header else None
    return bool(token) and token_store.token_is_valid(get_db(), token)


@bp.before_app_request
def require_login():
    if not login_enabled() or request.endpoint in OPEN_ENDPOINTS:
        return None
    if is_proxy_request():  # an OpenAI or Anthropic client: its API key is the token
        if _api_token_is_valid(api_key_header=True):
            return None
        message = "The policy proxy needs an API token as the API key (see the Tokens page)."
        response, status = proxy_error(401, message, code="invalid_api_key")
        response.headers["WWW-Authenticate"] = 'Bearer realm="Toolgate policy proxy"'
        return response, status
    if is_api_request():
        if _api_token_is_valid():
            return None
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
    if not _password_matches(form.password.data or ""):
        form.password.errors = ["Password is not right."]
        return render_template("auth/login.html", form=form), 400
    session.clear()  # nothing from before the login carries over into the signed-in session
    session[SESSION_KEY] = _session_mark()
    return redirect(next_url, 303)


@bp.post("/logout")
def logout():
    session.clear()
    return redirect(url_for("auth.login") if login_enabled() else url_for("agents.list_agents"), 303)


def init_app(app):
    check_password_settings(app.config)
    app.session_interface = SessionCookies()
    app.register_blueprint(bp)
