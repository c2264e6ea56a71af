"""run-agent on an agent whose call needs approval: the run is stored waiting, and the terminal says where to decide."""

AGENT = {
    "label": "Approvals",
    "tools": {"list_bundles": {"require_approval": True}},
    "script": [{"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "node"}}]}, {"content": "Done."}],
}


def test_run_agent_stops_at_a_call_that_needs_approval_and_says_where_to_decide(runner, client):
    client.put("/api/agents/approvals", json=AGENT)

    result = runner.invoke(args=["run-agent", "approvals", "Which bundles?"])

    assert result.exit_code == 0, result.output
    assert "Round 1 awaits approval of call_1_1: nothing of it has run. Decide on /runs/1" in result.output
    assert "Answer:" not in result.output
    assert client.get("/api/runs/1").get_json()["state"] == "awaiting_approval"
