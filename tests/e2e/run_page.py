"""Steps on the run page, as a person takes them, for the browser tests of runs."""

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
