"""The canvas: two placements in one response are rejected; the model places one, then the next below the UUID
the first returned, and the run's layout is shown as a tree."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.run_page import round_section, start_run
from tests.run_scenarios import CANVAS_AGENT, CANVAS_MESSAGE

pytestmark = pytest.mark.e2e

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@pytest.fixture
def agent_id(new_agent):
    return new_agent("e2e_canvas", CANVAS_AGENT)


def test_the_second_placement_uses_the_uuid_of_the_first(page, agent_id):
    page.goto(f"/agents/{agent_id}/run")
    start_run(page, CANVAS_MESSAGE)

    expect(round_section(page, 1).get_by_role("heading")).to_contain_text("All 2 calls rejected — nothing executed")
    placed = round_section(page, 2).get_by_test_id("call-sent-back")
    expect(placed).to_have_text(UUID)
    hero_uuid = placed.inner_text()

    below = round_section(page, 3).get_by_role("row").filter(has_text="place_component")
    expect(below).to_contain_text("Executed")
    expect(below.get_by_test_id("call-arguments")).to_contain_text(f'"below_uuid": "{hero_uuid}"')

    layout = page.get_by_role("region", name="Canvas layout")
    components = layout.get_by_role("listitem")
    expect(components).to_have_count(2)
    expect(components.nth(0)).to_contain_text(f"hero in header {hero_uuid}")
    expect(components.nth(1)).to_contain_text("text in header")
