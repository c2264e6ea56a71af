"""Agent and tool settings (SPEC §2–3): defaults, validation naming the field, overrides, and no mutation."""

import copy
import json

import pytest

from engine import run_agent
from engine.config import (
    ValidationError,
    apply_overrides,
    fill_defaults,
    load_agent,
    machine_name,
    overrides_between,
    validate_agent,
)
from engine.tools import default_registry
from tests.unit.unit_helpers import answer, call, make_agent, tool_round

KNOWN_TOOLS = set(default_registry().names())

TOOL_DEFAULTS = {
    "restrict_multiple_calls": False,
    "multiple_call_error_message": "",
    "require_usage": False,
    "return_directly": False,
    "description_override": "",
    "max_calls_per_run": 0,
    "max_identical_calls": 0,
    "argument_rules": {},
    "argument_descriptions": {},
    "use_artifacts": False,
    "progress_message": "",
    "require_approval": False,
}


def validate(**fields):
    return validate_agent({"id": "agent", "label": "Agent", **fields}, KNOWN_TOOLS)


# --- Defaults -------------------------------------------------------------------------------------------------


def test_every_agent_field_gets_its_default():
    assert validate_agent({"id": "agent", "label": "Agent"}) == {
        "id": "agent",
        "label": "Agent",
        "description": "",
        "system_prompt": "",
        "provider": "scripted",
        "model": "",
        "max_rounds": 10,
        "on_round_cap": "final_answer",
        "max_rounds_message": "",
        "parallel_tool_calls": None,
        "tool_choice": "auto",
        "temperature": None,
        "top_p": None,
        "seed": None,
        "max_tokens": None,
        "tools": {},
        "client_tools": {},
        "script": [],
        "approval_timeout_seconds": 300,
        "approval_webhook": "",
        "revision": 1,
    }


def test_every_tool_setting_gets_its_default():
    assert validate(tools={"list_bundles": {}})["tools"] == {"list_bundles": TOOL_DEFAULTS}


def test_given_tool_settings_are_kept_and_the_rest_defaulted():
    tools = validate(tools={"list_bundles": {"require_usage": True}})["tools"]

    assert tools == {"list_bundles": {**TOOL_DEFAULTS, "require_usage": True}}


def test_fill_defaults_does_not_touch_its_input():
    agent = {"id": "agent", "label": "Agent", "tools": {"list_bundles": {}}}
    before = copy.deepcopy(agent)

    fill_defaults(agent)

    assert agent == before


def test_system_prompt_line_endings_are_normalised():
    assert validate(system_prompt="One.\r\nTwo.\r\n")["system_prompt"] == "One.\nTwo.\n"


def test_custom_message_is_cleared_when_the_restriction_is_off():
    tools = validate(tools={"list_bundles": {"multiple_call_error_message": "Error: once."}})["tools"]

    assert tools["list_bundles"]["multiple_call_error_message"] == ""


def test_custom_message_is_kept_while_the_restriction_is_on():
    settings = {"restrict_multiple_calls": True, "multiple_call_error_message": "Error: once."}

    assert validate(tools={"list_bundles": settings})["tools"]["list_bundles"] == {**TOOL_DEFAULTS, **settings}


@pytest.mark.parametrize(
    "fields",
    [
        {"max_rounds": 0},
        {"max_rounds": 100},
        {"id": "a"},
        {"id": "a" + "b" * 63},
        {"id": "agent_2"},
        {"label": "L" * 200},
        {"description": "d" * 2_000},
        {"parallel_tool_calls": True},
        {"parallel_tool_calls": False},
        {"on_round_cap": "message"},
        {"provider": "local_ollama"},
        {"tools": {"list_bundles": {"max_calls_per_run": 10_000}}},
        {"script": [{"content": "Hi."}, {"tool_calls": [{"name": "x", "arguments": "raw"}]}, {"tool_calls": []}]},
    ],
    ids=repr,
)
def test_edge_values_are_accepted(fields):
    validate(**fields)


# --- Validation: every bad value is refused, naming its field ---------------------------------------------------

