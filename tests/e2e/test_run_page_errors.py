"""The run page when the server refuses the run: with htmx, the refusal is shown, not swallowed."""

import pytest
from playwright.sync_api import expect

from tests.e2e.run_page import start_run
from tests.run_scenarios import BUNDLES_MESSAGE, bundles_agent

pytestmark = pytest.mark.e2e


@pytest.fixture
def agent_id(new_agent):
    return new_agent("e2e_refused", bundles_agent())


def test_a_run_sent_without_a_valid_csrf_token_says_why(page, context, agent_id):
    page.goto(f"/agents/{agent_id}/run")
    context.clear_cookies()  # the session expired: the form's CSRF token no longer matches
    start_run(page, BUNDLES_MESSAGE)
    alert = page.locator("#run-result").get_by_role("alert")
    expect(alert).to_contain_text("The form could not be sent")
    expect(alert).to_contain_text("reload the page and try again; nothing was saved")
