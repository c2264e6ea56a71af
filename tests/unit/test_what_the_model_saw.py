"""What the model saw: each round records the `tools` its request sent, `tools_for_agent` answers them before a run,
and the progress messages of the tools that ran are in the round."""

from engine import run_agent, tools_for_agent
from tests.unit.unit_helpers import answer, call, make_agent, sdk_model, tool_round

RULES = {"entity_type": {"action": "only_allow", "values": ["node"]}}
TOOLS = {
    "list_bundles": {"argument_rules": RULES, "description_override": "Bundles.", "progress_message": "Listing…"},
    "list_entity_types": {"progress_message": "Reading the types…"},
}


def test_each_round_records_exactly_the_tools_its_request_sent():
    model = sdk_model([tool_round(call("list_bundles", {"entity_type": "node"})), answer("Articles.")])
    agent = make_agent(TOOLS, max_rounds=1)

    run = run_agent(agent, "Which bundles?", model=model)

    assert [r["tools_sent"] for r in run["rounds"]] == [request.get("tools") for request in model.bodies]
    assert run["rounds"][0]["tools_sent"][0]["function"]["parameters"]["properties"]["entity_type"]["enum"] == ["node"]
    assert run["rounds"][1]["tools_sent"] is None  # the cap's forced answer went without tools


def test_tools_for_agent_is_what_the_first_request_sends():
    model = sdk_model([answer("Hi.")])
    agent = make_agent(TOOLS)

    run_agent(agent, "Hi", model=model)

    assert tools_for_agent(agent) == model.bodies[0]["tools"]
    assert [tool["function"]["description"] for tool in tools_for_agent(agent)][0] == "Bundles."


def test_tools_for_agent_applies_overrides_and_sends_nothing_without_tools():
    agent = make_agent(TOOLS)

    assert [t["function"]["name"] for t in tools_for_agent(agent, {"tools": {"list_entity_types": None}})] == [
        "list_bundles"
    ]
    assert tools_for_agent(agent, {"max_rounds": 0}) == []
    assert tools_for_agent(make_agent({})) == []


def test_a_round_lists_the_progress_messages_of_the_tools_that_ran_and_each_call_its_own():
    script = [
        tool_round(call("list_bundles", {"entity_type": "user"}), call("list_entity_types")),
        tool_round(call("list_bundles", {"entity_type": "node"}), call("list_entity_types")),
        answer("Done."),
    ]

    run = run_agent(make_agent(TOOLS, script), "Which bundles?")

    first, second, last = run["rounds"]
    assert first["progress_messages"] == ["Reading the types…"]  # list_bundles was rejected: it did not run
    assert second["progress_messages"] == ["Listing…", "Reading the types…"]
    assert last["progress_messages"] == []
    assert [c["progress_message"] for c in first["calls"]] == ["Listing…", "Reading the types…"]


def test_a_tool_without_a_progress_message_shows_none():
    run = run_agent(make_agent({"list_entity_types": {}}, [tool_round(call("list_entity_types")), answer("Ok.")]), "Hi")

    assert run["rounds"][0]["calls"][0]["progress_message"] is None
    assert run["rounds"][0]["progress_messages"] == []
