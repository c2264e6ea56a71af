"""Sizes and depth (issue 10): a script of at most 1,000 responses and 128 calls per response, JSON nested at most
MAX_DEPTH levels (checked when an agent is saved and again when it runs), request bodies within the app's limit
(a 413 in the API's shape), and a model answer of at most 5 MB (beyond it the run ends with `error`). Each
refusal names the field and changes nothing."""

import json

import httpx2
import pytest

from engine.config import MAX_DEPTH
from store import providers as provider_store
from tests.bad_input_support import (
    AGENT_ID,
    assert_cli_refused,
    assert_json_error,
    database_state,
    store_agent,
)
from tests.html_reader import page_of
from tests.run_scenarios import BUNDLES_MESSAGE
from tests.support import agent_form_data

LIST_BUNDLES = {"name": "list_bundles", "arguments": {"entity_type": "node"}}


def nested(levels):
    value = "node"
    for _ in range(levels):
        value = [value]
    return value


def deep_script(levels=MAX_DEPTH):
    """A script whose one response is nested `levels` + 4 deep: the arguments hold `levels` arrays."""
    return [{"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": nested(levels)}}]}]


TOO_LONG = [{"content": "Done."}] * 1_001
TOO_WIDE = [{"tool_calls": [LIST_BUNDLES] * 129}]


@pytest.mark.parametrize(
    ("script", "field", "message"),
    [
        (TOO_LONG, "script", "must have at most 1,000 responses (got 1,001)"),
        (TOO_WIDE, "script", "response 1 has 129 tool calls; at most 128 are allowed"),
        (deep_script(), "script[0]", f"is nested more than {MAX_DEPTH} levels deep"),
    ],
)
def test_the_agents_api_refuses_a_script_over_the_limits(client, database, script, field, message):
    agent = store_agent(client)
    before = database_state(database)
    body = assert_json_error(client.put(f"/api/agents/{AGENT_ID}", json={**agent, "script": script}), 400, field)
    assert body["errors"][field] == message
    assert database_state(database) == before


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (TOO_LONG, "Script must have at most 1,000 responses (got 1,001)."),
        (TOO_WIDE, "Script response 1 has 129 tool calls; at most 128 are allowed."),
        (deep_script(), f"Script is nested more than {MAX_DEPTH} levels deep."),
    ],
)
def test_the_agent_form_shows_the_limit_beside_the_script(client, database, script, message):
    agent = store_agent(client)
    before = database_state(database)
    response = client.post(f"/agents/{AGENT_ID}/edit", data=agent_form_data({**agent, "script": script}))
    assert response.status_code == 400
    assert page_of(response).errors("script") == [message]
    assert database_state(database) == before


@pytest.mark.parametrize(
    ("script", "text"),
    [
        ([{"tool_calls": [LIST_BUNDLES] * 100_000}], "response 1 has 100,000 tool calls"),
        (TOO_LONG, "must have at most 1,000 responses"),
        (deep_script(480), "script[0]: is nested more than"),
    ],
)
def test_import_agent_refuses_a_script_over_the_limits(runner, client, database, tmp_path, script, text):
    agent = store_agent(client)
    before = database_state(database)
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({**agent, "script": script}))
    assert_cli_refused(runner.invoke(args=["import-agent", str(path)]), text, "nothing was imported")
    assert database_state(database) == before


def test_a_run_refuses_an_override_script_over_the_limits(client, database):
    store_agent(client)
    before = database_state(database)
    for script, field in ((TOO_WIDE, "script"), (deep_script(), "overrides.script[0]")):
        body = {"message": BUNDLES_MESSAGE, "overrides": {"script": script}}
        assert_json_error(client.post(f"/api/agents/{AGENT_ID}/runs", json=body), 400, field)
    form = {"message": BUNDLES_MESSAGE, "max_rounds": "10", "on_round_cap": "final_answer"}
    response = client.post(f"/agents/{AGENT_ID}/run", data={**form, "script": json.dumps(TOO_WIDE)})
    assert response.status_code == 400
    assert page_of(response).errors("script") == [
        "Script (JSON) response 1 has 129 tool calls; at most 128 are allowed."
    ]
    assert database_state(database) == before


@pytest.fixture
def agent_stored_before_the_limit(client, database):
    """An agent whose script an older version saved nested 480 deep, written to the database as it did."""
    store_agent(client)
    data = json.loads(database["agents"].get(AGENT_ID)["data"])
    data["script"] = deep_script(480)
    database["agents"].update(AGENT_ID, {"data": json.dumps(data)})


