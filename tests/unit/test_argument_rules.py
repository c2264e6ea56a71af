"""Argument rules and argument descriptions (SPEC §3): checked when the agent is saved, applied to the schema the
model sees, and enforced by the gate — an allow-list rejects, a forced value replaces, a hidden argument is gone."""

import pytest

from engine import run_agent, tools_for_agent
from engine.config import ValidationError, load_agent, validate_agent
from engine.gate import review_calls
from engine.tools import Tool, ToolRegistry, default_registry
from engine.types import ToolCall
from tests.unit.unit_helpers import NODE_BUNDLES, RecordingTools, SpyRegistry, answer, call, make_agent, tool_round

REGISTRY = default_registry()
KNOWN_TOOLS = REGISTRY.parameters_by_name()
NODE_OR_TAXONOMY = {"entity_type": {"action": "only_allow", "values": ["node", "taxonomy_term"]}}
NOT_ALLOWED_USER = "Error: invalid value for entity_type in list_bundles: user is not one of node, taxonomy_term."
FOOTER_HIDDEN = {"region": {"action": "force_value", "values": ["footer"], "hide": True}}


def validate_tool(name, **settings):
    return validate_agent({"id": "a", "label": "A", "tools": {name: settings}}, KNOWN_TOOLS)["tools"][name]


def review(tools, *specs, registry=REGISTRY, **state):
    config, _ = load_agent(make_agent(tools), known_tools=registry.parameters_by_name())
    calls = [ToolCall(f"c{number}", name, arguments) for number, (name, arguments) in enumerate(specs, 1)]
    return review_calls(calls, config, registry, **state).verdicts


def decided(verdicts):
    return [(verdict.reason, verdict.message) for verdict in verdicts]


# --- Checked when the agent is saved ---------------------------------------------------------------------------


def test_a_rule_gets_its_defaults_and_a_rule_without_an_action_is_dropped():
    settings = validate_tool(
        "place_component",
        argument_rules={"component": {"action": "only_allow", "values": ["hero"]}, "region": {"action": ""}},
        argument_descriptions={"component": "Hero only.", "region": ""},
    )

    assert settings["argument_rules"] == {"component": {"action": "only_allow", "values": ["hero"], "hide": False}}
    assert settings["argument_descriptions"] == {"component": "Hero only."}


def test_a_hidden_forced_value_is_kept():
    settings = validate_tool("place_component", argument_rules=FOOTER_HIDDEN)

    assert settings["argument_rules"] == FOOTER_HIDDEN


