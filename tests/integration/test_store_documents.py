"""store.documents: validation, writes, and the full-text index the engine searches staying in step, on both engines."""

import pytest

from store import NotFound, ValidationError, execute
from store import documents as document_store
from store.db import engine_for, open_db, write_transaction
from tests.database import Database

pytestmark = pytest.mark.both_engines

SMALL_CORPUS = [
    {"id": "kettles", "title": "Kettles", "body": "A kettle boils water in three minutes."},
    {"id": "teapots", "title": "Teapots", "body": "Warm the teapot before brewing."},
]


@pytest.fixture
def search(database):
    return document_store.DocumentTable(database).search


@pytest.fixture
def small_table(database):
    document_store.import_documents(database, SMALL_CORPUS)
    return document_store.DocumentTable(database)


def test_the_document_table_lists_gets_and_searches(small_table):
    assert small_table.list_documents() == [
        {"id": "kettles", "title": "Kettles"},
        {"id": "teapots", "title": "Teapots"},
    ]
    assert small_table.get("teapots") == SMALL_CORPUS[1]
    assert small_table.get("missing") is None
    assert [hit["id"] for hit in small_table.search("How do I warm a teapot?")] == ["teapots"]


def test_the_document_table_on_the_database_url_reads_each_time_on_a_connection_given_back_at_once(app, small_table):
    """A run's documents tools read so while its step holds no connection (services/runs.py)."""
    url = app.config["DATABASE_URL"]
    table = document_store.DocumentTable(url)
    pool = engine_for(url).pool
    in_use = pool.checkedout()  # the test's own connection

    assert table.list_documents() == small_table.list_documents()
    assert table.get("teapots") == SMALL_CORPUS[1]
    assert [hit["id"] for hit in table.search("How do I warm a teapot?")] == ["teapots"]
    assert pool.checkedout() == in_use


def test_the_document_table_sees_what_another_connection_commits(app, small_table):
    other = Database(app.config["DATABASE_URL"])
    try:
        document_store.create_document(other, {"id": "cups", "title": "Cups", "body": "Cups hold tea."})
    finally:
        other.close()
    assert [hit["id"] for hit in small_table.search("cups")] == ["cups"]


def test_the_document_table_reads_while_another_connection_holds_a_write_transaction(app, small_table):
    writer = open_db(app.config["DATABASE_URL"])
    try:
        with pytest.raises(RolledBack), write_transaction(writer):
            execute(writer, "INSERT INTO documents (id, title, body) VALUES ('cups', 'Cups', 'Cups hold tea.')")
            assert [hit["id"] for hit in small_table.search("kettle cups")] == ["kettles"]
            raise RolledBack
    finally:
        writer.close()


class RolledBack(Exception):
    pass


def test_create_get_list(database):
    document_store.create_document(database, {"id": "faq", "title": " FAQ ", "body": "Line one\r\nLine two"})
    document = document_store.get_document(database, "faq")
    assert document["title"] == "FAQ" and document["body"] == "Line one\nLine two" and document["updated_at"]
    assert document_store.list_documents(database) == [
        {"id": "faq", "title": "FAQ", "updated_at": document["updated_at"], "length": 17}
    ]


def test_the_index_follows_create_update_delete(database, search):
    document_store.create_document(database, {"id": "faq", "title": "FAQ", "body": "Kayaks float."})
    assert [hit["id"] for hit in search("kayaks")] == ["faq"]
    document_store.update_document(database, "faq", {"title": "FAQ", "body": "Canoes float."})
    assert search("kayaks") == [] and [hit["id"] for hit in search("canoes")] == ["faq"]
    document_store.delete_document(database, "faq")
    assert search("canoes") == []


@pytest.mark.parametrize(
    ("data", "errors"),
    [
        ({"id": "Bad Id", "title": "T", "body": "B"}, {"id"}),
        ({"id": "ok", "title": " ", "body": "B"}, {"title"}),
        ({"id": "ok", "title": "T" * 201, "body": "B"}, {"title"}),
        ({"id": "ok", "title": "T", "body": ""}, {"body"}),
        ({"id": "ok", "title": "T", "body": "B", "author": "me"}, {"author"}),
    ],
)
def test_bad_documents_are_refused(database, data, errors):
    with pytest.raises(ValidationError) as raised:
        document_store.create_document(database, data)
    assert set(raised.value.errors) == errors
    assert database["documents"].count == 0


def test_an_id_in_use_is_refused(database):
    document_store.create_document(database, {"id": "faq", "title": "FAQ", "body": "B"})
    with pytest.raises(ValidationError, match="already used"):
        document_store.create_document(database, {"id": "faq", "title": "Again", "body": "B"})


def test_unknown_documents_raise_not_found(database):
    with pytest.raises(NotFound):
        document_store.get_document(database, "ghost")
    with pytest.raises(NotFound):
        document_store.update_document(database, "ghost", {"title": "T", "body": "B"})
    with pytest.raises(NotFound):
        document_store.delete_document(database, "ghost")


def test_import_is_all_or_nothing_and_keeps_existing_unless_replace(database):
    document_store.create_document(database, {"id": "a", "title": "A", "body": "old"})
    with pytest.raises(ValidationError):
        document_store.import_documents(database, [{"id": "b", "title": "B", "body": "b"}, {"id": "c", "title": ""}])
    assert database["documents"].count == 1
    assert document_store.import_documents(
        database, [{"id": "a", "title": "A", "body": "new"}, {"id": "b", "title": "B", "body": "b"}]
    ) == ["b"]
    assert document_store.get_document(database, "a")["body"] == "old"
    assert document_store.import_documents(database, [{"id": "a", "title": "A", "body": "new"}], replace=True) == ["a"]
    assert document_store.get_document(database, "a")["body"] == "new"
