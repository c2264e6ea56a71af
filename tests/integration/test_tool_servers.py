"""The Tool servers page, its JSON API and the CLI against a real MCP server on 127.0.0.1: a server is stored only
once it answered and listed its tools; Connect lists them again or says what went wrong; bad input is an error
beside its field and stores nothing; a header's secret is never shown."""

import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.bad_input_support import assert_json_error
from tests.live_http import serving
from tests.mcp_support import handshake_then, live_mcp_server, rpc_answer

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cret-token-never-shown"


@pytest.fixture(scope="module")
def mcp_server():
    with live_mcp_server() as server:
        yield server


def add_server(client, url="", **fields):
    data = {"label": "Kinds", "id": "kinds", "url": url, "headers": "", "timeout": "5", **fields}
    return client.post("/tool-servers/new", data=data)


def server_count(client):
    return len(client.get("/api/tool-servers").get_json()["tool_servers"])


def text_of(response):
    return response.get_data(as_text=True)


def test_adding_a_server_connects_and_its_page_lists_the_tools_with_their_hints(client, mcp_server):
    response = add_server(client, mcp_server.url)
    assert response.status_code == 303
    assert response.headers["Location"] == "/tool-servers/kinds"

    page = text_of(client.get("/tool-servers/kinds"))
    assert "kinds__echo" in page and "Echo the text back." in page
    assert "kinds__delete_record" in page and "Delete a record" in page
    assert "<code>destructiveHint: true</code>" in page
    assert '"required": [' in page  # the input schema, as JSON
    listing = text_of(client.get("/tool-servers"))
    assert "Kinds" in listing and mcp_server.url in listing
    assert 'href="/tool-servers"' in text_of(client.get("/providers"))  # in the navigation, beside Providers


def test_connect_lists_the_tools_again_or_says_what_went_wrong(client, tmp_path):
    with live_mcp_server() as server:
        add_server(client, server.url)
        connected = text_of(client.post("/tool-servers/kinds/connect"))
        assert "Connected." in connected and "The server lists 8 tool(s)." in connected
    failed = client.post("/tool-servers/kinds/connect")
    assert failed.status_code == 200
    assert f"Could not connect.</strong> {server.url} cannot be reached" in text_of(failed)
    assert "kinds__echo" in text_of(failed)  # the tools listed before are kept


@pytest.mark.parametrize(
    ("fields", "field_label", "message"),
    [
        ({"url": "ftp://example.org/mcp"}, "URL", "must be an http:// or https:// URL"),
        ({"url": "http://127.0.0.1:9/mcp"}, "URL", "cannot be reached"),
        ({"headers": '{"X-Team": '}, "Extra headers (JSON)", "Extra headers are not valid JSON"),
        ({"headers": '{"X-Team": 3}'}, "Extra headers (JSON)", 'must give "X-Team" a text value'),
        ({"headers": '{"Authorization": {"env": "HOME"}}'}, "Extra headers (JSON)", 'ending in "_API_KEY"'),
        ({"id": "Bad__id"}, "Machine name", "lowercase letters and digits"),
        ({"timeout": "0"}, "Timeout per call (seconds)", "above 0"),
    ],
)
def test_bad_input_on_the_page_is_an_error_beside_the_field_and_stores_nothing(
    client, mcp_server, fields, field_label, message
):
    response = add_server(client, **{"url": mcp_server.url, **fields})

    assert response.status_code == 400
    page = text_of(response)
    assert "Not saved." in page and 'aria-invalid="true"' in page
    assert message.replace('"', "&#34;") in page
    assert server_count(client) == 0


