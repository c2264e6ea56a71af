"""Policy files in Chromium (issue 34), CSRF on: upload a file on the Import page, read the diff, apply it; the
agent is then managed by its file and its settings page is read-only."""

import pytest
from playwright.sync_api import expect

from tests.e2e.tool_settings import tool_settings

pytestmark = pytest.mark.e2e


def test_import_a_changed_file_read_the_diff_apply_it_and_find_the_agent_read_only(
    page, live_server, new_agent, suffix, tmp_path
):
    label = f"Policy builder {suffix}"
    agent_id = new_agent("policy", {"label": label, "tools": {"place_component": {}}})
    exported = live_server.app.test_client().get(f"/agents/{agent_id}/export").get_data(as_text=True)
    file = tmp_path / f"{agent_id}.yaml"
    file.write_text(
        exported.replace("  place_component: {}\n", "  place_component:\n    restrict_multiple_calls: true\n")
    )

    page.goto("/agents")
    page.get_by_role("link", name="Import").click()
    page.get_by_label("Policy files").set_input_files(file)
    page.get_by_role("button", name="Show the changes").click()

    changes = page.get_by_label("Changes", exact=True)
    expect(changes).to_contain_text(f"~ {agent_id} ({agent_id}.yaml)")
    expect(changes).to_contain_text("~ tools.place_component.restrict_multiple_calls: false → true")
    expect(changes).to_contain_text(f"+ managed by: {agent_id}.yaml")
    page.get_by_role("button", name="Apply these changes").click()

    expect(page.get_by_text("Applied 1 change from the policy files.")).to_be_visible()
    expect(page.get_by_role("link", name=f"Delete {label}")).to_have_count(0)
    page.get_by_role("link", name=label, exact=True).click()
    expect(page.get_by_role("status")).to_contain_text(f"Managed by the policy file {agent_id}.yaml.")
    expect(page.get_by_role("link", name="Delete")).to_have_count(0)
    page.get_by_role("link", name="Settings").click()

    expect(page.get_by_role("heading", name=f"Settings of {label}")).to_be_visible()
    expect(page.get_by_text(f"flask --app app apply --release {agent_id}")).to_be_visible()
    expect(page.get_by_label("Label", exact=True)).to_be_disabled()
    place = tool_settings(page, "place_component")
    expect(place.get_by_label("Restrict to one call per response")).to_be_checked()
    expect(place.get_by_label("Restrict to one call per response")).to_be_disabled()
    expect(page.get_by_role("button", name="Save agent")).to_have_count(0)
