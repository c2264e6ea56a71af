"""sqlite-utils code per aggregate: rows in, engine dicts out. Flask only in db.py (the connection a request
keeps on `g`), so the CLI and the tests use the rest outside a request.

Every function takes the sqlite-utils Database as its first argument (`store.db.get_db()` in a request,
`store.db.open_db(path)` elsewhere). Bad input raises engine.config.ValidationError, re-exported here.
"""

from datetime import UTC, datetime

from engine.config import ValidationError

__all__ = [
    "ManagedByFile",
    "NotFound",
    "RevisionConflict",
    "ValidationError",
    "get_row",
    "insert_row",
    "now",
    "row_exists",
    "select_rows",
]


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


def select_rows(db, sql, params=()):
    """The rows of a SELECT as dicts. For the requests that must be quick: sqlite-utils' `db.query` wraps each
    SELECT in a savepoint of its own, and `db[table].get` reads the schema (three queries) before every lookup."""
    cursor = db.execute(sql, params)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def get_row(db, table, row_id, message):
    """The row of `table` with that id as a dict; raises NotFound(message) when there is none (an integer id too
    large for SQLite included)."""
    try:
        rows = select_rows(db, f'SELECT * FROM "{table}" WHERE id = ?', [row_id])
    except OverflowError:
        rows = []
    if not rows:
        raise NotFound(message)
    return rows[0]


def row_exists(db, table, row_id):
    try:
        return db.execute(f'SELECT 1 FROM "{table}" WHERE id = ?', [row_id]).fetchone() is not None
    except OverflowError:
        return False


def insert_row(db, table, row):
    """Insert a row of SQLite values (no schema read, unlike sqlite-utils' insert); returns its rowid."""
    columns = ", ".join(f'"{column}"' for column in row)
    marks = ", ".join("?" * len(row))
    return db.execute(f'INSERT INTO "{table}" ({columns}) VALUES ({marks})', list(row.values())).lastrowid
