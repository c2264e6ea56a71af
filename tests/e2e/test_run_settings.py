"""The run page's settings for one run, as a person uses them in headless Chromium: each tool's settings group is
the agent form's, so ticking the restriction reveals the custom message there too, and the run uses it."""

import pytest
from playwright.sync_api import expect

from tests.e2e.run_page import round_section, start_run
from tests.e2e.tool_settings import tool_settings
from tests.run_scenarios import ENTITY_TYPES_CALL, bundles_agent

pytestmark = pytest.mark.e2e

RESTRICT = "Restrict to one call per response"
MESSAGE = "Multiple call error message"


@pytest.fixture
def agent_id(new_agent):
    script = [{"tool_calls": [ENTITY_TYPES_CALL, ENTITY_TYPES_CALL]}, {"content": "Done."}]
    return new_agent("e2e_run_settings", bundles_agent(script=script))


def test_ticking_the_restriction_for_a_run_reveals_the_custom_message_the_run_then_uses(page, agent_id):
    page.goto(f"/agents/{agent_id}/run")
    page.get_by_text("Settings for this run").click()
    entity_types = tool_settings(page, "list_entity_types")
    expect(entity_types.get_by_label(MESSAGE)).to_have_count(0)

    entity_types.get_by_label(RESTRICT).check()
    expect(entity_types.get_by_label(MESSAGE)).to_be_visible()
    expect(entity_types.get_by_text("Leave empty for the default message")).to_contain_text(
        'Error: The tool "[tool_name]" may only be called once per response.'
    )
    entity_types.get_by_label(RESTRICT).uncheck()
    expect(entity_types.get_by_label(MESSAGE)).to_have_count(0)
    entity_types.get_by_label(RESTRICT).check()
    entity_types.get_by_label(MESSAGE).fill("Error: [tool_name] once per response.")
    start_run(page, "List the entity types.")

    first = round_section(page, 1)
    expect(first.get_by_role("heading")).to_contain_text("All 2 calls rejected — nothing executed")
    expect(first.get_by_test_id("call-sent-back")).to_have_text(["Error: list_entity_types once per response."] * 2)
    overrides = page.get_by_role("region", name="Overrides for this run")
    expect(overrides).to_contain_text('"multiple_call_error_message": "Error: [tool_name] once per response."')


def test_a_tool_enabled_for_one_run_shows_its_settings(page, agent_id):
    page.goto(f"/agents/{agent_id}/run")
    page.get_by_text("Settings for this run").click()
    page.get_by_text("Other tools (enable for this run)").click()
    layout = tool_settings(page, "get_layout")
    expect(layout.get_by_role("group", name="General tool settings")).to_be_hidden()
    layout.get_by_label("Enable", exact=True).check()
    expect(layout.get_by_role("group", name="General tool settings")).to_be_visible()
    expect(layout.get_by_label("Max calls per run")).to_have_value("0")
