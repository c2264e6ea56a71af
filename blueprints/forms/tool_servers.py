"""The tool server form (a streamable-HTTP MCP server: label, machine name, URL, extra headers, timeout). There is
no field for a command: a server started as a local command is configured from the command line only."""

import json

from flask_wtf import FlaskForm
from wtforms import StringField, TextAreaField
from wtforms.validators import ValidationError
from wtforms.widgets import NumberInput

from store.tool_servers import TIMEOUT_MAX


def _headers_object(text):
    """The headers typed as JSON (empty is `{}`); a ValidationError says where it is not JSON."""
    try:
        return json.loads((text or "").strip() or "{}")
    except json.JSONDecodeError as error:
        raise ValidationError(
            f"Extra headers are not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})."
        ) from None
    except RecursionError:
        raise ValidationError("Extra headers are nested too deeply to be read.") from None


class ToolServerForm(FlaskForm):
    label = StringField("Label")
    id = StringField(
        "Machine name",
        description="Lowercase letters and digits, words joined by single underscores; the server's tools are named "
        "SERVER__TOOL after it. Derived from the label when left empty.",
    )
    url = StringField(
        "URL",
        description="The server's streamable-HTTP endpoint, e.g. http://127.0.0.1:8765/mcp.",
        render_kw={"placeholder": "http://127.0.0.1:8765/mcp"},
    )
    headers = TextAreaField(
        "Extra headers (JSON)",
        description='Sent with every request. A value is text, or {"env": "NAME"} to read it from an environment '
        'variable when a call is made, e.g. {"Authorization": {"env": "NOTES_API_KEY", "prefix": "Bearer "}}: the '
        "secret is never stored nor shown. The variable must end in _API_KEY or be listed in TOOLGATE_KEY_VARIABLES.",
        render_kw={"rows": 3, "spellcheck": "false"},
    )
    timeout = StringField(
        "Timeout per call (seconds)",
        default="30",
        description=f"The longest one tool call may take, connecting included (at most {TIMEOUT_MAX}); past it the "
        "call is an error told to the model, and the run goes on.",
        widget=NumberInput(min=1, step="any"),
    )

    def validate_headers(self, field):
        _headers_object(field.data)

    def server_data(self, server_id, command=""):
        """The JSON form of what was posted, for the service; `command`: a stored stdio server's, kept as it is."""
        timeout_text = (self.timeout.data or "").strip()
        try:
            timeout = float(timeout_text)
        except ValueError:
            timeout = timeout_text
        try:
            headers = _headers_object(self.headers.data)
        except ValidationError:
            headers = self.headers.data  # validate_headers has said why; the store refuses it too
        url = "" if command else (self.url.data or "").strip()
        return {
            "id": server_id,
            "label": (self.label.data or "").strip(),
            "url": url,
            "command": command,
            "headers": headers,
            "timeout": timeout,
        }

    def field_for(self, key):
        return self[key] if key in self and key != "csrf_token" else None


def server_to_form_data(server):
    """A stored server as the form's data, for editing."""
    return {
        "label": server["label"],
        "url": server["url"],
        "headers": json.dumps(server["headers"], indent=2) if server["headers"] else "",
        "timeout": f"{server['timeout']:g}",
    }
