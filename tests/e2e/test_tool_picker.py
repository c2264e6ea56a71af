"""The agent form lists the agent's own tools; every other tool waits in a picker, grouped by where it comes from, in
headless Chromium, CSRF on. Three tool servers are registered (real MCP servers, the SDK's own over streamable HTTP):
a demo agent's edit form stays short, a person finds a tool by typing, adds it, sets a setting and saves, and without
JavaScript the picker's Add buttons do the same. The app runs on its own database (the demo loaded), so these servers'
tools stay off the other browser tests' forms."""

import re
from contextlib import ExitStack

import pytest
from playwright.sync_api import expect

from tests.e2e.tool_settings import tool_settings
from tests.live_http import served_app
from tests.mcp_support import live_mcp_server

pytestmark = pytest.mark.e2e

SERVERS = {"kinds": "Kinds", "records": "Records", "weather": "Weather"}
MCP_TOOLS_PER_SERVER = 8  # tests/mcp_support.build_test_server
DEMO_AGENTS = [
    "browser_canvas", "canvas_builder", "canvas_reviewed", "catalog_explorer", "catalog_page", "docs_assistant",
]  # fmt: skip
MAX_HEIGHT = 2500


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    with served_app(tmp_path_factory, "tool_picker_instance", demo=True) as served, ExitStack() as stack:
        client = served.app.test_client()
        for server_id, label in SERVERS.items():
            mcp_server = stack.enter_context(live_mcp_server())
            response = client.put(f"/api/tool-servers/{server_id}", json={"label": label, "url": mcp_server.url})
            assert response.status_code == 201, response.get_json()
        yield served.url


def picker(page):
    return page.get_by_role("group", name="Add tools")


@pytest.mark.parametrize("agent_id", DEMO_AGENTS)
def test_a_demo_agents_edit_form_lists_its_own_tools_and_stays_short_beside_three_tool_servers(page, app_url, agent_id):
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{app_url}/agents/{agent_id}/edit")
    agent = page.request.get(f"{app_url}/api/agents/{agent_id}").json()

    on_form = page.locator("fieldset.tool:not(.client-tool) > legend")
    expect(on_form).to_have_text(list(agent["tools"]))
    for server_id, label in SERVERS.items():
        group = picker(page).locator("details").filter(has_text=f"Tool server {label}")
        expect(group.locator("summary")).to_have_text(f"Tool server {label} {server_id} ({MCP_TOOLS_PER_SERVER} tools)")
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height <= MAX_HEIGHT, f"the edit form of {agent_id} is {height} px tall"


def test_a_person_finds_a_tool_by_typing_adds_it_sets_a_setting_and_saves(page, app_url, suffix):
    agent_id = f"picked_{suffix}"
    assert page.request.put(f"{app_url}/api/agents/{agent_id}", data={"label": "Picked"}).status == 201
    page.goto(f"{app_url}/agents/{agent_id}/edit")
    expect(page.get_by_test_id("no-tools")).to_have_text("No tools yet: the model answers without calling any.")
    add_weather = picker(page).get_by_role("button", name="Add records__weather", exact=True)
    expect(add_weather).to_be_hidden()  # folded in its server's group

    page.get_by_label("Find a tool").fill("weather in a city")

    expect(page.get_by_text("3 tools match.")).to_be_visible()  # weather, of each of the three servers
    expect(add_weather).to_be_visible()
    expect(picker(page).get_by_role("button", name="Add kinds__echo", exact=True)).to_be_hidden()
    add_weather.click()

    expect(page.get_by_role("status")).to_have_text(
        'Added the tool "records__weather": set its settings below, then save the agent to keep it.'
    )
    weather = tool_settings(page, "records__weather")
    expect(weather.get_by_label("Enable", exact=True)).to_be_checked()
    expect(weather.get_by_label("Enable", exact=True)).to_be_focused()
    expect(picker(page).get_by_role("button", name="Add records__weather", exact=True)).to_have_count(0)
    weather.get_by_label("Max calls per run").fill("3")
    page.get_by_role("button", name="Save agent").click()

    expect(page).to_have_url(re.compile(rf"/agents/{agent_id}$"))
    expect(page.get_by_role("status")).to_contain_text("(revision 2)")
    agent = page.request.get(f"{app_url}/api/agents/{agent_id}").json()
    assert list(agent["tools"]) == ["records__weather"]
    assert agent["tools"]["records__weather"]["max_calls_per_run"] == 3


def test_enter_in_the_search_box_adds_the_only_match_and_saves_nothing(page, app_url, suffix):
    agent_id = f"entered_{suffix}"
    assert page.request.put(f"{app_url}/api/agents/{agent_id}", data={"label": "Entered"}).status == 201
    page.goto(f"{app_url}/agents/{agent_id}/edit")

    page.get_by_label("Find a tool").fill("list_entity")
    expect(page.get_by_text("1 tool matches.")).to_be_visible()
    page.get_by_label("Find a tool").press("Enter")

    expect(tool_settings(page, "list_entity_types").get_by_label("Enable", exact=True)).to_be_checked()
    assert page.request.get(f"{app_url}/api/agents/{agent_id}").json()["revision"] == 1


def test_without_javascript_the_pickers_add_button_brings_the_form_back_with_the_tool(browser, app_url, suffix):
    agent_id = f"plain_picked_{suffix}"
    context = browser.new_context(java_script_enabled=False, base_url=app_url)
    page = context.new_page()
    page.goto("/agents/new")
    expect(page.get_by_label("Find a tool")).to_be_hidden()  # filtering needs JavaScript; the groups open by hand
    page.get_by_label("Label", exact=True).fill(f"Plain picked {suffix}")

    kinds = picker(page).locator("details").filter(has_text="Tool server Kinds")
    kinds.locator("summary").click()
    kinds.get_by_role("button", name="Add kinds__echo", exact=True).click()

    expect(page.get_by_role("status")).to_have_text(
        'Added the tool "kinds__echo": set its settings below, then save the agent to keep it.'
    )
    expect(page.get_by_label("Label", exact=True)).to_have_value(f"Plain picked {suffix}")  # the rest is kept
    echo = tool_settings(page, "kinds__echo")
    echo.get_by_label("Restrict to one call per response").check()
    echo.get_by_label("Multiple call error message").fill("Error: one echo at a time.")
    page.get_by_role("button", name="Create agent").click()

    expect(page).to_have_url(re.compile(rf"/agents/{agent_id}$"))
    agent = page.request.get(f"/api/agents/{agent_id}").json()
    assert list(agent["tools"]) == ["kinds__echo"]
    assert agent["tools"]["kinds__echo"]["restrict_multiple_calls"] is True
    assert agent["tools"]["kinds__echo"]["multiple_call_error_message"] == "Error: one echo at a time."
    context.close()
