"""Whoever edits a provider connection chooses where its key is sent, so the key variable must look like an API
key's (a name ending in _API_KEY) or be one the administrator listed in TOOLGATE_KEY_VARIABLES; a run reads no
other variable, whatever an older version stored."""

import httpx2
import pytest

from tests.bad_input_support import database_state
from tests.html_reader import page_of
from tests.support import make_app

CONNECTION = {
    "label": "Remote",
    "id": "remote",
    "base_url": "https://models.invalid/v1",
    "api_key_env": "OPENAI_API_KEY",
    "default_model": "m",
    "timeout": "30",
}
RULE = 'API key environment variable must end in "_API_KEY" or be listed in TOOLGATE_KEY_VARIABLES.'


@pytest.mark.parametrize("variable", ["SECRET_KEY", "AWS_SECRET_ACCESS_KEY", "DATABASE_URL", "HOME", "API_KEY_FILE"])
def test_the_form_refuses_a_variable_that_is_not_a_key_variable(client, database, variable):
    client.post("/providers/new", data=CONNECTION)
    before = database_state(database), dict(database["providers"].get("remote"))
    created = client.post("/providers/new", data={**CONNECTION, "id": "other", "api_key_env": variable})
    assert created.status_code == 400 and page_of(created).errors("api_key_env") == [RULE]
    edited = client.post("/providers/remote/edit", data={**CONNECTION, "api_key_env": variable})
    assert edited.status_code == 400 and page_of(edited).errors("api_key_env") == [RULE]
    assert (database_state(database), dict(database["providers"].get("remote"))) == before


def test_the_form_says_which_variables_it_takes(client):
    html = client.get("/providers/new").get_data(as_text=True)
    assert "It must end in _API_KEY, or be listed by the administrator in TOOLGATE_KEY_VARIABLES." in html


@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "MY_LLM_API_KEY"])
def test_api_key_variables_are_taken(client, database, variable):
    assert client.post("/providers/new", data={**CONNECTION, "api_key_env": variable}).status_code == 303
    assert database["providers"].get("remote")["api_key_env"] == variable


def test_the_administrator_can_list_more_variables(tmp_path):
    client = make_app(tmp_path, KEY_VARIABLES="LITELLM_MASTER, OLLAMA_TOKEN").test_client()
    for number, variable in enumerate(("LITELLM_MASTER", "OLLAMA_TOKEN")):
        response = client.post("/providers/new", data={**CONNECTION, "id": f"c{number}", "api_key_env": variable})
        assert response.status_code == 303
    response = client.post("/providers/new", data={**CONNECTION, "id": "c9", "api_key_env": "SECRET_KEY"})
    assert page_of(response).errors("api_key_env") == [RULE]


def test_a_run_does_not_read_a_variable_an_older_version_let_a_connection_name(app, client, database):
    """The connection was stored before the rule; its model endpoint must never see the variable's value."""
    seen = []
    app.config["MODEL_ENVIRON"] = {"SECRET_KEY": "the-servers-own-secret"}
    app.config["MODEL_TRANSPORT"] = httpx2.MockTransport(lambda request: seen.append(request) or httpx2.Response(500))
    database["providers"].insert({**CONNECTION, "api_key_env": "SECRET_KEY", "timeout": 30.0})
    assert client.put("/api/agents/leaky", json={"label": "Leaky", "provider": "remote"}).status_code == 201
    run = client.post("/api/agents/leaky/runs", json={"message": "Hello"}).get_json()
    assert run["stop_reason"] == "error" and "SECRET_KEY" in run["error"]
    assert seen == []
    html = client.get("/providers").get_data(as_text=True)
    assert "is not a key variable: runs cannot read it" in html
