"""Two runs compared: round by round, call by call, what differs named, and the settings that differ between the
agent snapshots they ran with."""

from engine import run_agent
from engine.run_diff import agent_changes, compare_runs
from tests.unit.unit_helpers import answer, call, make_agent, tool_round

NODE = {"entity_type": "node"}
SCRIPT = [
    tool_round(call("list_bundles", NODE), call("list_bundles", {"entity_type": "taxonomy_term"})),
    tool_round(call("list_bundles", NODE)),
    answer("Articles and pages."),
]


def bundles_run(restricted=True, **fields):
    tools = {"list_bundles": {"restrict_multiple_calls": restricted}, "list_entity_types": {}}
    return run_agent(make_agent(tools=tools, script=SCRIPT, **fields), "Which bundles?")


def summary(comparison):
    return {entry["field"]: (entry["first"], entry["second"]) for entry in comparison["summary"] if entry["differs"]}


def test_a_restriction_turned_off_shows_in_the_counts_the_first_rounds_verdicts_and_the_settings():
    comparison = compare_runs(bundles_run(restricted=True), bundles_run(restricted=False))

    assert summary(comparison) == {"tool_calls": (1, 3), "rejected_calls": (2, 0)}
    first, second, third = comparison["rounds"]
    assert [call["differs"] for call in first["calls"]] == [["status", "reason", "message", "output"]] * 2
    assert first["calls"][0]["first"]["status"] == "rejected" and first["calls"][0]["second"]["status"] == "executed"
    assert not second["any_difference"] and not third["any_difference"]
    assert comparison["agent_changes"] == [
        {"setting": "tools.list_bundles.restrict_multiple_calls", "before": True, "after": False}
    ]
    assert not comparison["identical"]


def test_two_runs_of_the_same_settings_are_identical():
    assert compare_runs(bundles_run(), bundles_run())["identical"]


def test_a_round_only_one_run_has_is_a_difference_with_every_field_of_its_calls():
    comparison = compare_runs(bundles_run(max_rounds=1), bundles_run())

    assert summary(comparison)["stop_reason"] == ("round_cap", "answered")
    second_round = comparison["rounds"][1]
    assert second_round["differs"] == ["tools_offered", "content"]  # the forced answer against a tool round
    assert second_round["calls"][0]["first"] is None
    assert second_round["calls"][0]["differs"] == ["name", "arguments", "status", "reason", "message", "output"]
    assert comparison["rounds"][2]["differs"] == ["round"]
    assert comparison["agent_changes"] == [{"setting": "max_rounds", "before": 1, "after": 10}]


def test_snapshot_differences_name_each_setting_and_ignore_the_revision():
    before = {"id": "t", "label": "T", "revision": 3, "tools": {"list_bundles": {}, "get_layout": {}}}
    after = {
        "id": "t",
        "label": "T (new)",
        "revision": 4,
        "on_round_cap": "message",
        "tools": {"list_bundles": {"max_calls_per_run": 2}, "list_documents": {}},
    }

    assert agent_changes(before, after) == [
        {"setting": "label", "before": "T", "after": "T (new)"},
        {"setting": "on_round_cap", "before": "final_answer", "after": "message"},
        {"setting": "tools.list_bundles.max_calls_per_run", "before": 0, "after": 2},
        {"setting": "tools.get_layout", "before": "enabled", "after": "not enabled"},
        {"setting": "tools.list_documents", "before": "not enabled", "after": "enabled"},
    ]


def test_the_same_tools_offered_in_another_order_are_no_difference():
    first = bundles_run()
    second = run_agent(
        make_agent(tools={"list_entity_types": {}, "list_bundles": {"restrict_multiple_calls": True}}, script=SCRIPT),
        "Which bundles?",
    )

    assert first["rounds"][0]["tools_offered"] != second["rounds"][0]["tools_offered"]
    assert compare_runs(first, second)["identical"]
