"""What an agent sends with each request besides the messages and the tools (SPEC §2): tool_choice, temperature,
top_p, seed, max_tokens — their rules, their defaults, and that the engine imports the SDK only once a model is
needed."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config import ValidationError, validate_agent

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"list_bundles": {}}


def validate(**fields):
    return validate_agent({"id": "agent", "label": "Agent", "tools": TOOLS, **fields}, known_tools={"list_bundles"})


@pytest.mark.parametrize(
    "fields",
    [
        {"tool_choice": "auto"},
        {"tool_choice": "required"},
        {"tool_choice": "list_bundles"},
        {"temperature": 0},
        {"temperature": 2},
        {"temperature": 0.7},
        {"top_p": 0},
        {"top_p": 1},
        {"seed": -(2**63)},
        {"seed": 2**63 - 1},
        {"max_tokens": 1},
        {"max_tokens": 1_000_000},
        {"temperature": None, "top_p": None, "seed": None, "max_tokens": None},
    ],
    ids=repr,
)
def test_good_values_are_kept(fields):
    assert {key: validate(**fields)[key] for key in fields} == fields


def test_the_defaults_send_auto_and_no_sampling_field():
    agent = validate()

    assert [agent[key] for key in ("tool_choice", "temperature", "top_p", "seed", "max_tokens")] == [
        "auto",
        None,
        None,
        None,
        None,
    ]


BAD_VALUES = [
    ({"tool_choice": "none"}, "tool_choice", 'must be "auto", "required" or the name of an enabled tool ("none"'),
    (
        {"tool_choice": "place_component"},
        "tool_choice",
        'must be "auto", "required" or the name of an enabled tool ("place_component" is not enabled)',
    ),
    ({"tool_choice": {"type": "function"}}, "tool_choice", 'must be "auto", "required" or the name of an enabled'),
    ({"tool_choice": "list_bundles", "tools": {}}, "tool_choice", '("list_bundles" is not enabled)'),
    ({"temperature": 2.5}, "temperature", "must be from 0 to 2 (got 2.5)"),
    ({"temperature": -0.1}, "temperature", "must be from 0 to 2 (got -0.1)"),
    ({"temperature": "hot"}, "temperature", "must be empty (null) or a number from 0 to 2"),
    ({"temperature": True}, "temperature", "must be empty (null) or a number from 0 to 2"),
    ({"temperature": math.nan}, "temperature", "is NaN or Infinity, which are not JSON numbers"),
    ({"top_p": 1.01}, "top_p", "must be from 0 to 1 (got 1.01)"),
    ({"seed": 1.5}, "seed", "must be empty (null) or a whole number (a signed 64-bit integer)"),
    ({"seed": 2**63}, "seed", "must be empty (null) or a whole number (a signed 64-bit integer)"),
    ({"max_tokens": 0}, "max_tokens", "must be empty (null) or a whole number from 1 to 1,000,000"),
    ({"max_tokens": 1_000_001}, "max_tokens", "must be empty (null) or a whole number from 1 to 1,000,000"),
    ({"max_tokens": "10"}, "max_tokens", "must be empty (null) or a whole number from 1 to 1,000,000"),
]


@pytest.mark.parametrize(("fields", "field", "message"), BAD_VALUES, ids=[repr(case[0]) for case in BAD_VALUES])
def test_a_bad_value_is_refused_naming_the_field(fields, field, message):
    with pytest.raises(ValidationError) as raised:
        validate(**fields)

    assert list(raised.value.errors) == [field]
    assert message in raised.value.errors[field]


PROBE = """
import json, sys
import engine
print(json.dumps(sorted(name.split(".")[0] for name in sys.modules)))
"""


def test_importing_the_engine_does_not_import_the_sdk():
    completed = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPOSITORY_ROOT, capture_output=True, text=True, timeout=60, check=True
    )

    loaded = set(json.loads(completed.stdout.strip().splitlines()[-1]))
    assert "engine" in loaded and not loaded & {"openai", "httpx2", "pydantic"}
