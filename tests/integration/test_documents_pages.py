"""The documents pages: list, search, add, edit, delete with Post/Redirect/Get; the FTS5 index follows every
change, and the documents agent retrieves from and reads these documents."""

import pytest

from store import documents as document_store
from tests.html_reader import html_of
from tests.run_scenarios import DOCUMENTS, DOCUMENTS_AGENT, DOCUMENTS_MESSAGE


@pytest.fixture
def documents(database):
    document_store.import_documents(database, DOCUMENTS)


def search(client, query):
    html = html_of(client.get(f"/documents?q={query}"), 200)
    if "Best matches" not in html:
        return ""
    results = html[html.index("Best matches") :]
    return results[: results.index("</section>")]


def test_list_shows_every_document(client, documents):
    html = html_of(client.get("/documents"), 200)
    for document in DOCUMENTS:
        assert document["title"] in html and f'href="/documents/{document["id"]}"' in html


def test_an_empty_list_explains_how_to_import(client):
    assert "import-documents" in html_of(client.get("/documents"), 200)


def test_add_a_document_redirects_to_it(client, database):
    response = client.post("/documents/new", data={"title": "Opening Hours", "body": "We open at nine."})
    assert response.status_code == 303
    assert response.headers["Location"] == "/documents/opening-hours"
    assert document_store.get_document(database, "opening-hours")["body"] == "We open at nine."
    assert "We open at nine." in html_of(client.get("/documents/opening-hours"), 200)


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"title": "", "body": "Text"}, "title", "Title is required."),
        ({"title": "T", "body": "  "}, "body", "Body is required."),
        ({"title": "T", "id": "Bad Id!", "body": "Text"}, "id", "Document id must start with"),
        ({"title": "Refund policy", "id": "refund-policy", "body": "Text"}, "id", "is already used"),
        ({"title": "New", "body": "What is new this season."}, "id", "&#34;new&#34; is reserved; choose another id"),
    ],
)
def test_bad_input_is_shown_beside_its_field(client, documents, database, data, field, message):
    html = html_of(client.post("/documents/new", data=data), 400)
    errors = html[html.index(f'id="{field}-errors"') :]
    assert message in errors[: errors.index("</ul>")]
    assert database["documents"].count == len(DOCUMENTS)


def test_edit_a_document(client, documents, database):
    form = html_of(client.get("/documents/gift-cards/edit"), 200)
    assert "Gift cards are valid for two years." in form
    changes = {"title": "Gift vouchers", "body": "Valid for\r\nfive years."}
    response = client.post("/documents/gift-cards/edit", data=changes)
    assert response.status_code == 303 and response.headers["Location"] == "/documents/gift-cards"
    document = document_store.get_document(database, "gift-cards")
    assert (document["title"], document["body"]) == ("Gift vouchers", "Valid for\nfive years.")
    html = html_of(client.post("/documents/gift-cards/edit", data={"title": "", "body": "x"}), 400)
    assert "Title is required." in html


def test_delete_asks_then_deletes(client, documents, database):
    assert "Delete document" in html_of(client.get("/documents/gift-cards/delete"), 200)
    response = client.post("/documents/gift-cards/delete")
    assert response.status_code == 303 and response.headers["Location"] == "/documents"
    assert not document_store.document_exists(database, "gift-cards")


@pytest.mark.parametrize("path", ["/documents/nope", "/documents/nope/edit", "/documents/nope/delete"])
def test_unknown_document_is_a_404(client, path):
    assert client.get(path).status_code == 404
    assert client.post(path, data={"title": "x", "body": "y"}).status_code in (404, 405)


def test_the_search_index_follows_every_change(client, documents):
    assert "Gift cards" in search(client, "valid")
    client.post("/documents/new", data={"title": "Parking", "body": "Free parking behind the shop."})
    assert "Parking" in search(client, "parking")
    client.post("/documents/parking/edit", data={"title": "Parking", "body": "Spaces for bicycles only."})
    assert "Parking" not in search(client, "free")
    assert "Parking" in search(client, "bicycles")
    client.post("/documents/parking/delete")
    assert "No document matches." in search(client, "bicycles")


def test_the_documents_agent_retrieves_from_and_reads_these_documents(client, documents):
    client.put("/api/agents/docs", json=DOCUMENTS_AGENT)
    run = client.post("/api/agents/docs/runs", json={"message": DOCUMENTS_MESSAGE}).json
    assert run["sources"] == [
        {"id": "refund-policy", "title": "Refund policy"},
        {"id": "sale-returns", "title": "Sale returns"},
        {"id": "gift-cards", "title": "Gift cards"},
    ]
    client.post("/documents/gift-cards/delete")
    run = client.post("/api/agents/docs/runs", json={"message": DOCUMENTS_MESSAGE}).json
    failed = run["rounds"][2]["calls"][0]
    assert (failed["status"], failed["reason"]) == ("error", "tool_error")
    assert 'No document with id "gift-cards"' in failed["message"]


def test_document_forms_need_their_csrf_token(csrf_app):
    client = csrf_app.test_client()
    assert client.post("/documents/new", data={"title": "T", "body": "B"}).status_code == 400
