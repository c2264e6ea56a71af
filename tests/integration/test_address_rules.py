"""The address rule where a URL is saved (engine/addresses.py): a tool server URL or a provider connection's base URL
that points at a cloud metadata, link-local or unspecified address is refused on the pages (beside the field), by
the JSON API (400 naming the field) and by the CLI, before anything connects to it, and nothing is saved; what the
operator lists in TOOLGATE_ALLOWED_NETWORKS is saved as usual. Loopback and private addresses stay allowed."""

import json

import pytest

from tests.bad_input_support import assert_json_error
from tests.html_reader import page_of
from tests.live_http import serving
from tests.mcp_support import live_mcp_server
from tests.support import make_app

ALLOW_IT = "; an operator may allow it in TOOLGATE_ALLOWED_NETWORKS"
REFUSED = [
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata address"),
    ("http://[fd00:ec2::254]/mcp", "fd00:ec2::254 is a cloud metadata address"),
    ("http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal is a cloud metadata service"),
    ("http://100.100.100.200/mcp", "100.100.100.200 is a cloud metadata address"),
    ("http://2852039166/mcp", "2852039166 (169.254.169.254) is a cloud metadata address"),
    ("http://0.0.0.0:8000/mcp", "0.0.0.0 is an unspecified address"),
    ("http://[::]:8000/mcp", ":: is an unspecified address"),
    ("http://[::ffff:169.254.10.1]/mcp", "::ffff:169.254.10.1 is a link-local address (169.254.10.1)"),
    ("http://0251.0376.0251.0376/mcp", "0251.0376.0251.0376 (169.254.169.254) is a cloud metadata address"),
    ("http://[fe80::1%25eth0]:8000/mcp", "fe80::1%25eth0 is a link-local address"),
]


def tool_server_count(client):
    return len(client.get("/api/tool-servers").get_json()["tool_servers"])


def provider_count(client):
    return len(client.get("/api/providers").get_json()["providers"])


@pytest.mark.parametrize(("url", "reason"), REFUSED)
def test_a_tool_server_url_at_a_forbidden_address_is_refused_beside_the_field(client, url, reason):
    form = {"label": "Meta", "id": "meta", "url": url, "headers": "", "timeout": "5"}

    page = client.post("/tool-servers/new", data=form)

    assert page.status_code == 400
    assert page_of(page).errors("url") == [f"URL is not allowed: {reason}{ALLOW_IT}."]
    assert tool_server_count(client) == 0


@pytest.mark.parametrize(("url", "reason"), REFUSED)
def test_the_api_and_the_cli_refuse_a_tool_server_at_a_forbidden_address(client, runner, url, reason):
    api = client.put("/api/tool-servers/meta", json={"label": "Meta", "url": url})
    cli = runner.invoke(args=["add-tool-server", "meta", "--url", url])

    assert assert_json_error(api, 400, "url")["error"] == f"url: is not allowed: {reason}{ALLOW_IT}"
    assert cli.exit_code == 2
    assert cli.output == f"Error: The tool server was not added:\n  url: is not allowed: {reason}{ALLOW_IT}\n"
    assert tool_server_count(client) == 0


def test_a_refused_tool_server_is_never_connected_to(client, runner):
    requests = []

    def recording(environ, start_response):
        requests.append(environ["PATH_INFO"])
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"no"]

    with serving(recording) as base_url:  # on 127.0.0.1; on Linux 0.0.0.0 reaches it too
        unspecified = base_url.replace("127.0.0.1", "0.0.0.0") + "/mcp"
        refused = [
            client.post("/tool-servers/new", data={"label": "Zero", "url": unspecified, "timeout": "5"}),
            client.put("/api/tool-servers/zero", json={"label": "Zero", "url": unspecified}),
            client.put("/api/tool-servers/zero", json={"label": "Zero", "url": unspecified, "headers": {"X-A": 1}}),
        ]
        cli = runner.invoke(args=["add-tool-server", "zero", "--url", unspecified])
        reached = client.put("/api/tool-servers/local", json={"label": "Local", "url": f"{base_url}/mcp"})

    assert [response.status_code for response in refused] == [400, 400, 400] and cli.exit_code == 2
    assert reached.status_code == 400  # 127.0.0.1 is allowed: it was asked, and is no MCP server
    assert requests == ["/mcp"]


