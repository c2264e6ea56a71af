"""Steps on the run page, as a person takes them, and the parts of a run a person reads, for the browser tests of
runs. The parts are found by role, or by the run partial's data-testid hooks (Playwright's get_by_test_id)."""

import re

from playwright.sync_api import expect


def start_run(page, message):
    """Type the message and press Run."""
    page.get_by_role("textbox", name="Message", exact=True).fill(message)
    page.get_by_role("button", name="Run", exact=True).click()


def round_section(page, number):
    return page.get_by_role("region", name=re.compile(rf"^Round {number}\b"))


def run_to_the_end(page, message):
    """Press Run and wait until the run has ended: it shows as soon as it starts, with Stop until it ends."""
    start_run(page, message)
    expect(page.get_by_role("heading", name=re.compile(r"^Run #\d+"))).to_be_visible()
    expect(page.get_by_role("button", name="Stop", exact=True)).to_have_count(0)


def fact(page, name):
    """The value of one of the run's facts (stop reason, rounds used, calls executed and rejected...)."""
    term = page.get_by_role("term").filter(has_text=name)
    return page.get_by_test_id("facts").locator("div").filter(has=term).get_by_role("definition")


def run_below_its_heading(page):
    """The run's parts below its heading, which the run page draws (an h2) and the run's own page leaves to its h1."""
    return page.get_by_test_id("run").locator(":scope > :not(h2)")
