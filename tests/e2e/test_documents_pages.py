"""Documents as a person manages them: add, find it in the search, edit, delete."""

import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e


def test_add_search_edit_and_delete_a_document(page, suffix):
    title, document_id = f"Bicycle parking {suffix}", f"bicycle-parking-{suffix}"
    page.goto("/documents")
    page.get_by_role("link", name="New document").click()
    page.get_by_label("Title").fill(title)
    page.get_by_label("Body").fill("Racks for twelve bicycles stand behind the warehouse.")
    page.get_by_role("button", name="Add document").click()
    expect(page).to_have_url(re.compile(rf"/documents/{document_id}$"))
    expect(page.get_by_role("status")).to_contain_text(f'Added the document "{title}".')

    page.goto("/documents")
    page.get_by_label("Search").fill("warehouse racks")
    page.get_by_role("button", name="Search").click()
    results = page.get_by_role("region", name=re.compile("Best matches"))
    expect(results.get_by_role("link", name=title)).to_be_visible()

    page.get_by_role("link", name=f"Edit {title}").click()
    page.get_by_label("Body").fill("Racks for twenty scooters stand by the entrance.")
    page.get_by_role("button", name="Save document").click()
    expect(page.get_by_text("Racks for twenty scooters")).to_be_visible()

    page.goto("/documents?q=warehouse")
    expect(page.get_by_role("region", name=re.compile("Best matches"))).to_contain_text("No document matches.")

    page.goto(f"/documents/{document_id}")
    page.get_by_role("link", name="Delete").click()
    page.get_by_role("button", name="Delete document").click()
    expect(page).to_have_url(re.compile(r"/documents$"))
    expect(page.get_by_role("link", name=title)).to_have_count(0)


def test_a_document_without_a_title_is_refused_beside_the_field(page):
    page.goto("/documents/new")
    page.get_by_label("Body").fill("Text without a title.")
    page.get_by_role("button", name="Add document").click()
    expect(page.get_by_text("Title is required.")).to_be_visible()
    expect(page.get_by_label("Title")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Body")).to_have_value("Text without a title.")
