"""The gate (SPEC §4), by example: one response's calls in, one verdict per call out, nothing executed."""

import pytest

from engine.config import load_agent
from engine.gate import reject_without_tools, restriction_log_message, review_calls
from engine.tools import default_registry
from engine.types import ToolCall
from tests.unit.unit_helpers import COLLATERAL_LIST_BUNDLES, RESTRICTED_LIST_BUNDLES, UNKNOWN_TOOL

REGISTRY = default_registry()
RESTRICTED = {"restrict_multiple_calls": True}


def config_for(tools):
    config, _merged = load_agent({"id": "t", "label": "T", "tools": tools}, known_tools=set(REGISTRY.names()))
    return config


def calls(*specs):
    """ToolCalls with ids c1, c2, … from (name, arguments) pairs."""
    return [
        ToolCall(id=f"c{number}", name=name, arguments=arguments) for number, (name, arguments) in enumerate(specs, 1)
    ]


def review(tools, *specs, calls_so_far=None):
    return review_calls(calls(*specs), config_for(tools), REGISTRY, calls_so_far)


def decided(result):
    return [(v.call.id, v.allowed, v.reason, v.message) for v in result.verdicts]


NODE = ("list_bundles", {"entity_type": "node"})
TAXONOMY = ("list_bundles", {"entity_type": "taxonomy_term"})
ENTITY_TYPES = ("list_entity_types", {})


# --- Step 1: per call -----------------------------------------------------------------------------------------


def test_valid_calls_are_allowed_with_their_parsed_arguments():
    result = review({"list_bundles": {}}, NODE, ("list_bundles", '{"entity_type": "user"}'))

    assert [(v.allowed, v.reason, v.message, v.arguments) for v in result.verdicts] == [
        (True, None, None, {"entity_type": "node"}),
        (True, None, None, {"entity_type": "user"}),
    ]
    assert result.restricted_tools == ()


def test_an_unregistered_tool_is_unknown():
    result = review({"list_bundles": {}}, ("drop_database", {}))

    assert decided(result) == [("c1", False, "unknown_tool", "Unknown tool.")]


def test_a_registered_tool_the_agent_did_not_enable_is_unknown():
    result = review({"list_bundles": {}}, ENTITY_TYPES)

    assert decided(result) == [("c1", False, "unknown_tool", UNKNOWN_TOOL)]


INVALID_ARGUMENTS = [
    ("{broken", "the arguments are not valid JSON (Expecting property name enclosed in double quotes at position 1)"),
    ("not json", "the arguments are not valid JSON (Expecting value at position 0)"),
    ("[1, 2]", "the arguments must be a JSON object"),
    ('"node"', "the arguments must be a JSON object"),
    ("42", "the arguments must be a JSON object"),
    ("null", "the arguments must be a JSON object"),
    (["node"], "the arguments must be a JSON object"),
    ("", "'entity_type' is a required property"),
    ({}, "'entity_type' is a required property"),
    ("{}", "'entity_type' is a required property"),
    ({"entity_type": 5}, "entity_type: 5 is not of type 'string'"),
    (
        {"entity_type": "node", "bundle": "page"},
        "Additional properties are not allowed ('bundle' was unexpected)",
    ),
]


@pytest.mark.parametrize(("arguments", "detail"), INVALID_ARGUMENTS, ids=[repr(case[0]) for case in INVALID_ARGUMENTS])
def test_bad_arguments_are_rejected_naming_what_is_wrong(arguments, detail):
    result = review({"list_bundles": {}}, ("list_bundles", arguments))

    assert decided(result) == [
        ("c1", False, "invalid_arguments", f"Error: invalid arguments for list_bundles: {detail}"),
    ]


def test_calls_past_max_calls_per_run_are_rejected():
    result = review({"list_bundles": {"max_calls_per_run": 2}}, NODE, TAXONOMY, NODE)

    assert decided(result) == [
        ("c1", True, None, None),
        ("c2", True, None, None),
        ("c3", False, "call_limit", "Error: list_bundles may be called at most 2 times per run."),
    ]


