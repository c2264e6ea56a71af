"""Writes handed in at the same moment by many requests are committed together (store.db.write_together), each on
the database when its request goes on, and one that fails fails alone. Real threads, each with its own connection
to one database for its length, as the server's requests have (or none: a proxied request hands its run in by the
database's URL), on both engines; gunicorn's gevent workers are covered in test_serving_load.py (200 proxied runs
recorded at once) and test_database_pool.py. On PostgreSQL the pool has a cap (store.db.POOL_SIZE), below the
requests of most tests here: they wait for one another's connections."""

import threading
import time

import pytest
from sqlalchemy import event

from app import create_app
from store import execute, select_value
from store import runs as run_store
from store.db import WRITING, engine_for, open_db, pooled_db, set_pool, write_together, write_transaction
from tests.database import Database
from tests.live_http import all_at_once

pytestmark = pytest.mark.both_engines

THREADS = 24


NOTES = {
    "sqlite": "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE)",
    "postgresql": "CREATE TABLE notes (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, text TEXT NOT NULL UNIQUE)",
}


@pytest.fixture
def database(tmp_path, engine, request):
    """The URL of a migrated database with a `notes` table besides."""
    if engine == "sqlite":
        url = str(tmp_path / "toolgate.db")
        create_app({"DATABASE": url, "SECRET_KEY": "write together"}, instance_path=str(tmp_path))
    else:
        cluster, template = request.getfixturevalue("postgresql_template")
        url = cluster.create_database(template=template)
    db = Database(url)
    db.execute(NOTES[engine])
    db.close()
    return url


def as_requests(database, task, arguments, timeout=120):
    """`task(db, argument)` for every argument at once, each in a thread of its own with a connection of the pool for
    its length (given back when it ends, as a request gives back its own at teardown); their results in order."""

    def request(argument):
        with pooled_db(database) as db:
            return task(db, argument)

    return all_at_once(request, arguments, timeout)


@pytest.fixture(params=["with its connection", "without a connection"])
def hand_in(request, database):
    """How a request hands in `write` (write_together): on a connection of the pool it holds meanwhile, as a page's
    request does, or by the database's URL, holding none, as a proxied request records its run."""
    if request.param == "without a connection":
        return lambda write, **options: write_together(database, write, **options)

    def on_its_connection(write, **options):
        with pooled_db(database) as db:
            return write_together(db, write, **options)

    return on_its_connection


def _stored_notes(path):
    db = Database(path)
    try:
        return {row["text"] for row in db.query("SELECT text FROM notes")}
    finally:
        db.close()


def _note(text, slow=False, first=None):
    """A write of the note `text`, after the note `first` if given (a write of two statements)."""

    def write(db):
        if slow:  # the first write of a group holds its transaction while the others come in
            time.sleep(0.05)
        if first is not None:
            execute(db, "INSERT INTO notes (text) VALUES (:text)", {"text": first})
        return select_value(db, "INSERT INTO notes (text) VALUES (:text) RETURNING id", {"text": text})

    return write


def test_runs_saved_by_many_requests_at_once_each_get_their_own_id_and_are_stored(database):

    def save(db, number):
        run = {"agent_id": "canvas", "message": f"request {number}", "stop_reason": "answered", "rounds": []}
        saved = run_store.save_run(db, run)
        return saved["id"], run_store.get_run(db, saved["id"])["message"]

    saved = as_requests(database, save, range(THREADS))

    assert len({run_id for run_id, _ in saved}) == THREADS
    assert sorted(message for _, message in saved) == sorted(f"request {number}" for number in range(THREADS))


def test_runs_committed_together_are_inserted_by_one_statement_each_with_its_own_id(database):
    """The runs of a group are one INSERT, however many (on PostgreSQL a statement is a round trip to the server),
    and each request gets the id of its own run, with its own log entries."""
    inserts = []

    def count(_connection, _cursor, statement, *_):
        if statement.startswith('INSERT INTO "runs"'):
            inserts.append(statement)

    def save(db, number):
        if number == 0:  # holds the group's first commit while the other runs are handed in
            return write_together(db, _note("first", slow=True))
        log = [{"level": "warning", "kind": "call_limit", "agent_id": "canvas", "message": f"entry {number}"}]
        run = {
            "agent_id": "canvas",
            "message": f"request {number}",
            "stop_reason": "answered",
            "rounds": [],
            "log": log,
        }
        run_id = run_store.save_run(db, run)["id"]
        stored = run_store.get_run(db, run_id)
        entries = select_value(db, "SELECT message FROM log WHERE run_id = :id", {"id": run_id})
        return stored["message"], entries

    engine = engine_for(database)
    event.listen(engine, "before_cursor_execute", count)
    try:
        saved = as_requests(database, save, range(THREADS))
    finally:
        event.remove(engine, "before_cursor_execute", count)

    assert saved[1:] == [(f"request {number}", f"entry {number}") for number in range(1, THREADS)]
    # Those handed in while the first commit was held in one, the few that came in before it or after in others:
    # never one a run.
    assert len(inserts) < THREADS // 2


