"""Documents: the knowledge base the documents agent retrieves from and reads. List, search, add, edit and
delete, with Post/Redirect/Get; the FTS5 index follows every change through the table's triggers. The search on
the list page is the engine's own retrieval query, so it finds what an agent would find."""

from flask import Blueprint, render_template, request

from blueprints import confirm_delete, done, save_posted
from blueprints.forms.documents import DocumentForm
from engine.config import machine_name
from store import documents as document_store
from store.db import get_db

bp = Blueprint("documents", __name__)

SEARCH_LIMIT = 20


def _document_id(title):
    """A document id derived from a title, for when none is given."""
    return machine_name(title).replace("_", "-")


def _render_form(form, document=None, status=200, form_errors=()):
    return render_template("documents/form.html", form=form, document=document, form_errors=form_errors), status


@bp.get("/documents")
def list_documents():
    db = get_db()
    query = request.args.get("q", "").strip()
    results = None
    if query:
        results = [
            {"id": hit["id"], "title": hit["title"], "excerpt": hit["body"][:200]}
            for hit in document_store.DocumentTable(db).search(query, limit=SEARCH_LIMIT)
        ]
    return render_template(
        "documents/list.html", documents=document_store.list_documents(db), query=query, results=results
    )


@bp.route("/documents/new", methods=["GET", "POST"])
def new_document():
    form = DocumentForm()
    if request.method == "GET":
        return _render_form(form)
    doc_id = (form.id.data or "").strip() or _document_id(form.title.data or "")
    document, form_errors = save_posted(form, document_store.create_document, get_db(), form.document_data(doc_id))
    if document is None:
        return _render_form(form, status=400, form_errors=form_errors)
    return done(f'Added the document "{document["title"]}".', "documents.show_document", doc_id=document["id"])


@bp.get("/documents/<doc_id>")
def show_document(doc_id):
    return render_template("documents/show.html", document=document_store.get_document(get_db(), doc_id))


@bp.route("/documents/<doc_id>/edit", methods=["GET", "POST"])
def edit_document(doc_id):
    db = get_db()
    document = document_store.get_document(db, doc_id)
    if request.method == "GET":
        return _render_form(DocumentForm(data=document), document=document)
    form = DocumentForm()
    saved, form_errors = save_posted(form, document_store.update_document, db, doc_id, form.document_data(doc_id))
    if saved is None:
        return _render_form(form, document=document, status=400, form_errors=form_errors)
    return done(f'Saved the document "{saved["title"]}".', "documents.show_document", doc_id=doc_id)


@bp.route("/documents/<doc_id>/delete", methods=["GET", "POST"])
def delete_document(doc_id):
    db = get_db()
    document = document_store.get_document(db, doc_id)
    return confirm_delete(
        "documents/delete.html",
        lambda: document_store.delete_document(db, doc_id),
        f'Deleted the document "{document["title"]}".',
        "documents.list_documents",
        document=document,
    )