def as_if_asked_for_loopback(app):
    """The SDK's server refuses a Host it does not know (DNS rebinding): tell it the request named 127.0.0.1."""

    async def wrapped(scope, receive, send):
        if scope["type"] == "http":
            headers = [(name, value.replace(b"0.0.0.0", b"127.0.0.1")) for name, value in scope["headers"]]
            scope = {**scope, "headers": headers}
        await app(scope, receive, send)

    return wrapped


def test_an_address_the_operator_allows_is_saved_and_connected_to(tmp_path, migrated_database):
    app = make_app(tmp_path, database_from=migrated_database, ALLOWED_NETWORKS="10.0.0.0/8, 0.0.0.0/32 metadata")
    client = app.test_client()

    with live_mcp_server(wrap=as_if_asked_for_loopback) as server:
        url = server.url.replace("127.0.0.1", "0.0.0.0")
        saved = client.put("/api/tool-servers/kinds", json={"label": "Kinds", "url": url, "timeout": 10})
    provider = client.put("/api/providers/gcp", json={"label": "GCP", "base_url": "http://metadata/v1"})
    still_refused = client.put("/api/providers/aws", json={"label": "AWS", "base_url": "http://169.254.169.254/v1"})

    assert saved.status_code == 201 and len(saved.get_json()["tools"]) == 8
    assert provider.status_code == 201
    assert_json_error(still_refused, 400, "base_url")


@pytest.mark.parametrize(("url", "reason"), REFUSED)
def test_a_provider_base_url_at_a_forbidden_address_is_refused_on_the_page_and_the_api(client, url, reason):
    form = {"label": "Meta", "id": "meta", "base_url": url, "api_key_env": "", "timeout": "30"}

    page = client.post("/providers/new", data=form)
    api = client.put("/api/providers/meta", json={"label": "Meta", "base_url": url})

    assert page.status_code == 400
    assert page_of(page).errors("base_url") == [f"Base URL is not allowed: {reason}{ALLOW_IT}."]
    assert assert_json_error(api, 400, "base_url")["error"] == f"base_url: is not allowed: {reason}{ALLOW_IT}"
    assert provider_count(client) == 0


def test_editing_a_provider_to_a_forbidden_address_changes_nothing(client):
    local = {"label": "Ollama", "base_url": "http://127.0.0.1:11434/v1", "api_key_env": ""}
    assert client.put("/api/providers/ollama", json=local).status_code == 201
    form = {"label": "Ollama", "base_url": "http://[::ffff:a9fe:a9fe]/v1", "api_key_env": "", "timeout": "30"}

    page = client.post("/providers/ollama/edit", data=form)
    api = client.put("/api/providers/ollama", json={**local, "base_url": "http://0x0/v1"})

    assert page.status_code == 400 and "Base URL is not allowed" in page_of(page).errors("base_url")[0]
    assert (
        "base_url: is not allowed: 0x0 (0.0.0.0) is an unspecified address"
        in assert_json_error(api, 400, "base_url")["error"]
    )
    assert client.get("/api/providers/ollama").get_json()["base_url"] == "http://127.0.0.1:11434/v1"


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:11434/v1", "http://localhost:8000/v1", "http://10.0.0.5:11434/v1", "http://[::1]/v1"]
)
def test_loopback_and_private_provider_addresses_are_saved(client, url):
    response = client.put("/api/providers/local", json={"label": "Local", "base_url": url, "api_key_env": ""})

    assert response.status_code == 201, json.dumps(response.get_json())


def test_an_allowed_networks_entry_that_is_no_network_nor_host_stops_the_start(tmp_path, migrated_database):
    with pytest.raises(ValueError, match='TOOLGATE_ALLOWED_NETWORKS: "10.0.0.0/33" is neither a network'):
        make_app(tmp_path, database_from=migrated_database, ALLOWED_NETWORKS="10.0.0.0/33")
