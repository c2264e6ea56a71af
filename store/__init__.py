"""The store, one module per aggregate: rows in, engine dicts out, over SQLAlchemy Core. Flask only in db.py (the
connection a request keeps on `g`), so the CLI and the tests use the rest outside a request.

Every function takes a SQLAlchemy Connection as its first argument (`store.db.get_db()` in a request,
`store.db.open_db(url)` elsewhere); those that record a run take the database's URL too (store.db.write_together).
The SQL is text with named parameters, in the subset SQLite and PostgreSQL both run unchanged; what must differ
sits behind one function per need. Bad input raises engine.config.ValidationError, re-exported here.
"""

import json
from datetime import UTC, datetime
from functools import lru_cache
from itertools import groupby

from sqlalchemy import text

from engine.config import ValidationError

from .nul_text import escape_nul

__all__ = [
    "ManagedByFile",
    "NotFound",
    "RevisionConflict",
    "ValidationError",
    "execute",
    "get_row",
    "insert_row",
    "insert_rows",
    "now",
    "row_exists",
    "select_rows",
    "select_value",
    "sql",
    "update_row",
]

ID_LIMIT = 2**63  # ids are 64-bit integers on both engines
# Rows one INSERT holds (insert_rows): their values stay well within SQLite's 32,766 bound parameters.
ROWS_PER_INSERT = 100


class NotFound(LookupError):
    """No row with that id; the web layer turns it into a 404."""


class RevisionConflict(Exception):
    """A save carried a revision older (or newer) than the stored one: someone else saved first."""

    def __init__(self, agent_id, current_revision, sent_revision):
        self.current_revision = current_revision
        self.sent_revision = sent_revision
        super().__init__(
            f'The agent "{agent_id}" was saved by someone else since you loaded it: it is now at revision '
            f"{current_revision}, and your save was based on revision {sent_revision}. Nothing was saved."
        )


class ManagedByFile(Exception):
    """A save or delete from the pages, the API or import-agent of an agent that `flask apply` manages: its policy
    file is where it changes. The web layer turns it into a 409 naming the file."""

    def __init__(self, agent_id, path):
        self.agent_id = agent_id
        self.path = path
        super().__init__(
            f'The agent "{agent_id}" is managed by the policy file {path}: change that file and apply it '
            f"(flask --app app apply), or hand the agent back to the pages with "
            f"flask --app app apply --release {agent_id}. Nothing was saved."
        )


def now():
    return datetime.now(UTC).isoformat(timespec="seconds")


def sql(statement):
    """The SQLAlchemy text construct of a statement with named parameters (`:name`), made once per statement."""
    return _text(statement)


@lru_cache(maxsize=1024)
def _text(statement):
    return text(statement)


def execute(db, statement, parameters=None):
    """Run one statement (`parameters`: a dict, or a list of dicts to run it once per dict); the result. On SQLite the
    text goes to the driver as it is, which reads `:name` itself: SQLAlchemy's text construct, compiled and bound on
    each run, cost a proxied request (two statements) 45 microseconds of its 1.3 ms (docs/performance.md)."""
    parameters = parameters if parameters is not None else {}
    if db.dialect.name == "sqlite":
        return db.exec_driver_sql(statement, parameters)
    return db.execute(sql(statement), parameters)


def select_rows(db, statement, parameters=None):
    """The rows of a SELECT as dicts."""
    return [dict(row) for row in execute(db, statement, parameters).mappings()]


def select_value(db, statement, parameters=None):
    """The first column of the first row of a SELECT, or None when it has no row."""
    return execute(db, statement, parameters).scalar()


def _fits(row_id):
    """Whether an id can be looked up at all: an integer beyond 64 bits is nobody's id on either engine."""
    return not isinstance(row_id, int) or -ID_LIMIT <= row_id < ID_LIMIT


def get_row(db, table, row_id, message):
    """The row of `table` with that id as a dict; raises NotFound(message) when there is none (an integer id too
    large for the database included)."""
    rows = select_rows(db, f'SELECT * FROM "{table}" WHERE id = :id', {"id": row_id}) if _fits(row_id) else []
    if not rows:
        raise NotFound(message)
    return rows[0]


def row_exists(db, table, row_id):
    if not _fits(row_id):
        return False
    return select_value(db, f'SELECT 1 FROM "{table}" WHERE id = :id', {"id": row_id}) is not None


def insert_row(db, table, row):
    """Insert a row; returns its id (the one given, or the one the database chose)."""
    return insert_rows(db, table, [row])[0]


def insert_rows(db, table, rows):
    """Insert rows; returns their ids in order (those given, or those the database chose). Rows that have the same
    columns, one after the other, are inserted ROWS_PER_INSERT in each statement (one round trip to PostgreSQL).
    Both engines number the rows of one INSERT in the order they come, though RETURNING may give them back in
    another: the ids chosen, sorted, are the rows' in order."""
    ids = []
    for columns, same in groupby(rows, key=tuple):
        same = list(same)
        names = ", ".join(f'"{column}"' for column in columns)
        for start in range(0, len(same), ROWS_PER_INSERT):
            chunk = same[start : start + ROWS_PER_INSERT]
            chosen = sorted(_INSERT_MANY[db.dialect.name](db, table, names, chunk).scalars())
            ids += [row["id"] for row in chunk] if "id" in columns else chosen
    return ids


def _insert_values(db, table, names, rows):
    """SQLite: one INSERT with a row of parameters per row."""
    columns = tuple(rows[0])
    parameters = {f"{column}_{number}": row[column] for number, row in enumerate(rows) for column in columns}
    return execute(db, _values_statement(table, names, columns, len(rows)), parameters)


@lru_cache(maxsize=256)
def _values_statement(table, names, columns, count):
    """The INSERT of `count` rows of `columns`, written once for each shape (a run's row has 20 columns)."""
    values = ", ".join(f"({', '.join(f':{column}_{number}' for column in columns)})" for number in range(count))
    return f'INSERT INTO "{table}" ({names}) VALUES {values} RETURNING id'


def _insert_json(db, table, names, rows):
    """PostgreSQL: the rows as one JSON parameter, read as rows of the table (psycopg spends microseconds on each
    parameter of a statement, and keeps none of more than 50 parsed). NUL is escaped in each value first
    (store.nul_text.escape_nul): JSON's \\u0000 is no text on PostgreSQL. ASCII JSON, so nothing in it escapes again."""
    escaped = [
        {column: escape_nul(value) if isinstance(value, str) else value for column, value in row.items()}
        for row in rows
    ]
    statement = (
        f'INSERT INTO "{table}" ({names}) SELECT {names} FROM json_populate_recordset(NULL::"{table}", :rows) '
        "RETURNING id"
    )
    return execute(db, statement, {"rows": json.dumps(escaped)})


_INSERT_MANY = {"sqlite": _insert_values, "postgresql": _insert_json}


def update_row(db, table, row_id, values):
    """Set `values` ({column: value}) on the row of `table` with that id."""
    assignments = ", ".join(f'"{column}" = :{column}' for column in values)
    execute(db, f'UPDATE "{table}" SET {assignments} WHERE id = :row_id', {**values, "row_id": row_id})