def test_a_web_server_that_is_not_an_mcp_server_is_refused_beside_the_url(client):
    def site(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/html")])
        return [b"<html>A blog</html>"]

    with serving(site) as base_url:
        response = add_server(client, f"{base_url}/mcp")
    assert response.status_code == 400
    assert f"URL {base_url}/mcp is not an MCP server (Unexpected content type: text/html)." in text_of(response)
    assert server_count(client) == 0


def test_a_server_that_answers_the_handshake_but_not_tools_list_is_refused_saying_what_it_sent(client):
    error = {"code": -32601, "message": "Method not found"}

    with serving(handshake_then(lambda request_id: rpc_answer(request_id, error=error))) as base_url:
        page = add_server(client, f"{base_url}/mcp")
        api = client.put("/api/tool-servers/odd", json={"label": "Odd", "url": f"{base_url}/mcp"})

    words = (
        f"{base_url}/mcp answered the handshake, but its tools/list answered a JSON-RPC error -32601: Method not found"
    )
    assert page.status_code == 400
    assert f"URL {words}." in text_of(page) and "not an MCP server" not in text_of(page)
    assert assert_json_error(api, 400, "url")["error"] == f"url: {words}"
    assert server_count(client) == 0


def test_the_page_has_no_command_field_and_a_posted_command_is_ignored(client, mcp_server):
    assert 'name="command"' not in text_of(client.get("/tool-servers/new"))
    response = add_server(client, mcp_server.url, command="touch /tmp/owned")
    assert response.status_code == 303
    assert client.get("/api/tool-servers/kinds").get_json()["command"] == ""


def test_the_api_creates_reads_replaces_and_deletes_a_server(client, mcp_server):
    created = client.put("/api/tool-servers/kinds", json={"label": "Kinds", "url": mcp_server.url, "timeout": 5})
    assert created.status_code == 201
    server = created.get_json()
    assert server["id"] == "kinds" and len(server["tools"]) == 8 and server["refreshed_at"]
    echo = next(tool for tool in server["tools"] if tool["name"] == "echo")
    assert (echo["title"], echo["annotations"]) == ("Echo", {"readOnlyHint": True})

    replaced = client.put("/api/tool-servers/kinds", json={**server, "label": "Renamed"})  # sent back as read
    assert replaced.status_code == 200 and replaced.get_json()["label"] == "Renamed"
    assert client.get("/api/tool-servers/kinds").get_json()["label"] == "Renamed"

    assert client.delete("/api/tool-servers/kinds").status_code == 204
    assert_json_error(client.get("/api/tool-servers/kinds"), 404, "server_id")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"label": "K", "url": "not a url"}, "url"),
        ({"label": "K", "url": "http://127.0.0.1:9/mcp"}, "url"),
        ({"label": "K", "url": "URL", "headers": "{}"}, "headers"),
        ({"label": "K", "url": "URL", "headers": {"Authorization": {"env": "PATH"}}}, "headers"),
        ({"label": "K", "url": "URL", "command": "python server.py"}, "command"),
        ({"label": "", "url": "URL"}, "label"),
        ({"label": "K", "url": "URL", "timeout": "5"}, "timeout"),
        ({"label": "K", "url": "URL", "colour": "red"}, "colour"),
        ([1, 2], "tool_server"),
    ],
)
def test_bad_input_on_the_api_is_a_400_naming_the_field_and_stores_nothing(client, mcp_server, body, field):
    if isinstance(body, dict) and body.get("url") == "URL":
        body = {**body, "url": mcp_server.url}
    assert_json_error(client.put("/api/tool-servers/kinds", json=body), 400, field)
    assert server_count(client) == 0


def test_a_server_whose_tools_an_agent_enables_cannot_be_deleted(client, mcp_server):
    client.put("/api/tool-servers/kinds", json={"label": "Kinds", "url": mcp_server.url})
    client.put("/api/agents/notes_agent", json={"label": "N", "tools": {"kinds__echo": {}}})

    assert_json_error(client.delete("/api/tool-servers/kinds"), 409, "id")
    page = client.post("/tool-servers/kinds/delete")
    assert page.status_code == 409 and "notes_agent" in text_of(page)
    assert server_count(client) == 1


def test_a_header_secret_is_read_from_its_variable_and_never_shown(tmp_path, migrated_database, mcp_server):
    from tests.support import make_app

    seen = []

    def recording(app):
        async def wrapped(scope, receive, send):
            if scope["type"] == "http":
                seen.append(dict(scope["headers"]).get(b"authorization"))
            await app(scope, receive, send)

        return wrapped

    app = make_app(tmp_path, database_from=migrated_database, MODEL_ENVIRON={"NOTES_API_KEY": SECRET})
    client = app.test_client()
    headers = {"Authorization": {"env": "NOTES_API_KEY", "prefix": "Bearer "}}
    with live_mcp_server(wrap=recording) as server:
        created = client.put("/api/tool-servers/kinds", json={"label": "K", "url": server.url, "headers": headers})
        assert created.status_code == 201
        client.put(
            "/api/agents/echoer",
            json={
                "label": "Echoer",
                "tools": {"kinds__echo": {}},
                "script": [{"tool_calls": [{"name": "kinds__echo", "arguments": {"text": "hi"}}]}, {"content": "Ok"}],
            },
        )
        run = client.post("/api/agents/echoer/runs", json={"message": "Echo"}).get_json()

    assert run["rounds"][0]["calls"][0]["status"] == "executed"
    assert seen and set(seen) == {f"Bearer {SECRET}".encode()}
    shown = [
        created.get_data(as_text=True),
        json.dumps(run),
        *(text_of(client.get(path)) for path in ("/tool-servers", "/tool-servers/kinds", "/tool-servers/kinds/edit")),
        text_of(client.get(f"/runs/{run['id']}")),
        text_of(client.get("/log")),
        text_of(client.get("/api/tool-servers")),
    ]
    assert all(SECRET not in text for text in shown)
    assert "NOTES_API_KEY" in text_of(client.get("/tool-servers/kinds"))