BAD_VALUES = [
    ({"max_rounds": -1}, "max_rounds", "must be from 0 to 100 (got -1)"),
    ({"max_rounds": 101}, "max_rounds", "must be from 0 to 100 (got 101)"),
    ({"max_rounds": "ten"}, "max_rounds", "must be a whole number from 0 to 100"),
    ({"max_rounds": True}, "max_rounds", "must be a whole number from 0 to 100"),
    ({"max_rounds": 2.5}, "max_rounds", "must be a whole number from 0 to 100"),
    ({"max_rounds": None}, "max_rounds", "must be a whole number from 0 to 100"),
    ({"on_round_cap": "stop"}, "on_round_cap", "must be one of: final_answer, message"),
    ({"on_round_cap": None}, "on_round_cap", "must be one of: final_answer, message"),
    ({"id": ""}, "id", "must start with a lowercase letter"),
    ({"id": "1agent"}, "id", "must start with a lowercase letter"),
    ({"id": "Agent"}, "id", "must start with a lowercase letter"),
    ({"id": "my-agent"}, "id", "must start with a lowercase letter"),
    ({"id": "a" * 65}, "id", "must start with a lowercase letter"),
    ({"id": 7}, "id", "must start with a lowercase letter"),
    ({"label": ""}, "label", "is required"),
    ({"label": "   "}, "label", "is required"),
    ({"label": "L" * 201}, "label", "must be at most 200 characters (got 201)"),
    ({"label": 5}, "label", "must be a string"),
    ({"description": "d" * 2_001}, "description", "must be at most 2,000 characters (got 2,001)"),
    ({"system_prompt": "s" * 100_001}, "system_prompt", "must be at most 100,000 characters (got 100,001)"),
    ({"system_prompt": None}, "system_prompt", "must be a string"),
    ({"model": ["gpt"]}, "model", "must be a string"),
    ({"max_rounds_message": 3}, "max_rounds_message", "must be a string"),
    ({"provider": "Not An Id"}, "provider", '"scripted" or the id of a provider connection'),
    ({"parallel_tool_calls": "yes"}, "parallel_tool_calls", "must be true, false or null"),
    ({"parallel_tool_calls": 0}, "parallel_tool_calls", "must be true, false or null"),
    ({"parallel_tool_calls": 1}, "parallel_tool_calls", "must be true, false or null"),
    ({"revision": 0}, "revision", "must be a whole number of at least 1"),
    ({"approval_timeout_seconds": 0}, "approval_timeout_seconds", "must be from 1 to 3600 (got 0)"),
    ({"approval_timeout_seconds": 3601}, "approval_timeout_seconds", "must be from 1 to 3600 (got 3601)"),
    ({"approval_timeout_seconds": "60"}, "approval_timeout_seconds", "must be a whole number from 1 to 3600"),
    ({"approval_webhook": "hooks.example.com"}, "approval_webhook", "must be empty or an http:// or https:// URL"),
    ({"approval_webhook": "ftp://hooks.example.com/x"}, "approval_webhook", "must be empty or an http:// or https:"),
    ({"approval_webhook": 5}, "approval_webhook", "must be empty or an http:// or https:// URL"),
    ({"approval_webhook": "https://h.example/" + "x" * 2_000}, "approval_webhook", "must be at most 2,000 characters"),
    (
        {"client_tools": {"Bash": {"require_approval": "yes"}}},
        "client_tools.Bash.require_approval",
        "must be true or false",
    ),
    ({"colour": "blue"}, "colour", "is not an agent field"),
    ({"tools": ["list_bundles"]}, "tools", "must be an object mapping tool names to settings"),
    ({"tools": {"no_such_tool": {}}}, "tools.no_such_tool", '"no_such_tool" is not a registered tool'),
    ({"tools": {"list_bundles": True}}, "tools.list_bundles", "tool settings must be an object"),
    ({"tools": {"list_bundles": {"colour": 1}}}, "tools.list_bundles.colour", "is not a tool setting"),
    (
        {"tools": {"list_bundles": {"restrict_multiple_calls": "yes"}}},
        "tools.list_bundles.restrict_multiple_calls",
        "must be true or false",
    ),
    ({"tools": {"list_bundles": {"require_usage": 1}}}, "tools.list_bundles.require_usage", "must be true or false"),
    (
        {"tools": {"list_bundles": {"return_directly": None}}},
        "tools.list_bundles.return_directly",
        "must be true or false",
    ),
    (
        {"tools": {"list_bundles": {"restrict_multiple_calls": True, "multiple_call_error_message": 5}}},
        "tools.list_bundles.multiple_call_error_message",
        "must be a string",
    ),
    (
        {"tools": {"list_bundles": {"description_override": "d" * 2_001}}},
        "tools.list_bundles.description_override",
        "must be at most 2,000 characters (got 2,001)",
    ),
    (
        {"tools": {"list_bundles": {"max_calls_per_run": -1}}},
        "tools.list_bundles.max_calls_per_run",
        "must be from 0 to 10000 (got -1)",
    ),
    (
        {"tools": {"list_bundles": {"max_calls_per_run": "3"}}},
        "tools.list_bundles.max_calls_per_run",
        "must be a whole number from 0 to 10000",
    ),
    (
        {"tools": {"list_bundles": {"max_calls_per_run": True}}},
        "tools.list_bundles.max_calls_per_run",
        "must be a whole number from 0 to 10000",
    ),
    ({"script": {"content": "Hi."}}, "script", "must be a list of responses"),
    ({"script": ["Hi."]}, "script", "response 1 must be an object"),
    ({"script": [{}]}, "script", 'response 1 needs "content" or "tool_calls"'),
    ({"script": [{"text": "Hi."}]}, "script", "response 1 has unknown key(s): text"),
    ({"script": [{"content": 5}]}, "script", 'response 1: "content" must be a string'),
    ({"script": [{"tool_calls": {"name": "x"}}]}, "script", 'response 1: "tool_calls" must be a list'),
    ({"script": [{"content": "a"}, {"tool_calls": ["x"]}]}, "script", "response 2, tool call 1 must be an object"),
    ({"script": [{"tool_calls": [{"arguments": {}}]}]}, "script", 'response 1, tool call 1 needs a "name"'),
    ({"script": [{"tool_calls": [{"name": ""}]}]}, "script", 'response 1, tool call 1 needs a "name"'),
    ({"script": [{"tool_calls": [{"name": "x", "id": ""}]}]}, "script", '"id" must be a non-empty string'),
    (
        {"script": [{"tool_calls": [{"name": "x", "arguments": 5}]}]},
        "script",
        '"arguments" must be an object or a string',
    ),
    ({"script": [{"tool_calls": [{"name": "x", "args": {}}]}]}, "script", "has unknown key(s): args"),
]


