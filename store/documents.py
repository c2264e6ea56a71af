"""Documents: the knowledge base the documents tools read. Rows live in `documents`; the engine's own full-text
index keeps in step (store/search.py). `DocumentTable` is the engine's DocumentStore over that table, on the caller's
connection or on connections of the pool."""

import re
from contextlib import nullcontext

from engine.config import LABEL_MAX, check_text

from . import ValidationError, execute, get_row, insert_row, now, row_exists, select_rows, update_row
from .db import pooled_db, write_transaction
from .search import search_documents

DOCUMENT_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,127}$")
RESERVED_IDS = ("new",)  # /documents/new is the create page
BODY_MAX = 200_000


def validate_document(data):
    """{"id", "title", "body"} checked and cleaned (line endings normalised); raises ValidationError."""
    if not isinstance(data, dict):
        raise ValidationError({"document": "must be a JSON object"})
    errors = {}
    for key in data:
        if key not in ("id", "title", "body"):
            errors[key] = "is not a document field"
    doc_id = data.get("id")
    if not isinstance(doc_id, str) or not DOCUMENT_ID_PATTERN.match(doc_id):
        errors["id"] = (
            "must start with a lowercase letter or digit and contain only lowercase letters, digits, "
            "hyphens and underscores (at most 128 characters)"
        )
    elif doc_id in RESERVED_IDS:
        errors["id"] = f'"{doc_id}" is reserved; choose another id'
    check_text(errors, data, "title", LABEL_MAX, required=True)
    check_text(errors, data, "body", BODY_MAX, required=True)
    if errors:
        raise ValidationError(errors)
    return {"id": doc_id, "title": data["title"].strip(), "body": data["body"].replace("\r\n", "\n")}


def list_documents(db):
    """Every document without its body: {"id", "title", "updated_at", "length"}, by title."""
    return select_rows(
        db, "SELECT id, title, updated_at, length(body) AS length FROM documents ORDER BY lower(title), id"
    )


def get_document(db, doc_id):
    return get_row(db, "documents", doc_id, f'No document with id "{doc_id}".')


def document_exists(db, doc_id):
    return row_exists(db, "documents", doc_id)


def create_document(db, data):
    document = validate_document(data)
    with write_transaction(db):
        if document_exists(db, document["id"]):
            raise ValidationError({"id": f'is already used by another document ("{document["id"]}")'})
        insert_row(db, "documents", {**document, "updated_at": now()})
    return get_document(db, document["id"])


def update_document(db, doc_id, data):
    document = validate_document({**data, "id": doc_id})
    with write_transaction(db):
        get_document(db, doc_id)
        update_row(db, "documents", doc_id, {"title": document["title"], "body": document["body"], "updated_at": now()})
    return get_document(db, doc_id)


def delete_document(db, doc_id):
    with write_transaction(db):
        get_document(db, doc_id)
        execute(db, "DELETE FROM documents WHERE id = :id", {"id": doc_id})


def import_documents(db, documents, replace=False):
    """Store many documents in one transaction (all valid, or none stored). Existing ids are kept unless
    `replace`. Returns the ids written."""
    cleaned = [validate_document(document) for document in documents]
    written = []
    with write_transaction(db):
        for document in cleaned:
            if document_exists(db, document["id"]):
                if not replace:
                    continue
                update_row(
                    db,
                    "documents",
                    document["id"],
                    {"title": document["title"], "body": document["body"], "updated_at": now()},
                )
            else:
                insert_row(db, "documents", {**document, "updated_at": now()})
            written.append(document["id"])
    return written


class DocumentTable:
    """The engine's DocumentStore (engine.tools.documents) over the app's documents table: the run sees every
    committed change. `database` is a connection, every read made on it, or the database's URL: each read then takes
    a connection of the pool and gives it back at once, so that a run that reads documents holds none while its model
    answers or its other tools run (services/runs.py)."""

    def __init__(self, database):
        self.database = database

    def _connection(self):
        return pooled_db(self.database) if isinstance(self.database, str) else nullcontext(self.database)

    def list_documents(self):
        with self._connection() as db:
            return select_rows(db, "SELECT id, title FROM documents ORDER BY title, id")

    def get(self, doc_id):
        with self._connection() as db:
            rows = select_rows(db, "SELECT id, title, body FROM documents WHERE id = :id", {"id": doc_id})
        return rows[0] if rows else None

    def search(self, query, limit=3):
        with self._connection() as db:
            return search_documents(db, query, limit)
