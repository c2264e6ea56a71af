"""The unlimited-tools story on the run page: a question that needs more than the retrieved document. The model
lists the documents, reads two, re-lists (allowed: there is no budget) and answers; the sources list the
retrieved and read documents once each."""

import pytest
from playwright.sync_api import expect

from store import documents as document_store
from tests.database import Database
from tests.e2e.run_page import fact, round_section, start_run
from tests.run_scenarios import DOCUMENTS, DOCUMENTS_AGENT, DOCUMENTS_ANSWER, DOCUMENTS_MESSAGE

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module", autouse=True)
def documents(live_server):
    database = Database(live_server.app.config["DATABASE_URL"])
    try:
        document_store.import_documents(database, DOCUMENTS, replace=True)
    finally:
        database.close()


@pytest.fixture
def agent_id(new_agent):
    return new_agent("e2e_documents", DOCUMENTS_AGENT)


def test_a_question_that_needs_two_documents(page, agent_id):
    page.goto(f"/agents/{agent_id}/run")
    start_run(page, DOCUMENTS_MESSAGE)

    calls = page.get_by_test_id("call")
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


def test_a_re_list_is_not_rejected(page, agent_id):
    page.goto(f"/agents/{agent_id}/run")
    start_run(page, DOCUMENTS_MESSAGE)

    relist = round_section(page, 4)
    expect(relist.get_by_role("heading")).to_contain_text("1 call executed")
    expect(relist.get_by_role("row").filter(has_text="list_documents")).to_contain_text("Executed")
    expect(page.get_by_test_id("call-status").filter(has_text="Rejected")).to_have_count(0)
    expect(fact(page, "Calls rejected")).to_have_text("0")