def test_an_agent_stored_too_deep_is_refused_when_it_runs_and_nothing_is_stored(
    agent_stored_before_the_limit, client, runner, database
):
    before = database_state(database)
    body = {"message": BUNDLES_MESSAGE}
    assert_json_error(client.post(f"/api/agents/{AGENT_ID}/runs", json=body), 400, "script[0]")
    page = client.post(f"/agents/{AGENT_ID}/run", data={"message": BUNDLES_MESSAGE, "max_rounds": "10"})
    assert page.status_code == 400 and "nested" in page.get_data(as_text=True)
    assert_cli_refused(runner.invoke(args=["run-agent", AGENT_ID, BUNDLES_MESSAGE]), "script[0]: is nested more than")
    assert database_state(database) == before


def test_the_gate_api_refuses_calls_over_the_limits(client, database):
    store_agent(client)
    before = database_state(database)
    many = [{**LIST_BUNDLES, "id": f"c{number}"} for number in range(129)]
    assert_json_error(client.post(f"/api/agents/{AGENT_ID}/gate", json={"tool_calls": many}), 400, "tool_calls")
    deep = [{"id": "c1", "name": "list_bundles", "arguments": {"entity_type": nested(MAX_DEPTH)}}]
    assert_json_error(client.post(f"/api/agents/{AGENT_ID}/gate", json={"tool_calls": deep}), 400, "tool_calls[0]")
    overrides = {"tools": {"list_bundles": {"description_override": nested(MAX_DEPTH + 1)}}}
    body = {"tool_calls": [], "overrides": overrides}
    assert_json_error(client.post(f"/api/agents/{AGENT_ID}/gate", json=body), 400, "overrides.tools")
    assert database_state(database) == before


def test_the_tools_api_names_overrides_nested_too_deeply(client):
    store_agent(client)
    for levels in (MAX_DEPTH + 1, 5_000):
        overrides = '{"description": ' + "[" * levels + "]" * levels + "}"
        response = client.get(f"/api/agents/{AGENT_ID}/tools", query_string={"overrides": overrides})
        assert response.status_code == 400 and response.get_json()["field"].startswith("overrides")


BIG = "x" * (5 * 1024 * 1024)


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("put", f"/api/agents/{AGENT_ID}", {"label": "Big", "system_prompt": BIG}),
        ("post", f"/api/agents/{AGENT_ID}/runs", {"message": BIG}),
        ("post", f"/api/agents/{AGENT_ID}/gate", {"tool_calls": [{"id": "c1", "name": BIG}]}),
    ],
)
def test_a_body_over_the_apps_limit_is_a_413_in_the_apis_shape(client, database, method, path, body):
    store_agent(client)
    before = database_state(database)
    body = assert_json_error(getattr(client, method)(path, json=body), 413, "body")
    assert "larger than this server accepts (4 MB)" in body["error"]
    assert database_state(database) == before


def test_a_form_over_the_apps_limit_is_a_413_page(client, database):
    store_agent(client)
    before = database_state(database)
    response = client.post("/documents/new", data={"title": "Big", "body": BIG})
    assert response.status_code == 413 and "larger than this server accepts" in response.get_data(as_text=True)
    assert database_state(database) == before


@pytest.fixture
def six_mb_answer(app, client, database):
    """An agent on a provider connection whose model answers 6 MB of text."""
    completion = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": BIG + "x"}, "finish_reason": "stop"}],
    }
    body = json.dumps(completion).encode()
    app.config["MODEL_ENVIRON"] = {"REMOTE_API_KEY": "secret"}
    app.config["MODEL_TRANSPORT"] = httpx2.MockTransport(lambda _: httpx2.Response(200, content=body))
    provider = {
        "id": "remote",
        "label": "Remote",
        "base_url": "https://models.invalid/v1",
        "api_key_env": "REMOTE_API_KEY",
    }
    provider_store.create_provider(database, {**provider, "default_model": "m"})
    assert client.put("/api/agents/big", json={"label": "Big answer", "provider": "remote"}).status_code == 201


def test_a_model_answer_over_5_mb_ends_the_run_with_error_and_stores_a_small_run(six_mb_answer, client, database):
    response = client.post("/api/agents/big/runs", json={"message": "Hello"})
    assert response.status_code == 201
    run = response.get_json()
    assert run["stop_reason"] == "error" and "larger than 5 MB" in run["error"]
    assert len(database["runs"].get(run["id"])["result"]) < 10_000
    page = client.get(f"/runs/{run['id']}")
    assert page.status_code == 200 and len(page.get_data()) < 100_000


def test_the_run_page_and_the_cli_say_the_answer_was_too_large(six_mb_answer, client, runner):
    page = client.post("/agents/big/run", data={"message": "Hello", "max_rounds": "10"})
    assert page.status_code == 200 and "larger than 5 MB" in page.get_data(as_text=True)
    result = runner.invoke(args=["run-agent", "big", "Hello"])
    assert result.exit_code == 1 and "larger than 5 MB" in result.output
