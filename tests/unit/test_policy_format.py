"""The policy file (issue 34): any valid agent round-trips through it exactly and the file fits the published
schema; reading refuses what YAML allows but a policy has no use for, at the line it is on."""

import json
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from engine.arguments import FORCE_VALUE, ONLY_ALLOW
from engine.config import AGENT_DEFAULTS, CLIENT_TOOL_SETTING_DEFAULTS, TOOL_SETTING_DEFAULTS, validate_agent
from engine.tools import default_registry
from services.policy_format import (
    FILE_FIELDS,
    FILE_MAX_BYTES,
    FileProblem,
    agent_schema,
    dump_policy,
    file_form,
    read_policy,
    schema_text,
)
from tests import strategies

KNOWN_TOOLS = default_registry().parameters_by_name()
URL = "http://127.0.0.1:5000/schema/agent.json"
SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schema" / "agent.json"
VALIDATOR = Draft202012Validator(agent_schema())

# Text a person writes in a policy: any characters but surrogates, one line or several, short or long (folded).
texts = st.text(max_size=120) | st.lists(st.text(max_size=40), min_size=2, max_size=4).map("\n".join)
rules = st.dictionaries(
    st.sampled_from(["region", "component"]),
    st.sampled_from(
        [
            {"action": FORCE_VALUE, "values": ["header"]},
            {"action": ONLY_ALLOW, "values": ["header", "footer"]},
            {"action": FORCE_VALUE, "values": ["footer"], "hide": True},
        ]
    ),
    max_size=2,
).map(lambda drawn: {name: rule for name, rule in drawn.items() if name == "region"})
# The shared settings strategy, with the texts a file writes as block scalars beside it.
setting_texts = st.fixed_dictionaries(
    {},
    optional={
        "description_override": texts,
        "progress_message": st.text(max_size=40),
        "multiple_call_error_message": texts,
    },
)
tool_settings = st.tuples(strategies.tool_settings(optional=strategies.SETTINGS), setting_texts).map(
    lambda drawn: {**drawn[0], **drawn[1]}
)
client_tool_settings = strategies.tool_settings(
    optional=("restrict_multiple_calls", "max_calls_per_run", "max_identical_calls", "require_usage"),
    argument_descriptions=st.dictionaries(st.sampled_from(["query", "id"]), texts, max_size=2),
)
scripts = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "content": texts,
            "tool_calls": st.lists(
                st.fixed_dictionaries(
                    {"name": st.sampled_from(["place_component", "get_layout"])},
                    optional={"arguments": st.dictionaries(st.text(max_size=8), st.integers() | texts, max_size=2)},
                ),
                max_size=2,
            ),
        },
    ).filter(bool),
    max_size=3,
)
agents = st.fixed_dictionaries(
    {"id": st.from_regex(r"\A[a-z][a-z0-9_]{0,20}\Z"), "label": texts.filter(str.strip)},
    optional={
        "description": texts,
        "system_prompt": texts,
        "model": st.text(max_size=30),
        "max_rounds": st.integers(0, 100),
        "on_round_cap": st.sampled_from(["final_answer", "message"]),
        "max_rounds_message": texts,
        "parallel_tool_calls": st.none() | st.booleans(),
        "tool_choice": st.sampled_from(["auto", "required"]),
        "temperature": st.none() | st.floats(0, 2),
        "top_p": st.none() | st.floats(0, 1),
        "seed": st.none() | st.integers(-(2**63), 2**63 - 1),
        "max_tokens": st.none() | st.integers(1, 1_000_000),
        "tools": st.dictionaries(st.sampled_from(sorted(KNOWN_TOOLS)), tool_settings, max_size=3).flatmap(
            lambda tools: (
                st.just(tools)
                if "place_component" not in tools
                else rules.map(
                    lambda drawn: {**tools, "place_component": {**tools["place_component"], "argument_rules": drawn}}
                )
            )
        ),
        "client_tools": st.dictionaries(st.from_regex(r"\Aclient_[a-z]{1,8}\Z"), client_tool_settings, max_size=2),
        "script": scripts,
    },
)


