"""A proxied call that requires approval, decided on the run's page: an `openai` SDK client waits in a thread of its
own while a reviewer opens the run awaiting approval, edits the call's arguments and approves it; the client then
receives the call with the reviewer's arguments. Or the person presses Stop: the client gets the stop as its
answer, and never the call."""

import json
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import openai
import pytest
from playwright.sync_api import expect

from tests.e2e.run_page import round_section

pytestmark = pytest.mark.e2e

RUN_SHELL = {
    "type": "function",
    "function": {
        "name": "Bash",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}
WAIT = 15
STOPPED_ANSWER = "A person stopped this run in Toolgate while its tool calls waited for approval: none of them was run."


@contextmanager
def held_shell_call(new_agent, base_url, live_server, agent_id, label):
    """An agent whose client tool Bash requires approval, and an `openai` SDK client in a thread of its own whose
    request waits for the decision: (the held run's id, the client's answer to come, a test client of the app)."""
    agent_id = new_agent(
        agent_id,
        {
            "label": label,
            "client_tools": {"Bash": {"require_approval": True}},
            "approval_timeout_seconds": 60,
            "script": [
                {"tool_calls": [{"id": "clean", "name": "Bash", "arguments": {"command": "rm -rf /"}}]},
                {"content": "Cleaned."},
            ],
        },
    )
    sdk = openai.OpenAI(base_url=f"{base_url}/proxy/{agent_id}/v1", api_key="any key", max_retries=0, timeout=WAIT)
    client = live_server.app.test_client()
    with ThreadPoolExecutor(max_workers=1) as pool:
        answer = pool.submit(
            sdk.chat.completions.create,
            model="gpt-x",
            messages=[{"role": "user", "content": "Clean the build."}],
            tools=[RUN_SHELL],
        )
        deadline = time.monotonic() + WAIT
        while not (held := client.get(f"/api/runs?state=awaiting_approval&agent={agent_id}").json["runs"]):
            assert time.monotonic() < deadline, "the proxied call never waited for approval"
            time.sleep(0.05)
        yield held[0]["id"], answer, client


def test_a_reviewer_edits_and_approves_a_held_call_on_the_run_page_and_the_client_receives_it(
    page, new_agent, base_url, live_server
):
    with held_shell_call(new_agent, base_url, live_server, "e2e_held", "Held shell") as (run_id, answer, _client):
        page.goto(f"/runs/{run_id}")
        pending = round_section(page, 1)
        expect(pending.get_by_role("heading")).to_contain_text("Awaiting approval: 1 of 1 call to decide")
        row = pending.get_by_role("row").filter(has_text="clean")
        row.get_by_text("Edit arguments").click()
        row.get_by_label("Arguments (JSON)").fill('{"command": "rm -rf build"}')
        row.get_by_role("button", name="Approve with these arguments").click()
        expect(row.get_by_test_id("call-decision")).to_contain_text("Approved by a reviewer")
        expect(pending.get_by_role("heading")).to_contain_text("Every call decided")

        message = answer.result(timeout=WAIT).choices[0].message

    assert [(call.id, json.loads(call.function.arguments)) for call in message.tool_calls] == [
        ("clean", {"command": "rm -rf build"})
    ]


def test_a_person_stops_a_held_run_on_its_page_and_the_waiting_client_gets_the_stop_not_the_call(
    page, new_agent, base_url, live_server
):
    held = held_shell_call(new_agent, base_url, live_server, "e2e_held_stop", "Held shell, stopped")
    with held as (run_id, answer, client):
        page.goto(f"/runs/{run_id}")
        expect(round_section(page, 1).get_by_role("heading")).to_contain_text("Awaiting approval: 1 of 1 call")
        page.get_by_role("button", name="Stop").click()
        expect(page.get_by_test_id("answer")).to_have_text(STOPPED_ANSWER)
        expect(page.get_by_role("row").filter(has_text="clean")).to_contain_text("Not run: the run was stopped")

        message = answer.result(timeout=WAIT).choices[0].message

    assert (message.content, message.tool_calls) == (STOPPED_ANSWER, None)
    run = client.get(f"/api/runs/{run_id}").json
    assert (run["state"], run["stop_reason"], run["answer"]) == ("finished", "stopped", STOPPED_ANSWER)