def _rejected(tool, reason):
    return {"name": tool, "status": "rejected", "reason": reason}


def test_runs_inserted_together_are_each_counted(database):
    """The counts the lists and charts read (kept by the database as rows arrive) count every run of a group
    inserted by one statement, several of one key among them, and every log entry."""
    agents, reasons = ("canvas", "ledger"), ("answered", "round_cap", "error")
    calls = [_rejected("search", "call_limit"), _rejected("search", "call_limit"), _rejected("fetch", "unknown_tool")]

    def save(db, number):
        if number == 0:  # holds the group's first commit while the other runs are handed in
            return write_together(db, _note("first", slow=True))
        run = {
            "agent_id": agents[number % 2],
            "message": f"request {number}",
            "stop_reason": reasons[number % 3],
            "rounds_used": number % 2 + 1,
            "rounds": [{"calls": calls[: number % 4]}],
            "log": [{"level": "warning", "kind": "call_limit", "agent_id": agents[number % 2], "message": "limit"}],
        }
        return run_store.save_run(db, run)["id"]

    as_requests(database, save, range(THREADS))

    db = Database(database)
    try:
        assert db.query(
            "SELECT agent_id, stop_reason, count FROM run_counts ORDER BY agent_id, stop_reason"
        ) == db.query(
            "SELECT agent_id, stop_reason, count(*) AS count FROM runs GROUP BY agent_id, stop_reason "
            "ORDER BY agent_id, stop_reason"
        )
        assert db.query(
            "SELECT rounds_used, sum(count) AS count FROM run_chart_counts GROUP BY rounds_used ORDER BY rounds_used"
        ) == db.query("SELECT rounds_used, count(*) AS count FROM runs GROUP BY rounds_used ORDER BY rounds_used")
        assert db.query(
            "SELECT agent_id, sum(count) AS count FROM log_counts GROUP BY agent_id ORDER BY agent_id"
        ) == db.query("SELECT agent_id, count(*) AS count FROM log GROUP BY agent_id ORDER BY agent_id")
        rejected = {
            (row["tool"], row["reason"]): row["count"]
            for row in db.query("SELECT tool, reason, sum(count) AS count FROM rejection_counts GROUP BY tool, reason")
        }
    finally:
        db.close()
    by_count = [number % 4 for number in range(1, THREADS)]
    assert rejected == {
        ("search", "call_limit"): sum(min(count, 2) for count in by_count),
        ("fetch", "unknown_tool"): by_count.count(3),
    }


def test_each_write_is_committed_before_its_request_goes_on(database, hand_in):
    """What a request reads back on another connection right after its write returns is there."""

    def write_then_read_elsewhere(number):
        note_id = hand_in(_note(f"note {number}", slow=number == 0))
        with pooled_db(database) as reader:
            return select_value(reader, "SELECT text FROM notes WHERE id = :id", {"id": note_id})

    assert all_at_once(write_then_read_elsewhere, range(THREADS)) == [f"note {number}" for number in range(THREADS)]


def test_a_write_that_fails_fails_alone_and_the_others_are_committed(database, hand_in):
    db = Database(database)
    db.execute("INSERT INTO notes (text) VALUES ('taken')")
    db.close()

    def write(number):
        text = "taken" if number % 3 == 0 else f"note {number}"  # every third breaks the UNIQUE constraint
        try:
            hand_in(_note(text, slow=number == 1, first=f"before {number}"))
        except Exception as error:  # noqa: BLE001 - which error each request got is the assertion
            return type(error).__name__
        return "committed"

    outcomes = all_at_once(write, range(THREADS))

    assert outcomes == ["IntegrityError" if number % 3 == 0 else "committed" for number in range(THREADS)]
    committed = [number for number in range(THREADS) if number % 3]
    assert _stored_notes(database) == {"taken"} | {f"{part} {n}" for n in committed for part in ("before", "note")}


