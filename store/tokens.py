"""API tokens: named secrets that open the JSON API when the login is on. A token is shown once, when it is
created; only its SHA-256 is stored. A random 256-bit secret needs no slow password hash: nobody can guess it from
its digest, and the digest lets a request's token be found in one indexed lookup."""

import hashlib
import secrets

from sqlalchemy.exc import IntegrityError

from engine.config import check_text

from . import ValidationError, execute, get_row, insert_row, now, select_rows, select_value
from .db import write_transaction

PREFIX = "tg_"  # so a token pasted somewhere it should not be is recognisable
NAME_MAX = 100
HINT_LENGTH = len(PREFIX) + 4
COLUMNS = "id, name, hint, created_at"


def _digest(secret):
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(db, data):
    """Create a token from {"name"}; returns (the token's row, the secret to show once). Raises ValidationError."""
    errors = {}
    if not isinstance(data, dict):
        raise ValidationError({"token": "must be a JSON object"})
    check_text(errors, data, "name", NAME_MAX, required=True)
    if errors:
        raise ValidationError(errors)
    name = data["name"].strip()
    secret = PREFIX + secrets.token_urlsafe(32)
    row = {"name": name, "token_hash": _digest(secret), "hint": secret[:HINT_LENGTH], "created_at": now()}
    try:
        with write_transaction(db):
            token_id = insert_row(db, "api_tokens", row)
    except IntegrityError:  # the unique index on the name
        raise ValidationError({"name": f'is already the name of another token ("{name}")'}) from None
    return get_token(db, token_id), secret


def list_tokens(db):
    return select_rows(db, f"SELECT {COLUMNS} FROM api_tokens ORDER BY lower(name), id")


def get_token(db, token_id):
    row = get_row(db, "api_tokens", token_id, f"No API token with id {token_id}.")
    return {key: row[key] for key in ("id", "name", "hint", "created_at")}


def revoke_token(db, token_id):
    with write_transaction(db):
        get_token(db, token_id)
        execute(db, "DELETE FROM api_tokens WHERE id = :id", {"id": token_id})


def token_is_valid(db, secret):
    return select_value(db, "SELECT 1 FROM api_tokens WHERE token_hash = :hash", {"hash": _digest(secret)}) is not None
