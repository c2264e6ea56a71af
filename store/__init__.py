"""The store, one module per aggregate: rows in, engine dicts out, over SQLAlchemy Core. Flask only in db.py (the
connection a request keeps on `g`), so the CLI and the tests use the rest outside a request.

Every function takes a SQLAlchemy Connection as its first argument (`store.db.get_db()` in a request,
`store.db.open_db(url)` elsewhere). The SQL is text with named parameters, in the subset SQLite and PostgreSQL both
run unchanged; what must differ sits behind one function per need. Bad input raises
engine.config.ValidationError, re-exported here.
"""

from datetime import UTC, datetime
from functools import lru_cache

from sqlalchemy import text

from engine.config import ValidationError

__all__ = [
    "ManagedByFile",
    "NotFound",
    "RevisionConflict",
    "ValidationError",
    "execute",
    "get_row",
    "insert_row",
    "now",
    "row_exists",
    "select_rows",
    "select_value",
    "sql",
    "update_row",
]

ID_LIMIT = 2**63  # ids are 64-bit integers on both engines


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
    """Run one statement (`parameters`: a dict, or a list of dicts to run it once per dict); the result."""
    return db.execute(sql(statement), parameters if parameters is not None else {})


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
    columns = ", ".join(f'"{column}"' for column in row)
    marks = ", ".join(f":{column}" for column in row)
    return select_value(db, f'INSERT INTO "{table}" ({columns}) VALUES ({marks}) RETURNING id', row)


def update_row(db, table, row_id, values):
    """Set `values` ({column: value}) on the row of `table` with that id."""
    assignments = ", ".join(f'"{column}" = :{column}' for column in values)
    execute(db, f'UPDATE "{table}" SET {assignments} WHERE id = :row_id', {**values, "row_id": row_id})
