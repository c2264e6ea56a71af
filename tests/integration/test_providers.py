"""Provider connection pages (SPEC §7): the key is never stored nor shown, only whether its variable is set."""

import pytest

from tests.html_reader import page_of
from tests.support import agent_form_data

pytestmark = pytest.mark.both_engines


OLLAMA = {
    "label": "Local Ollama",
    "id": "ollama",
    "base_url": "http://127.0.0.1:11434/v1",
    "api_key_env": "TOOLGATE_TEST_API_KEY",
    "default_model": "llama3.2",
    "timeout": "30",
}


def create(client, **changes):
    return client.post("/providers/new", data={**OLLAMA, **changes})


def test_empty_list_explains_providers(client):
    html = client.get("/providers").get_data(as_text=True)
    assert "No provider connections yet" in html and "never stored nor shown" in html


def test_create_then_listed_with_whether_the_key_variable_is_set(client, monkeypatch):
    monkeypatch.delenv("TOOLGATE_TEST_API_KEY", raising=False)
    response = create(client)
    assert response.status_code == 303 and response.headers["Location"] == "/providers"
    html = client.get("/providers").get_data(as_text=True)
    assert "Local Ollama" in html and "http://127.0.0.1:11434/v1" in html and "llama3.2" in html
    assert "<code>TOOLGATE_TEST_API_KEY</code>" in html and "is not set" in html
    monkeypatch.setenv("TOOLGATE_TEST_API_KEY", "sk-very-secret")
    html = client.get("/providers").get_data(as_text=True)
    assert "is set" in html and "is not set" not in html
    assert "sk-very-secret" not in html
    assert "sk-very-secret" not in client.get("/providers/ollama/edit").get_data(as_text=True)


def test_the_key_is_never_stored(client, database, monkeypatch):
    monkeypatch.setenv("TOOLGATE_TEST_API_KEY", "sk-very-secret")
    create(client)
    assert [dict(row) for row in database["providers"].rows] == [
        {
            "id": "ollama",
            "label": "Local Ollama",
            "base_url": "http://127.0.0.1:11434/v1",
            "api_key_env": "TOOLGATE_TEST_API_KEY",
            "default_model": "llama3.2",
            "timeout": 30.0,
            "max_retries": 2,
            "headers": "{}",
            "extra_body": "{}",
        }
    ]


def test_defaults_and_derived_id(client, database):
    response = client.post(
        "/providers/new",
        data={
            "label": "OpenAI prod",
            "base_url": "https://api.openai.com/v1",
            "api_key_env": "OPENAI_API_KEY",
            "timeout": "60",
        },
    )
    assert response.status_code == 303
    row = database["providers"].get("openai_prod")
    assert row["api_key_env"] == "OPENAI_API_KEY" and row["timeout"] == 60.0
    form = page_of(client.get("/providers/new"))
    assert form.value("api_key_env") == "OPENAI_API_KEY" and form.value("timeout") == "60"


