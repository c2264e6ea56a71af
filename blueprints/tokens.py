"""The Tokens page: create named API tokens (each shown once, then only a hint of it), list and revoke them.
With the login on, the JSON API takes `Authorization: Bearer <token>` and nothing else."""

from flask import Blueprint, render_template, request
from flask_wtf import FlaskForm
from wtforms import StringField

from blueprints import confirm_delete, save_posted
from store import tokens as token_store
from store.db import get_db

bp = Blueprint("tokens", __name__)


class TokenForm(FlaskForm):
    name = StringField(
        "Name",
        description="What the token is for, such as the program that will use it.",
        render_kw={"maxlength": token_store.NAME_MAX, "autocomplete": "off"},
    )

    def field_for(self, key):
        return self.name if key == "name" else None


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
    form = TokenForm()
    if request.method == "GET":
        return _render_list(form)
    saved, form_errors = save_posted(form, token_store.create_token, get_db(), {"name": form.name.data or ""})
    if saved is None:
        return _render_list(form, status=400, form_errors=form_errors)
    token, secret = saved
    # The secret is in this answer only: what is stored is its digest, so it can never be shown again.
    return _render_list(TokenForm(formdata=None), created=token, secret=secret, status=201)


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
