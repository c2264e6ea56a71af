"""The unlimited-tools story on the run page: a question that needs more than the retrieved document. The model
lists the documents, reads two, re-lists (allowed: there is no budget) and answers; the sources list the
retrieved and read documents once each."""

import pytest
from playwright.sync_api import expect

from store import documents as document_store
from store.db import open_db
from tests.e2e.run_page import round_section, start_run
from tests.run_scenarios import DOCUMENTS, DOCUMENTS_AGENT, DOCUMENTS_ANSWER, DOCUMENTS_MESSAGE

pytestmark = pytest.mark.e2e

AGENT_ID = "e2e_documents"


@pytest.fixture(scope="module", autouse=True)
def agent_and_documents(live_server, put_agent):
    database = open_db(live_server.app.config["DATABASE"])
    try:
        document_store.import_documents(database, DOCUMENTS, replace=True)
    finally:
        database.close()
    put_agent(AGENT_ID, DOCUMENTS_AGENT)


def test_a_question_that_needs_two_documents(page):
    page.goto(f"/agents/{AGENT_ID}/run")
    start_run(page, DOCUMENTS_MESSAGE)

    calls = page.locator("table.calls tbody tr")
    expect(calls).to_have_count(4)
    expect(calls.nth(0)).to_contain_text("list_documents")
    expect(calls.nth(1)).to_contain_text("read_document")
    expect(calls.nth(1)).to_contain_text('"doc_id": "sale-returns"')
    expect(calls.nth(2)).to_contain_text("read_document")
    expect(calls.nth(2)).to_contain_text('"doc_id": "gift-cards"')
    for index in range(4):
        expect(calls.nth(index)).to_contain_text("Executed")
    expect(calls.nth(2)).to_contain_text("Gift cards are valid for two years.")

    expect(page.get_by_role("region", name="Answer", exact=True)).to_contain_text(DOCUMENTS_ANSWER)
    sources = page.get_by_role("region", name="Sources").get_by_role("listitem")
    expect(sources).to_have_text(["Refund policy refund-policy", "Sale returns sale-returns", "Gift cards gift-cards"])


def test_a_re_list_is_not_rejected(page):
    page.goto(f"/agents/{AGENT_ID}/run")
    start_run(page, DOCUMENTS_MESSAGE)

    relist = round_section(page, 4)
    expect(relist.get_by_role("heading")).to_contain_text("1 call executed")
    expect(relist.get_by_role("row").filter(has_text="list_documents")).to_contain_text("Executed")
    expect(page.locator(".status-rejected")).to_have_count(0)
    rejected = page.locator(".run-facts > div").filter(has=page.get_by_role("term").filter(has_text="Calls rejected"))
    expect(rejected.get_by_role("definition")).to_have_text("0")
