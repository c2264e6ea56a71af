"""POST /api/agents/<id>/runs and GET /api/runs/<id>: the run in the shape of SPEC §8, stored whole; bad input is
a 400 naming the field and stores nothing."""

import httpx2
import pytest

from engine import texts
from engine.config import MESSAGE_MAX
from store import documents as document_store
from store import providers as provider_store
from tests.doubles import ModelDouble, completion
from tests.run_scenarios import (
    BUNDLES_ANSWER,
    BUNDLES_MESSAGE,
    DOCUMENTS,
    DOCUMENTS_AGENT,
    DOCUMENTS_MESSAGE,
    bundles_agent,
)

pytestmark = pytest.mark.both_engines


SPEC_RUN_KEYS = {
    "id",
    "agent_id",
    "stop_reason",
    "answer",
    "rounds",
    "messages",
    "tool_calls",
    "rejected_calls",
    "sources",
}
SPEC_ROUND_KEYS = {"number", "tools_offered", "assistant", "calls"}
SPEC_CALL_KEYS = {"id", "name", "arguments", "status", "reason", "message", "output"}


@pytest.fixture
def bundles(client):
    response = client.put("/api/agents/bundles", json=bundles_agent())
    assert response.status_code == 201, response.json
    return response.json


def post_run(client, agent_id="bundles", **body):
    body.setdefault("message", BUNDLES_MESSAGE)
    return client.post(f"/api/agents/{agent_id}/runs", json=body)


def counts(database):
    return database["runs"].count, database["log"].count


def test_run_answers_the_spec_shape_and_is_stored(client, bundles):
    response = post_run(client)
    assert response.status_code == 201
    run = response.json
    assert SPEC_RUN_KEYS <= set(run)
    assert response.headers["Location"] == f"/api/runs/{run['id']}"
    for round_ in run["rounds"]:
        assert SPEC_ROUND_KEYS <= set(round_)
        assert set(round_["assistant"]) >= {"content", "tool_calls"}
        for call in round_["calls"]:
            assert SPEC_CALL_KEYS <= set(call)
    assert run["agent_id"] == "bundles"
    assert run["stop_reason"] == "answered"
    assert run["answer"] == BUNDLES_ANSWER


def test_stored_run_reads_back_identically(client, bundles):
    created = post_run(client).json
    stored = client.get(f"/api/runs/{created['id']}")
    assert stored.status_code == 200
    assert stored.json == created


def test_restricted_tool_called_twice_rejects_both_and_the_model_recovers(client, bundles):
    run = post_run(client).json
    first, second = run["rounds"][0], run["rounds"][1]
    assert [call["status"] for call in first["calls"]] == ["rejected", "rejected"]
    assert {call["reason"] for call in first["calls"]} == {"restricted_repeat"}
    expected = texts.RESTRICTED_REPEAT.replace("[tool_name]", "list_bundles")
    assert [call["message"] for call in first["calls"]] == [expected, expected]
    assert all(call["output"] is None for call in first["calls"])
    assert [call["status"] for call in second["calls"]] == ["executed"]
    assert '"article"' in second["calls"][0]["output"]
    assert run["rejected_calls"] == 2
    assert run["tool_calls"] == 2


def test_the_violation_is_logged_with_its_run(client, bundles, database):
    run = post_run(client).json
    entries = list(database["log"].rows)
    assert len(entries) == 1
    entry = entries[0]
    assert entry["run_id"] == run["id"]
    assert (entry["level"], entry["kind"], entry["agent_id"]) == ("error", "policy_violation", "bundles")
    assert entry["message"] == (
        'The agent "bundles" called the single-call tool(s) "list_bundles" multiple times in one response. '
        "All 2 tool calls in the response were rejected."
    )


def test_overrides_apply_to_the_run_only_and_are_recorded(client, bundles):
    overrides = {"tools": {"list_bundles": {"restrict_multiple_calls": False}}}
    run = post_run(client, overrides=overrides).json
    assert [call["status"] for call in run["rounds"][0]["calls"]] == ["executed", "executed"]
    assert run["overrides"] == overrides
    assert run["agent"]["tools"]["list_bundles"]["restrict_multiple_calls"] is False
    assert client.get("/api/agents/bundles").json["tools"]["list_bundles"]["restrict_multiple_calls"] is True


def test_the_stored_run_keeps_its_agent_snapshot_after_the_agent_changes(client, bundles):
    run = post_run(client).json
    client.put("/api/agents/bundles", json={**bundles_agent(label="Renamed"), "revision": bundles["revision"]})
    client.delete("/api/agents/bundles")
    stored = client.get(f"/api/runs/{run['id']}").json
    assert stored["agent"]["label"] == "Bundles test agent"
    assert stored == run


def test_documents_agent_reads_the_app_documents(client, database):
    document_store.import_documents(database, DOCUMENTS)
    client.put("/api/agents/docs", json=DOCUMENTS_AGENT)
    run = post_run(client, "docs", message=DOCUMENTS_MESSAGE).json
    assert run["stop_reason"] == "answered"
    assert [source["id"] for source in run["sources"]] == ["refund-policy", "sale-returns", "gift-cards"]
    assert run["rejected_calls"] == 0
    names = [call["name"] for round_ in run["rounds"] for call in round_["calls"]]
    assert names == ["list_documents", "read_document", "read_document", "list_documents"]


