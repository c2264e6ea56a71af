"""Client tools (SPEC §2 `client_tools`): settings for tools the client runs, validated like tool settings, merged
by run overrides, and applied by the gate API like the agent's own tools, without a schema."""

import pytest

from engine import review_tool_calls, validate_agent
from engine.config import CLIENT_TOOL_SETTING_DEFAULTS, ValidationError, load_agent
from engine.tools import default_registry

KNOWN_TOOLS = default_registry().parameters_by_name()
CLIENT_DEFAULTS = {
    "restrict_multiple_calls": False,
    "multiple_call_error_message": "",
    "require_usage": False,
    "description_override": "",
    "max_calls_per_run": 0,
    "max_identical_calls": 0,
    "argument_rules": {},
    "argument_descriptions": {},
    "require_approval": False,
}
RESTRICTED = (
    'Error: The tool "place_components" may only be called once per response. None of the tool calls in this '
    "response were executed. Call it once, wait for its result, then call it again if you need to."
)


def agent(**fields):
    return {"id": "canvas", "label": "Canvas", **fields}


def test_a_client_tool_gets_every_setting_that_makes_sense_without_running_it():
    validated = validate_agent(agent(client_tools={"place_components": {}}), KNOWN_TOOLS)
    assert validated["client_tools"] == {"place_components": CLIENT_DEFAULTS}
    assert dict(CLIENT_TOOL_SETTING_DEFAULTS) == CLIENT_DEFAULTS


@pytest.mark.parametrize(
    ("client_tools", "field", "message"),
    [
        ([], "client_tools", "must be an object mapping tool names to settings"),
        ({"place components": {}}, "client_tools.place components", "a tool name is 1 to 64 letters"),
        ({"x" * 65: {}}, "client_tools." + "x" * 65, "a tool name is 1 to 64 letters"),
        ({"list_bundles": {}}, "client_tools.list_bundles", "is also one of the agent's tools"),
        ({"place": "yes"}, "client_tools.place", "tool settings must be an object"),
        ({"place": {"return_directly": True}}, "client_tools.place.return_directly", "Toolgate never runs it"),
        ({"place": {"use_artifacts": True}}, "client_tools.place.use_artifacts", "Toolgate never runs it"),
        ({"place": {"colour": "red"}}, "client_tools.place.colour", "is not a tool setting"),
        ({"place": {"restrict_multiple_calls": "yes"}}, "client_tools.place.restrict_multiple_calls", "true or false"),
        ({"place": {"max_calls_per_run": -1}}, "client_tools.place.max_calls_per_run", "from 0 to 10000"),
        (
            {"place": {"argument_rules": {"region": {"action": "force_value", "values": []}}}},
            "client_tools.place.argument_rules.region.values",
            "exactly one value",
        ),
    ],
)
def test_bad_client_tools_are_refused_naming_the_field(client_tools, field, message):
    with pytest.raises(ValidationError) as raised:
        validate_agent(agent(tools={"list_bundles": {}}, client_tools=client_tools), KNOWN_TOOLS)
    assert field in raised.value.errors
    assert message in raised.value.errors[field]


def test_a_client_tool_needs_no_registered_tool_and_its_rules_name_any_argument():
    rules = {"region": {"action": "force_value", "values": ["footer"], "hide": True}}
    validated = validate_agent(agent(client_tools={"place_components": {"argument_rules": rules}}), KNOWN_TOOLS)
    assert validated["client_tools"]["place_components"]["argument_rules"] == rules


def test_the_custom_message_is_cleared_while_the_restriction_is_off():
    settings = {"multiple_call_error_message": "Error: one at a time."}
    validated = validate_agent(agent(client_tools={"place": settings}))
    assert validated["client_tools"]["place"]["multiple_call_error_message"] == ""


def test_run_overrides_merge_into_client_tools_and_null_removes_one():
    stored = agent(client_tools={"place": {"restrict_multiple_calls": True}, "read": {}})
    config, merged = load_agent(stored, {"client_tools": {"place": {"max_calls_per_run": 2}, "read": None}})
    assert merged["client_tools"]["place"]["restrict_multiple_calls"] is True
    assert config.client_tools["place"].max_calls_per_run == 2
    assert "read" not in config.client_tools


def test_a_bad_client_tool_override_names_the_field():
    with pytest.raises(ValidationError) as raised:
        load_agent(agent(), {"client_tools": {"place": "off"}})
    assert raised.value.field == "overrides.client_tools.place"


# --- The gate API ----------------------------------------------------------------------------------------------


def call(call_id, name, arguments):
    return {"id": call_id, "name": name, "arguments": arguments}


def test_the_gate_api_rejects_a_restricted_client_tool_called_twice_with_its_message():
    restricted = agent(client_tools={"place_components": {"restrict_multiple_calls": True}}, tools={"get_layout": {}})
    review = review_tool_calls(
        restricted,
        [
            call("a", "place_components", {"component": "hero"}),
            call("b", "place_components", {"component": "text"}),
            call("c", "get_layout", {}),
        ],
    )
    assert review["execute"] == []
    assert [entry["reason"] for entry in review["calls"]] == ["restricted_repeat", "restricted_repeat", "collateral"]
    assert review["tool_messages"][0] == {"role": "tool", "tool_call_id": "a", "content": RESTRICTED}
    assert review["restricted_tools"] == ["place_components"]


def test_a_client_tool_with_no_settings_is_known_and_any_object_passes_but_not_bad_json():
    review = review_tool_calls(
        agent(client_tools={"place_components": {}}),
        [call("a", "place_components", {"anything": [1, 2]}), call("b", "place_components", "{not json")],
    )
    assert review["execute"] == ["a"]
    assert review["calls"][1]["reason"] == "invalid_arguments"
    assert review["calls"][1]["message"].startswith("Error: invalid arguments for place_components: ")


def test_a_tool_in_neither_map_is_unknown_to_the_gate_api():
    review = review_tool_calls(agent(client_tools={"place_components": {}}), [call("a", "paint", {})])
    assert review["calls"][0]["reason"] == "unknown_tool"


def test_client_tool_limits_rules_and_repeats_count_what_the_client_says_ran():
    settings = {
        "max_calls_per_run": 2,
        "max_identical_calls": 1,
        "argument_rules": {
            "region": {"action": "only_allow", "values": ["header", "content"]},
            "theme": {"action": "force_value", "values": ["dark"], "hide": True},
        },
    }
    stored = agent(client_tools={"place": settings})
    ran = [call("old", "place", {"region": "header", "theme": "dark"})]

    review = review_tool_calls(
        stored,
        [call("a", "place", {"region": "footer"}), call("b", "place", {"region": "header"}), call("c", "place", {})],
        calls_so_far=ran,
    )

    assert [entry["reason"] for entry in review["calls"]] == ["argument_not_allowed", "repeated_call", None]
    assert review["calls"][2]["arguments"] == {"theme": "dark"}
    assert review["calls"][2]["forced_arguments"] == {"theme": "dark"}

    over = review_tool_calls(stored, [call("d", "place", {})], calls_so_far={"place": 2})
    assert over["calls"][0]["message"] == "Error: place may be called at most 2 times per run."