@pytest.mark.parametrize(("fields", "field", "message"), BAD_VALUES, ids=[case[1] for case in BAD_VALUES])
def test_bad_value_is_refused_naming_the_field(fields, field, message):
    with pytest.raises(ValidationError) as raised:
        validate(**fields)

    assert list(raised.value.errors) == [field]
    assert message in raised.value.errors[field]
    assert str(raised.value).startswith(f"{field}: ")


def test_a_client_tool_may_require_approval_within_the_agents_approval_settings():
    agent = validate(
        client_tools={"Bash": {"require_approval": True}},
        approval_timeout_seconds=60,
        approval_webhook="https://hooks.example.com/toolgate",
    )

    assert agent["client_tools"]["Bash"]["require_approval"] is True
    assert (agent["approval_timeout_seconds"], agent["approval_webhook"]) == (60, "https://hooks.example.com/toolgate")


def test_missing_label_is_refused():
    with pytest.raises(ValidationError, match="^label: is required$"):
        validate_agent({"id": "agent"})


def test_missing_id_is_refused():
    with pytest.raises(ValidationError, match="^id: "):
        validate_agent({"label": "Agent"})


def test_an_agent_that_is_not_an_object_is_refused():
    with pytest.raises(ValidationError, match="^agent: must be a JSON object$"):
        validate_agent(["id", "label"])


