"""What a person does on the agent form, in headless Chromium against a live server, CSRF on."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.tool_settings import add_tool, tool_settings

pytestmark = pytest.mark.e2e

RESTRICT = "Restrict to one call per response"
MESSAGE = "Multiple call error message"


def tool(page, name):
    return tool_settings(page, name)


def field(page, label):
    return page.get_by_label(label, exact=True)


def test_create_an_agent_with_a_restricted_tool_then_edit_it(page, suffix):
    label, agent_id = f"Page builder {suffix}", f"page_builder_{suffix}"
    page.goto("/agents/new")
    field(page, "Label").fill(label)
    expect(field(page, "Machine name")).to_have_value(agent_id)  # derived from the label, through htmx

    add_tool(page, "place_component")
    add_tool(page, "get_layout")
    expect(field(page, "Label")).to_have_value(label)  # each Add brings the whole form back, as it was
    place, layout = tool(page, "place_component"), tool(page, "get_layout")
    expect(place.get_by_role("group", name="General tool settings")).to_be_visible()
    expect(place.get_by_label(MESSAGE)).to_have_count(0)

    place.get_by_label(RESTRICT).check()
    expect(place.get_by_label(MESSAGE)).to_be_visible()
    expect(place.get_by_text("for the tool's name")).to_be_visible()
    expect(place.get_by_text("Leave empty for the default message")).to_contain_text(
        'Error: The tool "[tool_name]" may only be called once per response.'
    )
    place.get_by_label(RESTRICT).uncheck()
    expect(place.get_by_label(MESSAGE)).to_have_count(0)
    place.get_by_label(RESTRICT).check()
    place.get_by_label(MESSAGE).fill("Error: [tool_name] takes one call per response.")
    place.get_by_label("Max calls per run").fill("5")
    layout.get_by_label("Require usage").check()
    field(page, "Max rounds").fill("6")
    page.get_by_role("button", name="Create agent").click()

    expect(page).to_have_url(re.compile(rf"/agents/{agent_id}$"))
    expect(page.get_by_role("status")).to_contain_text(f'Created the agent "{label}".')

    page.goto(f"/agents/{agent_id}/edit")
    page.reload()
    place, layout = tool(page, "place_component"), tool(page, "get_layout")
    expect(field(page, "Label")).to_have_value(label)
    expect(field(page, "Max rounds")).to_have_value("6")
    expect(place.get_by_label("Enable", exact=True)).to_be_checked()
    expect(layout.get_by_label("Enable", exact=True)).to_be_checked()
    expect(page.get_by_role("group", name="edit_component", exact=True)).to_have_count(0)  # in the picker
    expect(place.get_by_label(RESTRICT)).to_be_checked()
    expect(place.get_by_label(MESSAGE)).to_have_value("Error: [tool_name] takes one call per response.")
    expect(place.get_by_label("Max calls per run")).to_have_value("5")
    expect(layout.get_by_label("Require usage")).to_be_checked()
    expect(layout.get_by_label(RESTRICT)).not_to_be_checked()

    place.get_by_label(RESTRICT).uncheck()
    expect(place.get_by_label(MESSAGE)).to_have_count(0)
    page.get_by_role("button", name="Save agent").click()
    expect(page.get_by_role("status")).to_contain_text("(revision 2)")

    page.goto(f"/agents/{agent_id}/edit")
    place = tool(page, "place_component")
    expect(place.get_by_label(RESTRICT)).not_to_be_checked()
    place.get_by_label(RESTRICT).check()
    expect(place.get_by_label(MESSAGE)).to_have_value("")  # cleared on save
    agent = page.request.get(f"/api/agents/{agent_id}").json()
    assert agent["tools"]["place_component"]["multiple_call_error_message"] == ""
    assert agent["tools"]["place_component"]["restrict_multiple_calls"] is False


def test_validation_errors_show_next_to_the_field_and_keep_the_input(page):
    page.goto("/agents/new")
    field(page, "Label").fill("Too many rounds")
    field(page, "Max rounds").fill("500")
    field(page, "Script").fill('[{"content": "hi"')
    page.get_by_role("button", name="Create agent").click()
    expect(page.get_by_role("alert")).to_contain_text("Not saved.")
    expect(field(page, "Max rounds")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_text("Max rounds must be from 0 to 100 (got 500).")).to_be_visible()
    expect(page.get_by_text("Script is not valid JSON")).to_be_visible()
    expect(field(page, "Label")).to_have_value("Too many rounds")
    expect(field(page, "Script")).to_have_value('[{"content": "hi"')


def test_a_second_tab_that_saved_first_makes_the_first_see_a_conflict(page, context, suffix):
    agent_id = f"shared_agent_{suffix}"
    created = page.request.put(f"/api/agents/{agent_id}", data={"label": "Shared agent"})
    assert created.status == 201
    first = page
    second = context.new_page()
    first.goto(f"/agents/{agent_id}/edit")
    second.goto(f"/agents/{agent_id}/edit")

    field(second, "Label").fill("Saved by the second tab")
    second.get_by_role("button", name="Save agent").click()
    expect(second.get_by_role("status")).to_contain_text("(revision 2)")

    field(first, "Label").fill("Saved by the first tab")
    first.get_by_role("button", name="Save agent").click()
    expect(first.get_by_role("alert")).to_contain_text("someone else saved this agent after you opened it")
    expect(field(first, "Label")).to_have_value("Saved by the first tab")
    first.goto(f"/agents/{agent_id}")
    expect(first.get_by_role("heading", level=1)).to_have_text("Saved by the second tab")


def test_delete_asks_for_confirmation(page, suffix):
    label = f"Short lived {suffix}"
    assert page.request.put(f"/api/agents/short_lived_{suffix}", data={"label": label}).status == 201
    page.goto("/agents")
    page.get_by_role("link", name=f"Delete {label}").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Delete")
    page.get_by_role("button", name="Delete agent").click()
    expect(page).to_have_url(re.compile(r"/agents$"))
    expect(page.get_by_role("status")).to_contain_text(f'Deleted the agent "{label}".')
    expect(page.get_by_role("link", name=label, exact=True)).to_have_count(0)


def test_the_form_works_without_javascript(browser, base_url, suffix):
    agent_id = f"no_script_agent_{suffix}"
    context = browser.new_context(java_script_enabled=False, base_url=base_url)
    page = context.new_page()
    page.goto("/agents/new")
    field(page, "Label").fill(f"No script agent {suffix}")  # the machine name is derived on the server
    bundles = add_tool(page, "list_bundles")
    expect(bundles.get_by_label(MESSAGE)).to_be_visible()  # always there without JavaScript
    bundles.get_by_label(RESTRICT).check()
    bundles.get_by_label(MESSAGE).fill("Error: one [tool_name] at a time.")
    page.get_by_role("button", name="Create agent").click()

    expect(page).to_have_url(re.compile(rf"/agents/{agent_id}$"))
    row = page.get_by_role("row").filter(has_text="list_bundles")
    expect(row.get_by_role("cell").first).to_have_text("yes")  # Restrict to one call per response
    expect(row).to_contain_text("Error: one [tool_name] at a time.")

    page.goto(f"/agents/{agent_id}/edit")
    bundles = tool(page, "list_bundles")
    expect(bundles.get_by_label(MESSAGE)).to_have_value("Error: one [tool_name] at a time.")
    bundles.get_by_label(RESTRICT).uncheck()
    page.get_by_role("button", name="Save agent").click()
    expect(page.get_by_role("row").filter(has_text="list_bundles").get_by_role("cell").first).to_have_text("no")
    page.goto(f"/agents/{agent_id}/edit")
    expect(tool(page, "list_bundles").get_by_label(MESSAGE)).to_have_value("")
    context.close()
