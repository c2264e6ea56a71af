"""The database: one SQLAlchemy Engine per database URL per process (its pool holds the connections: on PostgreSQL
POOL_SIZE at most, a request waiting for one to be given back), one connection per request kept on `g` and given
back at teardown, and the helpers every write goes through.

The URL is `TOOLGATE_DATABASE_URL` (`sqlite:///…`, the default, or `postgresql://…`); without it, the SQLite file
`TOOLGATE_DATABASE` names (instance/toolgate.db). Outside a request (the CLI at start-up, migrations, a streamed
answer's recording) use `open_db(url_or_path)`, or `pooled_db(url)` as a context manager.

Under gevent (`make run`) a query holds up every other request of its worker process while it runs, waiting for a
lock included: a write transaction never waits on the network (nothing in store/ asks a model inside one).

Transactions. Every driver connection runs in autocommit, so a read is never held in a transaction (a request's
reads each see what is committed at that moment, as the live pages need). `write_transaction(db)` is the only way
store/ writes: it begins a real transaction, which the `begin` event hook starts with `BEGIN IMMEDIATE` on SQLite
(the way SQLAlchemy's documentation drives pysqlite's transactions itself): a deferred transaction that reads first
fails at once with "database is locked" when another connection commits in between, whatever the busy timeout,
while `BEGIN IMMEDIATE` takes the write lock when it begins and waits up to the busy timeout for it, so writers
queue instead of failing. Inside another one it is a savepoint. A write that many requests make at the same moment
(a run recorded) goes through `write_together(db, write)` or `write_many_together`, which commit them in one such
transaction — or, for a write of one statement that no other joined, in none: one statement is atomic by itself, and
on PostgreSQL BEGIN and COMMIT would be a round trip each.
"""

import os
import sqlite3
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from functools import lru_cache

from flask import current_app, g
from sqlalchemy import create_engine, event, exc
from sqlalchemy.engine import make_url

BUSY_TIMEOUT_MS = 10_000
WRITING = "toolgate_writing"  # set in a connection's `info` while write_transaction holds its transaction
# SQLite: connections a process keeps idle for the next burst; more are opened when none is idle (a SQLite file has
# no limit on connections, and under gevent a worker holds as many as it has requests doing database work).
IDLE_PER_DATABASE = 256
# PostgreSQL: the connections a process opens to a database at most (TOOLGATE_DATABASE_POOL_SIZE), and how long a
# request waits for one of them when all are in use (TOOLGATE_DATABASE_POOL_TIMEOUT, seconds) before it is answered
# 503. The server refuses connections past its max_connections (100 by default, 3 of them kept for superusers):
# `make run` starts 2 worker processes, so a replica opens 2 x 10 = 20 at most, and 4 replicas 80.
POOL_SIZE = 10
POOL_TIMEOUT_SECONDS = 30
ENGINES = 4  # only the databases used last keep their pools (more are opened in the tests only, each its own)


def database_url(setting):
    """The URL of a database setting: a URL as it is, a file path as the SQLite database in that file."""
    setting = str(setting)
    return setting if "://" in setting else f"sqlite:///{setting}"


@lru_cache(maxsize=64)
def sqlite_path(url):
    """The file of a SQLite URL; None for another engine or an in-memory database. (Asked by each write a request
    hands in: the URL parsed once.)"""
    parsed = make_url(database_url(url))
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return parsed.database


def describe(url):
    """How messages name a database: a SQLite file by its path, another by its URL without the password."""
    return sqlite_path(url) or make_url(database_url(url)).render_as_string(hide_password=True)


def _on_sqlite_connect(dbapi_connection, _record):
    # The driver in autocommit: transactions are begun by hand (the `begin` hook), never implicitly by pysqlite.
    dbapi_connection.isolation_level = None
    for pragma in (
        "journal_mode=WAL",  # readers never block the writer (an in-memory database stays in memory)
        "foreign_keys=ON",  # SQLite leaves them off by default
        f"busy_timeout={BUSY_TIMEOUT_MS}",
        # With WAL, NORMAL survives an application crash and only fsyncs at checkpoints: each stored run is cheaper.
        "synchronous=NORMAL",
        # A savepoint journals each page it changes first (every write of a group commit has one): in memory, not in
        # a temporary file created, written and deleted by every transaction.
        "temp_store=MEMORY",
    ):
        dbapi_connection.execute(f"PRAGMA {pragma}")


def _begin_writes(connection):
    """SQLAlchemy begins a transaction before the first statement of a connection: only a write transaction is
    begun in the database, and on SQLite with the write lock."""
    if connection.info.get(WRITING):
        connection.exec_driver_sql("BEGIN IMMEDIATE" if connection.dialect.name == "sqlite" else "BEGIN")


