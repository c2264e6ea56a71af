"""The README's first screen is what a new user does: the two commands, the picture, and the base URL an agent
points at with the clients it was tested with; the measurements live in docs/performance.md."""

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
LINES = (ROOT / "README.md").read_text().splitlines()
# A row of a table of measurements: a figure in milliseconds, seconds or a ratio to a baseline.
FIGURE = re.compile(r"\d(?:\.\d+)?\s?(?:ms|s|x)\b")


def test_the_first_sixty_lines_give_the_two_commands_the_picture_and_the_proxy_base_url():
    first = "\n".join(LINES[:60])

    assert "make run" in first and "make test" in first
    assert "![" in first and "docs/runs-overview.png" in first
    assert "/proxy/browser_canvas/v1" in first
    for client in ("`openai` SDK", "`anthropic` SDK", "Claude Code", "Codex CLI", "OpenAI Agents SDK", "Vercel AI SDK"):
        assert client in first, client


def test_no_table_of_measurements_in_the_first_120_lines_and_the_measurements_are_in_docs():
    rows = [line for line in LINES[:120] if line.startswith("|") and FIGURE.search(line)]

    assert rows == []
    assert "docs/performance.md" in "\n".join(LINES[:60])
    assert "| N = 1000" in (ROOT / "docs" / "performance.md").read_text()
