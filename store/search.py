"""The documents' full-text search, one function per engine (as Wagtail keeps one search backend per vendor): FTS5
with bm25 on SQLite, the documents' `tsvector` column with its GIN index and ts_rank on PostgreSQL (both made by
the baseline step). Both look for the same terms (engine.tools.documents.query_terms), any of them, and rank a
title match TITLE_WEIGHT times a body match."""

from engine.tools.documents import TITLE_WEIGHT, fts_query, query_terms

from . import select_rows


def _search_sqlite(db, text, limit):
    return select_rows(
        db,
        "SELECT documents.id, documents.title, documents.body FROM documents_fts "
        "JOIN documents ON documents.rowid = documents_fts.rowid WHERE documents_fts MATCH :match "
        "ORDER BY bm25(documents_fts, :title_weight, 1.0), documents.id LIMIT :limit",
        {"match": fts_query(text), "title_weight": TITLE_WEIGHT, "limit": limit},
    )


# ts_rank's weights of the labels D, C, B (a body match) and A (a title match).
WEIGHTS = f"'{{0, 0, {1 / TITLE_WEIGHT}, 1}}'"


def _search_postgresql(db, text, limit):
    terms = {f"term{number}": term for number, term in enumerate(query_terms(text))}
    query = " || ".join(f"plainto_tsquery('simple', :{name})" for name in terms)
    return select_rows(
        db,
        f"SELECT id, title, body FROM documents, (SELECT {query} AS terms) AS query WHERE search @@ query.terms "
        f"ORDER BY ts_rank({WEIGHTS}, search, query.terms) DESC, id LIMIT :limit",
        {**terms, "limit": limit},
    )


SEARCH = {"sqlite": _search_sqlite, "postgresql": _search_postgresql}


def search_documents(db, text, limit):
    """The documents best matching free text, best first, as {"id", "title", "body"}."""
    if not query_terms(text) or limit < 1:
        return []
    return SEARCH[db.dialect.name](db, text, limit)
