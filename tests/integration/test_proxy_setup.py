"""Where a client points to get an agent's policy, as the agent's page and its run page say it (one partial,
templates/_proxy_setup.html): the OpenAI and Anthropic base URLs, and the lines that set up Claude Code and the Codex
CLI. The URLs are the ones the proxy answers at: a client that appends its API's path to them gets an answer."""

import pytest

from tests.html_reader import parse_html

SCRIPTED = {"label": "Proxied", "script": [{"content": "Hello from the proxy."}]}
PAGES = ["/agents/proxied", "/agents/proxied/run"]


@pytest.fixture
def proxied(client):
    assert client.put("/api/agents/proxied", json=SCRIPTED).status_code == 201


def setup_on(client, path):
    """{data-testid: text} of the proxy setup on the page at `path` (exactly one on the page)."""
    page = parse_html(client.get(path).get_data(as_text=True))
    (setup,) = page.all("proxy-setup")
    names = ("proxy-base-url", "anthropic-base-url", "claude-code-setup", "codex-setup")
    return {name: setup.one(name).text for name in names}


@pytest.mark.parametrize("path", PAGES)
def test_the_agent_and_run_pages_give_both_base_urls_and_the_claude_code_and_codex_lines(client, proxied, path):
    setup = setup_on(client, path)

    assert setup["proxy-base-url"] == "http://localhost/proxy/proxied/v1"
    assert setup["anthropic-base-url"] == "http://localhost/proxy/proxied"
    assert setup["claude-code-setup"] == (
        "ANTHROPIC_BASE_URL=http://localhost/proxy/proxied ANTHROPIC_AUTH_TOKEN=TOKEN claude"
    )
    assert setup["codex-setup"] == (
        'model_provider = "toolgate"\n\n'
        "[model_providers.toolgate]\n"
        'name = "Toolgate"\n'
        'base_url = "http://localhost/proxy/proxied/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "TOOLGATE_API_TOKEN"'
    )


def test_the_anthropic_base_url_is_where_a_messages_client_adds_v1_messages(client, proxied):
    base_url = setup_on(client, "/agents/proxied")["anthropic-base-url"]

    response = client.post(
        base_url.removeprefix("http://localhost") + "/v1/messages",
        json={"model": "claude-x", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]},
    )

    assert response.status_code == 200, response.get_json()
    assert response.get_json()["content"] == [{"type": "text", "text": "Hello from the proxy."}]


def test_the_openai_base_url_is_where_codex_adds_responses(client, proxied):
    base_url = setup_on(client, "/agents/proxied/run")["proxy-base-url"]

    response = client.post(base_url.removeprefix("http://localhost") + "/responses", json={"input": "Hi"})

    assert response.status_code == 200, response.get_json()
    assert response.get_json()["output"][0]["content"][0]["text"] == "Hello from the proxy."


def test_with_the_login_on_the_token_comes_from_the_tokens_page(app, client, proxied):
    app.config["ADMIN_PASSWORD"] = "a password"
    assert client.post("/login", data={"password": "a password"}).status_code == 303

    page = parse_html(client.get("/agents/proxied").get_data(as_text=True))

    assert "TOKEN is an API token from the Tokens page." in page.one("proxy-setup").text


def test_without_the_login_any_token_will_do(client, proxied):
    page = parse_html(client.get("/agents/proxied").get_data(as_text=True))

    assert "Without the login, any TOKEN will do." in page.one("proxy-setup").text
