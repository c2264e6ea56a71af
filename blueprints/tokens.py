"""The Tokens page: create named API tokens (each shown once, then only a hint of it), list and revoke them.
With the login on, the JSON API takes `Authorization: Bearer <token>` and nothing else. A token may be limited to
the proxy of some agents, what a client app should hold: it then opens nothing else (blueprints.auth)."""

from flask import Blueprint, render_template, request
from flask_wtf import FlaskForm
from wtforms import SelectMultipleField, StringField

from blueprints import confirm_delete, save_posted
from store import agents as agent_store
from store import tokens as token_store
from store.db import get_db

bp = Blueprint("tokens", __name__)


class TokenForm(FlaskForm):
    name = StringField(
        "Name",
        description="What the token is for, such as the program that will use it.",
        render_kw={"maxlength": token_store.NAME_MAX, "autocomplete": "off"},
    )
    agents = SelectMultipleField(
        "Only the proxy of",
        description=(
            "Choose agents to make a token for a client app: it then reaches only /proxy/<agent>/v1 of those "
            "agents, and neither the JSON API nor any other agent. Choose none for a token that opens everything."
        ),
        validate_choice=False,  # the store names an agent that does not exist
    )

    def field_for(self, key):
        return {"name": self.name, "agents": self.agents}.get(key)


def _token_form(**kwargs):
    form = TokenForm(**kwargs)
    form.agents.choices = [
        (agent["id"], f"{agent['label']} ({agent['id']})") for agent in agent_store.list_agents(get_db())
    ]
    return form


def _render_list(form, created=None, secret=None, status=200, form_errors=()):
    return (
        render_template(
            "tokens/list.html",
            tokens=token_store.list_tokens(get_db()),
            form=form,
            created=created,
            secret=secret,
            form_errors=form_errors,
        ),
        status,
    )


@bp.route("/tokens", methods=["GET", "POST"])
def list_tokens():
    form = _token_form()
    if request.method == "GET":
        return _render_list(form)
    data = {"name": form.name.data or "", "agents": form.agents.data or []}
    saved, form_errors = save_posted(form, token_store.create_token, get_db(), data)
    if saved is None:
        return _render_list(form, status=400, form_errors=form_errors)
    token, secret = saved
    # The secret is in this answer only: what is stored is its digest, so it can never be shown again.
    return _render_list(_token_form(formdata=None), created=token, secret=secret, status=201)


@bp.route("/tokens/<int:token_id>/revoke", methods=["GET", "POST"])
def revoke_token(token_id):
    db = get_db()
    token = token_store.get_token(db, token_id)
    return confirm_delete(
        "tokens/revoke.html",
        lambda: token_store.revoke_token(db, token_id),
        f'Revoked the token "{token["name"]}": it no longer opens the API.',
        "tokens.list_tokens",
        token=token,
    )