def _statements_of(database, write):
    """(what `write()` returned or raised, the statements it sent to the database, BEGIN included)."""
    statements = []

    def listen(_connection, _cursor, statement, *_):
        statements.append("BEGIN" if statement in ("BEGIN", "BEGIN IMMEDIATE") else statement)

    engine = engine_for(database)
    event.listen(engine, "before_cursor_execute", listen)
    try:
        try:
            outcome = write()
        except Exception as error:  # noqa: BLE001 - what it raised is part of the assertion
            outcome = type(error).__name__
    finally:
        event.remove(engine, "before_cursor_execute", listen)
    return outcome, statements


def test_a_lone_write_of_one_statement_is_committed_without_a_transaction(database, hand_in):
    """No BEGIN, and no COMMIT (in autocommit the driver sends none): on PostgreSQL each is a round trip, and a
    proxied request answered alone records its run so. What it wrote is there, on another connection."""
    note_id, statements = _statements_of(database, lambda: hand_in(_note("alone"), one_statement=True))

    assert [statement.split()[:3] for statement in statements] == [["INSERT", "INTO", "notes"]]
    with pooled_db(database) as reader:
        assert select_value(reader, "SELECT text FROM notes WHERE id = :id", {"id": note_id}) == "alone"


def test_a_lone_write_of_one_statement_that_fails_raises_and_the_next_is_committed(database, hand_in):
    hand_in(_note("taken"), one_statement=True)

    assert _statements_of(database, lambda: hand_in(_note("taken"), one_statement=True))[0] == "IntegrityError"
    hand_in(_note("after"), one_statement=True)
    assert _stored_notes(database) == {"taken", "after"}


def test_a_lone_write_of_several_statements_is_one_transaction(database, hand_in):
    """Both statements of a write, or neither: its first is rolled back when its second fails."""
    hand_in(_note("taken"))

    outcome, statements = _statements_of(database, lambda: hand_in(_note("taken", first="before")))

    assert outcome == "IntegrityError"
    assert statements[0] == "BEGIN"
    assert _stored_notes(database) == {"taken"}


def test_a_proxied_run_without_log_entries_is_one_insert_and_one_with_entries_a_transaction(database):
    run = {"agent_id": "canvas", "message": "Hi", "stop_reason": "answered", "rounds": []}
    entry = {"level": "warning", "kind": "call_limit", "agent_id": "canvas", "message": "Two calls."}

    saved, alone = _statements_of(database, lambda: run_store.save_run(database, run))
    logged, with_entry = _statements_of(database, lambda: run_store.save_run(database, {**run, "log": [entry]}))

    assert [statement.split()[:3] for statement in alone] == [["INSERT", "INTO", '"runs"']]
    assert [statement.split()[:3] for statement in with_entry] == [
        ["BEGIN"],
        ["INSERT", "INTO", '"runs"'],
        ["INSERT", "INTO", "log"],
    ]
    with pooled_db(database) as reader:
        assert run_store.get_run(reader, saved["id"])["message"] == "Hi"
        assert select_value(reader, "SELECT message FROM log WHERE run_id = :id", {"id": logged["id"]}) == "Two calls."


def test_a_write_inside_a_transaction_joins_it_and_goes_with_its_rollback(database):
    db = open_db(database)
    try:
        with pytest.raises(Stopped), write_transaction(db):
            write_together(db, _note("inside"))
            assert db.in_transaction()
            raise Stopped
    finally:
        db.close()

    assert _stored_notes(database) == set()


class Stopped(BaseException):
    """What stops a request mid-write from outside (gevent kills a greenlet with such an exception)."""


def test_a_commit_stopped_midway_fails_every_write_it_held_and_leaves_none_waiting(database, hand_in):

    def stopping_write(db):
        time.sleep(0.05)  # the other requests hand in their writes meanwhile
        raise Stopped

    def write(number):
        try:
            hand_in(stopping_write if number == 0 else _note(f"note {number}"))
        except Stopped:
            return "stopped"
        except Exception as error:  # noqa: BLE001 - which error each request got is the assertion
            return str(error)
        return "committed"

    outcomes = all_at_once(write, range(THREADS), timeout=30)  # a write left waiting would hang here

    assert outcomes.count("stopped") == 1  # raised where the commit was made, whichever request made it
    assert set(outcomes) <= {
        "stopped",
        "committed",
        "The write was not committed: the request committing it was stopped.",
    }
    committed = {f"note {number}" for number, outcome in enumerate(outcomes) if outcome == "committed"}
    # The request that was stopped may have committed its own write in an earlier commit; no other write is stored
    # unless its request was told so.
    assert _stored_notes(database) - {f"note {outcomes.index('stopped')}"} == committed


