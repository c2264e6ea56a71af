"""The database connection: one sqlite-utils Database per request, kept on `g` and closed at teardown, and the
one helper every write goes through.

Outside a request (the CLI at start-up, migrations) use `open_db(path)`. Every connection switches foreign
keys on, which SQLite leaves off by default.

`write_transaction(db)` is the only way store/ writes. sqlite-utils' `db.atomic()` begins a deferred transaction
and then reads the schema inside it; when another connection commits in between, the upgrade to a write lock
fails at once with "database is locked", whatever the busy timeout. `BEGIN IMMEDIATE` takes the write lock when
the transaction begins, and waits up to the busy timeout for it, so writers queue instead of failing.
"""

import os
import sqlite3
import threading
from collections import OrderedDict
from contextlib import contextmanager

import sqlite_utils
from flask import current_app, g

BUSY_TIMEOUT_MS = 10_000


def open_db(path):
    db = sqlite_utils.Database(path)
    db.execute("PRAGMA foreign_keys=ON")
    db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    # With WAL, NORMAL survives an application crash and only fsyncs at checkpoints: each stored run is cheaper.
    db.execute("PRAGMA synchronous=NORMAL")
    return db


@contextmanager
def write_transaction(db):
    """One write transaction that holds the write lock from its first statement: committed when the block ends,
    rolled back if it raises. Inside another one it is a savepoint of the outer transaction."""
    if db.conn.in_transaction:
        with db.atomic():
            yield db
        return
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.rollback()
        raise
    try:
        db.conn.execute("COMMIT")
    except BaseException:
        db.rollback()
        raise


def backup(db, path):
    """Copy the database to a new file at `path` with SQLite's online backup: one consistent snapshot, taken while
    others keep reading and writing (in WAL mode a reader blocks no writer). The copy is one self-contained file.
    It is written beside `path` first and renamed into place, so a failed backup leaves no half-written file."""
    partial = f"{path}.partial"
    target = sqlite3.connect(partial)
    try:
        db.conn.backup(target)
        target.execute("PRAGMA journal_mode=DELETE")  # no -wal file beside the copy
        target.close()
        os.replace(partial, path)
    except BaseException:
        target.close()
        if os.path.exists(partial):
            os.remove(partial)
        raise


def restrict_to_owner(path):
    """Make the database file and its WAL companions owner-only (0600). SQLite gives the companions it creates
    later the database file's mode, so doing this at start-up covers them too."""
    for name in (path, f"{path}-wal", f"{path}-shm"):
        if os.path.exists(name):
            os.chmod(name, 0o600)


_kept_open = OrderedDict()  # database path -> an idle connection to it
_kept_open_lock = threading.Lock()
KEPT_OPEN = 4  # databases; more only in the tests, each of which has its own


def _keep_open(path):
    """Hold one idle connection to the database for the process. SQLite checkpoints the WAL, fsync included, when
    the last connection to a database closes: without this, every request paid for one when it closed its own
    (milliseconds, more than the rest of a proxied request). With it, the WAL is checkpointed as it grows."""
    with _kept_open_lock:
        if path in _kept_open:
            _kept_open.move_to_end(path)
            return
        connection = sqlite3.connect(path, check_same_thread=False)
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opens the file, and its WAL
        _kept_open[path] = connection
        while len(_kept_open) > KEPT_OPEN:
            _kept_open.popitem(last=False)[1].close()


def get_db():
    if "db" not in g:
        path = current_app.config["DATABASE"]
        _keep_open(path)
        g.db = open_db(path)
    return g.db


def close_db(exception=None):
    db = g.pop("db", None)
    if db is not None:
        db.close()


def init_app(app):
    app.teardown_appcontext(close_db)
