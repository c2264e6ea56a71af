"""The provider connection form."""

import json

from flask_wtf import FlaskForm
from wtforms import StringField, TextAreaField
from wtforms.validators import ValidationError
from wtforms.widgets import NumberInput

from store.providers import MAX_RETRIES_LIMIT

from .fields import posted_whole_number, read_json


def parse_json_object(label, text):
    """A JSON object typed into a textarea (empty is `{}`)."""
    return read_json(label, text, "{}")


def json_text(value):
    return json.dumps(value, indent=2, ensure_ascii=False) if value else ""


class ProviderForm(FlaskForm):
    label = StringField("Label")
    id = StringField(
        "Machine name", description="Lowercase letters, digits and underscores. Derived from the label when left empty."
    )
    base_url = StringField(
        "Base URL",
        description="The OpenAI-compatible endpoint, e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1 "
        "for Ollama.",
        render_kw={"placeholder": "https://api.openai.com/v1"},
    )
    api_key_env = StringField(
        "API key environment variable",
        default="OPENAI_API_KEY",
        description="The name of the environment variable that holds the key, not the key itself. It must end in "
        "_API_KEY, or be listed by the administrator in TOOLGATE_KEY_VARIABLES. Leave empty for a server that takes "
        "no key (a local Ollama or llama.cpp).",
    )
    default_model = StringField("Default model", description="Used when an agent names no model.")
    timeout = StringField(
        "Timeout (seconds)",
        default="60",
        description="The longest one request may take, retries included: a slow or trickling answer is cut off at "
        "this deadline.",
        widget=NumberInput(min=1, step="any"),
    )
    max_retries = StringField(
        "Retries",
        default="2",
        description="0 to 10. A 429 or 5xx answer, or a failed connection, is asked again after a growing wait, or "
        "the wait the server's Retry-After asks for; never past the timeout.",
        widget=NumberInput(min=0, max=MAX_RETRIES_LIMIT),
    )
    headers = TextAreaField(
        "Extra headers (JSON)",
        description='Sent with every request, e.g. {"X-Team": "search"} for a gateway that routes on it. Not for the '
        "key: it comes from the environment variable.",
        render_kw={"rows": 3, "spellcheck": "false"},
    )
    extra_body = TextAreaField(
        "Extra body fields (JSON)",
        description='Merged into every request body, e.g. {"top_k": 20} or {"metadata": {"app": "toolgate"}}. Model, '
        "messages, tools and the sampling settings come from the agent.",
        render_kw={"rows": 3, "spellcheck": "false"},
    )

    def validate_headers(self, field):
        parse_json_object(field.label.text, field.data)

    def validate_extra_body(self, field):
        parse_json_object(field.label.text, field.data)

    def provider_data(self, provider_id):
        timeout_text = (self.timeout.data or "").strip()
        try:
            timeout = float(timeout_text)
        except ValueError:
            timeout = timeout_text
        data = {
            "id": provider_id,
            "label": (self.label.data or "").strip(),
            "base_url": (self.base_url.data or "").strip(),
            "api_key_env": (self.api_key_env.data or "").strip(),
            "default_model": (self.default_model.data or "").strip(),
            "timeout": timeout,
            "max_retries": posted_whole_number(self.max_retries.data),
        }
        for name in ("headers", "extra_body"):
            try:
                data[name] = parse_json_object(name, self[name].data)
            except ValidationError:
                data[name] = self[name].data  # validate_headers has said why; the store refuses it too
        return data

    def field_for(self, key):
        return self[key] if key in self and key != "csrf_token" else None


def provider_to_form_data(provider):
    """A stored connection as the form's data, for editing."""
    return {
        **provider,
        "timeout": f"{provider['timeout']:g}",
        "max_retries": str(provider["max_retries"]),
        "headers": json_text(provider["headers"]),
        "extra_body": json_text(provider["extra_body"]),
    }
