"""A tool's settings group on the agent form or the run page, as a person opens it: the settings of a tool enabled on
the stored agent are folded under a one-line summary, and a click on the summary unfolds them."""

from playwright.sync_api import expect


def tool_settings(page, name):
    """The group of one tool (every tool has the same labels, so scope by tool), its settings unfolded when the tool
    is enabled and they are folded."""
    group = page.get_by_role("group", name=name, exact=True)
    fold = group.locator("details.tool-settings-fold")
    if fold.is_visible() and fold.get_attribute("open") is None:
        fold.locator("> summary").click()
        expect(fold).to_have_attribute("open", "")
    return group