LIST_BUNDLES_RULES = "tools.list_bundles.argument_rules"
BAD_RULES = [
    ("list_bundles", {"argument_rules": []}, LIST_BUNDLES_RULES, "must be an object mapping argument names to"),
    (
        "list_bundles",
        {"argument_rules": {"bundle": {"action": "only_allow", "values": ["x"]}}},
        f"{LIST_BUNDLES_RULES}.bundle",
        "is not an argument of list_bundles (its arguments: entity_type)",
    ),
    (
        "list_entity_types",
        {"argument_rules": {"kind": {"action": "force_value", "values": ["x"]}}},
        "tools.list_entity_types.argument_rules.kind",
        "is not an argument of list_entity_types (it takes none)",
    ),
    ("list_bundles", {"argument_rules": {"entity_type": "node"}}, f"{LIST_BUNDLES_RULES}.entity_type", "must be an"),
    (
        "list_bundles",
        {"argument_rules": {"entity_type": {"action": "only_allow", "values": ["node"], "colour": 1}}},
        f"{LIST_BUNDLES_RULES}.entity_type.colour",
        "is not part of an argument rule (action, values, hide)",
    ),
    (
        "list_bundles",
        {"argument_rules": {"entity_type": {"action": "deny", "values": ["node"]}}},
        f"{LIST_BUNDLES_RULES}.entity_type.action",
        'must be "" (no rule), "only_allow" or "force_value"',
    ),
    (
        "list_bundles",
        {"argument_rules": {"entity_type": {"action": "only_allow", "values": "node"}}},
        f"{LIST_BUNDLES_RULES}.entity_type.values",
        "must be a list of JSON values",
    ),
    (
        "list_bundles",
        {"argument_rules": {"entity_type": {"action": "force_value", "values": ["node"], "hide": "yes"}}},
        f"{LIST_BUNDLES_RULES}.entity_type.hide",
        "must be true or false",
    ),
    (
        "list_bundles",
        {"argument_rules": {"entity_type": {"action": "only_allow", "values": ["node"], "hide": True}}},
        f"{LIST_BUNDLES_RULES}.entity_type.hide",
        "is only possible with a forced value (action force_value)",
    ),
    (
        "list_bundles",
        {"argument_rules": {"entity_type": {"action": "", "hide": True}}},
        f"{LIST_BUNDLES_RULES}.entity_type.hide",
        "is only possible with a forced value (action force_value)",
    ),
    (
        "list_bundles",
        {"argument_rules": {"entity_type": {"action": "only_allow", "values": []}}},
        f"{LIST_BUNDLES_RULES}.entity_type.values",
        "must hold at least one allowed value",
    ),
    (
        "list_bundles",
        {"argument_rules": {"entity_type": {"action": "force_value", "values": ["node", "user"]}}},
        f"{LIST_BUNDLES_RULES}.entity_type.values",
        "must hold exactly one value to force (got 2)",
    ),
    (
        "list_bundles",
        {"argument_rules": {"entity_type": {"action": "only_allow", "values": ["node", 5]}}},
        f"{LIST_BUNDLES_RULES}.entity_type.values",
        "must fit the argument's schema (value 2: 5 is not of type 'string')",
    ),
    (
        "place_component",
        {"argument_rules": {"component": {"action": "force_value", "values": ["banner"]}}},
        "tools.place_component.argument_rules.component.values",
        "must fit the argument's schema (value 1: 'banner' is not one of ['section', 'hero', 'heading', 'text', "
        "'image', 'button', 'card'])",
    ),
    (
        "list_bundles",
        {"argument_descriptions": "Entity type."},
        "tools.list_bundles.argument_descriptions",
        "must be an object mapping argument names to descriptions",
    ),
    (
        "list_bundles",
        {"argument_descriptions": {"bundle": "Which."}},
        "tools.list_bundles.argument_descriptions.bundle",
        "is not an argument of list_bundles (its arguments: entity_type)",
    ),
    (
        "list_bundles",
        {"argument_descriptions": {"entity_type": 5}},
        "tools.list_bundles.argument_descriptions.entity_type",
        "must be a string",
    ),
    (
        "list_bundles",
        {"argument_descriptions": {"entity_type": "d" * 2_001}},
        "tools.list_bundles.argument_descriptions.entity_type",
        "must be at most 2,000 characters (got 2,001)",
    ),
    ("list_bundles", {"max_identical_calls": -1}, "tools.list_bundles.max_identical_calls", "must be from 0 to"),
    ("list_bundles", {"max_identical_calls": "2"}, "tools.list_bundles.max_identical_calls", "must be a whole"),
    ("list_bundles", {"use_artifacts": 1}, "tools.list_bundles.use_artifacts", "must be true or false"),
    ("list_bundles", {"progress_message": None}, "tools.list_bundles.progress_message", "must be a string"),
    (
        "list_bundles",
        {"progress_message": "p" * 201},
        "tools.list_bundles.progress_message",
        "must be at most 200 characters (got 201)",
    ),
]


@pytest.mark.parametrize(("tool", "settings", "field", "message"), BAD_RULES, ids=[case[2] for case in BAD_RULES])
def test_a_bad_per_argument_setting_is_refused_naming_the_field(tool, settings, field, message):
    with pytest.raises(ValidationError) as raised:
        validate_tool(tool, **settings)

    assert raised.value.field == field
    assert raised.value.errors[field].startswith(message)


