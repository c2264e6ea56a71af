"""A person gives an agent a client tool on its form, in headless Chromium against a live server, CSRF on; then an
app's conversation through the agent's proxy shows on its run page with the round the app never saw."""

import re

import openai
import pytest
from playwright.sync_api import expect

from tests.e2e.htmx import settled
from tests.e2e.tool_settings import tool_settings

pytestmark = pytest.mark.e2e

PLACE = {
    "type": "function",
    "function": {"name": "place_block", "parameters": {"type": "object", "properties": {"block": {"type": "string"}}}},
}


def client_tool(page, name):
    return tool_settings(page, name)


def test_add_a_client_tool_restrict_it_and_save(page, suffix):
    label, agent_id = f"Browser builder {suffix}", f"browser_builder_{suffix}"
    page.goto("/agents/new")
    page.get_by_label("Label", exact=True).fill(label)
    page.get_by_label("Tool name", exact=True).fill("place_block")
    page.get_by_role("button", name="Add client tool").click()

    expect(page.get_by_role("status")).to_contain_text('Added the client tool "place_block"')
    settled(page)
    expect(page.get_by_label("Label", exact=True)).to_have_value(label)  # the rest of the form is kept
    place = client_tool(page, "place_block")
    expect(place.get_by_label("Return directly")).to_have_count(0)
    expect(place.get_by_label("Multiple call error message")).to_have_count(0)
    place.get_by_label("Restrict to one call per response").check()
    expect(place.get_by_label("Multiple call error message")).to_be_visible()  # revealed by htmx
    settled(page)
    place.get_by_label("Multiple call error message").fill("Error: one block per response.")

    place.get_by_label("Argument", exact=True).fill("region")
    place.get_by_role("button", name="Add argument to place_block").click()
    region = client_tool(page, "place_block").get_by_role("group", name="region", exact=True)
    expect(region).to_be_visible()
    settled(page)
    region.get_by_label("Rule").select_option("force_value")
    expect(region.get_by_label("Values")).to_be_visible()
    region.get_by_label("Values").fill("footer")
    page.get_by_role("button", name="Create agent").click()

    expect(page).to_have_url(re.compile(rf"/agents/{agent_id}$"))
    expect(page.get_by_role("table").filter(has_text="Client tool")).to_contain_text("Error: one block per response.")
    settings = page.request.get(f"/api/agents/{agent_id}").json()["client_tools"]["place_block"]
    assert settings["restrict_multiple_calls"] is True
    assert settings["argument_rules"] == {"region": {"action": "force_value", "values": ["footer"], "hide": False}}


def test_without_javascript_a_client_tool_is_added_and_removed(browser, base_url, new_agent):
    agent_id = new_agent("plain_builder", {"label": "Plain builder"})
    context = browser.new_context(java_script_enabled=False, base_url=base_url)
    page = context.new_page()
    page.goto(f"/agents/{agent_id}/edit")
    page.get_by_label("Tool name", exact=True).fill("place_block")
    page.get_by_role("button", name="Add client tool").click()
    place = client_tool(page, "place_block")
    expect(place.get_by_label("Multiple call error message")).to_be_visible()  # always there without JavaScript
    place.get_by_label("Max calls per run").fill("3")
    page.get_by_role("button", name="Save agent").click()
    assert page.request.get(f"/api/agents/{agent_id}").json()["client_tools"]["place_block"]["max_calls_per_run"] == 3

    page.goto(f"/agents/{agent_id}/edit")
    page.get_by_role("button", name="Remove place_block").click()
    expect(page.get_by_role("status")).to_contain_text('Removed the client tool "place_block"')
    expect(client_tool(page, "place_block")).to_have_count(0)
    page.get_by_role("button", name="Save agent").click()
    assert page.request.get(f"/api/agents/{agent_id}").json()["client_tools"] == {}
    context.close()


def test_a_proxied_conversation_shows_the_round_the_app_never_saw(page, new_agent, base_url):
    script = [
        {"tool_calls": [{"name": "place_block", "arguments": {"block": "hero"}}] * 2},
        {"tool_calls": [{"id": "hero", "name": "place_block", "arguments": {"block": "hero"}}]},
    ]
    agent_id = new_agent(
        "proxied",
        {"label": "Proxied", "client_tools": {"place_block": {"restrict_multiple_calls": True}}, "script": script},
    )
    sdk = openai.OpenAI(base_url=f"{base_url}/proxy/{agent_id}/v1", api_key="unused", max_retries=0)
    raw = sdk.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "A hero."}], tools=[PLACE]
    )
    assert len(raw.parse().choices[0].message.tool_calls) == 1

    page.goto(f"/runs/{raw.headers['X-Toolgate-Run']}")
    hidden = page.get_by_role("region", name=re.compile(r"^Round 1"))
    expect(hidden).to_contain_text("Not shown to the client")
    expect(hidden.get_by_text("Restricted tool called more than once")).to_have_count(2)
    expect(page.get_by_role("region", name=re.compile(r"^Round 2"))).to_contain_text("Sent to the client")
    page.get_by_role("link", name="Runs", exact=True).click()
    page.get_by_label("Source").select_option(label="Policy proxy")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("table")).to_contain_text("Policy proxy")
