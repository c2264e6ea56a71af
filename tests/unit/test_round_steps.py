"""engine.round.next_step: what follows a model response is one value, a class per outcome with only its own
fields, so that no driver (the loop, the proxy, the gate API) has to re-detect an outcome from optional fields."""

import dataclasses

import pytest

from engine.config import load_agent
from engine.round import (
    Answered,
    AskAgain,
    AwaitingApproval,
    ToolRound,
    ToolsDisabled,
    answer_round,
    next_step,
)
from engine.tools import default_registry
from engine.types import ModelResponse, ToolCall
from tests.unit.unit_helpers import MAX_ROUNDS_TEXT, make_agent

REGISTRY = default_registry()
BUNDLES = ToolCall("a", "list_bundles", '{"entity_type": "node"}')
TYPES = ToolCall("b", "list_entity_types", "{}")
BASE_FIELDS = {"round", "assistant", "rounds_used"}


def step_after(response, tools=None, offered=True, rounds_used=0, used_tools=(), **fields):
    config, _ = load_agent(
        make_agent(tools if tools is not None else {"list_bundles": {}, "list_entity_types": {}}, **fields),
        known_tools=REGISTRY.parameters_by_name(),
    )
    offered_tools = REGISTRY.schemas_for_model(config.tools) if offered else None
    round_ = answer_round(response, rounds_used + 1, set(), offered_tools, 1.0, 0.0)
    return next_step(
        round_,
        config=config,
        registry=REGISTRY,
        rounds_used=rounds_used,
        used_tools=set(used_tools),
        calls_so_far=None,
        identical_so_far=None,
    )


def own_fields(step_class):
    return {field.name for field in dataclasses.fields(step_class)} - BASE_FIELDS


def test_each_outcome_is_a_class_with_only_its_own_fields():
    assert own_fields(Answered) == {"stop_reason", "answer"}
    assert own_fields(AskAgain) == {"reminder"}
    assert own_fields(ToolsDisabled) == {"answer", "verdicts", "log"}
    assert own_fields(ToolRound) == {"verdicts", "restricted_tools", "log"}
    assert own_fields(AwaitingApproval) == {"verdicts", "awaiting", "log"}


def test_a_step_is_frozen():
    step = step_after(ModelResponse("Done.", ()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.answer = "Changed."


@pytest.mark.parametrize(
    ("offered", "finish_reason", "stop_reason"),
    [(True, "stop", "answered"), (False, "stop", "round_cap"), (True, "length", "truncated")],
)
def test_an_answer_is_answered_with_how_it_came(offered, finish_reason, stop_reason):
    step = step_after(ModelResponse("The bundles are…", (), finish_reason), offered=offered, rounds_used=2)

    assert step == Answered(
        step.round, {"role": "assistant", "content": "The bundles are…"}, 2, stop_reason, "The bundles are…"
    )


def test_an_answer_before_a_required_tool_ran_asks_again_with_the_reminder_and_uses_a_round():
    step = step_after(ModelResponse("Done.", ()), tools={"list_bundles": {"require_usage": True}}, rounds_used=1)

    assert type(step) is AskAgain and step.rounds_used == 2
    assert step.reminder == (
        "Reminder: The following tools should be used based on the instructions, but were not used: list_bundles. "
        "Please make sure to use them in your next response."
    )
    assert step.round.reminder == step.reminder


def test_calls_on_a_request_without_tools_are_tools_disabled_each_rejected_and_logged():
    step = step_after(ModelResponse(None, (BUNDLES, TYPES)), offered=False, rounds_used=3, max_rounds=3)

    assert type(step) is ToolsDisabled and step.rounds_used == 3
    assert step.answer == MAX_ROUNDS_TEXT
    assert [(verdict.call.id, verdict.allowed, verdict.reason) for verdict in step.verdicts] == [
        ("a", False, "tools_disabled"),
        ("b", False, "tools_disabled"),
    ]
    assert [(entry["level"], entry["kind"]) for entry in step.log] == [("warning", "tools_disabled")] * 2


def test_reviewed_calls_are_a_tool_round_with_the_gates_verdicts():
    step = step_after(ModelResponse("", (BUNDLES, ToolCall("c", "drop_tables", "{}"))))

    assert type(step) is ToolRound and step.rounds_used == 1 and not step.all_allowed
    assert [(verdict.call.id, verdict.reason) for verdict in step.verdicts] == [("a", None), ("c", "unknown_tool")]
    assert [(entry["level"], entry["kind"]) for entry in step.log] == [("warning", "unknown_tool")]


def test_a_repeated_restricted_tool_is_a_tool_round_naming_it_with_one_error_entry():
    twice = (BUNDLES, ToolCall("b", "list_bundles", '{"entity_type": "user"}'))
    step = step_after(ModelResponse("", twice), tools={"list_bundles": {"restrict_multiple_calls": True}})

    assert type(step) is ToolRound and step.restricted_tools == ("list_bundles",)
    assert [(entry["level"], entry["kind"]) for entry in step.log] == [("error", "policy_violation")]


def test_an_allowed_call_that_needs_approval_awaits_it_and_the_others_are_still_reviewed():
    tools = {"list_bundles": {"require_approval": True}, "list_entity_types": {}}
    step = step_after(ModelResponse("", (BUNDLES, TYPES, ToolCall("c", "drop_tables", "{}"))), tools=tools)

    assert type(step) is AwaitingApproval and step.rounds_used == 1
    assert step.awaiting == ("a",)
    assert [verdict.allowed for verdict in step.verdicts] == [True, True, False]
    assert [entry["kind"] for entry in step.log] == ["unknown_tool"]
