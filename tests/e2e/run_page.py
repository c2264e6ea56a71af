"""Steps on the run page, as a person takes them, for the browser tests of runs."""

import re


def start_run(page, message):
    """Type the message and press Run."""
    page.get_by_role("textbox", name="Message", exact=True).fill(message)
    page.get_by_role("button", name="Run", exact=True).click()


def round_section(page, number):
    return page.get_by_role("region", name=re.compile(rf"^Round {number}\b"))