def test_edit_keeps_the_id_and_saves(client, database):
    create(client)
    page = page_of(client.get("/providers/ollama/edit"))
    assert page.value("label") == "Local Ollama" and page.value("timeout") == "30"
    response = client.post("/providers/ollama/edit", data={**OLLAMA, "label": "Ollama", "id": "changed"})
    assert response.status_code == 303
    assert database["providers"].get("ollama")["label"] == "Ollama"
    assert database["providers"].count == 1


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"label": ""}, "label", "Label is required."),
        ({"id": "scripted"}, "id", 'Machine name "scripted" is the built-in scripted model; choose another id.'),
        (
            {"id": "Bad-Id"},
            "id",
            "Machine name must start with a lowercase letter and contain only lowercase "
            "letters, digits and underscores (at most 64 characters).",
        ),
        (
            {"base_url": "ftp://example.com"},
            "base_url",
            "Base URL must be an http:// or https:// URL, such as https://api.openai.com/v1.",
        ),
        (
            {"base_url": ""},
            "base_url",
            "Base URL must be an http:// or https:// URL, such as https://api.openai.com/v1.",
        ),
        (
            {"api_key_env": "MY KEY"},
            "api_key_env",
            "API key environment variable must be an environment variable name (letters, digits and underscores), "
            "or empty for no key.",
        ),
        ({"timeout": "0"}, "timeout", "Timeout (seconds) must be a number of seconds above 0 and at most 3,600."),
        ({"timeout": "soon"}, "timeout", "Timeout (seconds) must be a number of seconds above 0 and at most 3,600."),
        ({"max_retries": "11"}, "max_retries", "Retries must be a whole number from 0 to 10."),
        ({"max_retries": "-1"}, "max_retries", "Retries must be a whole number from 0 to 10."),
        (
            {"headers": "{"},
            "headers",
            "Extra headers (JSON) is not valid JSON: Expecting property name enclosed in double quotes "
            "(line 1, column 2).",
        ),
        ({"headers": "[]"}, "headers", "Extra headers (JSON) must be a JSON object."),
        (
            {"headers": '{"Authorization": "Bearer x"}'},
            "headers",
            'Extra headers (JSON) may not set "Authorization": Toolgate sets it (the API key comes from the '
            "environment variable).",
        ),
        (
            {"headers": '{"X-Team": 3}'},
            "headers",
            'Extra headers (JSON) must give "X-Team" a text value of printable ASCII characters on one line.',
        ),
        (
            {"headers": '{"X Team": "a"}'},
            "headers",
            "Extra headers (JSON) must name headers with letters, digits and - _ . ! # $ % & ' * + ^ ` | ~ "
            '(not "X Team").',
        ),
        (
            {"extra_body": '{"top_k": 20, "temperature": 1, "tools": []}'},
            "extra_body",
            "Extra body fields (JSON) may not set temperature, tools: Toolgate sends those itself (set them on the "
            "agent instead).",
        ),
    ],
)
def test_bad_input_is_shown_next_to_its_field_and_nothing_is_stored(client, database, changes, field, message):
    response = create(client, **changes)
    assert response.status_code == 400
    page = page_of(response)
    assert page.errors(field) == [message]
    assert page.value("default_model") == "llama3.2"  # input kept
    assert database["providers"].count == 0


def test_an_id_in_use_is_refused(client):
    create(client)
    assert page_of(create(client, label="Again")).errors("id") == [
        'Machine name is already used by another provider connection ("ollama").'
    ]


def test_agents_can_choose_a_provider_connection(client, actions):
    create(client)
    page = client.get("/agents/new").get_data(as_text=True)
    assert '<option value="ollama">Local Ollama (ollama)</option>' in page
    assert actions.create(label="Local", id="local", provider="ollama").status_code == 303
    assert actions.get("local")["provider"] == "ollama"


def test_a_provider_in_use_cannot_be_deleted(client, actions):
    create(client)
    actions.create(label="Local", id="local", provider="ollama")
    html = client.get("/providers/ollama/delete").get_data(as_text=True)
    assert "cannot be deleted" in html and "<code>local</code>" in html
    assert client.post("/providers/ollama/delete").status_code == 409
    assert client.get("/providers/ollama/edit").status_code == 200


def test_delete_asks_then_deletes(client):
    create(client)
    assert "will be deleted" in client.get("/providers/ollama/delete").get_data(as_text=True)
    response = client.post("/providers/ollama/delete")
    assert response.status_code == 303
    assert client.get("/providers/ollama/edit").status_code == 404


def test_an_agent_whose_provider_is_gone_keeps_it_selectable(client, actions, database):
    create(client)
    actions.create(label="Local", id="local", provider="ollama")
    database["providers"].delete("ollama")  # removed behind the app's back
    page = client.get("/agents/local/edit").get_data(as_text=True)
    assert '<option selected value="ollama">ollama (missing)</option>' in page
    response = client.post("/agents/local/edit", data=agent_form_data(actions.get("local")))
    assert page_of(response).errors("provider") == ['Provider no provider connection has the id "ollama".']


@pytest.mark.parametrize("url", ["/providers/ghost/edit", "/providers/ghost/delete"])
def test_unknown_provider_is_a_404(client, url):
    assert client.get(url).status_code == 404
