"""Document tools and retrieval (SPEC §6): the store the engine is handed, or the sample corpus standalone.

The engine knows a document store only by its interface (`DocumentStore`); the web app hands it one over its own
documents table (store.documents.DocumentTable). Standalone (no store handed in) it serves the sample corpus in
`engine/corpus/` from a private in-memory FTS5 index, ranked the way the app ranks: `fts_query` and
`TITLE_WEIGHT` are shared by both.
"""

import functools
import re
import sqlite3
import threading
from pathlib import Path
from typing import Protocol

from .. import texts
from .registry import Tool, ToolError

CORPUS_FOLDER = Path(__file__).resolve().parent.parent / "corpus"
CORPUS_SUFFIXES = (".md", ".txt")

# Words too common to help ranking, as text because a word list reads better than 60 quoted strings;
# anything shorter than MIN_TERM_LENGTH is dropped too.
STOP_WORDS_TEXT = """
a an and any are as at be but by can could do does for from had has have how i if in into is it its me my no not
of on or our so than that the their them then there these they this to us was we were what when where which who
why will with would you your
"""
STOP_WORDS = frozenset(STOP_WORDS_TEXT.split())
MIN_TERM_LENGTH = 2
MAX_QUERY_TERMS = 32  # a pasted essay should not become a thousand-term OR query
TITLE_WEIGHT = 2.0  # bm25 weight of a title match relative to a body match


class DocumentStore(Protocol):
    def list_documents(self) -> list[dict]:
        """Every document as {"id", "title"}."""

    def get(self, doc_id: str) -> dict | None:
        """{"id", "title", "body"}, or None when there is no such document."""

    def search(self, query: str, limit: int = 3) -> list[dict]:
        """The documents best matching free text, best first, as {"id", "title", "body"}."""


def query_terms(text):
    """The words of free text a search looks for, at most MAX_QUERY_TERMS: lowercase, no stop word. The app's index
    has no stemmer, so a plural also asks for its singular: "refunds" finds "refund"."""
    terms = []
    for word in re.findall(r"[^\W_]+", text.lower()):
        if len(word) < MIN_TERM_LENGTH or word in STOP_WORDS:
            continue
        for term in (word, word[:-1]) if word.endswith("s") and len(word) > 3 else (word,):
            if term not in terms:
                terms.append(term)
    return terms[:MAX_QUERY_TERMS]


def fts_query(text):
    """A safe FTS5 query for free text: its terms (query_terms), each quoted, joined with OR; '' when no word is
    left. Quoting makes FTS5 syntax in user text (quotes, AND, NEAR, *, column filters) plain words."""
    return " OR ".join(f'"{term}"' for term in query_terms(text))


class MemoryDocumentStore:
    """A DocumentStore over a fixed list of documents, in a private in-memory FTS5 index.

    An in-memory database lives only as long as its connection, so this store keeps one, shared between threads
    under a lock.
    """

    def __init__(self, documents):
        self._lock = threading.Lock()
        self._database = sqlite3.connect(":memory:", check_same_thread=False)
        with self._database:
            self._database.executescript(
                "CREATE TABLE corpus (id TEXT PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL);"
                'CREATE VIRTUAL TABLE corpus_fts USING fts5(title, body, content="corpus");'
            )
            self._database.executemany("INSERT INTO corpus (id, title, body) VALUES (:id, :title, :body)", documents)
            self._database.execute("INSERT INTO corpus_fts (corpus_fts) VALUES ('rebuild')")

    def _rows(self, sql, parameters=()):
        with self._lock:
            cursor = self._database.execute(sql, parameters)
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def list_documents(self):
        return self._rows("SELECT id, title FROM corpus ORDER BY title, id")

    def get(self, doc_id):
        rows = self._rows("SELECT id, title, body FROM corpus WHERE id = ?", (doc_id,))
        return rows[0] if rows else None

    def search(self, query, limit=3):
        match = fts_query(query)
        if not match or limit < 1:
            return []
        return self._rows(
            "SELECT corpus.id, corpus.title, corpus.body FROM corpus_fts "
            "JOIN corpus ON corpus.rowid = corpus_fts.rowid WHERE corpus_fts MATCH ? "
            "ORDER BY bm25(corpus_fts, ?, 1.0), corpus.id LIMIT ?",
            (match, TITLE_WEIGHT, limit),
        )


def load_corpus_files(folder):
    """The .md and .txt files of a folder as documents, by file name: the id is the file stem and the title
    the first non-empty line (for Markdown without its `#`); the rest is the body. Empty files are skipped.
    A file that is not UTF-8 text, or a link to a file outside the folder, raises ValueError naming it."""
    documents = []
    inside = Path(folder).resolve()
    for path in sorted(Path(folder).iterdir()):
        if path.suffix.lower() not in CORPUS_SUFFIXES or not path.is_file():
            continue
        if not path.resolve().is_relative_to(inside):
            raise ValueError(f'The file "{path.name}" is a link to a file outside the folder.')
        try:
            lines = path.read_text(encoding="utf-8-sig").strip().splitlines()
        except UnicodeDecodeError:
            raise ValueError(f'The file "{path.name}" is not UTF-8 text.') from None
        if not lines:
            continue
        title = lines[0].strip()
        if path.suffix.lower() == ".md":
            title = title.lstrip("#").strip()
        documents.append({"id": path.stem, "title": title, "body": "\n".join(lines[1:]).strip()})
    return documents


@functools.cache
def sample_document_store():
    """The sample corpus, built on first use and shared by the whole process (it is read-only)."""
    return MemoryDocumentStore(load_corpus_files(CORPUS_FOLDER))


def store_for(context):
    """The run's document store: the one the engine was handed, else the sample corpus."""
    return context.documents if context.documents is not None else sample_document_store()


def retrieve_into_context(store, question, context, limit=3):
    """Search before the first request; the hits become sources and the text of one system message.

    Returns None when nothing matched, so the caller adds no message at all.
    """
    hits = store.search(question, limit)
    if not hits:
        return None
    blocks = [texts.RETRIEVED_CONTEXT_HEADER]
    for document in hits:
        context.add_source(document["id"], document["title"])
        blocks.append(f"Document id: {document['id']}\nTitle: {document['title']}\n\n{document['body']}")
    return "\n\n".join(blocks)


def list_documents(arguments, context):
    return store_for(context).list_documents()


def read_document(arguments, context):
    doc_id = arguments["doc_id"]
    if doc_id in context.in_context:
        return texts.ALREADY_IN_CONTEXT
    document = store_for(context).get(doc_id)
    if document is None:
        raise ToolError(f'No document with id "{doc_id}". Call list_documents to see the ids.')
    context.add_source(document["id"], document["title"])
    return document


DOCUMENT_TOOLS = [
    Tool(
        name="list_documents",
        description=(
            'List every document in the knowledge base as [{"id", "title"}]. '
            "Use it to find documents that the retrieved context did not include, then read them with read_document."
        ),
        parameters={"type": "object", "properties": {}, "additionalProperties": False},
        handler=list_documents,
        family="documents",
    ),
    Tool(
        name="read_document",
        description=(
            'Read one document by its id. Returns {"id", "title", "body"}. '
            "Documents already in your context (retrieved or read before) need not be read again. "
            "Call it as many times as the question needs."
        ),
        parameters={
            "type": "object",
            "properties": {
                "doc_id": {
                    "type": "string",
                    "minLength": 1,
                    "description": "A document id, as given by list_documents or the retrieved context.",
                }
            },
            "required": ["doc_id"],
            "additionalProperties": False,
        },
        handler=read_document,
        family="documents",
    ),
]