@settings(max_examples=150, deadline=None)
@given(agents)
def test_any_valid_agent_round_trips_through_its_file_exactly_and_the_file_fits_the_schema(data):
    agent = validate_agent(data, KNOWN_TOOLS)

    text = dump_policy(agent, URL)
    read, _lines = read_policy(text.encode("utf-8"))

    assert text.startswith(f"# yaml-language-server: $schema={URL}\n")
    assert read == file_form(agent)
    assert validate_agent(read, KNOWN_TOOLS) == agent
    assert dump_policy(validate_agent(read, KNOWN_TOOLS), URL) == text
    assert list(VALIDATOR.iter_errors(json.loads(json.dumps(read)))) == []


def test_a_file_holds_only_what_differs_from_the_defaults_in_a_stable_order():
    agent = validate_agent(
        {
            "id": "builder",
            "label": "Builder",
            "max_rounds": 6,
            "system_prompt": "Place one component.\nThen wait for its UUID.\n",
            "tools": {"place_component": {"restrict_multiple_calls": True}, "get_layout": {}},
        },
        KNOWN_TOOLS,
    )

    assert dump_policy(agent, URL) == (
        f"# yaml-language-server: $schema={URL}\n"
        "id: builder\n"
        "label: Builder\n"
        "system_prompt: |\n"
        "  Place one component.\n"
        "  Then wait for its UUID.\n"
        "max_rounds: 6\n"
        "tools:\n"
        "  get_layout: {}\n"
        "  place_component:\n"
        "    restrict_multiple_calls: true\n"
    )


def test_a_long_one_line_text_is_written_folded_and_reads_back_the_same():
    description = "A page builder agent that places one component at a time, " * 3
    agent = validate_agent({"id": "builder", "label": "Builder", "description": description.strip()}, KNOWN_TOOLS)

    text = dump_policy(agent, URL)

    assert "description: >-\n  A page builder agent" in text
    assert read_policy(text.encode())[0]["description"] == description.strip()


def alias_bomb(levels=9):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        previous = f"*a{level - 1}"
        lines.append(f"a{level}: &a{level} [{', '.join([previous] * 9)}]")
    return ("\n".join(["id: bomb", "label: Bomb", *lines]) + "\n").encode()


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        (b"id: a\nlabel: A\nlabel: B\n", 3, 'the key "label" is given twice in the same mapping'),
        (b"id: a\ntools:\n  get_layout: {}\n  get_layout: {}\n", 4, 'the key "get_layout" is given twice'),
        (b"id: a\nlabel: &name A\n", 2, "anchors and aliases (&name, *name) are not allowed"),
        (b"id: a\nlabel: *name\n", 2, "anchors and aliases"),
        (b"id: a\n<<: {label: A}\n", 2, "merge keys (<<) are not allowed"),
        (b"id: a\nlabel: !!binary aGVsbG8=\n", 2, "the tag tag:yaml.org,2002:binary is not allowed"),
        (b"id: a\nlabel: !!python/name:os.system\n", 2, "is not allowed"),
        (b"id: a\ntools:\n  1: {}\n", 3, "the key '1' is not text; put it in quotes"),
        (b"id: a\nlabel: [A\n", 3, "is not valid YAML"),
        (b"id: a\n\tlabel: A\n", 2, "is not valid YAML"),
        (b"- id: a\n", 1, "must be a mapping of agent fields"),
        (b"", 1, "must be a mapping of agent fields"),
        (b"id: a\n---\nid: b\n", 2, "is not valid YAML: expected a single document"),
    ],
)
def test_what_a_policy_file_may_not_hold_is_refused_at_its_line(content, line, message):
    with pytest.raises(FileProblem) as refused:
        read_policy(content)

    assert refused.value.line == line
    assert message in refused.value.message


