"""The Import page's forms: the upload, and the confirmation that carries the files seen in the preview."""

from flask_wtf import FlaskForm
from wtforms import HiddenField, MultipleFileField


class ImportForm(FlaskForm):
    files = MultipleFileField(
        "Policy files",
        description="One or more ID.yaml files, as Export or flask --app app export-agents writes them.",
        render_kw={"accept": ".yaml,.yml"},
    )


class ConfirmImportForm(FlaskForm):
    """The files the preview was made from travel with it (each name and its content in base64, so no browser
    changes a line ending), and the plan's fingerprint: a confirmation applies what was shown, or nothing."""

    fingerprint = HiddenField()