def _build_engine(url, pool):
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(
            parsed,
            connect_args={"check_same_thread": False},
            pool_size=IDLE_PER_DATABASE,
            max_overflow=-1,
        )
        event.listen(engine, "connect", _on_sqlite_connect)
    else:
        size, timeout = pool
        engine = create_engine(
            parsed.set(drivername="postgresql+psycopg"),
            isolation_level="AUTOCOMMIT",
            # Never more than `size` connections: a request waits for one to be given back, up to `timeout` seconds
            # (QueuePool waits on threading's locks, which gunicorn's gevent workers have made gevent's: a request
            # waiting lets the others run, and those give theirs back).
            pool_size=size,
            max_overflow=0,
            pool_timeout=timeout,
            # The connection given back last is taken first: after a burst, requests one at a time keep to the few
            # server processes just used (and the statements psycopg prepared on them after five uses) instead of
            # going round every idle one.
            pool_use_lifo=True,
        )
        from . import postgresql_driver  # psycopg, loaded by a process that uses PostgreSQL only (9 MB a process)

        postgresql_driver.configure(engine)
    event.listen(engine, "begin", _begin_writes)
    return engine


_engines = OrderedDict()  # url -> Engine, last used last
_pools = {}  # url -> (size, timeout) of its pool on PostgreSQL, as the app on that database set them (init_app)
_engines_lock = threading.Lock()


class DatabaseBusy(RuntimeError):
    """Every connection the process may open to the database was in use for as long as a request waits for one."""


def _close(dbapi_connection, _record):
    if dbapi_connection is not None:
        dbapi_connection.close()


def _retire(engines):
    for unused in engines:
        # Its idle connections close now, those in use when their holders give them back to its pool.
        event.listen(unused.pool, "checkin", _close)
        unused.dispose()


def engine_for(url_or_path):
    """The process's Engine for a database URL (or a SQLite file's path)."""
    url = database_url(url_or_path)
    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _engines[url] = _build_engine(url, _pools.get(url, (POOL_SIZE, POOL_TIMEOUT_SECONDS)))
        _engines.move_to_end(url)
        retired = [_engines.popitem(last=False)[1] for _ in range(len(_engines) - ENGINES)]
    _retire(retired)
    return engine


def set_pool(url_or_path, size, timeout):
    """The pool of the database's Engine in this process on PostgreSQL: `size` connections at most, a request
    waiting `timeout` seconds for one. An Engine built with other figures is retired."""
    url = database_url(url_or_path)
    with _engines_lock:
        _pools[url] = (size, timeout)
        engine = _engines.get(url)
        stale = engine is not None and engine.dialect.name != "sqlite"
        stale = stale and (engine.pool.size(), engine.pool.timeout()) != (size, timeout)
        if stale:
            del _engines[url]
    _retire([engine] if stale else [])


def open_db(url_or_path):
    """A connection of the database's pool, for work outside a request; `close()` gives it back. Raises
    DatabaseBusy when none was given back in time (on PostgreSQL, whose pool has a cap)."""
    engine = engine_for(url_or_path)
    try:
        return engine.connect()
    except exc.TimeoutError as error:
        raise DatabaseBusy(
            f"The database is busy: every connection this process may open to it ({engine.pool.size()}) stayed in use "
            f"for {engine.pool.timeout():g} seconds. Try again in a moment."
        ) from error


@contextmanager
def write_transaction(db):
    """One write transaction that holds the write lock from its first statement: committed when the block ends,
    rolled back if it raises. Inside another one it is a savepoint of the outer transaction."""
    if db.info.get(WRITING):
        with db.begin_nested():
            yield db
        return
    if db.in_transaction():  # only reads ran since the last write: nothing is held in the database
        db.commit()
    db.info[WRITING] = True
    try:
        with db.begin():
            yield db
    finally:
        db.info.pop(WRITING, None)


class _Write:
    def __init__(self, write_many, item, one_statement):
        self.write_many = write_many
        self.item = item
        self.one_statement = one_statement
        self.done = threading.Event()
        self.result = None
        self.error = None


class _GroupCommit:
    """The writes waiting to be committed to one database; whether a request is committing them (on a connection it
    holds), and whether one that held none is taking a connection of the pool to commit them."""

    def __init__(self):
        self.lock = threading.Lock()
        self.waiting = []
        self.committing = False
        self.opening = False


class WriteNotCommitted(RuntimeError):
    """The request committing a group's writes was stopped before they were committed."""


