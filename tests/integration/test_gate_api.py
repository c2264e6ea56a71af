"""POST /api/agents/<id>/gate: the gate's verdict on one response's tool calls, for clients that drive their own
loop. Nothing executes and no run is stored; every rejection is logged as a run logs it."""

import json

import pytest

from engine import texts
from tests.run_scenarios import bundles_agent

RESTRICTED = texts.RESTRICTED_REPEAT.replace("[tool_name]", "list_bundles")
COLLATERAL = (
    'Error: This tool call was not executed, because the tool(s) "list_bundles" in the same response may only be '
    "called once per response."
)


@pytest.fixture
def bundles(client):
    assert client.put("/api/agents/bundles", json=bundles_agent()).status_code == 201


def openai_call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def gate(client, tool_calls, agent_id="bundles", **body):
    return client.post(f"/api/agents/{agent_id}/gate", json={"tool_calls": tool_calls, **body})


def test_allowed_calls_are_listed_to_execute_with_no_tool_messages(client, bundles, database):
    response = gate(
        client, [openai_call("a", "list_bundles", {"entity_type": "node"}), openai_call("b", "list_entity_types", {})]
    )
    assert response.status_code == 200
    assert response.json["execute"] == ["a", "b"]
    assert [call["status"] for call in response.json["calls"]] == ["allowed", "allowed"]
    assert response.json["tool_messages"] == []
    assert (database["runs"].count, database["log"].count) == (0, 0)


def test_a_restricted_tool_twice_rejects_every_call_with_its_message(client, bundles):
    response = gate(
        client,
        [
            openai_call("a", "list_bundles", {"entity_type": "node"}),
            {"id": "b", "name": "list_bundles", "arguments": {"entity_type": "taxonomy_term"}},
            {"id": "c", "name": "list_entity_types", "arguments": {}},
        ],
    )
    verdict = response.json
    assert verdict["execute"] == []
    assert [(call["id"], call["status"], call["reason"]) for call in verdict["calls"]] == [
        ("a", "rejected", "restricted_repeat"),
        ("b", "rejected", "restricted_repeat"),
        ("c", "rejected", "collateral"),
    ]
    assert verdict["tool_messages"] == [
        {"role": "tool", "tool_call_id": "a", "content": RESTRICTED},
        {"role": "tool", "tool_call_id": "b", "content": RESTRICTED},
        {"role": "tool", "tool_call_id": "c", "content": COLLATERAL},
    ]


def test_the_violation_is_logged_without_a_run(client, bundles, database):
    gate(
        client,
        [
            {"id": "a", "name": "list_bundles", "arguments": {"entity_type": "node"}},
            {"id": "b", "name": "list_bundles", "arguments": {"entity_type": "user"}},
        ],
    )
    entry = next(iter(database["log"].rows))
    assert (entry["kind"], entry["agent_id"], entry["run_id"]) == ("policy_violation", "bundles", None)
    assert entry["message"].endswith("All 2 tool calls in the response were rejected.")
    assert database["runs"].count == 0


def test_overrides_change_the_verdict_for_this_request_only(client, bundles):
    calls = [
        {"id": "a", "name": "list_bundles", "arguments": {"entity_type": "node"}},
        {"id": "b", "name": "list_bundles", "arguments": {"entity_type": "user"}},
    ]
    relaxed = gate(client, calls, overrides={"tools": {"list_bundles": {"restrict_multiple_calls": False}}})
    assert relaxed.json["execute"] == ["a", "b"]
    assert gate(client, calls).json["execute"] == []


def test_custom_message_substitutes_the_tool_name(client, bundles):
    overrides = {"tools": {"list_bundles": {"multiple_call_error_message": "Custom: [tool_name] once only."}}}
    calls = [
        {"id": "a", "name": "list_bundles", "arguments": {"entity_type": "node"}},
        {"id": "b", "name": "list_bundles", "arguments": {"entity_type": "user"}},
    ]
    messages = [message["content"] for message in gate(client, calls, overrides=overrides).json["tool_messages"]]
    assert messages == ["Custom: list_bundles once only."] * 2


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        ({"id": "a", "name": "place_component", "arguments": {}}, "unknown_tool"),
        (
            {"id": "a", "type": "function", "function": {"name": "list_bundles", "arguments": "{not json"}},
            "invalid_arguments",
        ),
        ({"id": "a", "name": "list_bundles", "arguments": {}}, "invalid_arguments"),
    ],
)
def test_per_call_rejections(client, bundles, call, reason):
    verdict = gate(client, [call]).json
    assert verdict["calls"][0]["reason"] == reason
    assert verdict["tool_messages"][0]["tool_call_id"] == "a"


def test_calls_so_far_count_against_the_per_run_limit(client, bundles):
    overrides = {"tools": {"list_entity_types": {"max_calls_per_run": 2}}}
    call = [{"id": "a", "name": "list_entity_types", "arguments": {}}]
    assert gate(client, call, overrides=overrides, calls_so_far={"list_entity_types": 1}).json["execute"] == ["a"]
    limited = gate(client, call, overrides=overrides, calls_so_far={"list_entity_types": 2}).json
    assert limited["calls"][0]["reason"] == "call_limit"
    assert limited["calls"][0]["message"] == "Error: list_entity_types may be called at most 2 times per run."


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({}, "tool_calls", id="tool_calls missing"),
        pytest.param({"tool_calls": "a, b"}, "tool_calls", id="tool_calls not a list"),
        pytest.param({"tool_calls": ["x"]}, "tool_calls[0]", id="call not an object"),
        pytest.param({"tool_calls": [{"name": "list_bundles"}]}, "tool_calls[0]", id="call without id"),
        pytest.param({"tool_calls": [{"id": "a"}]}, "tool_calls[0]", id="call without name"),
        pytest.param(
            {"tool_calls": [{"id": "a", "name": "x"}, {"id": "a", "name": "y"}]}, "tool_calls", id="duplicate ids"
        ),
        pytest.param({"tool_calls": [], "overrides": {"nope": 1}}, "overrides.nope", id="unknown override"),
        pytest.param({"tool_calls": [], "overrides": "x"}, "overrides", id="overrides not an object"),
        pytest.param({"tool_calls": [], "calls_so_far": {"list_bundles": -1}}, "calls_so_far", id="negative count"),
        pytest.param({"tool_calls": [], "calls_so_far": "x"}, "calls_so_far", id="counts not an object"),
        pytest.param({"tool_calls": [], "extra": 1}, "extra", id="unknown field"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(client, bundles, database, body, field):
    response = client.post("/api/agents/bundles/gate", json=body)
    assert response.status_code == 400
    assert response.json["field"] == field
    assert database["log"].count == 0


def test_unknown_agent_is_a_404(client):
    response = gate(client, [])
    assert response.status_code == 404
    assert response.json["field"] == "agent_id"


def test_no_csrf_token_is_needed_for_json(csrf_app):
    client = csrf_app.test_client()
    client.put("/api/agents/bundles", json=bundles_agent())
    assert gate(client, []).status_code == 200
