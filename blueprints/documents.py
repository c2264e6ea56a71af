"""Documents: the knowledge base the documents agent retrieves from and reads. List, search, add, edit and
delete, with Post/Redirect/Get; the FTS5 index follows every change through the table's triggers. The search on
the list page is the engine's own retrieval query, so it finds what an agent would find."""

from flask import Blueprint, abort, current_app, flash, redirect, render_template, request, url_for
from flask_wtf import FlaskForm
from wtforms import StringField, TextAreaField

import forms
from db import get_db
from engine.tools.documents import SqliteDocumentStore
from store import NotFound, ValidationError
from store import documents as document_store

bp = Blueprint("documents", __name__)

SEARCH_LIMIT = 20


class DocumentForm(FlaskForm):
    title = StringField("Title")
    id = StringField("Document id")
    body = TextAreaField("Body", render_kw={"rows": 16})

    def document_data(self, doc_id):
        return {"id": doc_id, "title": (self.title.data or "").strip(), "body": self.body.data or ""}

    def field_for(self, key):
        return self[key] if key in ("id", "title", "body") else None


def _document_or_404(db, doc_id):
    try:
        return document_store.get_document(db, doc_id)
    except NotFound:
        abort(404)


def _document_id(title):
    """A document id derived from a title, for when none is given."""
    return forms.machine_name(title).replace("_", "-")


def _render_form(form, document=None, status=200, form_errors=()):
    return render_template("documents/form.html", form=form, document=document, form_errors=form_errors), status


@bp.get("/documents")
def list_documents():
    db = get_db()
    query = request.args.get("q", "").strip()
    results = None
    if query:
        store = SqliteDocumentStore(current_app.config["DATABASE"])
        results = [
            {"id": hit["id"], "title": hit["title"], "excerpt": hit["body"][:200]}
            for hit in store.search(query, limit=SEARCH_LIMIT)
        ]
    return render_template(
        "documents/list.html", documents=document_store.list_documents(db), query=query, results=results
    )


@bp.route("/documents/new", methods=["GET", "POST"])
def new_document():
    db = get_db()
    form = DocumentForm()
    if request.method == "GET":
        return _render_form(form)
    form.validate()
    doc_id = (form.id.data or "").strip() or _document_id(form.title.data or "")
    try:
        document = document_store.create_document(db, form.document_data(doc_id))
    except ValidationError as error:
        return _render_form(form, status=400, form_errors=forms.apply_errors(form, error.errors))
    flash(f'Added the document "{document["title"]}".')
    return redirect(url_for("documents.show_document", doc_id=document["id"]), 303)


@bp.get("/documents/<doc_id>")
def show_document(doc_id):
    return render_template("documents/show.html", document=_document_or_404(get_db(), doc_id))


@bp.route("/documents/<doc_id>/edit", methods=["GET", "POST"])
def edit_document(doc_id):
    db = get_db()
    document = _document_or_404(db, doc_id)
    if request.method == "GET":
        return _render_form(DocumentForm(data=document), document=document)
    form = DocumentForm()
    form.validate()
    try:
        saved = document_store.update_document(db, doc_id, form.document_data(doc_id))
    except ValidationError as error:
        return _render_form(form, document=document, status=400, form_errors=forms.apply_errors(form, error.errors))
    except NotFound:
        abort(404)
    flash(f'Saved the document "{saved["title"]}".')
    return redirect(url_for("documents.show_document", doc_id=doc_id), 303)


@bp.route("/documents/<doc_id>/delete", methods=["GET", "POST"])
def delete_document(doc_id):
    db = get_db()
    document = _document_or_404(db, doc_id)
    form = forms.DeleteForm()
    if form.validate_on_submit():
        try:
            document_store.delete_document(db, doc_id)
        except NotFound:
            abort(404)
        flash(f'Deleted the document "{document["title"]}".')
        return redirect(url_for("documents.list_documents"), 303)
    return render_template("documents/delete.html", document=document, form=form)
