"""The MCP facade against a real MCP server (the SDK's own, over streamable HTTP on 127.0.0.1): what listing gives,
what a call's tool message reads, and every failure said in words."""

import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.tools import ToolError
from engine.tools.mcp import (
    AUTH,
    MISSING_SECRET,
    NOT_MCP,
    PROTOCOL,
    RESULT_MAX,
    TIMEOUT,
    UNREACHABLE,
    McpError,
    ServerConnection,
    call_tool,
    list_tools,
    proposed_settings,
    registry_name,
    server_tools,
)
from tests.live_http import serving
from tests.mcp_support import handshake_then, hints_as_strings, live_mcp_server, rpc_answer


@pytest.fixture(scope="module")
def mcp_server():
    with live_mcp_server() as server:
        yield server


@pytest.fixture(scope="module")
def kinds(mcp_server):
    return ServerConnection("kinds", url=mcp_server.url, timeout=5)


def test_listing_gives_each_tool_with_title_description_schema_and_annotations(kinds):
    tools = {tool["name"]: tool for tool in list_tools(kinds)}

    assert set(tools) == {"echo", "weather", "parts", "picture", "fail", "slow", "delete_record", "add_record"}
    assert tools["echo"]["title"] == "Echo"
    assert tools["echo"]["description"] == "Echo the text back."
    assert tools["echo"]["input_schema"]["required"] == ["text"]
    assert tools["echo"]["annotations"] == {"readOnlyHint": True}
    assert tools["delete_record"]["annotations"] == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": True,
    }
    assert tools["weather"]["annotations"] == {}


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("echo", {"text": "héllo"}, "héllo"),
        ("parts", {"count": 2}, "part 1\npart 2"),
        ("picture", {}, "[image]\nA dot."),
    ],
)
def test_a_result_reads_as_its_text_parts_joined_with_other_parts_named(kinds, tool, arguments, expected):
    assert call_tool(kinds, tool, arguments) == (expected, False)


def test_structured_content_without_text_is_sent_as_json_text():
    from mcp.types import CallToolResult

    from engine.tools.mcp import result_text

    result = CallToolResult(content=[], structured_content={"city": "Oslo", "degrees": 3})
    assert result_text(result) == '{"city": "Oslo", "degrees": 3}'


def test_an_is_error_result_is_the_calls_error_with_the_servers_text(kinds):
    assert call_tool(kinds, "fail", {"reason": "testing"}) == (
        "Error executing tool fail: Failed on purpose: testing",
        True,
    )
    tool = {tool.remote_name: tool for tool in server_tools(kinds, list_tools(kinds))}["fail"]
    with pytest.raises(ToolError, match="^Error executing tool fail: Failed on purpose: testing$"):
        tool.handler({"reason": "testing"}, None)


def test_a_call_past_the_timeout_is_a_timeout_in_words(mcp_server):
    hurried = ServerConnection("kinds", url=mcp_server.url, timeout=0.3)
    with pytest.raises(McpError) as raised:
        call_tool(hurried, "slow", {"seconds": 3})
    assert raised.value.kind == TIMEOUT
    assert str(raised.value) == f"{mcp_server.url} did not answer within 0.3 seconds"


def test_a_server_nobody_listens_on_is_unreachable():
    with pytest.raises(McpError) as raised:
        list_tools(ServerConnection("gone", url="http://127.0.0.1:9/mcp", timeout=2))
    assert raised.value.kind == UNREACHABLE
    assert str(raised.value).startswith("http://127.0.0.1:9/mcp cannot be reached")


def plain_site(environ, start_response):
    if environ["PATH_INFO"] == "/page":
        start_response("200 OK", [("Content-Type", "text/html")])
        return [b"<html><body>Hello</body></html>"]
    if environ["PATH_INFO"] == "/locked":
        start_response("401 Unauthorized", [("Content-Type", "text/plain"), ("WWW-Authenticate", "Bearer")])
        return [b"no"]
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"not found"]


@pytest.mark.parametrize(
    ("path", "kind", "words"),
    [
        ("/missing", NOT_MCP, "is not an MCP server (HTTP 404)"),
        ("/page", NOT_MCP, "is not an MCP server (Unexpected content type: text/html)"),
        ("/locked", AUTH, "refused the credentials (HTTP 401); check the headers"),
    ],
)
def test_a_web_server_that_is_not_an_mcp_server_is_told_apart(path, kind, words):
    with serving(plain_site) as base_url:
        with pytest.raises(McpError) as raised:
            list_tools(ServerConnection("site", url=base_url + path, timeout=5))
    assert raised.value.kind == kind
    assert str(raised.value) == f"{base_url}{path} {words}"


