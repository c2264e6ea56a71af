"""The database connection: one sqlite-utils Database per request, taken from a pool of idle ones, kept on `g` and
given back at teardown; and the one helper every write goes through.

Outside a request (the CLI at start-up, migrations) use `open_db(path)`. Every connection switches foreign
keys on, which SQLite leaves off by default.

Under gevent (`make run`) a query holds up every other request of its worker process while it runs, waiting for a
lock included: a write transaction never waits on the network (nothing in store/ asks a model inside one).

`write_transaction(db)` is the only way store/ writes. sqlite-utils' `db.atomic()` begins a deferred transaction
and then reads the schema inside it; when another connection commits in between, the upgrade to a write lock
fails at once with "database is locked", whatever the busy timeout. `BEGIN IMMEDIATE` takes the write lock when
the transaction begins, and waits up to the busy timeout for it, so writers queue instead of failing. A write that
many requests make at the same moment (a run recorded) goes through `write_together(db, write)`, which commits them
in one transaction of that kind.
"""

import os
import sqlite3
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager

import sqlite_utils
from flask import current_app, g

BUSY_TIMEOUT_MS = 10_000


def open_db(path, any_thread=False):
    """A connection to the database file; `any_thread`: one thread at a time may use it, whichever (the pool's)."""
    db = sqlite_utils.Database(sqlite3.connect(path, check_same_thread=not any_thread))
    db.execute("PRAGMA foreign_keys=ON")
    db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    # With WAL, NORMAL survives an application crash and only fsyncs at checkpoints: each stored run is cheaper.
    db.execute("PRAGMA synchronous=NORMAL")
    # A savepoint journals each page it changes first (every write of a group commit has one): in memory, not in
    # a temporary file created, written and deleted by every transaction.
    db.execute("PRAGMA temp_store=MEMORY")
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


class _Write:
    def __init__(self, write):
        self.write = write
        self.done = threading.Event()
        self.result = None
        self.error = None


class _GroupCommit:
    """The writes waiting to be committed to one database file, and whether a request is committing them."""

    def __init__(self):
        self.lock = threading.Lock()
        self.waiting = []
        self.committing = False


_groups = {}  # database path -> _GroupCommit
_groups_lock = threading.Lock()


def write_together(db, write):
    """`write(db)`, committed in one write transaction with the writes other requests of this process hand in at
    the same moment (a group commit); its result. Each request returns only once its own write is committed, so an
    answer never names a run a crash could lose; the transaction's cost (the write lock, the commit writing every
    page it changed to the WAL) is paid once for the group. A write that raises fails alone.

    The first request to hand one in commits: it lets the other requests that are ready run first (under gevent,
    those whose answer came in meanwhile), so they can join, then commits on its connection whatever has come in.
    Inside a transaction already, or on a database without a file, the write runs on its own."""
    path = None if db.conn.in_transaction else db.execute("PRAGMA database_list").fetchone()[2]
    if not path:
        with write_transaction(db):
            return write(db)
    with _groups_lock:
        group = _groups.setdefault(path, _GroupCommit())
    mine = _Write(write)
    with group.lock:
        group.waiting.append(mine)
        commits = not group.committing
        group.committing = True
    if commits:
        time.sleep(0)  # the requests ready to run now hand in their writes first
        _commit_waiting(db, group)
    mine.done.wait()
    if mine.error is not None:
        raise mine.error
    return mine.result


def _commit_waiting(db, group):
    """Commit what the group's requests hand in, until none is waiting: each write in a savepoint of its own. A
    commit that fails fails the writes it held, each request raising the error itself. A request stopped while it
    commits (gevent stops a greenlet with an exception that is not an Exception) fails those, and the writes still
    waiting, which no request would commit any more, and stops."""
    while True:
        with group.lock:
            batch, group.waiting = group.waiting, []
            if not batch:
                group.committing = False
                return
        try:
            with write_transaction(db):
                for pending in batch:
                    try:
                        with write_transaction(db):
                            pending.result = pending.write(db)
                    except Exception as error:  # noqa: BLE001 - the request whose write it was raises it
                        pending.error = error
        except Exception as error:  # noqa: BLE001 - the commit failed: so did every write it held
            for pending in batch:
                pending.error = error
        except BaseException:
            stopped = sqlite3.OperationalError("The write was not committed: the request committing it was stopped.")
            with group.lock:
                batch += group.waiting
                group.waiting = []
                group.committing = False
            for pending in batch:
                pending.error = stopped
                pending.done.set()
            raise
        for pending in batch:
            pending.done.set()


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


class _ConnectionPool:
    """Idle connections per database file, handed to one request at a time. Opening a connection costs more than
    the queries of a proxied request (about 1.4 ms, half of it CPU, parsing the schema); and SQLite checkpoints the
    WAL, fsync included, when the last connection to a database closes, which a request closing its own paid for
    every time. A request holds its connection until it ends, so under gevent (`make run`) a worker holds as many
    as it has requests in flight: more are opened when none is idle (the pool never makes a request wait), and up
    to IDLE_PER_DATABASE are kept for the next burst (about 150 KB each). Only the databases used last stay open
    (more are opened in the tests only, each of which has its own)."""

    DATABASES = 4
    IDLE_PER_DATABASE = 256

    def __init__(self):
        self._idle = OrderedDict()  # database path -> idle Databases, last returned last
        self._lock = threading.Lock()

    def take(self, path):
        with self._lock:
            idle = self._idle.get(path)
            if idle:
                return idle.pop()
        return open_db(path, any_thread=True)

    def give_back(self, path, db):
        if db.conn.in_transaction:  # a request that failed inside a transaction it opened by hand
            db.conn.rollback()
        closing = []
        with self._lock:
            idle = self._idle.setdefault(path, [])
            self._idle.move_to_end(path)
            if len(idle) < self.IDLE_PER_DATABASE:
                idle.append(db)
            else:
                closing.append(db)
            while len(self._idle) > self.DATABASES:
                closing.extend(self._idle.popitem(last=False)[1])
        for unused in closing:
            unused.close()


_pool = _ConnectionPool()


def get_db():
    """The request's connection, from the pool; back to it at teardown."""
    if "db" not in g:
        g.db_path = current_app.config["DATABASE"]
        g.db = _pool.take(g.db_path)
    return g.db


@contextmanager
def pooled_db(path):
    """A connection from the pool for work that outlives its request (a streamed answer's recording)."""
    db = _pool.take(path)
    try:
        yield db
    finally:
        _pool.give_back(path, db)


def close_db(exception=None):
    db = g.pop("db", None)
    if db is not None:
        _pool.give_back(g.pop("db_path"), db)


def init_app(app):
    app.teardown_appcontext(close_db)
