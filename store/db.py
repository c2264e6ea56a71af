"""The database connection: one sqlite-utils Database per request, kept on `g` and closed at teardown.

Outside a request (the CLI at start-up, migrations) use `open_db(path)`. Every connection switches foreign
keys on, which SQLite leaves off by default.
"""

import os

import sqlite_utils
from flask import current_app, g

BUSY_TIMEOUT_MS = 5_000


def open_db(path):
    db = sqlite_utils.Database(path)
    db.execute("PRAGMA foreign_keys=ON")
    db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    # With WAL, NORMAL survives an application crash and only fsyncs at checkpoints: each stored run is cheaper.
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def restrict_to_owner(path):
    """Make the database file and its WAL companions owner-only (0600). SQLite gives the companions it creates
    later the database file's mode, so doing this at start-up covers them too."""
    for name in (path, f"{path}-wal", f"{path}-shm"):
        if os.path.exists(name):
            os.chmod(name, 0o600)


def get_db():
    if "db" not in g:
        g.db = open_db(current_app.config["DATABASE"])
    return g.db


def close_db(exception=None):
    db = g.pop("db", None)
    if db is not None:
        db.close()


def init_app(app):
    app.teardown_appcontext(close_db)