def test_a_header_secret_is_read_from_the_environment_when_the_call_is_made():
    headers = {"Authorization": {"env": "NOTES_API_KEY", "prefix": "Bearer "}}
    seen = []

    def site(environ, start_response):
        seen.append(environ.get("HTTP_AUTHORIZATION"))
        start_response("401 Unauthorized", [("Content-Type", "text/plain")])
        return [b"no"]

    with serving(site) as base_url:
        connection = ServerConnection("site", url=base_url + "/mcp", headers=headers, timeout=5)
        with pytest.raises(McpError) as missing:
            list_tools(connection, {})
        with pytest.raises(McpError) as refused:
            list_tools(connection, {"NOTES_API_KEY": "s3cret"})

    assert (missing.value.kind, str(missing.value)) == (
        MISSING_SECRET,
        "the environment variable NOTES_API_KEY (for the header Authorization) is not set",
    )
    assert refused.value.kind == AUTH and "s3cret" not in str(refused.value)
    assert seen[0] == "Bearer s3cret"


def test_a_protocol_error_is_named():
    def broken(environ, start_response):
        request = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
        if "id" not in request:  # a notification
            start_response("202 Accepted", [])
            return [b""]
        error = {"code": -32000, "message": "Broken on purpose"}
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}).encode()]

    with serving(broken) as base_url:
        with pytest.raises(McpError) as raised:
            list_tools(ServerConnection("broken", url=base_url + "/mcp", timeout=5))
    assert raised.value.kind == PROTOCOL
    assert "Broken on purpose" in str(raised.value)


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (
            lambda request_id: b'{"jsonrpc": "2.0", "id": %d, "result": {"tools": [' % request_id,
            "its tool list is not valid JSON: EOF while parsing a list at line 1 column 49",
        ),
        (
            lambda request_id: rpc_answer(request_id, result={"tools": "none"}),
            "its tool list does not follow the MCP protocol (tools: Input should be a valid list)",
        ),
        (
            lambda request_id: rpc_answer(request_id, error={"code": -32601, "message": "Method not found"}),
            "its tools/list answered a JSON-RPC error -32601: Method not found",
        ),
        (lambda request_id: b'{"tools": []}', "its tool list is not a JSON-RPC message"),
    ],
)
def test_a_server_that_answers_the_handshake_then_sends_a_broken_tool_list_is_told_what_it_sent(answer, words):
    with serving(handshake_then(answer)) as base_url:
        with pytest.raises(McpError) as raised:
            list_tools(ServerConnection("odd", url=base_url + "/mcp", timeout=5))

    assert raised.value.kind == PROTOCOL
    assert str(raised.value) == f"{base_url}/mcp answered the handshake, but {words}"


def test_a_tool_of_a_stopped_server_is_the_calls_error_in_words():
    with live_mcp_server() as server:
        connection = ServerConnection("kinds", url=server.url, timeout=5)
        tool = {tool.remote_name: tool for tool in server_tools(connection, list_tools(connection))}["echo"]
    with pytest.raises(ToolError, match=re.escape(f'the tool server "kinds" failed: {server.url} cannot be reached')):
        tool.handler({"text": "hi"}, None)


def test_hints_sent_as_strings_are_left_out_so_they_read_as_mcps_defaults():
    with live_mcp_server(wrap=hints_as_strings) as server:
        tools = {tool["name"]: tool for tool in list_tools(ServerConnection("kinds", url=server.url, timeout=5))}

    assert tools["echo"]["annotations"] == {}  # it sent "readOnlyHint": "true", which is no boolean
    assert tools["delete_record"]["annotations"] == {}
    assert proposed_settings(tools["echo"]["annotations"]) == {"require_approval": True, "max_identical_calls": 1}


