"""A regression case's form, and the form that saves a run as one."""

from flask_wtf import FlaskForm
from wtforms import SelectMultipleField, StringField


class CaseForm(FlaskForm):
    """A regression case's page: its name, and which of its expectations are pinned (the ticked keys)."""

    name = StringField("Case name")
    pinned = SelectMultipleField("Pinned expectations", validate_choice=False)

    def field_for(self, key):
        return self.name if key == "name" else self.pinned if key == "unpinned" else None


def case_form(case, expectation_keys, **kwargs):
    """The case form bound to the request's POST data, else to the stored case."""
    kwargs.setdefault(
        "data", {"name": case["name"], "pinned": [k for k in expectation_keys if k not in case["unpinned"]]}
    )
    form = CaseForm(**kwargs)
    form.pinned.choices = list(expectation_keys)
    return form


class SaveCaseForm(FlaskForm):
    """The "Save as regression case" form on a run's page; an empty name gets a default from the run."""

    name = StringField("Case name", description="Leave empty to name it after the run's message.")
