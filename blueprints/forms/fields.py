"""What every form here shares: posted text read into the JSON form's values, JSON typed into a textarea, errors put
beside their fields, and the form of a button that only posts its CSRF token."""

import json
import re

from flask_wtf import FlaskForm
from wtforms.validators import ValidationError

from engine.config import MAX_DEPTH


def posted_text(value):
    """Browsers post textarea line breaks as \\r\\n; store \\n."""
    return (value or "").replace("\r\n", "\n")


def posted_whole_number(value):
    """The posted text as an int when it is one; otherwise the text itself, so validation names the field."""
    text = (value or "").strip()
    return int(text) if re.fullmatch(r"-?\d{1,9}", text) else text


def posted_number(value):
    """Empty is None (not sent); a number is a number; anything else stays text, so validation names the field."""
    text = (value or "").strip()
    if not text:
        return None
    if re.fullmatch(r"-?\d{1,19}", text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def read_json(label, text, empty):
    """JSON typed into a textarea (`empty` when there is none). A ValidationError, shown beside the field with the
    form kept, says where it is not JSON, or that it is nested deeper than any field may be (deep enough to exhaust
    the parser, which would otherwise lose the whole form to an error page)."""
    try:
        return json.loads((text or "").strip() or empty)
    except json.JSONDecodeError as error:
        raise ValidationError(
            f"{label} is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})."
        ) from None
    except RecursionError:
        raise ValidationError(f"{label} is nested more than {MAX_DEPTH} levels deep.") from None


def apply_errors(form, errors):
    """Put validation errors ({"field": "message"}, engine.config's keys) next to their fields, each message
    starting with the field's label. Returns the messages that belong to no field, for the top of the form."""
    unplaced = []
    for key, message in errors.items():
        field = form.field_for(key) or form.field_for(key.partition("[")[0])  # "script[2]": the script field
        if field is None:
            unplaced.append(f"{key}: {message}")
        else:
            field.errors = [*field.errors, f"{field.label.text} {message}."]
    return unplaced


class ButtonForm(FlaskForm):
    """No fields: the form of a button that only posts its CSRF token (Delete, Run again, Check, Connect, Test)."""