def test_every_bad_field_is_reported_at_once():
    with pytest.raises(ValidationError) as raised:
        validate(max_rounds=-1, on_round_cap="stop", label="")

    assert set(raised.value.errors) == {"max_rounds", "on_round_cap", "label"}


def test_validation_errors_are_value_errors():
    assert issubclass(ValidationError, ValueError)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"max_rounds": -1}, "max_rounds"),
        ({"max_rounds": "ten"}, "max_rounds"),
        ({"max_rounds": 101}, "max_rounds"),
        ({"max_rounds": True}, "max_rounds"),
        ({"on_round_cap": "never"}, "on_round_cap"),
        ({"tools": {"no_such_tool": {}}}, "tools.no_such_tool"),
        ({"label": "L" * 201}, "label"),
    ],
    ids=repr,
)
def test_run_agent_refuses_a_bad_agent_naming_the_field(fields, field):
    with pytest.raises(ValueError, match=f"^{field}: "):
        run_agent(make_agent(**fields), "Hello.")


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("", "message: must be a non-empty string"),
        ("   ", "message: must be a non-empty string"),
        (None, "message: must be a non-empty string"),
        ("m" * 10_001, "message: must be at most 10,000 characters (got 10,001)"),
    ],
    ids=["empty", "blank", "none", "too long"],
)
def test_run_agent_refuses_a_bad_message(message, expected):
    with pytest.raises(ValueError) as raised:
        run_agent(make_agent(), message)

    assert str(raised.value) == expected


# --- Overrides ------------------------------------------------------------------------------------------------


def test_overrides_merge_key_by_key():
    agent = {"id": "agent", "label": "Agent", "max_rounds": 4, "tools": {"list_bundles": {"require_usage": True}}}
    overrides = {"max_rounds": 2, "tools": {"list_bundles": {"restrict_multiple_calls": True}}}

    merged = apply_overrides(validate_agent(agent), overrides)

    assert merged["max_rounds"] == 2
    assert merged["label"] == "Agent"
    assert merged["tools"]["list_bundles"]["require_usage"] is True
    assert merged["tools"]["list_bundles"]["restrict_multiple_calls"] is True


def test_an_override_can_enable_a_tool_for_the_run():
    config, merged = load_agent({"id": "agent", "label": "Agent"}, {"tools": {"list_entity_types": {}}}, KNOWN_TOOLS)

    assert merged["tools"] == {"list_entity_types": TOOL_DEFAULTS}
    assert list(config.tools) == ["list_entity_types"]


def test_a_null_override_disables_a_tool_for_the_run():
    agent = {"id": "agent", "label": "Agent", "tools": {"list_bundles": {}, "list_entity_types": {}}}

    _config, merged = load_agent(agent, {"tools": {"list_bundles": None}}, KNOWN_TOOLS)

    assert list(merged["tools"]) == ["list_entity_types"]


