"""Login sessions, kept on the server: the signed cookie only names one, so Log out (or a password change) ends
every copy of it, and a session left unused for the idle time ends by itself. As with API tokens, only the SHA-256
of a session's random id is stored: whoever reads the database cannot sign in with what it holds.

A session also records a mark of the password it was opened with (an HMAC the caller makes). The app ends the
sessions of any other password when it starts, and when a request shows the password changed while it ran: a
session opened under another password never opens a page again, even if the password is later changed back."""

import hashlib
import hmac
import secrets
import time

from . import execute
from .db import write_transaction

# A session's last use is written at most this often: not one write per page, at the cost of this much accuracy.
TOUCH_SECONDS = 60


def _digest(session_id):
    return hashlib.sha256(session_id.encode()).hexdigest()


def start_session(db, password_mark, idle_seconds):
    """A new session opened under `password_mark`; returns its id (for the cookie). Sessions idle for longer than
    `idle_seconds` are removed while at it, so the table holds only live ones."""
    session_id = secrets.token_urlsafe(32)
    moment = time.time()
    with write_transaction(db):
        execute(db, "DELETE FROM login_sessions WHERE last_used_at < :oldest", {"oldest": moment - idle_seconds})
        execute(
            db,
            "INSERT INTO login_sessions (id_hash, password_mark, created_at, last_used_at) "
            "VALUES (:id_hash, :password_mark, :moment, :moment)",
            {"id_hash": _digest(session_id), "password_mark": password_mark, "moment": moment},
        )
    return session_id


def session_is_live(db, session_id, password_mark, idle_seconds):
    """Whether the session `session_id` is open, under this password, and was used within `idle_seconds`; using it
    now counts as a use. A session found ended (idle, or opened under another password) is removed."""
    if not isinstance(session_id, str) or not session_id:
        return False
    key = _digest(session_id)
    found = execute(
        db, "SELECT password_mark, last_used_at FROM login_sessions WHERE id_hash = :id_hash", {"id_hash": key}
    ).fetchone()
    if found is None:
        return False
    moment = time.time()
    stored_mark, last_used_at = found
    if not hmac.compare_digest(stored_mark, password_mark):
        end_sessions_of_other_passwords(db, password_mark)
        return False
    if moment - last_used_at > idle_seconds:
        end_session(db, session_id)
        return False
    if moment - last_used_at >= TOUCH_SECONDS:
        with write_transaction(db):
            execute(
                db,
                "UPDATE login_sessions SET last_used_at = :moment WHERE id_hash = :id_hash",
                {"moment": moment, "id_hash": key},
            )
    return True


def end_session(db, session_id):
    """End the session `session_id` wherever its cookie was copied to."""
    if isinstance(session_id, str) and session_id:
        with write_transaction(db):
            execute(db, "DELETE FROM login_sessions WHERE id_hash = :id_hash", {"id_hash": _digest(session_id)})


def end_sessions_of_other_passwords(db, password_mark):
    """End every session not opened under `password_mark`; every session when it is None (the login is off)."""
    with write_transaction(db):
        if password_mark is None:
            execute(db, "DELETE FROM login_sessions")
        else:
            execute(db, "DELETE FROM login_sessions WHERE password_mark != :mark", {"mark": password_mark})