_groups = {}  # database URL -> _GroupCommit
# How long the first request of a group lets the others run before it commits, when others are about to hand theirs
# in: a turn of gevent's loop, in which the requests whose answers came in meanwhile join the group. time.sleep(0)
# would run only the greenlets already scheduled, never those the network woke: measured so, every group held one
# run, and each run paid a transaction of its own (on SQLite, its commit writes every page of the runs table's 13
# indexes it changed; 160 against 55 microseconds a run committed together, in SQLite's C alone).
GATHER_SECONDS = 0.0002
_groups_lock = threading.Lock()


def _each_alone(db, writes):
    return [write(db) for write in writes]


def write_together(db, write, gather=False, one_statement=False):
    """`write(db)`, committed with the writes other requests hand in at the same moment (write_many_together);
    its result."""
    return write_many_together(db, _each_alone, write, gather, one_statement)


def write_many_together(db, write_many, item, gather=False, one_statement=False):
    """The write of `item`, committed in one write transaction with the writes other requests of this process hand
    in at the same moment (a group commit); its result. `write_many(db, items)` writes items and returns their
    results in order: the items handed in with the same write_many are written by one call of it (one INSERT of
    many rows, say), so the statements of a group do not grow with the writes it holds. Each request returns only
    once its own write is committed, so an answer never names a run a crash could lose; the transaction's cost (the
    write lock, the commit writing every page it changed to the WAL; on PostgreSQL a round trip per statement) is
    paid once for the group. A write that raises fails alone.

    `db` is the request's connection, or the database's URL when the request holds none (a proxied request records
    its run so): its write is handed in without a connection, and only the request that commits takes one. `gather`:
    other requests of this process are about to hand theirs in (proxied requests in flight), so the first lets those
    that are ready run for GATHER_SECONDS before it commits. `one_statement`: `write_many(db, [item])` makes one
    statement, which is atomic by itself: when no other write joins it, it is committed as it runs, without a
    transaction (on PostgreSQL its BEGIN and COMMIT are a round trip each, more than the statement's own).

    The first request to hand one in commits: it lets the other requests that are ready run first (under gevent,
    those whose answer came in meanwhile), so they can join, then commits on its connection whatever has come in.
    A request that holds a connection never waits for one of the pool meanwhile, since on PostgreSQL the pool has a
    cap and every connection could be held by requests waiting so: it waits only for a request that commits on a
    connection it holds already. A request that holds none and finds nobody committing takes a connection first
    (waiting for the pool holding nothing), meanwhile the writes handed in wait for it, unless a request that holds
    one comes and commits them. Inside a write transaction already, or on an in-memory database, the write runs on
    its own."""
    if isinstance(db, str):
        return _hand_in_without_connection(db, _Write(write_many, item, one_statement), gather)
    url = db.engine.url
    if db.info.get(WRITING) or _in_memory(url):
        with write_transaction(db):
            return write_many(db, [item])[0]
    group = _group(url)
    mine = _Write(write_many, item, one_statement)
    with group.lock:
        group.waiting.append(mine)
        commits = not group.committing
        group.committing = True
    if commits:
        time.sleep(0)  # the requests ready to run now hand in their writes first
        _commit_waiting(db, group)
    return _outcome(mine)


def _in_memory(url):
    return url.get_backend_name() == "sqlite" and sqlite_path(str(url)) is None


def _group(url):
    with _groups_lock:
        return _groups.setdefault(str(url), _GroupCommit())


def _outcome(write):
    write.done.wait()
    if write.error is not None:
        raise write.error
    return write.result


def _hand_in_without_connection(url_or_path, mine, gather):
    url = engine_for(url_or_path).url
    if _in_memory(url):
        with pooled_db(url_or_path) as db, write_transaction(db):
            return mine.write_many(db, [mine.item])[0]
    group = _group(url)
    with group.lock:
        group.waiting.append(mine)
        opens = not (group.committing or group.opening)
        group.opening = group.opening or opens
    if opens:
        if gather:
            time.sleep(GATHER_SECONDS)
        try:
            db = open_db(url_or_path)
        except BaseException as error:
            _fail_waiting_unless_committed(group, error)
            if not isinstance(error, Exception):
                raise
        else:
            try:
                with group.lock:
                    group.opening = False
                    commits = bool(group.waiting) and not group.committing
                    group.committing = group.committing or commits
                if commits:
                    _commit_waiting(db, group)
            finally:
                db.close()
    return _outcome(mine)


