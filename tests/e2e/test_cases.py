"""Regression cases and run comparisons as a person uses them, in headless Chromium against a live server (CSRF
on, scripted model): save a case from a run, turn the restriction off on the agent, check the case and read
which verdicts changed; compare two runs."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.run_page import run_to_the_end
from tests.e2e.tool_settings import tool_settings
from tests.run_scenarios import BUNDLES_MESSAGE, bundles_agent

pytestmark = pytest.mark.e2e

RESTRICT = "Restrict to one call per response"


@pytest.fixture
def agent_id(new_agent):
    """A fresh agent, so no case an earlier test saved is on it (cases outlive their agent)."""
    return new_agent("e2e_cases", bundles_agent(label="Cases test agent"))


def run_and_open_its_page(page, agent_id):
    page.goto(f"/agents/{agent_id}/run")
    run_to_the_end(page, BUNDLES_MESSAGE)
    page.get_by_role("link", name=re.compile(r"^Run #\d+$")).click()
    expect(page).to_have_url(re.compile(r"/runs/\d+$"))
    return int(page.url.rsplit("/", 1)[1])


def turn_the_restriction_off(page, agent_id):
    page.goto(f"/agents/{agent_id}/edit")
    tool_settings(page, "list_bundles").get_by_label(RESTRICT).uncheck()
    page.get_by_role("button", name="Save agent").click()
    expect(page.get_by_role("status")).to_contain_text("Saved the agent")


def call_row(page, section, call_id):
    return section.get_by_role("row").filter(has=page.get_by_role("rowheader").filter(has_text=call_id))


def test_save_a_case_turn_the_restriction_off_and_read_which_verdicts_changed(page, agent_id):
    run_and_open_its_page(page, agent_id)
    page.get_by_label("Case name").fill("Both listings are rejected")
    page.get_by_role("button", name="Save as regression case").click()

    expect(page.get_by_role("heading", level=1)).to_contain_text("Both listings are rejected")
    expected = page.get_by_role("region", name="Round 1", exact=True)
    expect(call_row(page, expected, "call_1_1")).to_contain_text("Restricted tool called more than once")
    page.get_by_role("checkbox", name="Pin the answer").uncheck()
    page.get_by_role("button", name="Save the case").click()
    expect(page.get_by_role("status")).to_contain_text('Saved the case "Both listings are rejected".')
    expect(page.get_by_role("checkbox", name="Pin the answer")).not_to_be_checked()
    expect(page.get_by_role("checkbox", name="Pin the status of call_1_1 in round 1")).to_be_checked()

    page.get_by_role("link", name="Agent", exact=True).click()
    cases = page.get_by_role("region", name="Regression cases")
    expect(cases.get_by_role("row").filter(has_text="Both listings are rejected")).to_contain_text("Not checked yet")
    turn_the_restriction_off(page, agent_id)
    page.get_by_role("region", name="Regression cases").get_by_role("button", name="Check all").click()

    expect(page.get_by_role("status")).to_contain_text("Checked 1 case: 0 passed, 1 failed.")
    row = page.get_by_role("region", name="Regression cases").get_by_role("row").filter(has_text="Both listings")
    expect(row).to_contain_text("Failed")
    row.get_by_role("link", name="Both listings are rejected").click()

    changed = page.get_by_role("list", name="What changed")
    expect(changed).to_contain_text(
        "round 1, call_1_1 (list_bundles): expected rejected (restricted_repeat), got executed"
    )
    expect(changed.get_by_role("listitem")).to_have_count(2)
    # Each round once: what the case expects, and beside it what the check got where that differs.
    first_round = page.get_by_role("region", name="Round 1", exact=True)
    expect(first_round.get_by_role("heading")).to_contain_text("changed")
    row = call_row(page, first_round, "call_1_1")
    expect(row.get_by_role("cell").first).to_contain_text("Rejected")
    expect(row.get_by_test_id("check-actual")).to_contain_text("Executed")
    second_round = page.get_by_role("region", name="Round 2", exact=True)
    expect(second_round.get_by_role("heading")).to_contain_text("as expected")
    expect(second_round.get_by_test_id("check-actual")).to_have_text(["as expected"])
    expect(page.get_by_role("region", name=re.compile(r"^Round 1"))).to_have_count(1)


def test_compare_a_run_with_the_one_before_it_after_a_change(page, agent_id):
    before = run_and_open_its_page(page, agent_id)
    turn_the_restriction_off(page, agent_id)
    after = run_and_open_its_page(page, agent_id)

    page.get_by_role("link", name="Compare with…").click()
    page.get_by_role("link", name=f"The previous run of this agent, #{before}").click()

    expect(page).to_have_url(re.compile(rf"/runs/{after}/compare/{before}$"))
    settings = page.get_by_role("table", name="Settings that differ")
    expect(settings.get_by_role("row").filter(has_text="tools.list_bundles.restrict_multiple_calls")).to_contain_text(
        re.compile(r"false\s+true")
    )
    summary = page.get_by_role("table", name="Outcome of both runs")
    expect(summary.get_by_role("row").filter(has_text="Calls rejected")).to_contain_text(re.compile(r"0\s+2"))
    first_round = page.get_by_role("region", name="Round 1 of both runs")
    expect(first_round.get_by_role("heading")).to_contain_text("differs")
    expect(first_round.locator(".status.differs")).to_have_text(["Executed", "Rejected", "Executed", "Rejected"])
    expect(page.get_by_role("region", name="Round 2 of both runs").get_by_role("heading")).to_contain_text("same")


def test_change_and_run_again_links_the_new_run_to_its_comparison(page, agent_id):
    first = run_and_open_its_page(page, agent_id)

    page.get_by_role("link", name="Change and run again").click()
    page.get_by_text("Settings for this run").click()
    tool_settings(page, "list_bundles").get_by_label(RESTRICT).uncheck()
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_role("link", name=f"Compare with run #{first}, which this run repeats").click()

    expect(page).to_have_url(re.compile(rf"/runs/\d+/compare/{first}$"))
    expect(page.get_by_role("table", name="Settings that differ")).to_contain_text(
        "tools.list_bundles.restrict_multiple_calls"
    )


def test_without_javascript_a_case_is_saved_and_checked(browser, base_url, agent_id):
    context = browser.new_context(java_script_enabled=False, base_url=base_url)
    page = context.new_page()
    try:
        run_id = run_and_open_its_page(page, agent_id)
        page.get_by_role("button", name="Save as regression case").click()
        expect(page.get_by_role("heading", level=1)).to_contain_text(f"Run #{run_id}: {BUNDLES_MESSAGE[:20]}")
        page.get_by_role("button", name="Check", exact=True).click()
        expect(page.get_by_role("status")).to_contain_text("The case passed.")
        expect(page.get_by_role("region", name="Latest check")).to_contain_text("Passed")
    finally:
        context.close()
