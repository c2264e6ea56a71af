"""A Claude Code-like session on its run's page, in headless Chromium: the session is recorded through the policy
proxy from Messages API bodies shaped as Claude Code sends them (tests/claude_code_like.py), and its page stays
short and readable: the environment block and every reminder folded under one line, the user's own words and the
rounds in full."""

import pytest
from playwright.sync_api import expect

from tests import claude_code_like as session

pytestmark = pytest.mark.e2e

MAX_HEIGHT = 2500


def record_session(live_server, agent_id, **shape):
    """Store a scripted agent, send the session's requests to its proxy, and return the id of the run the last
    request recorded (the session's answer)."""
    client = live_server.app.test_client()
    agent = {"label": "Coder", "script": session.SCRIPT, "max_rounds": 20}
    assert client.put(f"/api/agents/{agent_id}", json=agent).status_code == 201
    for body in session.session_bodies(**shape):
        response = client.post(f"/proxy/{agent_id}/v1/messages", json=body)
        assert response.status_code == 200, response.get_json()
    return int(response.headers["X-Toolgate-Run"])


def height(page):
    return page.evaluate("document.documentElement.scrollHeight")


def test_a_claude_code_sessions_page_folds_its_environment_and_reminders(page, live_server, suffix):
    run_id = record_session(live_server, f"coder_{suffix}")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/runs/{run_id}")

    expect(page.get_by_role("heading", name="Round 3")).to_be_visible()  # one run: reminders do not start a turn
    expect(page.get_by_test_id("message")).to_have_text(session.PROMPT)
    assert height(page) <= MAX_HEIGHT
    page.get_by_text("Full transcript").click()
    transcript = page.get_by_test_id("transcript")
    environment = transcript.get_by_test_id("folded-reminder").filter(has_text="# Environment")
    expect(environment.locator("summary")).to_have_text("System reminder: # Environment (48 lines)")
    expect(environment.get_by_text("Contents of /home/dev/shop/CLAUDE.md")).to_be_hidden()
    expect(transcript.get_by_text(session.PROMPT, exact=True)).to_be_visible()
    reminders = transcript.get_by_test_id("folded-reminder").filter(has_text="TodoWrite")
    expect(reminders).to_have_count(3)  # one beside each tool_result
    for index in range(3):
        expect(reminders.nth(index).locator("summary")).to_contain_text(
            "System reminder: The TodoWrite tool hasn't been used recently."
        )
        expect(reminders.nth(index).get_by_text("This is just a gentle reminder")).to_be_hidden()
    system = transcript.get_by_test_id("folded-system")
    expect(system.locator("summary")).to_have_text(
        "You are Claude Code, Anthropic's official CLI for Claude. (249 lines: show all)"
    )
    expect(system.get_by_text("# Tone and style").first).to_be_hidden()

    environment.locator("summary").click()
    expect(environment.get_by_text("Contents of /home/dev/shop/CLAUDE.md")).to_be_visible()  # one click away


def test_the_page_of_a_session_of_three_rounds_is_at_most_2500_px_tall(page, live_server, suffix):
    """The same session with each tool_result alone in its message: one run of the three rounds."""
    run_id = record_session(live_server, f"coder_rounds_{suffix}", reminders_beside_results=False)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/runs/{run_id}")

    expect(page.get_by_role("heading", name="Round 3")).to_be_visible()
    message = page.get_by_test_id("message")
    expect(message.get_by_text(session.PROMPT, exact=True)).to_be_visible()
    expect(message).not_to_contain_text("# Environment")  # the user's own words; the block stays in the transcript
    assert height(page) <= MAX_HEIGHT, f"the run page is {height(page)} px tall"