def _fail_waiting_unless_committed(group, error):
    """No connection for the writes handed in without one (`error`: the pool's DatabaseBusy, or what stopped the
    request taking it): they fail, unless a request holding a connection is committing them."""
    with group.lock:
        group.opening = False
        failed = [] if group.committing else group.waiting
        if not group.committing:
            group.waiting = []
    if not isinstance(error, Exception):
        error = WriteNotCommitted("The write was not committed: the request committing it was stopped.")
    for pending in failed:
        pending.error = error
        pending.done.set()


class _WriteFailed(Exception):
    """A write of a batch raised: the batch is written again, each write in a savepoint of its own."""


def _commit_batch(db, batch):
    """Commit a batch of writes in one transaction, a write that raises failing alone. The writes are made
    together first, one call of each write_many for all its items, with no savepoint (on PostgreSQL each costs a
    round trip); if one raises, that transaction is rolled back and the batch is written again, each write on its
    own in a savepoint, rolled back alone if it raises. A lone write of one statement is made without a
    transaction."""
    if len(batch) == 1 and batch[0].one_statement:
        [pending] = batch
        try:
            pending.result = pending.write_many(db, [pending.item])[0]
        except Exception as error:  # noqa: BLE001 - the request whose write it was raises it
            pending.error = error
        return
    together = {}
    for pending in batch:
        together.setdefault(pending.write_many, []).append(pending)
    try:
        with write_transaction(db):
            for write_many, writes in together.items():
                try:
                    results = write_many(db, [pending.item for pending in writes])
                except Exception as error:
                    raise _WriteFailed from error
                for pending, result in zip(writes, results, strict=True):
                    pending.result = result
        return
    except _WriteFailed:
        pass
    with write_transaction(db):
        for pending in batch:
            try:
                with write_transaction(db):
                    pending.result = pending.write_many(db, [pending.item])[0]
            except Exception as error:  # noqa: BLE001 - the request whose write it was raises it
                pending.error = error


def _commit_waiting(db, group):
    """Commit what the group's requests hand in, until none is waiting (_commit_batch). A commit that fails fails
    the writes it held, each request raising the error itself. A request stopped while it commits (gevent stops a
    greenlet with an exception that is not an Exception) fails those, and the writes still waiting, which no
    request would commit any more, and stops."""
    while True:
        with group.lock:
            batch, group.waiting = group.waiting, []
            if not batch:
                group.committing = False
                return
        try:
            _commit_batch(db, batch)
        except Exception as error:  # noqa: BLE001 - the commit failed: so did every write it held
            for pending in batch:
                pending.error = error
        except BaseException:
            stopped = WriteNotCommitted("The write was not committed: the request committing it was stopped.")
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
    """Copy a SQLite database to a new file at `path` with SQLite's online backup: one consistent snapshot, taken
    while others keep reading and writing (in WAL mode a reader blocks no writer). The copy is one self-contained
    file. It is written beside `path` first and renamed into place, so a failed backup leaves no half-written file."""
    partial = f"{path}.partial"
    target = sqlite3.connect(partial)
    try:
        db.connection.driver_connection.backup(target)
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


def get_db():
    """The request's connection, from the pool; back to it at teardown."""
    if "db" not in g:
        g.db = open_db(current_app.config["DATABASE_URL"])
    return g.db


@contextmanager
def pooled_db(url):
    """A connection from the pool for work that outlives its request (a streamed answer's recording)."""
    db = open_db(url)
    try:
        yield db
    finally:
        db.close()


def close_db(exception=None):
    """The request's connection back to its pool: at teardown, or before a request goes on to wait on the network
    (the proxy), so that it holds none meanwhile; a later get_db() takes another."""
    db = g.pop("db", None)
    if db is not None:
        db.close()


def _is_number(value):
    return isinstance(value, int | float) and not isinstance(value, bool)


def init_app(app):
    """The app's database URL, its pool on PostgreSQL (DATABASE_POOL_SIZE, DATABASE_POOL_TIMEOUT: refused at start-up
    unless in range), and the request's connection given back at teardown."""
    app.config["DATABASE_URL"] = database_url(app.config.get("DATABASE_URL") or app.config["DATABASE"])
    size, timeout = app.config["DATABASE_POOL_SIZE"], app.config["DATABASE_POOL_TIMEOUT"]
    if not (_is_number(size) and size == int(size) and size >= 1):
        raise ValueError(f"TOOLGATE_DATABASE_POOL_SIZE must be a whole number, 1 or more (got {size!r}).")
    if not (_is_number(timeout) and timeout > 0):
        raise ValueError(f"TOOLGATE_DATABASE_POOL_TIMEOUT must be a number of seconds above 0 (got {timeout!r}).")
    set_pool(app.config["DATABASE_URL"], int(size), timeout)
    app.teardown_appcontext(close_db)
