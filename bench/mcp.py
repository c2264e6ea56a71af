"""What a `tools/call` to an MCP server adds to a round: the same two-round scripted run (one call, then the answer)
with its tool in-process, and with that tool served by a local MCP server (the SDK's own, streamable HTTP on
127.0.0.1, in this process), measured in alternation. Each call opens its own connection, so the figure includes
connecting."""

import socket
import threading
import time

import uvicorn
from mcp.server.mcpserver import MCPServer

from engine import run_agent
from engine.tools import Tool, ToolRegistry
from engine.tools.mcp import ServerConnection, call_tool, list_tools, server_tools

from .timing import compare, milliseconds

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
MESSAGE = "Echo it."


def echo(text: str) -> str:
    """Echo the text back."""
    return text


def _agent(tool_name):
    return {
        "id": "bench_mcp",
        "label": "Benchmark: one tool call",
        "tools": {tool_name: {}},
        "script": [
            {"tool_calls": [{"name": tool_name, "arguments": {"text": "hello"}}]},
            {"content": "Echoed."},
        ],
    }


def _serve():
    """A local MCP server with the echo tool; (its URL, the uvicorn server, its thread)."""
    server = MCPServer("bench", log_level="WARNING")
    server.add_tool(echo)
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    url = f"http://127.0.0.1:{listening.getsockname()[1]}/mcp"
    uvicorn_server = uvicorn.Server(uvicorn.Config(server.streamable_http_app(), log_level="warning"))
    thread = threading.Thread(target=uvicorn_server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not uvicorn_server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("The benchmark's MCP server did not start.")
        time.sleep(0.01)
    return url, uvicorn_server, thread


def report():
    url, uvicorn_server, thread = _serve()
    try:
        connection = ServerConnection("bench", url=url, timeout=10)
        remote = ToolRegistry(server_tools(connection, list_tools(connection)))
        local = ToolRegistry(
            [Tool("echo", "Echo the text back.", SCHEMA, lambda arguments, context: echo(**arguments))]
        )
        remote_agent, local_agent = _agent("bench__echo"), _agent("echo")
        for agent, registry in ((remote_agent, remote), (local_agent, local)):
            run = run_agent(agent, MESSAGE, registry=registry)
            assert run["rounds"][0]["calls"][0]["output"] == "hello", run["rounds"][0]["calls"][0]

        with_mcp, in_process = compare(
            lambda: run_agent(remote_agent, MESSAGE, registry=remote),
            lambda: run_agent(local_agent, MESSAGE, registry=local),
            repeat=7,
            number=5,
        )
        call_only, _ = compare(
            lambda: call_tool(connection, "echo", {"text": "hello"}), lambda: None, repeat=7, number=5
        )
    finally:
        uvicorn_server.should_exit = True
        thread.join(timeout=10)
    print("Tool servers: a two-round scripted run whose one call is a tools/call to a local MCP server (streamable")
    print("HTTP on 127.0.0.1, a connection per call), beside the same run with the tool in-process")
    print(f"  tool in-process         per run {milliseconds(in_process)}")
    print(f"  tool on an MCP server   per run {milliseconds(with_mcp)}")
    print(
        f"  a tools/call adds       {milliseconds(with_mcp - in_process)} to its round (the call alone: "
        f"{milliseconds(call_only).strip()})"
    )
    print(f"  ratio MCP / in-process: {with_mcp / in_process:.1f}x")
