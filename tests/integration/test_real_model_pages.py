"""A run on a real model server (the fake one on 127.0.0.1), as the pages and the command line show it: the
provider form's request options, Test connection, the agent's request settings on the agent form and the run page,
and how a run reads — tokens, finish reasons, repaired ids, cut-off answers, a failed request, a long error, the
key redacted."""

import html as html_text
import re

import pytest

from store import providers as provider_store
from tests.doubles import completion
from tests.fake_model_server import FakeModelServer, Reply, error_reply
from tests.html_reader import form_fields, page_of, text_of

KEY = "sk-fake-0123456789abcdef"
HTMX = {"HX-Request": "true"}
NODE_CALL = '{"entity_type": "node"}'


@pytest.fixture
def server(app):
    app.config["MODEL_ENVIRON"] = {"FAKE_API_KEY": KEY}
    with FakeModelServer() as running:
        yield running


@pytest.fixture
def remote(server, client, database):
    """The provider connection `fake` to the server, and the agent `remote` on it with list_bundles enabled."""
    provider_store.create_provider(database, {**server.connection(), "max_retries": 0})
    agent = {"label": "Remote", "provider": "fake", "tools": {"list_bundles": {}}}
    assert client.put("/api/agents/remote", json=agent).status_code == 201


def run_page(client, **changes):
    page = client.get("/agents/remote/run").get_data(as_text=True)
    fields = {**form_fields(page), "message": "Which bundles exist?", **changes}
    response = client.post("/agents/remote/run", data=fields)
    return response.get_data(as_text=True)


# --- The provider form --------------------------------------------------------------------------------------------


def test_a_connection_keeps_its_retries_headers_extra_body_and_no_key(client):
    response = client.post(
        "/providers/new",
        data={
            "label": "Local llama",
            "base_url": "http://127.0.0.1:8080/v1",
            "api_key_env": "",
            "default_model": "qwen",
            "timeout": "30",
            "max_retries": "5",
            "headers": '{"X-Team": "search"}',
            "extra_body": '{"top_k": 20}',
        },
    )
    assert response.status_code == 303

    form = page_of(client.get("/providers/local_llama/edit"))
    assert (form.value("api_key_env"), form.value("max_retries")) == ("", "5")
    assert form.text("headers") == '{\n  "X-Team": "search"\n}' and form.text("extra_body") == '{\n  "top_k": 20\n}'
    listed = text_of(client.get("/providers").get_data(as_text=True))
    assert "No key" in listed and "30 s, 5 retries" in listed


def test_bad_json_in_a_connection_is_shown_and_nothing_is_saved(client, database):
    response = client.post(
        "/providers/new",
        data={"label": "X", "base_url": "http://127.0.0.1:1/v1", "timeout": "5", "extra_body": '{"top_k": }'},
    )

    assert response.status_code == 400
    assert page_of(response).errors("extra_body") == [
        "Extra body fields (JSON) is not valid JSON: Expecting value (line 1, column 11)."
    ]
    assert database["providers"].count == 0


def test_test_connection_says_what_the_model_answered(client, server, remote):
    server.enqueue(Reply(completion("OK", usage=(12, 1, 13))))

    html = client.post("/providers/fake/test").get_data(as_text=True)

    assert "The model answered" in html and "<q>OK</q>" in html and "13 tokens (12 prompt, 1 completion)" in html
    assert server.bodies == [
        {"model": "m", "messages": [{"role": "user", "content": "Reply with the single word OK."}]}
    ]
    assert 'id="connection-check-fake"' in html and "<form" in html  # the whole edit page, without JavaScript


def test_the_list_offers_test_on_each_row_and_a_save_says_so(client, server, remote):
    server.enqueue(Reply(completion("OK")))
    fields = {key: str(value) for key, value in server.connection().items() if key not in ("headers", "extra_body")}
    saved = client.post("/providers/fake/edit", data=fields)
    assert saved.status_code == 303, saved.get_data(as_text=True)
    listing = html_text.unescape(client.get(saved.headers["Location"]).get_data(as_text=True))

    assert 'Saved the provider connection "Fake". Press Test on its row' in listing
    assert 'aria-label="Test Fake">Test</button>' in listing and 'hx-target="#connection-check-fake"' in listing
    answer = client.post("/providers/fake/test", headers=HTMX).get_data(as_text=True)
    assert answer.startswith('<div id="connection-check-fake"') and "<q>OK</q>" in answer


def test_test_connection_says_what_went_wrong_without_the_key(client, server, remote):
    server.enqueue(error_reply(401, f"Incorrect API key provided: {KEY}."))

    html = client.post("/providers/fake/test", headers=HTMX).get_data(as_text=True)

    assert html.startswith('<div id="connection-check-fake"')
    assert "The test request failed." in html
    assert "The model endpoint answered HTTP 401: Incorrect API key provided: [redacted]." in html
    assert KEY not in html


# --- The agent's request settings ---------------------------------------------------------------------------------