class _Checkouts:
    """The most connections of the database's pool in use at once while the block runs."""

    def __init__(self, database):
        self.pool = engine_for(database).pool
        self.lock = threading.Lock()
        self.in_use = self.most = 0

    def _out(self, *_):
        with self.lock:
            self.in_use += 1
            self.most = max(self.most, self.in_use)

    def _in(self, *_):
        with self.lock:
            self.in_use -= 1

    def __enter__(self):
        event.listen(self.pool, "checkout", self._out)
        event.listen(self.pool, "checkin", self._in)
        return self

    def __exit__(self, *_):
        event.remove(self.pool, "checkout", self._out)
        event.remove(self.pool, "checkin", self._in)


def _write_transactions(database):
    begun = []
    event.listen(engine_for(database), "begin", lambda connection: connection.info.get(WRITING) and begun.append(1))
    return begun


def test_more_writers_than_the_pool_has_connections_each_commit_once(database, engine):
    """On PostgreSQL a process opens POOL_SIZE connections at most: 60 requests writing at once through a pool of
    3, half of them holding a connection meanwhile and half handing their write in without one, all finish well
    within the time a request waits for a connection, each write committed once."""
    set_pool(database, 3, 20)

    def write(number):
        note = _note(f"note {number}", slow=number == 0)
        if number % 2:
            return write_together(database, note)
        with pooled_db(database) as db:
            return write_together(db, note)

    started = time.monotonic()
    with _Checkouts(database) as checkouts:
        ids = all_at_once(write, range(60), timeout=60)

    assert time.monotonic() - started < 20
    assert len(set(ids)) == 60
    db = Database(database)
    try:
        copies = {
            row["text"]: row["copies"] for row in db.query("SELECT text, count(*) AS copies FROM notes GROUP BY text")
        }
        assert copies == {f"note {number}": 1 for number in range(60)}
    finally:
        db.close()
    if engine == "postgresql":
        assert checkouts.most == 3


def test_writes_handed_in_without_a_connection_are_committed_together_beyond_the_pool_size(database, engine):
    """A request that hands its write in by the database's URL holds no connection while it waits for the commit:
    the group is not bounded by the pool (on PostgreSQL, 2 connections here), and the 24 writes take fewer commits
    than groups of 2 would."""
    set_pool(database, 2, 20)
    commits = _write_transactions(database)

    with _Checkouts(database) as checkouts:
        ids = all_at_once(lambda number: write_together(database, _note(f"note {number}", slow=number == 0)), range(24))

    assert len(set(ids)) == 24
    assert _stored_notes(database) == {f"note {number}" for number in range(24)}
    assert len(commits) < 24 // 2, f"{len(commits)} commits"  # holding a connection each: 12 or more
    if engine == "postgresql":
        assert checkouts.most <= 2


def test_a_request_holding_a_connection_never_waits_for_one_taking_a_connection(database):
    """Two requests hold the pool's two connections; a third hands its write in without one and waits for the pool
    to commit it. The two then hand in their writes: they commit on their own connections (the third's write with
    theirs) instead of waiting for the third, which waits for their connections: all three are committed at once,
    not when the wait for the pool runs out (20 s)."""
    set_pool(database, 2, 20)
    holding = threading.Barrier(3)

    def write(number):
        if number == 2:
            holding.wait(timeout=10)
            return write_together(database, _note("without a connection"))
        with pooled_db(database) as db:
            holding.wait(timeout=10)
            time.sleep(0.3)  # the third is waiting for the pool meanwhile
            return write_together(db, _note(f"holding {number}"))

    started = time.monotonic()
    all_at_once(write, range(3), timeout=60)

    assert time.monotonic() - started < 10
    assert _stored_notes(database) == {"holding 0", "holding 1", "without a connection"}


def test_writes_handed_in_without_a_connection_fail_busy_when_none_comes_in_time_and_the_next_commits(database, engine):
    """The pool's one connection is held past the wait (0.2 s): on PostgreSQL the writes handed in without a
    connection meanwhile fail with the pool's DatabaseBusy and none is stored; once the connection is back the next
    write commits. SQLite's pool has no cap: they are committed."""
    set_pool(database, 1, 0.2)
    held = open_db(database)
    try:
        outcomes = all_at_once(
            lambda number: _outcome(lambda: write_together(database, _note(f"note {number}"))), range(5)
        )
    finally:
        held.close()
    write_together(database, _note("later"))

    if engine == "postgresql":
        assert outcomes == ["DatabaseBusy"] * 5
        assert _stored_notes(database) == {"later"}
    else:
        assert outcomes == ["committed"] * 5
        assert _stored_notes(database) == {"later"} | {f"note {number}" for number in range(5)}


def _outcome(write):
    try:
        write()
    except Exception as error:  # noqa: BLE001 - which error each request got is the assertion
        return type(error).__name__
    return "committed"
