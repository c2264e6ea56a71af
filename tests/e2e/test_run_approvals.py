"""Approvals on the run page, as a reviewer takes them: approve one call and reject another of the same response
and see what went back to the model; and without JavaScript, edit a call's arguments through the plain forms."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.run_page import round_section, start_run

pytestmark = pytest.mark.e2e

REJECTION = "Error: A reviewer rejected this tool call. Tags are not needed."
ANSWER = "Nodes have the bundles article and page."
AGENT = {
    "label": "Reviewed bundles",
    "tools": {"list_bundles": {"require_approval": True}, "list_entity_types": {}},
    "script": [
        {
            "content": "Both listings, and the entity types.",
            "tool_calls": [
                {"name": "list_bundles", "arguments": {"entity_type": "node"}},
                {"name": "list_bundles", "arguments": {"entity_type": "taxonomy_term"}},
                {"name": "list_entity_types", "arguments": {}},
            ],
        },
        {"content": ANSWER},
    ],
}


@pytest.fixture
def agent_id(new_agent):
    return new_agent("e2e_reviewed", AGENT)


def call_row(page, call_id):
    return round_section(page, 1).get_by_role("row").filter(has_text=call_id)


def expect_decided(row, status, decision):
    """A decided call of a round still waiting: its decision in place of the three choices."""
    expect(row.get_by_test_id("call-status")).to_have_text(status)
    expect(row.get_by_test_id("call-decision")).to_contain_text(decision)
    expect(row.get_by_role("button")).to_have_count(0)


def expect_reject_is_not_the_primary_button(row):
    def background(name):
        return row.get_by_role("button", name=name, exact=True).evaluate("b => getComputedStyle(b).backgroundColor")

    assert background("Reject") != background("Approve")
    assert background("Reject") == "rgb(255, 255, 255)"


def test_approve_one_call_and_reject_another_and_see_what_went_back_to_the_model(page, agent_id):
    page.goto(f"/agents/{agent_id}/run")
    start_run(page, "Which bundles do nodes and terms have?")

    heading = round_section(page, 1).get_by_role("heading")
    expect(heading).to_contain_text("Awaiting approval: 2 of 2 calls to decide — nothing has run yet")
    expect(call_row(page, "call_1_3")).to_contain_text("Runs once every call awaiting approval is decided.")
    expect(round_section(page, 1)).not_to_contain_text('"article"')

    call_row(page, "call_1_1").get_by_role("button", name="Approve", exact=True).click()
    expect(heading).to_contain_text("Awaiting approval: 1 of 2 calls to decide")
    expect_decided(call_row(page, "call_1_1"), "Approved", "Approved by a reviewer")
    second = call_row(page, "call_1_2")
    expect_reject_is_not_the_primary_button(second)
    second.get_by_label("Reason (optional)").fill("Tags are not needed.")
    second.get_by_role("button", name="Reject", exact=True).click()

    expect(heading).to_contain_text("1 of 3 calls rejected")
    expect(call_row(page, "call_1_1").get_by_test_id("call-sent-back")).to_contain_text('"article"')
    expect(call_row(page, "call_1_2").get_by_test_id("call-sent-back")).to_have_text(REJECTION)
    expect(call_row(page, "call_1_2")).to_contain_text("Rejected by a reviewer: Tags are not needed.")
    expect(call_row(page, "call_1_2").get_by_text("Rejected by a reviewer")).to_have_count(1)
    expect(call_row(page, "call_1_3")).to_contain_text("Executed")
    expect(page.get_by_role("region", name="Answer", exact=True)).to_contain_text(ANSWER)
    page.get_by_text(re.compile(r"^Full transcript")).click()
    sent_back = page.locator("ol.messages li.role-tool").filter(has_text="call_1_2")
    expect(sent_back).to_contain_text(REJECTION)


def test_without_javascript_a_reviewer_edits_the_arguments_and_approves_through_plain_forms(
    browser, base_url, agent_id
):
    context = browser.new_context(java_script_enabled=False, base_url=base_url)
    page = context.new_page()
    try:
        page.goto(f"/agents/{agent_id}/run")
        start_run(page, "Which bundles do nodes and terms have?")
        expect(round_section(page, 1).get_by_role("heading")).to_contain_text("Awaiting approval: 2 of 2")

        first = call_row(page, "call_1_1")
        first.get_by_text("Edit arguments").click()
        first.get_by_label("Arguments (JSON)").fill('{"entity_type": 7}')
        first.get_by_role("button", name="Approve with these arguments").click()
        expect(call_row(page, "call_1_1").locator(".errors")).to_contain_text("7 is not of type 'string'")

        first = call_row(page, "call_1_1")
        first.get_by_label("Arguments (JSON)").fill('{"entity_type": "media"}')
        first.get_by_role("button", name="Approve with these arguments").click()
        expect(page).to_have_url(re.compile(r"/runs/\d+#run-\d+-pending$"))
        expect_decided(
            call_row(page, "call_1_1"),
            "Approved",
            'Approved by a reviewer with edited arguments: {"entity_type": "media"}',
        )
        call_row(page, "call_1_2").get_by_label("Reason (optional)").fill("Not now.")
        call_row(page, "call_1_2").get_by_role("button", name="Reject", exact=True).click()
        expect(call_row(page, "call_1_2")).to_contain_text("Rejected by a reviewer: Not now.")

        expect(page.get_by_role("region", name="Answer", exact=True)).to_contain_text(ANSWER)
        edited = call_row(page, "call_1_1")
        expect(edited).to_contain_text("Approved by a reviewer with edited arguments")
        expect(edited.get_by_test_id("call-sent-back")).to_contain_text('"image"')
    finally:
        context.close()
