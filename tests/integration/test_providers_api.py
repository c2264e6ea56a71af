"""The provider connections' JSON API, in the agents API's conventions: PUT creates or replaces, GET reads, DELETE
deletes a connection no agent uses; the key's variable by name only; errors in the API's one shape."""

import pytest

OLLAMA = {"label": "Local Ollama", "base_url": "http://127.0.0.1:11434/v1", "api_key_env": "", "timeout": 300}
STORED = {
    "id": "ollama",
    "label": "Local Ollama",
    "base_url": "http://127.0.0.1:11434/v1",
    "api_key_env": "",
    "default_model": "",
    "timeout": 300.0,
    "max_retries": 2,
    "headers": {},
    "extra_body": {},
}


def test_put_creates_with_every_default_filled_in_then_get_reads_it(client):
    created = client.put("/api/providers/ollama", json=OLLAMA)

    assert created.status_code == 201 and created.get_json() == STORED
    assert client.get("/api/providers/ollama").get_json() == STORED
    assert client.get("/api/providers").get_json() == {"providers": [STORED]}


def test_put_replaces_the_whole_connection(client):
    client.put("/api/providers/ollama", json={**OLLAMA, "default_model": "qwen2.5", "max_retries": 0})

    replaced = client.put("/api/providers/ollama", json={"label": "Ollama", "base_url": "http://10.0.0.5:11434/v1"})

    assert replaced.status_code == 200
    assert replaced.get_json() == {
        **STORED,
        "label": "Ollama",
        "base_url": "http://10.0.0.5:11434/v1",
        "api_key_env": "OPENAI_API_KEY",
        "timeout": 60.0,
    }


def test_the_key_itself_is_refused_and_only_its_variables_name_is_kept(client, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret-key")
    refused = client.put("/api/providers/openai", json={**OLLAMA, "api_key": "sk-very-secret-key"})
    created = client.put("/api/providers/openai", json={**OLLAMA, "api_key_env": "OPENAI_API_KEY"})

    assert refused.status_code == 400 and refused.get_json()["errors"] == {"api_key": "is not a provider field"}
    assert created.get_json()["api_key_env"] == "OPENAI_API_KEY"
    assert "sk-very-secret-key" not in client.get("/api/providers/openai").get_data(as_text=True)


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        (
            {**OLLAMA, "base_url": "ftp://x"},
            "base_url",
            "must be an http:// or https:// URL, such as https://api.openai.com/v1",
        ),
        (
            {**OLLAMA, "api_key_env": "HOME"},
            "api_key_env",
            'must end in "_API_KEY" or be listed in TOOLGATE_KEY_VARIABLES',
        ),
        ({**OLLAMA, "id": "other"}, "id", 'does not match the address ("ollama"); a connection\'s id cannot change'),
        (["not", "an", "object"], "provider", "must be a JSON object"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_stores_nothing(client, body, field, message):
    response = client.put("/api/providers/ollama", json=body)

    assert response.status_code == 400
    assert response.get_json()["error"] == f"{field}: {message}"
    assert client.get("/api/providers").get_json() == {"providers": []}


def test_invalid_json_is_a_400(client):
    response = client.put("/api/providers/ollama", data="{", content_type="application/json")

    assert response.status_code == 400 and response.get_json()["field"] == "body"


def test_delete_then_gone_and_unknown_ids_are_404(client):
    client.put("/api/providers/ollama", json=OLLAMA)

    assert client.delete("/api/providers/ollama").status_code == 204
    assert client.get("/api/providers/ollama").status_code == 404
    missing = client.delete("/api/providers/ollama")
    assert missing.status_code == 404
    assert missing.get_json()["error"] == 'provider_id: No provider connection with id "ollama".'


def test_a_connection_an_agent_uses_cannot_be_deleted(client):
    client.put("/api/providers/ollama", json=OLLAMA)
    client.put("/api/agents/local", json={"label": "Local", "provider": "ollama"})

    response = client.delete("/api/providers/ollama")

    assert response.status_code == 409
    assert response.get_json()["agents"] == ["local"]
    assert "is used by the agent(s) local" in response.get_json()["error"]
    assert client.get("/api/providers/ollama").status_code == 200


def test_the_api_needs_no_csrf_token(csrf_app):
    assert csrf_app.test_client().put("/api/providers/ollama", json=OLLAMA).status_code == 201
