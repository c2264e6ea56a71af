"""A tool's settings group on the agent form or the run page, as a person opens it: the settings of a tool enabled on
the stored agent are folded under a one-line summary, and a click on the summary unfolds them; a tool the agent does
not have yet comes on its form from the picker."""

from playwright.sync_api import expect

from tests.e2e.htmx import settled


def tool_settings(page, name):
    """The group of one tool (every tool has the same labels, so scope by tool), its settings unfolded when the tool
    is enabled and they are folded."""
    group = page.get_by_role("group", name=name, exact=True)
    fold = group.locator("details.tool-settings-fold")
    if fold.is_visible() and fold.get_attribute("open") is None:
        fold.locator("> summary").click()
        expect(fold).to_have_attribute("open", "")
    return group


def add_tool(page, name):
    """Put a tool on the agent form as a person does: with the picker's Add button, found by typing its name in the
    search box (or, without JavaScript, in its group opened by hand). Returns the tool's settings group, enabled."""
    picker = page.get_by_role("group", name="Add tools")
    search = picker.get_by_label("Find a tool")
    button = picker.get_by_role("button", name=f"Add {name}", exact=True)
    if search.is_visible():
        search.fill(name)
    else:
        picker.locator("details", has=page.locator(f'button[value="{name}"]')).locator("summary").click()
    button.click()
    expect(page.get_by_role("group", name=name, exact=True).get_by_label("Enable", exact=True)).to_be_checked()
    settled(page)  # its settings answer a change only once htmx has wired them
    return tool_settings(page, name)
