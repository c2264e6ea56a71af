"""Provider connections as a person sets one up, in headless Chromium: save it, and Test it from the list the save
lands on, reading the model's answer under its row."""

import pytest
from playwright.sync_api import expect

from tests.fake_model_server import FakeModelServer, Reply, completion

pytestmark = pytest.mark.e2e


def test_after_saving_a_connection_its_row_offers_test_and_shows_the_answer(page, suffix):
    label = f"Local server {suffix}"
    with FakeModelServer(Reply(completion("OK", usage=(12, 1, 13)))) as server:
        page.goto("/providers/new")
        page.get_by_label("Label").fill(label)
        page.get_by_label("Base URL").fill(server.base_url)
        page.get_by_label("API key environment variable").fill("")
        page.get_by_label("Default model").fill("m")
        page.get_by_role("button", name="Create connection").click()

        expect(page.get_by_role("status").first).to_contain_text("Press Test on its row")
        page.get_by_role("button", name=f"Test {label}", exact=True).click()

        row_answer = page.locator(f"#connection-check-local_server_{suffix}")
        expect(row_answer).to_contain_text("The model answered")
        expect(row_answer).to_contain_text("OK")
