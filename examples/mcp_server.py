"""A small MCP server to try Toolgate's tool servers with: notes kept in memory, four tools (list, read, create,
delete), each annotated with the hints Toolgate turns into proposed settings — delete is destructive.

Start Toolgate with `make run` in one terminal, then, in another:

    .venv/bin/python examples/mcp_server.py

and add http://127.0.0.1:8765/mcp on the Tool servers page (the README walks through it). The same server speaks
over stdio for the command line: `flask --app app add-tool-server notes --command ".venv/bin/python
examples/mcp_server.py --stdio"`. Set NOTES_PORT for another port, NOTES_API_KEY to require
`Authorization: Bearer <key>` on HTTP.
"""

import argparse
import hmac
import itertools
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(readOnlyHint=True, openWorldHint=False)


def build_server():
    """A fresh server with its own notes: two to start with."""
    server = MCPServer("notes", instructions="Notes kept in memory: list, read, create and delete them.")
    numbers = itertools.count(1)
    notes = {}

    def add(title, text):
        note_id = f"n{next(numbers)}"
        notes[note_id] = {"id": note_id, "title": title, "text": text}
        return notes[note_id]

    add("Groceries", "Milk, eggs, bread.")
    add("Ideas", "A gate for tool calls.")

    @server.tool(title="List notes", annotations=READ_ONLY)
    def list_notes() -> list[dict]:
        """List the notes: their ids and titles."""
        return [{"id": note["id"], "title": note["title"]} for note in notes.values()]

    @server.tool(title="Read a note", annotations=READ_ONLY)
    def read_note(note_id: str) -> str:
        """Read one note's text, by its id from list_notes."""
        if note_id not in notes:
            raise ToolError(f'There is no note "{note_id}". Call list_notes for the ids.')
        return notes[note_id]["text"]

    @server.tool(
        title="Create a note",
        annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False),
    )
    def create_note(title: str, text: str) -> str:
        """Create a note; returns its id."""
        return add(title, text)["id"]

    @server.tool(
        title="Delete a note",
        annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True),
    )
    def delete_note(note_id: str) -> str:
        """Delete a note for good, by its id."""
        if notes.pop(note_id, None) is None:
            raise ToolError(f'There is no note "{note_id}".')
        return f"Deleted {note_id}."

    return server


def require_key(app, key):
    """ASGI middleware: every request must carry `Authorization: Bearer <key>`."""
    expected = f"Bearer {key}".encode()

    async def guarded(scope, receive, send):
        if scope["type"] == "http" and not hmac.compare_digest(
            dict(scope["headers"]).get(b"authorization", b""), expected
        ):
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"A valid bearer token is required."})
            return
        await app(scope, receive, send)

    return guarded


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stdio", action="store_true", help="speak over stdin and stdout instead of HTTP")
    arguments = parser.parse_args()
    server = build_server()
    if arguments.stdio:
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app()
    key = os.environ.get("NOTES_API_KEY")
    port = int(os.environ.get("NOTES_PORT", "8765"))
    print(f"Notes MCP server on http://127.0.0.1:{port}/mcp" + (" (bearer key required)" if key else ""))
    uvicorn.run(require_key(app, key) if key else app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
