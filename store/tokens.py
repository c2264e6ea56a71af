"""API tokens: named secrets that open the JSON API when the login is on. A token is shown once, when it is
created; only its SHA-256 is stored. A random 256-bit secret needs no slow password hash: nobody can guess it from
its digest, and the digest lets a request's token be found in one indexed lookup.

A token may be limited to the proxy of named agents (`agents`, their ids): what a client app should hold, since it
then reaches nothing else — not the JSON API, not another agent's proxy. An empty list opens everything."""

import hashlib
import json
import secrets

from sqlalchemy.exc import IntegrityError

from engine.config import check_text

from . import ValidationError, execute, get_row, insert_row, now, row_exists, select_rows
from .db import write_transaction
from .settings_generation import Kept

PREFIX = "tg_"  # so a token pasted somewhere it should not be is recognisable
NAME_MAX = 100
HINT_LENGTH = len(PREFIX) + 4
COLUMNS = "id, name, hint, created_at, agents"


def _digest(secret):
    return hashlib.sha256(secret.encode()).hexdigest()


def _check_agents(errors, db, agents):
    if not isinstance(agents, list) or not all(isinstance(agent_id, str) for agent_id in agents):
        errors["agents"] = "must be a list of agent ids"
        return
    unknown = [agent_id for agent_id in agents if not row_exists(db, "agents", agent_id)]
    if unknown:
        errors["agents"] = f"names no agent with the id {', '.join(unknown)}"


def create_token(db, data):
    """Create a token from {"name", "agents" (optional: the agents whose proxy alone it reaches)}; returns (the
    token's row, the secret to show once). Raises ValidationError."""
    errors = {}
    if not isinstance(data, dict):
        raise ValidationError({"token": "must be a JSON object"})
    check_text(errors, data, "name", NAME_MAX, required=True)
    agents = data.get("agents", [])
    _check_agents(errors, db, agents)
    if errors:
        raise ValidationError(errors)
    name = data["name"].strip()
    secret = PREFIX + secrets.token_urlsafe(32)
    row = {
        "name": name,
        "token_hash": _digest(secret),
        "hint": secret[:HINT_LENGTH],
        "created_at": now(),
        "agents": json.dumps(sorted(set(agents))) if agents else None,
    }
    try:
        with write_transaction(db):
            token_id = insert_row(db, "api_tokens", row)
    except IntegrityError:  # the unique index on the name
        raise ValidationError({"name": f'is already the name of another token ("{name}")'}) from None
    return get_token(db, token_id), secret


def _from_row(row):
    return {**row, "agents": json.loads(row["agents"]) if row["agents"] else []}


def list_tokens(db):
    return [_from_row(row) for row in select_rows(db, f"SELECT {COLUMNS} FROM api_tokens ORDER BY lower(name), id")]


def get_token(db, token_id):
    row = get_row(db, "api_tokens", token_id, f"No API token with id {token_id}.")
    return _from_row({key: row[key] for key in COLUMNS.split(", ")})


def revoke_token(db, token_id):
    with write_transaction(db):
        get_token(db, token_id)
        execute(db, "DELETE FROM api_tokens WHERE id = :id", {"id": token_id})


# What this process found of the tokens it was shown (the SHA-256 of a secret: the token or None), for find_token's
# callers that give the settings' generation (the tokens are in it).
_known = Kept(1024)


def find_token(db, secret, generation=None):
    """The token (id, name, hint, created_at, agents) whose secret this is, or None. With the settings' `generation`
    (store.settings_generation) read first, what was found under the same generation is given again without a read:
    a token revoked since has changed it."""
    digest = _digest(secret)

    def read():
        rows = select_rows(db, f"SELECT {COLUMNS} FROM api_tokens WHERE token_hash = :hash", {"hash": digest})
        return _from_row(rows[0]) if rows else None

    return read() if generation is None else _known.get(digest, generation, read)