REASONS = [
    pytest.param({"message": ""}, "message", id="empty message"),
    pytest.param({"message": "   "}, "message", id="blank message"),
    pytest.param({"message": "x" * (MESSAGE_MAX + 1)}, "message", id="oversized message"),
    pytest.param({"message": 42}, "message", id="message not a string"),
    pytest.param({"message": None}, "message", id="message missing"),
    pytest.param({"overrides": {"colour": "red"}}, "overrides.colour", id="unknown override"),
    pytest.param({"overrides": {"id": "other"}}, "overrides.id", id="id cannot be overridden"),
    pytest.param({"overrides": {"max_rounds": "ten"}}, "max_rounds", id="round cap of the wrong type"),
    pytest.param({"overrides": {"max_rounds": 101}}, "max_rounds", id="round cap too high"),
    pytest.param({"overrides": {"on_round_cap": "explode"}}, "on_round_cap", id="unknown on_round_cap"),
    pytest.param(
        {"overrides": {"tools": {"list_bundles": {"bogus": True}}}},
        "tools.list_bundles.bogus",
        id="unknown tool setting",
    ),
    pytest.param(
        {"overrides": {"tools": {"list_bundles": {"restrict_multiple_calls": "yes"}}}},
        "tools.list_bundles.restrict_multiple_calls",
        id="tool setting of the wrong type",
    ),
    pytest.param({"overrides": {"tools": {"no_such_tool": {}}}}, "tools.no_such_tool", id="unknown tool"),
    pytest.param({"overrides": []}, "overrides", id="overrides not an object"),
    pytest.param({"overrides": {"script": [{"nonsense": 1}]}}, "script", id="invalid script"),
    pytest.param({"overrides": {"script": "not a list"}}, "script", id="script not a list"),
    pytest.param({"mesage": "typo"}, "mesage", id="unknown body field"),
    pytest.param({"overrides": {"provider": "nowhere"}}, "provider", id="unknown provider connection"),
]


@pytest.mark.parametrize(("body", "field"), REASONS)
def test_bad_input_is_a_400_naming_the_field_and_stores_nothing(client, bundles, database, body, field):
    response = client.post("/api/agents/bundles/runs", json={"message": "Hello", **body})
    assert response.status_code == 400
    assert response.json["field"] == field
    assert response.json["error"].startswith(f"{field}: ")
    assert counts(database) == (0, 0)


@pytest.mark.parametrize(
    ("data", "content_type", "status"),
    [("not json", "application/json", 400), ('["a list"]', "application/json", 400), ("message=hi", "text/plain", 415)],
)
def test_a_body_that_is_not_a_json_object_is_refused(client, bundles, database, data, content_type, status):
    response = client.post("/api/agents/bundles/runs", data=data, content_type=content_type)
    assert response.status_code == status
    assert response.json["field"] == "body"
    assert counts(database) == (0, 0)


def test_unknown_agent_is_a_404_and_stores_nothing(client, database):
    response = post_run(client, "nobody")
    assert response.status_code == 404
    assert "nobody" in response.json["error"]
    assert counts(database) == (0, 0)


@pytest.mark.parametrize("path", ["/api/runs/999", "/api/runs/abc", "/api/runs/99999999999999999999"])
def test_unknown_run_is_a_json_404(client, path):
    response = client.get(path)
    assert response.status_code == 404
    assert "error" in response.json


def test_run_list_filters_by_agent_and_stop_reason(client, bundles):
    client.put("/api/agents/capped", json=bundles_agent(max_rounds=1))
    post_run(client)
    post_run(client, "capped")
    everything = client.get("/api/runs").json
    assert [run["agent_id"] for run in everything["runs"]] == ["capped", "bundles"]
    assert "result" not in everything["runs"][0]
    assert [run["agent_id"] for run in client.get("/api/runs?agent=bundles").json["runs"]] == ["bundles"]
    assert [run["agent_id"] for run in client.get("/api/runs?stop_reason=round_cap").json["runs"]] == ["capped"]
    assert client.get("/api/runs?stop_reason=bogus").status_code == 400


def test_a_missing_api_key_ends_the_run_with_a_stored_error(app, client, database):
    app.config["MODEL_ENVIRON"] = {}
    provider_store.create_provider(
        database, {"id": "remote", "label": "Remote", "base_url": "https://models.invalid/v1", "default_model": "m"}
    )
    client.put("/api/agents/remote_agent", json={"label": "Remote agent", "provider": "remote"})
    response = post_run(client, "remote_agent")
    assert response.status_code == 201
    run = response.json
    assert run["stop_reason"] == "error"
    assert "OPENAI_API_KEY" in run["error"]
    entry = next(iter(database["log"].rows))
    assert (entry["kind"], entry["run_id"]) == ("provider_error", run["id"])


def test_a_provider_failure_mid_run_keeps_the_trace_so_far(app, client, database):
    model = ModelDouble(
        completion(calls=[("c1", "list_entity_types", "{}")], model="m"),
        (400, {"error": {"message": "the model is on fire"}}),
    )
    app.config["MODEL_ENVIRON"] = {"REMOTE_API_KEY": "secret"}
    app.config["MODEL_TRANSPORT"] = httpx2.WSGITransport(app=model)
    provider_store.create_provider(
        database,
        {
            "id": "remote",
            "label": "Remote",
            "base_url": "https://models.invalid/v1",
            "api_key_env": "REMOTE_API_KEY",
            "default_model": "m",
            "timeout": 5,
        },
    )
    agent = {"label": "Remote", "provider": "remote", "tools": {"list_entity_types": {}}}
    client.put("/api/agents/remote_agent", json=agent)
    run = post_run(client, "remote_agent").json
    assert run["stop_reason"] == "error"
    assert run["error"] == "The model endpoint answered HTTP 400: the model is on fire."
    assert run["model_requests"] == len(model.requests) == 2
    assert run["rounds"][0]["calls"][0]["status"] == "executed"
    assert client.get(f"/api/runs/{run['id']}").json == run
    assert "secret" not in str(run)