def test_a_missing_secret_variable_is_named_beside_the_headers(client, mcp_server):
    headers = '{"Authorization": {"env": "NOTES_API_KEY"}}'
    response = add_server(client, mcp_server.url, headers=headers)
    assert response.status_code == 400
    assert (
        "Extra headers (JSON) cannot be sent: the environment variable NOTES_API_KEY (for the header Authorization) "
        "is not set." in text_of(response)
    )


def test_a_stdio_server_added_from_the_cli_lists_and_runs_its_tools(client, runner):
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(ROOT / 'examples' / 'mcp_server.py'))} --stdio"

    result = runner.invoke(args=["add-tool-server", "notes", "--command", command, "--label", "Notes"])

    assert result.exit_code == 0, result.output
    assert 'Added the tool server "notes" with 4 tool(s): list_notes, read_note, create_note, delete_note.' in (
        result.output
    )
    page = text_of(client.get("/tool-servers/notes"))
    assert "Command (stdio)" in page and "notes__delete_note" in page
    assert 'name="url"' not in text_of(client.get("/tool-servers/notes/edit"))
    renamed = client.post("/tool-servers/notes/edit", data={"label": "My notes", "timeout": "20"})
    assert renamed.status_code == 303
    stored = client.get("/api/tool-servers/notes").get_json()
    assert (stored["label"], stored["command"]) == ("My notes", command)
    changed = client.put("/api/tool-servers/notes", json={**stored, "command": "sh -c 'touch /tmp/owned'"})
    assert_json_error(changed, 400, "command")
    assert client.get("/api/tool-servers/notes").get_json()["command"] == command
    client.put(
        "/api/agents/noter",
        json={
            "label": "Noter",
            "tools": {"notes__read_note": {}},
            "script": [
                {"tool_calls": [{"name": "notes__read_note", "arguments": {"note_id": "n1"}}]},
                {"content": "."},
            ],
        },
    )
    result = runner.invoke(args=["run-agent", "noter", "Read n1", "--json"])
    assert result.exit_code == 0, result.output
    call = json.loads(result.output)["rounds"][0]["calls"][0]
    assert (call["status"], call["output"]) == ("executed", "Milk, eggs, bread.")


def test_the_cli_refuses_a_server_it_cannot_use_and_stores_nothing(client, runner):
    result = runner.invoke(args=["add-tool-server", "gone", "--url", "http://127.0.0.1:9/mcp"])
    assert result.exit_code == 2
    assert "url: http://127.0.0.1:9/mcp cannot be reached" in result.output
    assert server_count(client) == 0


def test_refresh_tool_servers_lists_every_servers_tools_again_and_says_which_failed(client, runner):
    with live_mcp_server() as server:
        client.put("/api/tool-servers/kinds", json={"label": "Kinds", "url": server.url})
        refreshed = runner.invoke(args=["refresh-tool-servers"])
    failed = runner.invoke(args=["refresh-tool-servers"])

    assert refreshed.exit_code == 0 and refreshed.output == "kinds: 8 tool(s).\n"
    assert failed.exit_code == 1
    assert failed.output.startswith(f"kinds: not refreshed: {server.url} cannot be reached")
    assert len(client.get("/api/tool-servers/kinds").get_json()["tools"]) == 8  # the list it had is kept


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("no-such-program-for-toolgate --stdio", "command: the command no-such-program-for-toolgate --stdio cannot be"),
        ('python "unclosed', "command: cannot be read as a command line: No closing quotation"),
    ],
)
def test_the_cli_refuses_a_command_it_cannot_start(client, runner, command, message):
    result = runner.invoke(args=["add-tool-server", "local", "--command", command])
    assert result.exit_code == 2
    assert message in result.output
    assert server_count(client) == 0
