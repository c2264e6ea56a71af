"""The tool rules through the JSON API: the gate API applies argument rules, artifacts and the repeated-call guard
like a run does; GET /api/agents/<id>/tools answers the tools as the next request sends them; a run stores them."""

import json
from urllib.parse import quote

import pytest

ONLY_NODE = {"entity_type": {"action": "only_allow", "values": ["node", "taxonomy_term"]}}
FOOTER = {"region": {"action": "force_value", "values": ["footer"], "hide": True}}
AGENT = {
    "label": "Rules",
    "tools": {
        "list_bundles": {"argument_rules": ONLY_NODE, "max_identical_calls": 1, "use_artifacts": True},
        "place_component": {"argument_rules": FOOTER, "argument_descriptions": {"component": "Hero or text."}},
    },
    "script": [
        {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "user"}}]},
        {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "node"}}]},
        {"content": "Articles and pages."},
    ],
}
NOT_ALLOWED_USER = "Error: invalid value for entity_type in list_bundles: user is not one of node, taxonomy_term."


@pytest.fixture
def rules(client):
    assert client.put("/api/agents/rules", json=AGENT).status_code == 201


def gate(client, tool_calls, **body):
    return client.post("/api/agents/rules/gate", json={"tool_calls": tool_calls, **body})


def short(call_id, name, arguments):
    return {"id": call_id, "name": name, "arguments": arguments}


def test_the_agents_api_fills_the_defaults_of_the_new_settings(client, rules):
    stored = client.get("/api/agents/rules").json["tools"]

    assert stored["list_bundles"]["argument_rules"] == {
        "entity_type": {"action": "only_allow", "values": ["node", "taxonomy_term"], "hide": False}
    }
    assert {
        key: stored["place_component"][key] for key in ("max_identical_calls", "use_artifacts", "progress_message")
    } == {
        "max_identical_calls": 0,
        "use_artifacts": False,
        "progress_message": "",
    }


def test_a_rule_whose_value_does_not_fit_the_schema_is_a_400_naming_it(client):
    agent = {
        **AGENT,
        "tools": {"place_component": {"argument_rules": {"region": {"action": "force_value", "values": ["side"]}}}},
    }

    response = client.put("/api/agents/bad_rules", json=agent)

    assert response.status_code == 400
    assert response.json["field"] == "tools.place_component.argument_rules.region.values"
    assert response.json["error"].startswith(
        "tools.place_component.argument_rules.region.values: must fit the argument's schema "
        "(value 1: 'side' is not one of"
    )


def test_the_gate_api_rejects_a_disallowed_value_and_hands_back_forced_arguments(client, rules):
    response = gate(
        client,
        [
            short("a", "list_bundles", {"entity_type": "user"}),
            short("b", "place_component", {"component": "text"}),
        ],
    )

    assert response.status_code == 200
    assert response.json["execute"] == ["b"]
    assert response.json["tool_messages"] == [{"role": "tool", "tool_call_id": "a", "content": NOT_ALLOWED_USER}]
    allowed = response.json["calls"][1]
    assert (allowed["arguments"], allowed["forced_arguments"]) == (
        {"component": "text", "region": "footer"},
        {"region": "footer"},
    )


def test_the_gate_api_resolves_the_clients_artifacts(client, rules):
    calls = [short("a", "place_component", {"component": "text", "below_uuid": "{{artifact:list_bundles:1}}"})]

    known = gate(client, calls, artifacts={"{{artifact:list_bundles:1}}": "uuid-1"}).json
    unknown = gate(client, calls).json

    assert known["calls"][0]["arguments"] == {"component": "text", "below_uuid": "uuid-1", "region": "footer"}
    assert known["calls"][0]["replaced_placeholders"] == ["{{artifact:list_bundles:1}}"]
    assert unknown["tool_messages"][0]["content"] == (
        "Error: invalid arguments for place_component: {{artifact:list_bundles:1}} is not an artifact of this run"
    )


def test_the_gate_api_counts_identical_calls_from_the_calls_that_ran(client, rules):
    ran = [{"type": "function", "function": {"name": "list_bundles", "arguments": '{"entity_type": "node"}'}}]

    response = gate(client, [short("a", "list_bundles", {"entity_type": "node"})], calls_so_far=ran)

    assert response.json["calls"][0]["reason"] == "repeated_call"
    assert response.json["tool_messages"][0]["content"] == (
        "Error: list_bundles was already called with these arguments 1 times in this run. Use the earlier result."
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"artifacts": ["x"]}, "artifacts"),
        ({"artifacts": {"{{artifact:a:1}}": 5}}, "artifacts"),
        ({"calls_so_far": [{"name": "list_bundles", "arguments": "[1]"}]}, "calls_so_far[0]"),
        ({"calls_so_far": [{"arguments": {}}]}, "calls_so_far[0]"),
    ],
)
def test_bad_gate_input_is_a_400_naming_the_field(client, rules, body, field):
    response = gate(client, [], **body)

    assert response.status_code == 400
    assert response.json["field"] == field


def test_the_tools_endpoint_answers_the_tools_the_next_request_sends(client, rules):
    response = client.get("/api/agents/rules/tools")

    assert response.status_code == 200
    tools = response.json["tools"]
    assert [tool["function"]["name"] for tool in tools] == ["list_bundles", "place_component"]
    place = tools[1]["function"]["parameters"]
    assert "region" not in place["properties"]
    assert place["properties"]["component"]["description"] == "Hero or text."
    assert tools[0]["function"]["parameters"]["properties"]["entity_type"]["enum"] == ["node", "taxonomy_term"]


def test_the_tools_endpoint_applies_overrides(client, rules):
    overrides = {"tools": {"list_bundles": None, "place_component": {"argument_rules": {}}}}

    response = client.get(f"/api/agents/rules/tools?overrides={quote(json.dumps(overrides))}")

    assert [tool["function"]["name"] for tool in response.json["tools"]] == ["place_component"]
    assert "region" in response.json["tools"][0]["function"]["parameters"]["properties"]
    assert client.get("/api/agents/rules/tools?overrides=%7B%22max_rounds%22%3A0%7D").json == {"tools": []}


@pytest.mark.parametrize(
    ("query", "status", "field"),
    [
        ("overrides=%7Bnope", 400, "overrides"),
        ("overrides=%5B%5D", 400, "overrides"),
        ("overrides=%7B%22max_rounds%22%3A%22x%22%7D", 400, "max_rounds"),
    ],
)
def test_bad_overrides_on_the_tools_endpoint_are_a_400(client, rules, query, status, field):
    response = client.get(f"/api/agents/rules/tools?{query}")

    assert (response.status_code, response.json["field"]) == (status, field)


def test_the_tools_of_an_unknown_agent_are_a_404(client):
    assert client.get("/api/agents/nobody/tools").status_code == 404


def test_a_run_stores_the_tools_it_sent_and_the_rejection_and_its_retry(client, rules):
    expected = client.get("/api/agents/rules/tools").json["tools"]

    run = client.post("/api/agents/rules/runs", json={"message": "Which bundles?"}).json
    stored = client.get(f"/api/runs/{run['id']}").json

    assert [r["tools_sent"] for r in stored["rounds"]] == [expected, expected, expected]
    first, second = stored["rounds"][0]["calls"][0], stored["rounds"][1]["calls"][0]
    assert (first["reason"], first["message"]) == ("argument_not_allowed", NOT_ALLOWED_USER)
    assert (second["status"], second["artifact"]) == ("executed", "{{artifact:list_bundles:1}}")
    assert [artifact["placeholder"] for artifact in stored["artifacts"]] == ["{{artifact:list_bundles:1}}"]
