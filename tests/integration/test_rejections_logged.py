"""Every kind of rejection is on the log (issue 24, item 4): the restriction at error in the seed module's words, each
other rejection at warning with its reason as its kind, linked to its run — and the log page filters by that kind."""

import pytest

from store import log as log_store

BUNDLES_CALL = {"name": "list_bundles", "arguments": {"entity_type": "node"}}


def logged(database, **filters):
    return [
        (entry["level"], entry["kind"], entry["run_id"], entry["message"])
        for entry in log_store.list_entries(database, **filters).rows
    ]


def test_a_call_over_its_limit_is_logged_at_warning_as_call_limit_linked_to_its_run(client, database):
    agent = {
        "label": "Bundles",
        "tools": {"list_bundles": {"max_calls_per_run": 1}},
        "script": [{"tool_calls": [BUNDLES_CALL]}, {"tool_calls": [BUNDLES_CALL]}, {"content": "Done."}],
    }
    client.put("/api/agents/bundles", json=agent)
    run = client.post("/api/agents/bundles/runs", json={"message": "Which bundles?"}).json

    assert logged(database, agent_id="bundles") == [
        (
            "warning",
            "call_limit",
            run["id"],
            'The agent "bundles" had its call call_2_1 of "list_bundles" rejected: '
            "Error: list_bundles may be called at most 1 times per run.",
        )
    ]
    page = client.get("/log?kind=call_limit").get_data(as_text=True)
    assert "list_bundles may be called at most 1 times per run." in page and f'href="/runs/{run["id"]}"' in page


def test_an_unknown_tool_and_bad_arguments_are_each_logged_with_their_reason(client, database):
    calls = [{"name": "drop_tables", "arguments": {}}, {"name": "list_bundles", "arguments": {"entity_type": 5}}]
    agent = {"label": "Bundles", "tools": {"list_bundles": {}}, "script": [{"tool_calls": calls}, {"content": "Ok."}]}
    client.put("/api/agents/bundles", json=agent)
    client.post("/api/agents/bundles/runs", json={"message": "Which bundles?"})

    kinds = {(level, kind) for level, kind, _run, _message in logged(database, agent_id="bundles")}
    assert kinds == {("warning", "unknown_tool"), ("warning", "invalid_arguments")}


def test_the_restriction_keeps_its_one_error_entry_and_adds_none_per_call(client, database):
    agent = {
        "label": "Bundles",
        "tools": {"list_bundles": {"restrict_multiple_calls": True}},
        "script": [{"tool_calls": [BUNDLES_CALL, BUNDLES_CALL]}, {"content": "Ok."}],
    }
    client.put("/api/agents/bundles", json=agent)
    client.post("/api/agents/bundles/runs", json={"message": "Which bundles?"})

    assert [(level, kind) for level, kind, _run, _message in logged(database, agent_id="bundles")] == [
        ("error", "policy_violation")
    ]


def test_a_reviewers_rejection_is_logged_as_reviewer_rejected(client, database):
    agent = {
        "label": "Bundles",
        "tools": {"list_bundles": {"require_approval": True}},
        "script": [{"tool_calls": [BUNDLES_CALL]}, {"content": "Ok."}],
    }
    client.put("/api/agents/bundles", json=agent)
    run = client.post("/api/agents/bundles/runs", json={"message": "Which bundles?"}).json
    decisions = {"call_1_1": {"reject": "Not today."}}
    client.post(f"/api/runs/{run['id']}/decisions", json={"decisions": decisions})

    [(level, kind, run_id, message)] = logged(database, agent_id="bundles")
    assert (level, kind, run_id) == ("warning", "reviewer_rejected", run["id"])
    assert message.endswith("rejected: Error: A reviewer rejected this tool call. Not today.")


def bundles_call(call_id, entity_type="node"):
    return {"id": call_id, "name": "list_bundles", "arguments": {"entity_type": entity_type}}


# (tool settings, the calls that ran in earlier rounds, the response's calls)
SAME_RESPONSE = {
    "unknown tool": ({}, [], [{"id": "a", "name": "drop_tables", "arguments": {}}, bundles_call("b")]),
    "invalid arguments": ({}, [], [{"id": "a", "name": "list_bundles", "arguments": {"entity_type": 5}}]),
    "argument not allowed": (
        {"argument_rules": {"entity_type": {"action": "only_allow", "values": ["node"]}}},
        [],
        [bundles_call("a", "user")],
    ),
    "call limit": ({"max_calls_per_run": 1}, [bundles_call("first", "user")], [bundles_call("a")]),
    "repeated call": ({"max_identical_calls": 1}, [bundles_call("first")], [bundles_call("a")]),
    "restriction": ({"restrict_multiple_calls": True}, [], [bundles_call("a"), bundles_call("b", "user")]),
}


@pytest.mark.parametrize(("settings", "ran", "calls"), SAME_RESPONSE.values(), ids=SAME_RESPONSE.keys())
def test_the_gate_api_logs_a_response_exactly_as_a_run_does(client, database, settings, ran, calls):
    script = [*({"tool_calls": [call]} for call in ran), {"tool_calls": calls}, {"content": "Ok."}]
    agent = {"label": "Bundles", "tools": {"list_bundles": settings}, "script": script}
    assert client.put("/api/agents/bundles", json=agent).status_code == 201
    run = client.post("/api/agents/bundles/runs", json={"message": "Which bundles?"}).json
    gate = client.post("/api/agents/bundles/gate", json={"tool_calls": calls, "calls_so_far": ran})
    assert gate.status_code == 200

    rows = logged(database, agent_id="bundles")
    in_run = [(level, kind, message) for level, kind, run_id, message in rows if run_id == run["id"]]
    from_gate = [(level, kind, message) for level, kind, run_id, message in rows if run_id is None]
    assert in_run and from_gate == in_run
    assert gate.json["log"] == [
        {"level": level, "kind": kind, "agent_id": "bundles", "message": message} for level, kind, message in in_run
    ]
