"""The gate API for clients that drive their own loop (SPEC §8): calls in, verdicts and tool messages out."""

import copy

import pytest

from engine import review_tool_calls
from tests.unit.unit_helpers import COLLATERAL_LIST_BUNDLES, RESTRICTED_LIST_BUNDLES, RecordingTools, make_agent

AGENT = make_agent({"list_bundles": {"restrict_multiple_calls": True}, "list_entity_types": {}})


def openai_call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_openai_format_calls_are_reviewed():
    result = review_tool_calls(
        AGENT,
        [
            openai_call("a", "list_bundles", '{"entity_type": "node"}'),
            openai_call("b", "list_entity_types", "{}"),
        ],
    )

    assert result["execute"] == ["a", "b"]
    assert result["calls"] == [
        {
            "id": "a",
            "name": "list_bundles",
            "status": "allowed",
            "reason": None,
            "message": None,
            "arguments": {"entity_type": "node"},
            "forced_arguments": {},
            "replaced_placeholders": [],
        },
        {
            "id": "b",
            "name": "list_entity_types",
            "status": "allowed",
            "reason": None,
            "message": None,
            "arguments": {},
            "forced_arguments": {},
            "replaced_placeholders": [],
        },
    ]
    assert result["tool_messages"] == []


def test_short_form_calls_are_reviewed():
    result = review_tool_calls(
        AGENT, [{"id": "a", "name": "list_bundles", "arguments": {"entity_type": "node"}}, {"id": "b", "name": "nope"}]
    )

    assert result["execute"] == ["a"]
    assert result["tool_messages"] == [{"role": "tool", "tool_call_id": "b", "content": "Unknown tool."}]


def test_a_violation_rejects_every_call_with_a_tool_message_for_each():
    result = review_tool_calls(
        AGENT,
        [
            openai_call("a", "list_bundles", '{"entity_type": "node"}'),
            {"id": "b", "name": "list_entity_types", "arguments": {}},
            openai_call("c", "list_bundles", '{"entity_type": "user"}'),
        ],
    )

    assert result["execute"] == []
    assert [(c["id"], c["status"], c["reason"]) for c in result["calls"]] == [
        ("a", "rejected", "restricted_repeat"),
        ("b", "rejected", "collateral"),
        ("c", "rejected", "restricted_repeat"),
    ]
    assert result["tool_messages"] == [
        {"role": "tool", "tool_call_id": "a", "content": RESTRICTED_LIST_BUNDLES},
        {"role": "tool", "tool_call_id": "b", "content": COLLATERAL_LIST_BUNDLES},
        {"role": "tool", "tool_call_id": "c", "content": RESTRICTED_LIST_BUNDLES},
    ]
    assert [entry["message"] for entry in result["log"]] == [
        f'The agent "{AGENT["id"]}" called the single-call tool(s) "list_bundles" multiple times in one response. '
        "All 3 tool calls in the response were rejected."
    ]


def test_tool_messages_are_only_for_rejected_calls():
    result = review_tool_calls(
        AGENT,
        [
            openai_call("ok", "list_bundles", '{"entity_type": "node"}'),
            openai_call("bad", "list_entity_types", "[1]"),
        ],
    )

    assert result["execute"] == ["ok"]
    assert result["tool_messages"] == [
        {
            "role": "tool",
            "tool_call_id": "bad",
            "content": "Error: invalid arguments for list_entity_types: the arguments must be a JSON object",
        }
    ]


def test_an_empty_response_executes_nothing():
    assert review_tool_calls(AGENT, []) == {
        "execute": [],
        "calls": [],
        "tool_messages": [],
        "restricted_tools": [],
        "log": [],
    }


def test_overrides_apply_to_the_review():
    calls = [openai_call("a", "list_bundles", '{"entity_type": "node"}'), openai_call("b", "list_bundles", "{}")]

    result = review_tool_calls(AGENT, calls, {"tools": {"list_bundles": {"restrict_multiple_calls": False}}})

    assert result["execute"] == ["a"]
    assert result["calls"][1]["reason"] == "invalid_arguments"


def test_calls_so_far_count_towards_max_calls_per_run():
    agent = make_agent({"list_entity_types": {"max_calls_per_run": 3}})
    calls = [{"id": "a", "name": "list_entity_types"}, {"id": "b", "name": "list_entity_types"}]

    result = review_tool_calls(agent, calls, calls_so_far={"list_entity_types": 2})

    assert result["execute"] == ["a"]
    assert result["tool_messages"] == [
        {
            "role": "tool",
            "tool_call_id": "b",
            "content": "Error: list_entity_types may be called at most 3 times per run.",
        }
    ]


def test_nothing_executes_during_a_review():
    tools = RecordingTools()

    review_tool_calls(
        make_agent({"alpha": {}}), [{"id": "a", "name": "alpha", "arguments": {"n": 1}}], registry=tools.registry
    )

    assert tools.executed == []


def test_the_review_does_not_mutate_its_inputs():
    calls = [openai_call("a", "list_bundles", '{"entity_type": "node"}'), {"id": "b", "name": "list_bundles"}]
    calls_before, agent_before = copy.deepcopy(calls), copy.deepcopy(AGENT)

    review_tool_calls(AGENT, calls)

    assert (AGENT, calls) == (agent_before, calls_before)


BAD_INPUT = [
    ({"id": "a", "name": "list_bundles"}, "tool_calls: must be a list"),
    ("list_bundles", "tool_calls: must be a list"),
    (["list_bundles"], "tool_calls[0]: must be an object"),
    ([{"name": "list_bundles"}], 'tool_calls[0]: needs an "id" string'),
    ([{"id": "", "name": "list_bundles"}], 'tool_calls[0]: needs an "id" string'),
    ([{"id": 7, "name": "list_bundles"}], 'tool_calls[0]: needs an "id" string'),
    ([{"id": "a", "name": "x"}, {"id": "b"}], 'tool_calls[1]: needs a function "name"'),
    ([{"id": "a", "type": "function", "function": {"arguments": "{}"}}], 'tool_calls[0]: needs a function "name"'),
    ([{"id": "a", "name": "x"}, {"id": "a", "name": "y"}], "tool_calls: every call needs its own id"),
]


@pytest.mark.parametrize(("tool_calls", "message"), BAD_INPUT, ids=[case[1] for case in BAD_INPUT])
def test_bad_input_is_refused_with_a_clear_error(tool_calls, message):
    with pytest.raises(ValueError) as raised:
        review_tool_calls(AGENT, tool_calls)

    assert str(raised.value) == message


def test_a_bad_agent_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="^max_rounds: "):
        review_tool_calls(make_agent(max_rounds=-1), [])
