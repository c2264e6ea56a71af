"""What an agent sends with each request and how a run ends at the cap (SPEC §2), the fields the agent form and the
run form share, and the script both read."""

import json

from wtforms import SelectChoice, SelectField, StringField
from wtforms.widgets import NumberInput

from engine.config import MAX_TOKENS_LIMIT

from .fields import posted_number, read_json

ON_ROUND_CAP_CHOICES = [
    SelectChoice("final_answer", "Force a final answer (one more request without tools)"),
    SelectChoice("message", "Stop with the round cap message"),
]
# parallel_tool_calls in words, for the agent form's select and the agent's page.
PARALLEL_TOOL_CALLS_LABELS = {None: "Provider default", True: "true", False: "false"}
REQUEST_SETTINGS = ("tool_choice", "temperature", "top_p", "seed", "max_tokens")


def parallel_tool_calls_choice(value):
    """parallel_tool_calls as the select posts it: "" for null (the provider default), else "true" or "false"."""
    return "" if value is None else json.dumps(value)


PARALLEL_TOOL_CALLS_CHOICES = [
    SelectChoice(parallel_tool_calls_choice(value), label) for value, label in PARALLEL_TOOL_CALLS_LABELS.items()
]
PARALLEL_TOOL_CALLS_VALUES = {parallel_tool_calls_choice(value): value for value in PARALLEL_TOOL_CALLS_LABELS}


def tool_choice_choices(tool_names):
    return [
        SelectChoice("auto", "Auto: the model decides"),
        SelectChoice("required", "Required: some tool in every response"),
        *(SelectChoice(name, f"Always {name} (when enabled)") for name in tool_names),
    ]


def request_settings_fields(tool_names):
    """The fields of what an agent sends with each request (SPEC §2), for the agent form and the run form."""
    return {
        "tool_choice": SelectField(
            "Tool choice",
            default="auto",
            choices=tool_choice_choices(tool_names),
            description="Sent as tool_choice with every request that offers tools, never without them. Some servers "
            "(llama-cpp-python) offer no tools unless it says auto.",
            validate_choice=False,
        ),
        "temperature": StringField(
            "Temperature", description="0 to 2. Empty: not sent.", widget=NumberInput(min=0, max=2, step="any")
        ),
        "top_p": StringField(
            "Top p", description="0 to 1. Empty: not sent.", widget=NumberInput(min=0, max=1, step="any")
        ),
        "seed": StringField("Seed", description="A whole number. Empty: not sent.", widget=NumberInput(step=1)),
        "max_tokens": StringField(
            "Max tokens",
            description="1 to 1,000,000: the answer is cut off there (stop reason: truncated). Empty: not sent.",
            widget=NumberInput(min=1, max=MAX_TOKENS_LIMIT),
        ),
    }


def request_settings_data(form):
    settings = {key: posted_number(form[key].data) for key in REQUEST_SETTINGS if key != "tool_choice"}
    return {"tool_choice": form.tool_choice.data or "auto", **settings}


def request_settings_form_data(agent):
    values = {key: agent[key] for key in REQUEST_SETTINGS}
    return {
        key: value if key == "tool_choice" else "" if value is None else str(value) for key, value in values.items()
    }


def parse_script(text):
    """The script textarea as JSON (empty is `[]`)."""
    return read_json("Script", text, "[]")
