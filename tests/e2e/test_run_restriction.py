"""The restriction MR's manual tests, replayed on the run page as a person would, in headless Chromium against a
live server (CSRF on, scripted model): a restricted tool called twice in one response, the mixed response, the
restriction off, and the custom message; then the log, the permalink and "Run again"."""

import json
import re

import pytest
from playwright.sync_api import expect

from engine import texts
from tests.e2e.run_page import fact, round_section, run_below_its_heading, run_to_the_end
from tests.e2e.tool_settings import tool_settings
from tests.run_scenarios import BUNDLES_ANSWER, BUNDLES_MESSAGE, bundles_agent, mixed_script

pytestmark = pytest.mark.e2e

DEFAULT_MESSAGE = texts.RESTRICTED_REPEAT.replace("[tool_name]", "list_bundles")
COLLATERAL = (
    'Error: This tool call was not executed, because the tool(s) "list_bundles" in the same response may only be '
    "called once per response."
)


@pytest.fixture
def agent_id(new_agent):
    return new_agent("e2e_bundles", bundles_agent())


def call_row(page, round_number, call_id):
    return round_section(page, round_number).get_by_role("row").filter(has_text=call_id)


def run(page, message=BUNDLES_MESSAGE):
    run_to_the_end(page, message)


def run_id(page):
    heading = page.get_by_role("link", name=re.compile(r"^Run #\d+$"))
    return int(heading.inner_text().removeprefix("Run #"))


def open_settings(page):
    page.get_by_text("Settings for this run").click()
    return tool_settings(page, "list_bundles")


def test_two_calls_of_a_restricted_tool_are_both_rejected_and_the_model_recovers(page, agent_id):
    page.goto(f"/agents/{agent_id}/run")
    run(page)

    first = round_section(page, 1)
    expect(first.get_by_role("heading")).to_contain_text("All 2 calls rejected — nothing executed")
    for call_id in ("call_1_1", "call_1_2"):
        row = call_row(page, 1, call_id)
        expect(row).to_contain_text("Rejected")
        expect(row).to_contain_text("Restricted tool called more than once")
        expect(row.get_by_test_id("call-sent-back")).to_have_text(DEFAULT_MESSAGE)
    expect(first).not_to_contain_text('"article"')  # nothing executed: no bundle data in round 1

    expect(call_row(page, 2, "call_2_1")).to_contain_text("Executed")
    expect(call_row(page, 2, "call_2_1")).to_contain_text('"article"')
    expect(page.get_by_role("region", name="Answer", exact=True)).to_contain_text(BUNDLES_ANSWER)
    expect(fact(page, "Calls rejected")).to_have_text("2")

    number = run_id(page)
    page.goto(f"/log?agent={agent_id}")
    entry = page.get_by_role("row").filter(has=page.get_by_role("link", name=f"Run #{number}", exact=True))
    expect(entry).to_contain_text(
        f'The agent "{agent_id}" called the single-call tool(s) "list_bundles" multiple times in one response. '
        "All 2 tool calls in the response were rejected."
    )
    expect(entry).to_contain_text("Error")


def test_a_mixed_response_rejects_the_unrestricted_call_too(page, agent_id):
    page.goto(f"/agents/{agent_id}/run")
    page.get_by_text("Script of the scripted model").click()
    page.get_by_label("Script (JSON)").fill(json.dumps(mixed_script(), indent=2))
    run(page)

    expect(round_section(page, 1).get_by_role("heading")).to_contain_text("All 3 calls rejected — nothing executed")
    expect(call_row(page, 1, "call_1_1").get_by_test_id("call-sent-back")).to_have_text(DEFAULT_MESSAGE)
    expect(call_row(page, 1, "call_1_2").get_by_test_id("call-sent-back")).to_have_text(DEFAULT_MESSAGE)
    collateral = call_row(page, 1, "call_1_3")
    expect(collateral).to_contain_text("list_entity_types")
    expect(collateral).to_contain_text("Collateral: another tool in this response is restricted")
    expect(collateral.get_by_test_id("call-sent-back")).to_have_text(COLLATERAL)
    expect(round_section(page, 1)).not_to_contain_text('"Content"')  # no entity-type data in round 1


