"""JSON typed into a form and nested too deeply (a script, a provider's headers, a reviewer's edited arguments, an
argument rule's values) is an error beside its field with the typed form kept, however deep: nested beyond what the
parser can read, it no longer loses the form to a separate "Nested too deeply" page. A run whose model sent such
arguments still shows its page."""

import pytest

from tests.html_reader import form_fields, page_of
from tests.integration.test_approvals import AGENT as APPROVALS_AGENT
from tests.integration.test_approvals import post_decision
from tests.support import agent_form_data

DEPTHS = [33, 2_000, 100_000]  # past the limit; past the parser's recursion; far past it
TOO_DEEP = "Script is nested more than 32 levels deep."


def nested(depth):
    return "[" * depth + "]" * depth


def deep_script(depth):
    return '[{"tool_calls": [{"name": "list_entity_types", "arguments": {"x": ' + nested(depth) + "}}]}]"


def assert_form_kept(response, title):
    html = response.get_data(as_text=True)
    assert response.status_code == 400
    assert "Nested too deeply" not in html
    assert f"<title>{title}" in html


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_deep_script_on_the_new_agent_form_is_an_error_beside_script(client, database, depth):
    data = {**agent_form_data({"label": "Deep agent", "id": "deep_agent"}), "script": deep_script(depth)}
    response = client.post("/agents/new", data=data)
    assert_form_kept(response, "New agent")
    page = page_of(response)
    assert page.errors("script") == [TOO_DEEP]
    assert page.value("label") == "Deep agent" and page.text("script") == deep_script(depth)
    assert database["agents"].count == 0


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_deep_script_on_the_edit_form_is_an_error_beside_script(client, actions, depth):
    actions.create(label="Kept", id="kept")
    current = actions.get("kept")
    data = {**agent_form_data({**current, "label": "Changed"}), "script": deep_script(depth)}
    response = client.post("/agents/kept/edit", data=data)
    assert_form_kept(response, "Edit")
    assert page_of(response).errors("script") == [TOO_DEEP]
    assert page_of(response).value("label") == "Changed"
    assert actions.get("kept")["label"] == "Kept"


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_deep_script_on_the_run_form_is_an_error_beside_script(client, actions, database, depth):
    actions.create(label="Runner", id="runner")
    fields = {**form_fields(client.get("/agents/runner/run").get_data(as_text=True)), "message": "Go deep"}
    response = client.post("/agents/runner/run", data={**fields, "script": deep_script(depth)})
    assert_form_kept(response, "Run Runner")
    # Read, then refused by the agent's rules (which name the field by its label); or too deep to read at all.
    label = "Script (JSON)" if depth == DEPTHS[0] else "Script"
    assert page_of(response).errors("script") == [f"{label} is nested more than 32 levels deep."]
    assert page_of(response).text("message") == "Go deep"
    assert database["runs"].count == 0


@pytest.mark.parametrize("depth", DEPTHS[1:])
def test_deep_headers_on_the_provider_form_are_an_error_beside_them(client, database, depth):
    data = {
        "label": "Deep",
        "id": "deep",
        "base_url": "http://127.0.0.1:11434/v1",
        "api_key_env": "",
        "timeout": "30",
        "headers": '{"x": ' + nested(depth) + "}",
    }
    response = client.post("/providers/new", data=data)
    assert_form_kept(response, "New provider")
    assert page_of(response).errors("headers") == ["Extra headers (JSON) is nested more than 32 levels deep."]
    assert database["providers"].count == 0


@pytest.mark.parametrize("depth", DEPTHS[1:])
def test_deep_edited_arguments_are_an_error_beside_the_box_and_the_run_still_waits(client, depth):
    assert client.put("/api/agents/approvals", json=APPROVALS_AGENT).status_code == 201
    run_id = client.post("/api/agents/approvals/runs", json={"message": "Which bundles?"}).get_json()["id"]
    arguments = '{"entity_type": ' + nested(depth) + "}"
    response = post_decision(client, run_id, "call_1_1", "edit", arguments=arguments)
    assert response.status_code == 400 and "Nested too deeply" not in response.get_data(as_text=True)
    assert page_of(response).errors("arguments-call_1_1") == ["The arguments are nested more than 32 levels deep."]
    assert client.get(f"/api/runs/{run_id}").get_json()["state"] == "awaiting_approval"


def test_deep_values_of_an_argument_rule_are_an_error_beside_them(client, actions):
    actions.create(label="Canvas", id="canvas")
    current = actions.get("canvas")
    data = agent_form_data({**current, "tools": {"edit_component": {}}})
    data["tools-edit_component-arguments-props-action"] = "force_value"
    data["tools-edit_component-arguments-props-values"] = nested(5_000)
    response = client.post("/agents/canvas/edit", data=data)
    assert_form_kept(response, "Edit")
    (error,) = page_of(response).errors("tools-edit_component-arguments-props-values")
    assert error.startswith("Values must fit the argument's schema (value 1:") and "is not of type 'object'" in error


def test_a_run_whose_model_sent_arguments_too_deep_to_read_shows_its_page(client):
    raw = '{"x": ' + nested(5_000) + "}"
    agent = {
        "label": "Deep model",
        "tools": {"list_entity_types": {}},
        "script": [{"tool_calls": [{"name": "list_entity_types", "arguments": raw}]}, {"content": "Done."}],
    }
    assert client.put("/api/agents/deep_model", json=agent).status_code == 201
    run = client.post("/api/agents/deep_model/runs", json={"message": "Go"}).get_json()
    assert run["rounds"][0]["calls"][0]["reason"] == "invalid_arguments"
    page = client.get(f"/runs/{run['id']}")
    assert page.status_code == 200
    assert nested(5_000) in page.get_data(as_text=True)
