"""A Claude Code-like session for the run page's tests: the Messages API bodies of a session of three rounds, shaped
as Claude Code sends them (written for these tests, not captured from a client): a system prompt of several hundred
lines with its `<env>` block and cache markers, fifteen tools with long descriptions, the first user message opening
with Claude Code's `<system-reminder>` environment block (its CLAUDE.md) before the user's words, and each later user
message a `tool_result` with a `<system-reminder>` text block beside it. SCRIPT is what the agent's scripted model
answers: one tool call a round, then the answer."""

TOOL_NAMES = [
    "Task", "Bash", "Glob", "Grep", "LS", "Read", "Edit", "MultiEdit", "Write", "NotebookEdit", "WebFetch",
    "TodoWrite", "WebSearch", "BashOutput", "KillShell",
]  # fmt: skip
TOOL_DESCRIPTION = (
    "Executes a given command in a persistent shell session with optional timeout, ensuring proper handling and "
    "security measures. Before executing the command, verify the directory, quote paths with spaces, and never use "
    "find or grep: use the dedicated tools instead. "
) * 12
TOOLS = [
    {
        "name": name,
        "description": f"{name}: {TOOL_DESCRIPTION}",
        "input_schema": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "What to run."},
                "file_path": {"type": "string"},
            },
        },
    }
    for name in TOOL_NAMES
]
SYSTEM = [
    {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
    {
        "type": "text",
        "text": "You are an interactive CLI tool that helps users with software engineering tasks.\n\n"
        + "# Tone and style\nYou should be concise, direct, and to the point.\n" * 120
        + "<env>\nWorking directory: /home/dev/shop\nIs directory a git repo: Yes\nPlatform: linux\n</env>",
        "cache_control": {"type": "ephemeral"},
    },
]
ENVIRONMENT = (
    "<system-reminder>\n# Environment\nAs you answer the user's questions, you can use the following context:\n"
    "# claudeMd\nCodebase and user instructions are shown below. Be sure to adhere to these instructions.\n\n"
    "Contents of /home/dev/shop/CLAUDE.md (project instructions, checked into the codebase):\n"
    + "- Run the tests with `make test` before you say a change is done.\n" * 40
    + "\n      IMPORTANT: this context may or may not be relevant to your tasks.\n</system-reminder>"
)
PROMPT = "The checkout test fails since yesterday: find out why and fix it."
REMINDER = (
    "<system-reminder>\nThe TodoWrite tool hasn't been used recently. If you're working on tasks that would benefit "
    "from tracking progress, consider using the TodoWrite tool to track progress. This is just a gentle reminder - "
    "ignore if not applicable.\n</system-reminder>"
)
CALLS = [
    ("toolu_01", "Read", {"file_path": "/home/dev/shop/tests/test_checkout.py"}),
    ("toolu_02", "Bash", {"command": "make test TESTS=tests/test_checkout.py"}),
    ("toolu_03", "Edit", {"file_path": "/home/dev/shop/shop/checkout.py"}),
]
RESULTS = [
    "\n".join(f"{number:>5}\tdef test_total_{number}(): assert total(cart) == {number}" for number in range(1, 120)),
    "FAILED tests/test_checkout.py::test_total_3 - assert 4 == 3\n" * 30,
    "The file /home/dev/shop/shop/checkout.py has been updated.",
]
ANSWER = "Fixed: total() counted the shipping line twice; the checkout tests pass again."
SCRIPT = [{"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]} for call_id, name, arguments in CALLS]
SCRIPT.append({"content": ANSWER})


def session_bodies(reminders_beside_results=True):
    """The four requests of the session (three rounds, then the answer), each with the conversation so far; without
    `reminders_beside_results`, each tool_result stands alone in its message, as older clients send it."""
    messages = [{"role": "user", "content": [{"type": "text", "text": ENVIRONMENT}, {"type": "text", "text": PROMPT}]}]
    bodies = [list(messages)]
    for (call_id, name, arguments), result in zip(CALLS, RESULTS, strict=True):
        messages.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}]}
        )
        reminder = [{"type": "text", "text": REMINDER}] if reminders_beside_results else []
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}, *reminder]}
        )
        bodies.append(list(messages))
    return [
        {"model": "claude-opus-5-5", "max_tokens": 32000, "system": SYSTEM, "tools": TOOLS, "messages": conversation}
        for conversation in bodies
    ]