def test_an_alias_bomb_is_refused_at_its_first_anchor_without_being_expanded():
    started = time.perf_counter()
    with pytest.raises(FileProblem) as refused:
        read_policy(alias_bomb())

    assert time.perf_counter() - started < 0.5
    assert refused.value.describe("bomb.yaml") == (
        "bomb.yaml:3: anchors and aliases (&name, *name) are not allowed in a policy file: write each value out"
    )


def test_a_file_over_the_size_limit_is_refused_before_it_is_read():
    content = b"id: big\nlabel: Big\ndescription: " + b"x" * (10 * 1024 * 1024) + b"\n"
    started = time.perf_counter()
    with pytest.raises(FileProblem) as refused:
        read_policy(content)

    assert time.perf_counter() - started < 0.5
    assert refused.value.describe("big.yaml") == (
        f"big.yaml: is {len(content):,} bytes; a policy file may be at most {FILE_MAX_BYTES:,} bytes (2 MB)"
    )


def test_bytes_that_are_not_utf8_are_refused():
    with pytest.raises(FileProblem, match="is not UTF-8 text"):
        read_policy(b"id: a\nlabel: Caf\xe9\n")


def test_yaml_nested_too_deeply_is_refused():
    with pytest.raises(FileProblem, match="is nested too deeply to be read"):
        read_policy(b"id: a\nscript: " + b"[" * 50_000 + b"]" * 50_000 + b"\n")


def test_dates_stay_text_and_json_reads_as_yaml():
    assert read_policy(b"id: a\nlabel: 2026-12-06\n")[0]["label"] == "2026-12-06"
    assert read_policy(b'{"id": "a", "label": "A", "max_rounds": 3}')[0] == {"id": "a", "label": "A", "max_rounds": 3}


def test_the_field_lines_name_where_each_key_and_item_is():
    _data, lines = read_policy(
        b"id: a\nlabel: A\ntools:\n  place_component:\n    max_calls_per_run: -1\nscript:\n- x\n"
    )

    assert lines["tools.place_component.max_calls_per_run"] == 5 and lines["script[0]"] == 7


def test_the_repository_schema_is_the_one_built_from_the_config():
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "schema/agent.json is stale: python -c 'from services.policy_format import schema_text; "
        'print(schema_text(), end="")\' > schema/agent.json'
    )


def test_the_schema_names_every_field_and_setting_the_config_has():
    schema = agent_schema()
    Draft202012Validator.check_schema(schema)

    assert list(schema["properties"]) == ["id", *(key for key in AGENT_DEFAULTS if key != "revision")]
    assert list(schema["properties"]) == list(FILE_FIELDS)
    assert list(schema["$defs"]["tool_settings"]["properties"]) == list(TOOL_SETTING_DEFAULTS)
    assert list(schema["$defs"]["client_tool_settings"]["properties"]) == list(CLIENT_TOOL_SETTING_DEFAULTS)
    assert {
        key: schema["properties"][key].get("default") for key in AGENT_DEFAULTS if key not in ("revision", "label")
    } == {key: value for key, value in AGENT_DEFAULTS.items() if key not in ("revision", "label")}


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"max_rounds": 101}, ["max_rounds"]),
        ({"revision": 3}, []),
        (
            {"tools": {"get_layout": {"restrict_multiple_calls": "yes"}}},
            ["tools", "get_layout", "restrict_multiple_calls"],
        ),
        ({"client_tools": {"search": {"use_artifacts": True}}}, ["client_tools", "search"]),
        ({"on_round_cap": "stop"}, ["on_round_cap"]),
    ],
)
def test_the_schema_refuses_what_the_validation_refuses(change, path):
    errors = list(VALIDATOR.iter_errors({"id": "a", "label": "A", **change}))

    assert [list(error.absolute_path) for error in errors] == [path]