def test_without_the_schemas_only_the_shape_of_a_rule_is_checked():
    agent = {"id": "a", "label": "A", "tools": {"list_bundles": {"argument_rules": {"bundle": {"action": "x"}}}}}
    names_only = {"list_bundles"}

    with pytest.raises(ValidationError) as raised:
        validate_agent(agent, names_only)

    assert raised.value.errors == {
        f"{LIST_BUNDLES_RULES}.bundle.action": 'must be "" (no rule), "only_allow" or "force_value"'
    }


def test_a_run_override_of_the_rules_is_checked_against_the_schema_too():
    overrides = {
        "tools": {"list_bundles": {"argument_rules": {"entity_type": {"action": "force_value", "values": [1]}}}}
    }

    with pytest.raises(ValidationError) as raised:
        run_agent(make_agent({"list_bundles": {}}), "Hi", overrides)

    assert raised.value.field == f"{LIST_BUNDLES_RULES}.entity_type.values"


# --- The schema the model sees ---------------------------------------------------------------------------------


def function_of(tools, name, overrides=None):
    sent = tools_for_agent(make_agent(tools), overrides)
    return next(tool["function"] for tool in sent if tool["function"]["name"] == name)


def test_an_allow_list_becomes_the_arguments_enum():
    assert function_of({"list_bundles": {"argument_rules": NODE_OR_TAXONOMY}}, "list_bundles") == {
        "name": "list_bundles",
        "description": (
            "List the bundles (sub-types) of one entity type, for example the content types of 'node'. "
            'Returns {"entity_type", "bundles": [{"id", "label"}]}.'
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "entity_type": {
                    "type": "string",
                    "description": "An entity type id from list_entity_types, e.g. 'node'.",
                    "enum": ["node", "taxonomy_term"],
                }
            },
            "required": ["entity_type"],
            "additionalProperties": False,
        },
    }


def test_a_hidden_argument_is_gone_and_the_others_show_their_rules_and_descriptions():
    settings = {
        "argument_rules": {**FOOTER_HIDDEN, "component": {"action": "only_allow", "values": ["hero", "text"]}},
        "argument_descriptions": {"component": "A hero or a text.", "below_uuid": "The UUID to place it under."},
    }

    assert function_of({"place_component": settings}, "place_component")["parameters"] == {
        "type": "object",
        "properties": {
            "component": {"type": "string", "enum": ["hero", "text"], "description": "A hero or a text."},
            "below_uuid": {"type": "string", "minLength": 1, "description": "The UUID to place it under."},
            "inside_uuid": {
                "type": "string",
                "minLength": 1,
                "description": "Place last inside the component with this UUID.",
            },
        },
        "required": ["component"],
        "additionalProperties": False,
    }


def test_hiding_the_only_required_argument_removes_required():
    rules = {"entity_type": {"action": "force_value", "values": ["node"], "hide": True}}

    assert function_of({"list_bundles": {"argument_rules": rules}}, "list_bundles")["parameters"] == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


def test_a_forced_value_that_is_not_hidden_leaves_the_schema_as_it_is():
    rules = {"entity_type": {"action": "force_value", "values": ["node"]}}

    sent = function_of({"list_bundles": {"argument_rules": rules}}, "list_bundles")

    assert sent["parameters"] == REGISTRY.get("list_bundles").parameters


def test_run_overrides_change_the_schema_the_model_sees():
    overrides = {"tools": {"list_bundles": {"argument_descriptions": {"entity_type": "node or user"}}}}

    sent = function_of({"list_bundles": {}}, "list_bundles", overrides)

    assert sent["parameters"]["properties"]["entity_type"]["description"] == "node or user"


def test_the_schema_sent_is_a_copy_of_the_tools():
    sent = function_of({"list_bundles": {}}, "list_bundles")
    sent["parameters"]["properties"]["entity_type"]["enum"] = ["changed"]

    assert "enum" not in REGISTRY.get("list_bundles").parameters["properties"]["entity_type"]