def test_call_limit_counts_the_calls_that_already_ran_in_the_run():
    calls_so_far = {"list_bundles": 1}

    result = review({"list_bundles": {"max_calls_per_run": 2}}, NODE, TAXONOMY, calls_so_far=calls_so_far)

    assert [v.reason for v in result.verdicts] == [None, "call_limit"]
    assert calls_so_far == {"list_bundles": 1}


def test_rejected_calls_do_not_use_up_the_call_limit():
    result = review({"list_bundles": {"max_calls_per_run": 1}}, ("list_bundles", {}), NODE)

    assert [v.reason for v in result.verdicts] == ["invalid_arguments", None]


def test_unknown_is_decided_before_arguments():
    result = review({}, ("list_bundles", "{broken"))

    assert [v.reason for v in result.verdicts] == ["unknown_tool"]


def test_invalid_arguments_are_decided_before_the_call_limit():
    result = review({"list_bundles": {"max_calls_per_run": 1}}, NODE, ("list_bundles", "[]"))

    assert [v.reason for v in result.verdicts] == [None, "invalid_arguments"]


# --- Step 2: the restriction ----------------------------------------------------------------------------------


def test_a_restricted_tool_twice_rejects_both_calls():
    result = review({"list_bundles": RESTRICTED}, NODE, TAXONOMY)

    assert decided(result) == [
        ("c1", False, "restricted_repeat", RESTRICTED_LIST_BUNDLES),
        ("c2", False, "restricted_repeat", RESTRICTED_LIST_BUNDLES),
    ]
    assert result.restricted_tools == ("list_bundles",)


def test_every_other_call_gets_the_collateral_message():
    result = review({"list_bundles": RESTRICTED, "list_entity_types": {}}, ENTITY_TYPES, NODE, TAXONOMY)

    assert decided(result) == [
        ("c1", False, "collateral", COLLATERAL_LIST_BUNDLES),
        ("c2", False, "restricted_repeat", RESTRICTED_LIST_BUNDLES),
        ("c3", False, "restricted_repeat", RESTRICTED_LIST_BUNDLES),
    ]


def test_the_restriction_replaces_every_step_one_verdict():
    result = review(
        {"list_bundles": RESTRICTED, "list_entity_types": {"max_calls_per_run": 1}},
        NODE,
        ("no_such_tool", {}),
        ("list_entity_types", "{broken"),
        ("list_bundles", "not json"),
        ENTITY_TYPES,
        ENTITY_TYPES,
    )

    assert [(v.allowed, v.reason) for v in result.verdicts] == [
        (False, "restricted_repeat"),
        (False, "collateral"),
        (False, "collateral"),
        (False, "restricted_repeat"),
        (False, "collateral"),
        (False, "collateral"),
    ]


def test_a_restricted_tool_counts_calls_with_bad_arguments():
    result = review({"list_bundles": RESTRICTED}, ("list_bundles", {}), ("list_bundles", "[]"))

    assert [v.reason for v in result.verdicts] == ["restricted_repeat", "restricted_repeat"]


def test_a_restricted_tool_called_once_is_allowed():
    result = review({"list_bundles": RESTRICTED, "list_entity_types": {}}, NODE, ENTITY_TYPES, ENTITY_TYPES)

    assert [v.allowed for v in result.verdicts] == [True, True, True]
    assert result.restricted_tools == ()


def test_an_unrestricted_tool_may_be_called_many_times():
    result = review({"list_bundles": {}}, *[NODE] * 6)

    assert all(v.allowed for v in result.verdicts)