@pytest.mark.parametrize(
    ("annotations", "proposals"),
    [
        ({"readOnlyHint": True}, {}),
        ({"readOnlyHint": True, "destructiveHint": True}, {}),
        ({"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True}, {"require_approval": True}),
        ({"destructiveHint": False, "idempotentHint": False}, {"max_identical_calls": 1}),
        ({"destructiveHint": False, "idempotentHint": True}, {}),
        ({}, {"require_approval": True, "max_identical_calls": 1}),  # MCP's defaults: destructive, not idempotent
        ({"readOnlyHint": "yes"}, {"require_approval": True, "max_identical_calls": 1}),  # not a boolean: unsaid
    ],
)
def test_annotations_propose_settings(annotations, proposals):
    assert proposed_settings(annotations) == proposals


NOT_BOOLEAN = (
    st.none()
    | st.integers()
    | st.floats()
    | st.text()
    | st.lists(st.booleans())
    | st.dictionaries(st.text(), st.booleans())
)


@given(
    st.dictionaries(
        st.sampled_from(["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]), NOT_BOOLEAN
    )
)
def test_a_hint_that_is_not_a_boolean_proposes_as_if_the_server_left_it_out(annotations):
    assert proposed_settings(annotations) == proposed_settings({})


@given(st.text(min_size=1, max_size=200), st.from_regex(r"[a-z][a-z0-9]{0,31}", fullmatch=True))
def test_a_registry_name_is_always_a_function_name_of_at_most_64_characters(tool_name, server_id):
    name = registry_name(server_id, tool_name)
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name)
    assert name.startswith(f"{server_id}__")


@given(st.lists(st.text(min_size=1, max_size=100), min_size=2, max_size=5, unique=True))
def test_two_tools_of_one_server_never_share_a_registry_name(tool_names):
    assert len({registry_name("notes", name) for name in tool_names}) == len(tool_names)


ODD_TOOLS = [
    {"name": "broken", "inputSchema": {"type": "object", "properties": {"a": {"type": "nonsense"}}}},
    {"name": "huge", "inputSchema": {"type": "object"}},
]


def echoing_server(environ, start_response):
    """A minimal MCP server over JSON responses whose one tool answers with the Authorization header it got."""
    if environ["REQUEST_METHOD"] != "POST":
        start_response("405 Method Not Allowed", [])
        return [b""]
    request = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)))
    if "id" not in request:
        start_response("202 Accepted", [])
        return [b""]
    if request["method"] == "initialize":
        result = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echoing", "version": "1"},
        }
    elif request["method"] == "tools/list":
        result = {"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}, *ODD_TOOLS]}
    elif request["params"]["name"] == "huge":
        result = {"content": [{"type": "text", "text": "x" * (RESULT_MAX + 5)}]}
    else:
        result = {"content": [{"type": "text", "text": f"You sent {environ.get('HTTP_AUTHORIZATION')}"}]}
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()]


def test_a_header_secret_the_server_echoes_comes_back_redacted():
    headers = {"Authorization": {"env": "NOTES_API_KEY", "prefix": "Bearer "}}
    with serving(echoing_server) as base_url:
        connection = ServerConnection("echoing", url=base_url + "/mcp", headers=headers, timeout=5)
        answer = call_tool(connection, "whoami", {}, {"NOTES_API_KEY": "s3cret-value"})
    assert answer == ("You sent Bearer [redacted]", False)


CONTENT_BLOCKS = st.one_of(
    st.builds(lambda text: {"type": "text", "text": text}, st.text(max_size=20)),
    st.just({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}),
    st.just({"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}),
    st.builds(lambda uri: {"type": "resource_link", "uri": uri, "name": "a file"}, st.just("file:///notes/a.txt")),
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)


@given(
    st.lists(CONTENT_BLOCKS, max_size=6),
    st.none() | st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=3),
    st.booleans(),
)
def test_any_result_reads_as_one_text_with_every_part_in_order(blocks, structured, is_error):
    from mcp.types import CallToolResult

    from engine.tools.mcp import result_text

    result = CallToolResult.model_validate({"content": blocks, "structuredContent": structured, "isError": is_error})
    text = result_text(result)

    expected = [block["text"] if block["type"] == "text" else f"[{block['type']}]" for block in blocks]
    if structured is not None and all(block["type"] != "text" for block in blocks):
        expected.insert(0, json.dumps(structured, ensure_ascii=False))
    assert text == "\n".join(expected)


def test_calls_from_several_threads_at_once_each_get_their_own_answer(kinds):
    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(lambda number: call_tool(kinds, "echo", {"text": f"call {number}"}), range(12)))
    assert answers == [(f"call {number}", False) for number in range(12)]


def test_a_broken_input_schema_becomes_any_object_and_a_huge_result_is_cut():
    with serving(echoing_server) as base_url:
        connection = ServerConnection("odd", url=base_url + "/mcp", timeout=5)
        schemas = {tool["name"]: tool["input_schema"] for tool in list_tools(connection)}
        text, is_error = call_tool(connection, "huge", {})
    assert schemas["broken"] == {"type": "object"}
    assert len(text) < RESULT_MAX + 100 and not is_error
    assert text.endswith(f"[cut: the result had {RESULT_MAX + 5:,} characters; the first {RESULT_MAX:,} are above]")
