"""Argument rules as a person uses them, in headless Chromium against a live server (CSRF on): an allow-list and
a hidden forced value set on the agent form through the htmx reveal, saved and found again; then a run whose
script sends a value off the allow-list, is rejected with the exact text, and retries with an allowed one."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.run_page import round_section, start_run
from tests.e2e.tool_settings import add_tool, tool_settings

pytestmark = pytest.mark.e2e

NOT_ALLOWED = "Error: invalid value for entity_type in list_bundles: user is not one of node, media."


def tool(page, name):
    return tool_settings(page, name)


def argument(page, tool_name, name):
    """One argument's group inside a tool's settings: every argument has the same labels, so scope by both."""
    return tool(page, tool_name).get_by_role("group", name=name, exact=True)


def test_an_allow_list_and_a_hidden_forced_value_are_saved_and_found_again(page, suffix):
    agent_id = f"footer_bundles_{suffix}"
    page.goto("/agents/new")
    page.get_by_label("Label", exact=True).fill(f"Footer bundles {suffix}")
    expect(page.get_by_label("Machine name", exact=True)).to_have_value(agent_id)
    add_tool(page, "list_bundles")
    add_tool(page, "place_component")

    entity_type = argument(page, "list_bundles", "entity_type")
    expect(entity_type.get_by_label("Values")).to_have_count(0)
    entity_type.get_by_label("Rule").select_option(label="Only allow these values")
    expect(entity_type.get_by_label("Values")).to_be_visible()
    expect(entity_type.get_by_label("Hide from the model")).to_have_count(0)
    entity_type.get_by_label("Values").fill("node\nmedia")

    region = argument(page, "place_component", "region")
    region.get_by_label("Rule").select_option(label="Only allow these values")
    region.get_by_label("Values").fill("footer")
    region.get_by_label("Rule").select_option(label="Force this value")
    expect(region.get_by_label("Hide from the model")).to_be_visible()  # the swap is done
    expect(region.get_by_label("Values")).to_have_value("footer")  # and kept what was typed
    region.get_by_label("Hide from the model").check()
    page.get_by_role("button", name="Create agent").click()

    expect(page).to_have_url(re.compile(rf"/agents/{agent_id}$"))
    expect(page.get_by_text('forced to "footer", hidden from the model')).to_be_visible()

    page.goto(f"/agents/{agent_id}/edit")
    page.reload()
    entity_type = argument(page, "list_bundles", "entity_type")
    region = argument(page, "place_component", "region")
    expect(entity_type.get_by_label("Rule")).to_have_value("only_allow")
    expect(entity_type.get_by_label("Values")).to_have_value("node\nmedia")
    expect(region.get_by_label("Rule")).to_have_value("force_value")
    expect(region.get_by_label("Values")).to_have_value("footer")
    expect(region.get_by_label("Hide from the model")).to_be_checked()

    region.get_by_label("Rule").select_option(label="No rule")
    expect(region.get_by_label("Values")).to_have_count(0)


@pytest.fixture
def allow_list_agent(new_agent):
    return new_agent(
        "e2e_allow_list",
        {
            "label": "Allow-list",
            "tools": {
                "list_bundles": {
                    "argument_rules": {"entity_type": {"action": "only_allow", "values": ["node", "media"]}}
                }
            },
            "script": [
                {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "user"}}]},
                {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "node"}}]},
                {"content": "Nodes have articles and basic pages."},
            ],
        },
    )


def test_a_disallowed_value_is_rejected_and_the_retry_runs(page, allow_list_agent):
    page.goto(f"/agents/{allow_list_agent}/run")
    start_run(page, "Which bundles do users have?")

    first = round_section(page, 1)
    expect(first.get_by_role("heading")).to_contain_text("The only call was rejected")
    expect(first.get_by_role("row").filter(has_text="call_1_1")).to_contain_text("Value not allowed")
    expect(first.get_by_test_id("call-sent-back")).to_have_text(NOT_ALLOWED)
    first.get_by_text("What the model saw").click()
    expect(first.get_by_test_id("tools-sent")).to_contain_text('"enum": [')

    second = round_section(page, 2)
    expect(second.get_by_role("row").filter(has_text="call_2_1")).to_contain_text("Executed")
    expect(second.get_by_test_id("call-sent-back")).to_contain_text('"article"')
    expect(page.get_by_role("region", name="Answer", exact=True)).to_contain_text(
        "Nodes have articles and basic pages."
    )


def test_without_javascript_a_rules_values_are_there_all_along(browser, base_url, suffix):
    context = browser.new_context(java_script_enabled=False, base_url=base_url)
    page = context.new_page()
    page.goto("/agents/new")
    page.get_by_label("Label", exact=True).fill(f"No script rules {suffix}")
    add_tool(page, "place_component")
    region = argument(page, "place_component", "region")
    region.get_by_label("Values").fill("footer")
    region.get_by_label("Hide from the model").check()
    page.get_by_role("button", name="Create agent").click()

    region = argument(page, "place_component", "region")  # refused: hidden without a forced value
    expect(region.get_by_label("Hide from the model")).to_have_accessible_description(
        re.compile(r"Hide from the model is only possible with a forced value \(action force_value\)\.$")
    )
    region.get_by_label("Rule").select_option(label="Force this value")
    page.get_by_role("button", name="Create agent").click()

    expect(page).to_have_url(re.compile(rf"/agents/no_script_rules_{suffix}$"))
    expect(page.get_by_text('forced to "footer", hidden from the model')).to_be_visible()
    context.close()