def test_the_agent_form_offers_tool_choice_and_refuses_a_tool_that_is_not_enabled(client, remote, actions):
    form = client.get("/agents/remote/edit").get_data(as_text=True)
    assert '<option selected value="auto">Auto: the model decides</option>' in form
    assert '<option value="place_component">Always place_component (when enabled)</option>' in form

    response = actions.edit("remote", tool_choice="place_component", temperature="warm")

    assert response.status_code == 400
    page = page_of(response)
    assert page.errors("tool_choice") == [
        'Tool choice must be "auto", "required" or the name of an enabled tool ("place_component" is not enabled).'
    ]
    assert page.errors("temperature") == ["Temperature must be empty (null) or a number from 0 to 2."]


def test_the_run_pages_settings_override_the_request_settings_for_that_run(client, server, remote, actions):
    run_page(client, tool_choice="required", temperature="0.3", max_tokens="50")

    assert {key: server.bodies[0].get(key) for key in ("tool_choice", "temperature", "max_tokens", "seed")} == {
        "tool_choice": "required",
        "temperature": 0.3,
        "max_tokens": 50,
        "seed": None,
    }
    stored = client.get("/api/runs/1").get_json()
    assert stored["overrides"] == {"tool_choice": "required", "temperature": 0.3, "max_tokens": 50}
    assert actions.get("remote")["temperature"] is None


# --- How a run reads ----------------------------------------------------------------------------------------------


def test_the_run_shows_its_tokens_finish_reasons_and_repaired_ids(client, server, remote):
    server.enqueue(
        Reply(
            completion(
                calls=[("dup", "list_bundles", NODE_CALL), ("dup", "list_bundles", NODE_CALL)],
                usage=(1000, 20, 1020),
            )
        ),
        Reply(completion("Articles and pages.", usage=(1500, 10, 1510))),
    )

    page = text_of(run_page(client))

    assert "Tokens 2,530 tokens (2,500 prompt, 30 completion)" in page
    assert "finish reason tool_calls · 1,020 tokens (1,000 prompt, 20 completion) ·" in page
    assert "repaired_1_2 id repaired — the model sent dup , not unique in the run" in page
    runs = text_of(client.get("/runs").get_data(as_text=True))
    assert "Answered 2 0 2,530" in runs


def test_a_truncated_answer_is_the_answer_marked_as_cut_off(client, server, remote):
    server.enqueue(Reply(completion("Articles and", finish_reason="length")))

    page = text_of(run_page(client))

    assert "Answer Articles and Cut off: the model reached its token limit (finish reason length)" in page
    assert "Stop reason Truncated: the answer was cut off at the token limit" in page


def test_a_failed_first_request_is_counted_and_said(client, server, remote):
    server.enqueue(error_reply(500, "The server had an error."))

    html = run_page(client)
    page = text_of(html)

    assert "The model was not asked" not in page
    assert "Model requests 1" in page
    assert "Request 1 failed The request was sent to the model endpoint and got no usable answer" in page
    assert page.count("The model endpoint answered HTTP 500: The server had an error.") == 1


def test_a_long_error_shows_its_start_and_the_rest_one_click_away_once(client, server, remote):
    detail = "".join(f"field {number} is invalid; " for number in range(150))  # about 2,700 characters
    server.enqueue(error_reply(400, detail))

    html = run_page(client)

    error = f"The model endpoint answered HTTP 400: {detail.strip()}."
    start, rest = error[:500], error[500:]
    assert f"</span> {start}…</p>" in html
    assert re.search(
        r"<details class=\"error-rest\">\s*<summary>The rest of the error \([\d,]+ more characters\)", html
    )
    assert f'<pre class="text">{rest}</pre>' in html
    assert html.count("field 149 is invalid") == 1 and html.count("field 0 is invalid") == 1


def test_a_key_echoed_in_an_answer_is_on_no_page(client, server, remote):
    server.enqueue(Reply(completion(f"Your key is {KEY}.")))

    html = run_page(client)

    assert "Your key is [redacted]." in html
    assert KEY not in html and KEY not in client.get("/runs/1").get_data(as_text=True)
    assert KEY not in client.get("/api/runs/1").get_data(as_text=True)


def test_the_agent_page_shows_its_request_settings(client, actions):
    actions.create(label="Sampled", id="sampled", tools={"list_bundles": {}}, tool_choice="list_bundles", seed=7)

    page = text_of(client.get("/agents/sampled").get_data(as_text=True))

    assert "Tool choice list_bundles" in page and "Sampling seed 7" in page
    actions.create(label="Plain", id="plain")
    assert "Sampling the provider's defaults (nothing sent)" in text_of(
        client.get("/agents/plain").get_data(as_text=True)
    )


def test_the_command_line_prints_finish_reasons_usage_and_repaired_ids(server, remote, runner):
    server.enqueue(
        Reply(completion(calls=[("", "list_bundles", NODE_CALL)], usage=(100, 20, 120))),
        Reply(completion("Articles and", finish_reason="length", usage=(150, 5, 155))),
    )

    output = runner.invoke(args=["run-agent", "remote", "Which bundles exist?"]).output

    assert "  finish reason tool_calls · 120 tokens (100 prompt, 20 completion) · " in output
    assert "[EXECUTED] repaired_1_1 (id repaired) list_bundles" in output
    assert "Answer: Articles and\nCut off: the model reached its token limit" in output
    assert "Model requests: 2 · 275 tokens (250 prompt, 25 completion)" in output