# --- At the gate -----------------------------------------------------------------------------------------------


def test_a_value_off_the_allow_list_is_rejected_with_the_exact_message():
    verdicts = review(
        {"list_bundles": {"argument_rules": NODE_OR_TAXONOMY}},
        ("list_bundles", {"entity_type": "user"}),
        ("list_bundles", {"entity_type": "taxonomy_term"}),
    )

    assert decided(verdicts) == [("argument_not_allowed", NOT_ALLOWED_USER), (None, None)]


def test_values_that_are_not_strings_read_as_json_in_the_message():
    tools = RecordingTools(names=("alpha",))
    rules = {"n": {"action": "only_allow", "values": [1, 2]}}

    verdicts = review({"alpha": {"argument_rules": rules}}, ("alpha", {"n": 3}), registry=tools.registry)

    assert decided(verdicts) == [("argument_not_allowed", "Error: invalid value for n in alpha: 3 is not one of 1, 2.")]


def test_allowed_values_compare_as_json_schema_does():
    any_value = {"type": "object", "properties": {"x": {}}, "additionalProperties": False}
    registry = ToolRegistry([Tool("echo", "Echo.", any_value, lambda arguments, context: "ok")])
    rules = {"x": {"action": "only_allow", "values": [1, [1, 2]]}}

    verdicts = review(
        {"echo": {"argument_rules": rules}},
        ("echo", {"x": 1.0}),
        ("echo", {"x": True}),
        ("echo", {"x": [1, 2]}),
        ("echo", {"x": "1"}),
        registry=registry,
    )

    assert [verdict.allowed for verdict in verdicts] == [True, False, True, False]


def test_an_allow_list_does_not_require_an_optional_argument():
    rules = {"region": {"action": "only_allow", "values": ["header"]}}

    verdicts = review(
        {"place_component": {"argument_rules": rules}},
        ("place_component", {"component": "hero"}),
        ("place_component", {"component": "hero", "region": "footer"}),
    )

    assert [verdict.reason for verdict in verdicts] == [None, "argument_not_allowed"]


def test_a_value_of_the_wrong_type_is_invalid_before_the_allow_list_is_asked():
    verdicts = review({"list_bundles": {"argument_rules": NODE_OR_TAXONOMY}}, ("list_bundles", {"entity_type": 5}))

    assert decided(verdicts) == [
        ("invalid_arguments", "Error: invalid arguments for list_bundles: entity_type: 5 is not of type 'string'")
    ]


@pytest.mark.parametrize(
    "sent",
    ["header", "footer", "sidebar", 5, None, ["header"], {"region": "header"}],
    ids=["another value", "the forced value", "a value off the schema", "a number", "null", "a list", "an object"],
)
@pytest.mark.parametrize("hide", [True, False], ids=["hidden", "shown"])
def test_a_forced_argument_the_model_sends_anyway_runs_with_the_forced_value(sent, hide):
    rules = {"region": {"action": "force_value", "values": ["footer"], "hide": hide}}
    verdicts = review(
        {"place_component": {"argument_rules": rules}},
        ("place_component", {"component": "text", "region": sent}),
    )

    assert [(verdict.allowed, verdict.arguments, verdict.forced_arguments) for verdict in verdicts] == [
        (True, {"component": "text", "region": "footer"}, {"region": "footer"})
    ]
    assert verdicts[0].call.parsed_arguments()[0] == {"component": "text", "region": sent}  # what the model sent


def test_a_hidden_forced_argument_sent_anyway_runs_and_the_round_shows_both():
    spy = SpyRegistry()
    agent = make_agent(
        {"place_component": {"argument_rules": FOOTER_HIDDEN}},
        [tool_round(call("place_component", {"component": "text", "region": "header"})), answer("Placed.")],
    )

    run = run_agent(agent, "Place a text.", registry=spy.registry)

    assert spy.executed == [("place_component", {"component": "text", "region": "footer"})]
    recorded = run["rounds"][0]["calls"][0]
    assert recorded["status"] == "executed"
    assert (recorded["arguments"], recorded["forced_arguments"]) == (
        {"component": "text", "region": "header"},
        {"region": "footer"},
    )