def test_overrides_do_not_mutate_their_inputs():
    agent = {"id": "agent", "label": "Agent", "tools": {"list_bundles": {"require_usage": True}}, "script": []}
    overrides = {"max_rounds": 1, "tools": {"list_bundles": {"return_directly": True}, "list_entity_types": {}}}
    agent_before, overrides_before = copy.deepcopy(agent), copy.deepcopy(overrides)

    merged = apply_overrides(agent, overrides)
    merged["tools"]["list_bundles"]["require_usage"] = False
    load_agent(agent, overrides, KNOWN_TOOLS)

    assert agent == agent_before
    assert overrides == overrides_before


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"id": "other"}, "overrides.id", "cannot be overridden for a run"),
        ({"revision": 3}, "overrides.revision", "cannot be overridden for a run"),
        ({"colour": "blue"}, "overrides.colour", "is not an agent field"),
        ({"tools": ["list_bundles"]}, "overrides.tools", "must be an object mapping tool names to settings"),
        (
            {"tools": {"list_bundles": True}},
            "overrides.tools.list_bundles",
            "must be an object of tool settings, or null",
        ),
        (["max_rounds"], "overrides", "must be a JSON object"),
    ],
    ids=lambda value: repr(value) if isinstance(value, (dict, list)) else None,
)
def test_bad_overrides_are_refused_naming_the_field(overrides, field, message):
    with pytest.raises(ValidationError) as raised:
        apply_overrides({"id": "agent", "label": "Agent"}, overrides)

    assert raised.value.errors == {field: message}


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"max_rounds": 500}, "max_rounds"),
        ({"on_round_cap": "explode"}, "on_round_cap"),
        ({"tools": {"no_such_tool": {}}}, "tools.no_such_tool"),
        ({"tools": {"list_bundles": {"require_usage": "yes"}}}, "tools.list_bundles.require_usage"),
    ],
    ids=repr,
)
def test_overrides_that_make_the_agent_invalid_are_refused(overrides, field):
    with pytest.raises(ValueError, match=f"^{field}: "):
        run_agent(make_agent({"list_bundles": {}}), "Hello.", overrides)


def test_the_run_records_the_overrides_it_used_and_the_merged_agent():
    agent = make_agent({"list_entity_types": {}}, [tool_round(call("list_entity_types")), answer("Done.")])
    overrides = {"max_rounds": 0, "tools": {"list_entity_types": {"require_usage": True}}}

    result = run_agent(agent, "Hello.", overrides)

    assert result["overrides"] == overrides
    assert result["agent"]["max_rounds"] == 0
    assert result["agent"]["tools"]["list_entity_types"]["require_usage"] is True
    assert result["max_rounds"] == 0
    assert result["model_requests"] == 1


# --- What a run changed: only the fields that differ from the stored agent -------------------------------------

STORED = validate_agent(
    {
        "id": "agent",
        "label": "Agent",
        "max_rounds": 4,
        "tools": {
            "list_bundles": {"restrict_multiple_calls": True, "multiple_call_error_message": "Error: once."},
            "list_entity_types": {},
        },
        "script": [{"content": "Hi."}],
    }
)


def wanted(**changes):
    """What a run page posts untouched: the stored round cap, script and tools, then `changes`."""
    return {
        "max_rounds": STORED["max_rounds"],
        "on_round_cap": STORED["on_round_cap"],
        "script": STORED["script"],
        "tools": copy.deepcopy(STORED["tools"]),
        **changes,
    }


def test_nothing_changed_is_no_overrides():
    assert overrides_between(STORED, wanted()) == {}


def test_a_changed_field_is_the_only_override():
    assert overrides_between(STORED, wanted(max_rounds=2, script=[{"content": "Bye."}])) == {
        "max_rounds": 2,
        "script": [{"content": "Bye."}],
    }


def test_a_field_left_out_stays_as_stored():
    assert overrides_between(STORED, {"on_round_cap": "message"}) == {"on_round_cap": "message"}


def test_a_changed_tool_setting_is_recorded_alone():
    tools = copy.deepcopy(STORED["tools"])
    tools["list_entity_types"]["max_calls_per_run"] = 3

    assert overrides_between(STORED, wanted(tools=tools)) == {"tools": {"list_entity_types": {"max_calls_per_run": 3}}}


def test_a_tool_unticked_for_the_run_is_null_and_one_ticked_records_what_differs_from_the_defaults():
    tools = {
        "list_bundles": None,
        "list_entity_types": STORED["tools"]["list_entity_types"],
        "get_layout": {**TOOL_DEFAULTS},
        "place_component": {**TOOL_DEFAULTS, "require_usage": True},
        "edit_component": None,
    }

    assert overrides_between(STORED, wanted(tools=tools)) == {
        "tools": {"list_bundles": None, "get_layout": {}, "place_component": {"require_usage": True}}
    }


def test_the_custom_message_is_not_an_override_while_the_restriction_is_off():
    tools = copy.deepcopy(STORED["tools"])
    tools["list_bundles"].update(restrict_multiple_calls=False, multiple_call_error_message="")

    assert overrides_between(STORED, wanted(tools=tools)) == {
        "tools": {"list_bundles": {"restrict_multiple_calls": False}}
    }


