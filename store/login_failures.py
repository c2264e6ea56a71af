"""Failed logins, in the database so that every thread and process of the app counts the same ones. An attempt is
recorded as a failure *before* its password is checked, under the write lock, and cleared when the password was
right: forty attempts sent at once are counted one after the other, and cannot all slip past the throttle before
the first of them is recorded. Failures older than an hour are forgotten."""

import time
from typing import NamedTuple

from . import execute
from .db import write_transaction

KEPT_SECONDS = 3600


class Failures(NamedTuple):
    """The recent failures of one client and of every client: how many, and when the latest was (None: none)."""

    client: int
    client_latest: float | None
    overall: int
    overall_latest: float | None


def start_attempt(db, client, wait_for):
    """Begin a login attempt by `client` (its address): `wait_for(failures, now)` says how long it must still wait,
    or None when it may go ahead. Returns that; when it is None, the attempt is recorded as a failure until
    `attempt_succeeded` clears it."""
    moment = time.time()
    with write_transaction(db):
        execute(db, "DELETE FROM login_failures WHERE failed_at < :oldest", {"oldest": moment - KEPT_SECONDS})
        client_count, client_latest = execute(
            db, "SELECT count(*), max(failed_at) FROM login_failures WHERE client = :client", {"client": client}
        ).fetchone()
        overall_count, overall_latest = execute(db, "SELECT count(*), max(failed_at) FROM login_failures").fetchone()
        wait = wait_for(Failures(client_count, client_latest, overall_count, overall_latest), moment)
        if wait is None:
            execute(
                db,
                "INSERT INTO login_failures (client, failed_at) VALUES (:client, :moment)",
                {"client": client, "moment": moment},
            )
    return wait


def attempt_succeeded(db, client):
    """The right password: the client's failures are forgotten."""
    with write_transaction(db):
        execute(db, "DELETE FROM login_failures WHERE client = :client", {"client": client})
