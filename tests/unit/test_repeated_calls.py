"""max_identical_calls (SPEC §3): a call equal — tool and parsed arguments — to N calls that already ran in the run
is rejected as `repeated_call`, so a model stuck calling the same thing gets told to use the earlier result."""

import pytest

from engine import run_agent
from engine.config import load_agent
from engine.gate import identical_call_key, review_calls
from engine.tools import default_registry
from engine.types import ToolCall
from tests.unit.unit_helpers import SpyRegistry, answer, call, make_agent, tool_round

REGISTRY = default_registry()
NODE = {"entity_type": "node"}


def repeated(count):
    return (
        f"Error: list_bundles was already called with these arguments {count} times in this run. "
        "Use the earlier result."
    )


def run_script(settings, *responses):
    spy = SpyRegistry()
    agent = make_agent({"list_bundles": settings}, [*responses, answer("Done.")])
    return run_agent(agent, "Which bundles?", registry=spy.registry), spy


def decisions(run):
    return [(c["id"], c["status"], c["reason"], c["message"]) for r in run["rounds"] for c in r["calls"]]


def test_the_call_past_the_limit_is_rejected_with_the_exact_message():
    run, spy = run_script(
        {"max_identical_calls": 2},
        *[tool_round(call("list_bundles", NODE)) for _ in range(3)],
    )

    assert decisions(run)[2] == ("call_3_1", "rejected", "repeated_call", repeated(2))
    assert [status for _id, status, _reason, _message in decisions(run)] == ["executed", "executed", "rejected"]
    assert len(spy.executed) == 2


def test_other_arguments_are_another_call():
    run, _spy = run_script(
        {"max_identical_calls": 1},
        tool_round(call("list_bundles", NODE)),
        tool_round(call("list_bundles", {"entity_type": "user"})),
        tool_round(call("list_bundles", '{"entity_type": "node"}')),
    )

    assert [reason for _id, _status, reason, _message in decisions(run)] == [None, None, "repeated_call"]


def test_an_identical_call_in_the_same_response_counts_as_already_made():
    run, _spy = run_script(
        {"max_identical_calls": 1}, tool_round(call("list_bundles", NODE), call("list_bundles", NODE))
    )

    assert decisions(run)[1] == ("call_1_2", "rejected", "repeated_call", repeated(1))


def test_a_call_that_failed_ran_and_a_rejected_one_did_not():
    comment = {"entity_type": "comment"}
    run, _spy = run_script(
        {"max_identical_calls": 1, "max_calls_per_run": 2},
        tool_round(call("list_bundles", comment)),
        tool_round(call("list_bundles", comment)),
        tool_round(call("list_bundles", NODE)),
        tool_round(call("list_bundles", {"entity_type": "user"})),
        tool_round(call("list_bundles", {"entity_type": "user"})),
    )

    assert [(status, reason) for _id, status, reason, _message in decisions(run)] == [
        ("error", "tool_error"),
        ("rejected", "repeated_call"),
        ("executed", None),
        ("rejected", "call_limit"),
        ("rejected", "call_limit"),  # the call limit rejected the first: it never ran, so it is no repeat
    ]


def test_calls_made_identical_by_a_forced_value_are_identical():
    rules = {"entity_type": {"action": "force_value", "values": ["node"]}}
    run, spy = run_script(
        {"max_identical_calls": 1, "argument_rules": rules},
        tool_round(call("list_bundles", NODE)),
        tool_round(call("list_bundles", {"entity_type": "user"})),
    )

    assert decisions(run)[1] == ("call_2_1", "rejected", "repeated_call", repeated(1))
    assert spy.executed == [("list_bundles", NODE)]


def test_without_the_setting_the_same_call_runs_every_time():
    run, spy = run_script({}, *[tool_round(call("list_bundles", NODE)) for _ in range(4)])

    assert len(spy.executed) == 4 and run["rejected_calls"] == 0


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ({"a": 1, "b": [1, {"c": 2}]}, {"b": [1, {"c": 2}], "a": 1}, True),
        ({"a": 1}, {"a": 1.5}, False),
        ({"a": 1}, {"a": True}, False),
        ({"a": "1"}, {"a": 1}, False),
        ({"a": [1, 2]}, {"a": [2, 1]}, False),
        ({}, {"a": None}, False),
    ],
)
def test_identical_means_the_same_parsed_json(first, second, same):
    assert (identical_call_key("t", first) == identical_call_key("t", second)) is same
    assert identical_call_key("t", first) != identical_call_key("u", first)


def test_the_gate_counts_identical_calls_that_ran_before_without_changing_them():
    config, _ = load_agent(make_agent({"list_bundles": {"max_identical_calls": 2}}))
    before = {identical_call_key("list_bundles", NODE): 1}
    identical_so_far = dict(before)
    calls = [ToolCall("a", "list_bundles", NODE), ToolCall("b", "list_bundles", '{"entity_type":"node"}')]

    review = review_calls(calls, config, REGISTRY, identical_so_far=identical_so_far)

    assert [(v.reason, v.message) for v in review.verdicts] == [(None, None), ("repeated_call", repeated(2))]
    assert identical_so_far == before