def test_the_other_arguments_of_a_call_with_a_forced_one_are_still_checked():
    verdicts = review(
        {"place_component": {"argument_rules": FOOTER_HIDDEN}},
        ("place_component", {"component": "marquee", "region": "header"}),
    )

    assert [verdict.reason for verdict in verdicts] == ["invalid_arguments"]
    assert "'marquee' is not one of" in verdicts[0].message


def test_a_hidden_required_argument_is_not_asked_of_the_model():
    rules = {"entity_type": {"action": "force_value", "values": ["node"], "hide": True}}

    verdicts = review({"list_bundles": {"argument_rules": rules}}, ("list_bundles", {}))

    assert [(verdict.allowed, verdict.arguments, verdict.forced_arguments) for verdict in verdicts] == [
        (True, {"entity_type": "node"}, {"entity_type": "node"})
    ]


def test_a_forced_value_runs_whatever_the_model_sent_and_the_round_shows_both():
    spy = SpyRegistry()
    rules = {"entity_type": {"action": "force_value", "values": ["node"]}}
    agent = make_agent(
        {"list_bundles": {"argument_rules": rules}},
        [tool_round(call("list_bundles", {"entity_type": "media"})), answer("Articles and pages.")],
    )

    run = run_agent(agent, "Which bundles?", registry=spy.registry)

    assert spy.executed == [("list_bundles", {"entity_type": "node"})]
    recorded = run["rounds"][0]["calls"][0]
    assert (recorded["arguments"], recorded["forced_arguments"]) == ({"entity_type": "media"}, {"entity_type": "node"})
    assert (recorded["status"], recorded["output"]) == ("executed", NODE_BUNDLES)


def test_a_rejected_value_reaches_the_model_and_its_retry_runs():
    agent = make_agent(
        {"list_bundles": {"argument_rules": NODE_OR_TAXONOMY}},
        [
            tool_round(call("list_bundles", {"entity_type": "user"})),
            tool_round(call("list_bundles", {"entity_type": "node"})),
            answer("Articles and pages."),
        ],
    )

    run = run_agent(agent, "Which bundles?")

    tool_messages = [message for message in run["messages"] if message["role"] == "tool"]
    assert tool_messages == [
        {"role": "tool", "tool_call_id": "call_1_1", "content": NOT_ALLOWED_USER},
        {"role": "tool", "tool_call_id": "call_2_1", "content": NODE_BUNDLES},
    ]
    assert (run["stop_reason"], run["rejected_calls"], run["tool_calls"]) == ("answered", 1, 1)


def test_a_disallowed_value_is_decided_before_the_call_limit():
    verdicts = review(
        {"list_bundles": {"argument_rules": NODE_OR_TAXONOMY, "max_calls_per_run": 1}},
        ("list_bundles", {"entity_type": "user"}),
        calls_so_far={"list_bundles": 1},
    )

    assert [verdict.reason for verdict in verdicts] == ["argument_not_allowed"]


def test_a_restricted_tool_called_twice_with_a_disallowed_value_gets_only_the_restriction_messages():
    restricted = 'Error: The tool "list_bundles" may only be called once per response. None of the tool calls in '
    verdicts = review(
        {
            "list_bundles": {"argument_rules": NODE_OR_TAXONOMY, "restrict_multiple_calls": True},
            "list_entity_types": {},
        },
        ("list_bundles", {"entity_type": "user"}),
        ("list_bundles", {"entity_type": "user"}),
        ("list_entity_types", {}),
    )

    assert [verdict.reason for verdict in verdicts] == ["restricted_repeat", "restricted_repeat", "collateral"]
    assert all(verdict.message.startswith(restricted) for verdict in verdicts[:2])
    assert not any(verdict.allowed or verdict.forced_arguments for verdict in verdicts)