def test_with_the_restriction_off_both_calls_execute_with_real_data(page, agent_id):
    page.goto(f"/agents/{agent_id}/run")
    open_settings(page).get_by_label("Restrict to one call per response").uncheck()
    run(page)

    expect(round_section(page, 1).get_by_role("heading")).to_contain_text("2 calls executed")
    expect(call_row(page, 1, "call_1_1").get_by_test_id("call-sent-back")).to_contain_text('"id": "article"')
    expect(call_row(page, 1, "call_1_2").get_by_test_id("call-sent-back")).to_contain_text('"id": "tags"')
    expect(fact(page, "Calls rejected")).to_have_text("0")
    overrides = page.get_by_role("region", name="Overrides for this run")
    expect(overrides).to_contain_text('"restrict_multiple_calls": false')

    number = run_id(page)
    page.goto(f"/log?agent={agent_id}")
    expect(page.get_by_role("link", name=f"Run #{number}", exact=True)).to_have_count(0)


def test_a_custom_message_replaces_the_tool_name(page, agent_id):
    page.goto(f"/agents/{agent_id}/run")
    open_settings(page).get_by_label("Multiple call error message").fill("Custom: [tool_name] once only.")
    run(page)

    for call_id in ("call_1_1", "call_1_2"):
        sent_back = call_row(page, 1, call_id).get_by_test_id("call-sent-back")
        expect(sent_back).to_have_text("Custom: list_bundles once only.")


def test_the_button_is_disabled_and_progress_shows_while_the_run_executes(page, agent_id):
    page.goto(f"/agents/{agent_id}/run")
    button = page.get_by_role("button", name="Run", exact=True)
    running = page.get_by_text("Running…")
    seen_while_held = []

    def look_while_held(route):
        """The run's request waits here, so the checks see the page while the run executes."""
        try:
            expect(button).to_be_disabled()
            expect(running).to_be_visible()
            seen_while_held.append(route.request.method)
        finally:
            route.continue_()

    page.route(f"**/agents/{agent_id}/run", look_while_held)
    page.get_by_role("textbox", name="Message", exact=True).fill(BUNDLES_MESSAGE)
    button.click()
    expect(round_section(page, 2)).to_be_visible()
    assert seen_while_held == ["POST"]
    expect(button).to_be_enabled()
    expect(running).to_be_hidden()


def test_an_error_in_the_form_shows_beside_the_field_and_keeps_the_page(page, agent_id):
    page.goto(f"/agents/{agent_id}/run")
    page.get_by_text("Script of the scripted model").click()
    page.get_by_label("Script (JSON)").fill("[{")
    page.get_by_role("textbox", name="Message", exact=True).fill("Hello")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_text("Script is not valid JSON")).to_be_visible()
    expect(page.get_by_role("textbox", name="Message", exact=True)).to_have_value("Hello")
    expect(page.get_by_label("Script (JSON)")).to_have_attribute("aria-invalid", "true")


def test_the_permalink_renders_the_run_as_the_run_page_did_and_runs_it_again(page, agent_id):
    page.goto(f"/agents/{agent_id}/run")
    run(page)
    rendered = run_below_its_heading(page).all_inner_texts()
    number = run_id(page)

    page.get_by_role("link", name=f"Run #{number}", exact=True).click()
    expect(page).to_have_url(re.compile(rf"/runs/{number}$"))
    # The same text below the heading, laid out by the stylesheet (inner text follows the CSS), once it loads.
    expect(run_below_its_heading(page)).to_have_text(rendered, use_inner_text=True)

    page.get_by_role("button", name="Run again").click()
    expect(page).to_have_url(re.compile(rf"/runs/{number + 1}$"))
    expect(page.get_by_role("region", name="Message", exact=True)).to_contain_text(BUNDLES_MESSAGE)

    page.get_by_role("link", name="Runs of this agent").click()
    expect(page.get_by_role("link", name=f"#{number + 1}", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name=f"#{number}", exact=True)).to_be_visible()


def test_without_javascript_the_form_posts_and_the_full_page_comes_back(browser, base_url, agent_id):
    context = browser.new_context(java_script_enabled=False, base_url=base_url)
    page = context.new_page()
    try:
        page.goto(f"/agents/{agent_id}/run")
        run(page)
        expect(page).to_have_url(re.compile(rf"/agents/{agent_id}/run#run-result$"))
        expect(round_section(page, 1).get_by_role("heading")).to_contain_text("All 2 calls rejected")
        expect(page.get_by_role("textbox", name="Message", exact=True)).to_have_value(BUNDLES_MESSAGE)
    finally:
        context.close()