def test_a_changed_custom_message_is_an_override_while_the_restriction_is_on():
    tools = copy.deepcopy(STORED["tools"])
    tools["list_bundles"]["multiple_call_error_message"] = ""

    assert overrides_between(STORED, wanted(tools=tools)) == {
        "tools": {"list_bundles": {"multiple_call_error_message": ""}}
    }


def test_applying_the_overrides_gives_what_was_wanted():
    tools = copy.deepcopy(STORED["tools"])
    tools["list_bundles"]["require_usage"] = True
    tools["get_layout"] = {**TOOL_DEFAULTS, "return_directly": True}
    goal = wanted(max_rounds=0, tools=tools)

    _config, merged = load_agent(STORED, overrides_between(STORED, goal), KNOWN_TOOLS)

    assert {key: merged[key] for key in goal} == goal


def test_overrides_between_does_not_mutate_its_inputs():
    goal = wanted(tools={"list_bundles": None, "get_layout": {**TOOL_DEFAULTS}})
    stored_before, goal_before = copy.deepcopy(STORED), copy.deepcopy(goal)

    overrides_between(STORED, goal)

    assert (STORED, goal) == (stored_before, goal_before)


# --- Machine names ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("My agent!", "my_agent"),
        ("  Shop -- helper  ", "shop_helper"),
        ("Ünïcode café", "n_code_caf"),
        ("2nd agent", "agent_2nd_agent"),
        ("!!!", ""),
        ("", ""),
        ("a" * 70, "a" * 64),
        ("a" * 63 + " b", "a" * 63),
    ],
)
def test_machine_name_is_derived_from_the_label(label, expected):
    assert machine_name(label) == expected


@pytest.mark.parametrize("label", ["My agent!", "2nd agent", "x" * 100, "Page builder (v2)"])
def test_a_derived_machine_name_is_a_valid_id(label):
    assert validate_agent({"id": machine_name(label), "label": label})["id"] == machine_name(label)


# --- run_agent leaves its arguments alone and returns plain data ----------------------------------------------


def full_run_arguments():
    agent = make_agent(
        {"list_bundles": {"restrict_multiple_calls": True}, "place_component": {}, "read_document": {}},
        [
            tool_round(call("list_bundles", {"entity_type": "node"}), call("list_bundles", {"entity_type": "user"})),
            tool_round(call("place_component", {"component": "hero"})),
            tool_round(call("place_component", {"component": "text", "below_uuid": "{{call_2_1}}"})),
            tool_round(call("read_document", {"doc_id": "warranty"})),
            answer("Done."),
        ],
        system_prompt="Line one.\r\nLine two.",
    )
    overrides = {"max_rounds": 6, "tools": {"place_component": {"require_usage": True}}}
    return agent, overrides


def test_run_agent_never_mutates_its_arguments():
    agent, overrides = full_run_arguments()
    agent_before, overrides_before = copy.deepcopy(agent), copy.deepcopy(overrides)

    run_agent(agent, "What does the warranty cover?", overrides)

    assert agent == agent_before
    assert overrides == overrides_before


def test_the_run_is_json_serialisable():
    agent, overrides = full_run_arguments()

    result = run_agent(agent, "What does the warranty cover?", overrides)

    assert json.loads(json.dumps(result)) == result
    assert result["stop_reason"] == "answered"
    assert len(result["layout"]) == 2


def test_the_run_does_not_share_objects_with_its_arguments():
    agent, overrides = full_run_arguments()

    result = run_agent(agent, "What does the warranty cover?", overrides)
    result["agent"]["script"][0]["tool_calls"][0]["arguments"]["entity_type"] = "changed"
    result["overrides"]["tools"]["place_component"]["require_usage"] = False

    assert agent["script"][0]["tool_calls"][0]["arguments"]["entity_type"] == "node"
    assert overrides["tools"]["place_component"]["require_usage"] is True