def test_two_repeated_restricted_tools_are_both_named_in_the_collateral_message():
    tools = {"list_bundles": RESTRICTED, "place_component": RESTRICTED, "list_entity_types": {}}
    hero = ("place_component", {"component": "hero"})

    result = review(tools, hero, NODE, ENTITY_TYPES, hero, TAXONOMY)

    collateral = (
        'Error: This tool call was not executed, because the tool(s) "place_component", "list_bundles" in the same '
        "response may only be called once per response."
    )
    assert [v.message for v in result.verdicts][2] == collateral
    assert result.restricted_tools == ("place_component", "list_bundles")
    assert [v.reason for v in result.verdicts] == ["restricted_repeat"] * 2 + ["collateral"] + ["restricted_repeat"] * 2


def test_a_restricted_tool_called_once_beside_a_repeated_one_gets_the_collateral_message():
    tools = {"list_bundles": RESTRICTED, "place_component": RESTRICTED}

    result = review(tools, ("place_component", {"component": "hero"}), NODE, TAXONOMY)

    assert [v.reason for v in result.verdicts] == ["collateral", "restricted_repeat", "restricted_repeat"]
    assert result.verdicts[0].message == COLLATERAL_LIST_BUNDLES


@pytest.mark.parametrize(
    ("custom", "expected"),
    [
        ("Custom: [tool_name] once only", "Custom: list_bundles once only"),
        ("Error: [tool_name], then [tool_name] again.", "Error: list_bundles, then list_bundles again."),
        ("Error: one at a time.", "Error: one at a time."),
        ("", RESTRICTED_LIST_BUNDLES),
    ],
)
def test_the_custom_message_replaces_the_default(custom, expected):
    settings = {"restrict_multiple_calls": True, "multiple_call_error_message": custom}

    result = review({"list_bundles": settings}, NODE, TAXONOMY)

    assert [v.message for v in result.verdicts] == [expected, expected]


def test_each_repeated_restricted_tool_gets_its_own_custom_message():
    tools = {
        "list_bundles": {"restrict_multiple_calls": True, "multiple_call_error_message": "Error: bundles once."},
        "place_component": {"restrict_multiple_calls": True, "multiple_call_error_message": "Error: [tool_name]."},
    }
    hero = ("place_component", {"component": "hero"})

    result = review(tools, NODE, hero, TAXONOMY, hero)

    assert [v.message for v in result.verdicts] == [
        "Error: bundles once.",
        "Error: place_component.",
        "Error: bundles once.",
        "Error: place_component.",
    ]


def test_a_custom_message_does_not_change_the_collateral_message():
    settings = {"restrict_multiple_calls": True, "multiple_call_error_message": "Custom: [tool_name] once only"}

    result = review({"list_bundles": settings, "list_entity_types": {}}, NODE, TAXONOMY, ENTITY_TYPES)

    assert result.verdicts[2].message == COLLATERAL_LIST_BUNDLES


def test_the_gate_keeps_response_order_and_ids():
    specs = [NODE, ("no_such_tool", {}), TAXONOMY, ("list_bundles", "[]")]

    result = review({"list_bundles": {}}, *specs)

    assert [v.call.id for v in result.verdicts] == ["c1", "c2", "c3", "c4"]


def test_an_empty_response_has_no_verdicts():
    assert review({"list_bundles": RESTRICTED}).verdicts == ()


# --- Texts around the gate ------------------------------------------------------------------------------------


def test_the_log_message_names_the_agent_the_tools_and_the_count():
    result = review({"list_bundles": RESTRICTED, "list_entity_types": {}}, NODE, TAXONOMY, ENTITY_TYPES)

    assert restriction_log_message("catalog_agent", result) == (
        'The agent "catalog_agent" called the single-call tool(s) "list_bundles" multiple times in one response. '
        "All 3 tool calls in the response were rejected."
    )


def test_calls_on_a_request_without_tools_are_all_rejected():
    result = reject_without_tools(calls(NODE, ("no_such_tool", {})))

    assert [(v.call.id, v.allowed, v.reason) for v in result.verdicts] == [
        ("c1", False, "tools_disabled"),
        ("c2", False, "tools_disabled"),
    ]
    assert all(v.message.startswith("Error:") for v in result.verdicts)
