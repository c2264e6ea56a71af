"""The document form."""

from flask_wtf import FlaskForm
from wtforms import StringField, TextAreaField


class DocumentForm(FlaskForm):
    title = StringField("Title")
    id = StringField(
        "Document id",
        description="Lowercase letters, digits, hyphens and underscores. Derived from the title when left empty.",
    )
    body = TextAreaField("Body", render_kw={"rows": 16})

    def document_data(self, doc_id):
        return {"id": doc_id, "title": (self.title.data or "").strip(), "body": self.body.data or ""}

    def field_for(self, key):
        return self[key] if key in ("id", "title", "body") else None
