"""A tool server's hints on the agent form, in headless Chromium, CSRF on: adding a tool shows the settings its
annotations propose, nothing is applied until the person accepts them, and nothing is saved until Save. The app
runs on its own database here, so its tool server's tools stay off the other browser tests' forms."""

import re
import threading

import pytest
from playwright.sync_api import expect
from werkzeug.serving import make_server

from app import create_app
from tests.e2e.tool_settings import add_tool
from tests.mcp_support import live_mcp_server

pytestmark = pytest.mark.e2e

TOOL = "kinds__delete_record"


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    instance = tmp_path_factory.mktemp("hints_instance")
    app = create_app({"DATABASE": str(instance / "toolgate.db")}, instance_path=str(instance))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    with live_mcp_server() as mcp_server:
        response = app.test_client().put("/api/tool-servers/kinds", json={"label": "Kinds", "url": mcp_server.url})
        assert response.status_code == 201, response.get_json()
        server.app = app
        yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(timeout=5)


def test_proposals_appear_when_a_tool_is_enabled_and_apply_only_when_accepted_and_saved(page, app_url):
    page.goto(f"{app_url}/agents/new")
    page.get_by_label("Label", exact=True).fill("Record cleaner")
    tool = page.get_by_role("group", name=TOOL, exact=True)
    proposal = tool.get_by_text("Proposed from the server's hints: Require approval.")
    approval = tool.get_by_label("Require approval", exact=True)

    add_tool(page, TOOL)

    expect(tool.get_by_text("Hints from the server:")).to_contain_text("destructiveHint: true")
    expect(proposal).to_be_visible()
    expect(approval).not_to_be_checked()  # proposed, not applied

    tool.get_by_role("button", name=f"Accept proposed settings for {TOOL}").click()

    expect(page.get_by_role("status").filter(has_text="Filled in the settings proposed")).to_contain_text(
        f"{TOOL} by its server's hints: Require approval."
    )
    tool = page.get_by_role("group", name=TOOL, exact=True)
    expect(tool.get_by_label("Require approval", exact=True)).to_be_checked()
    expect(page.get_by_label("Label", exact=True)).to_have_value("Record cleaner")  # the rest of the form is kept
    assert page.request.get(f"{app_url}/api/agents/record_cleaner").status == 404  # nothing saved yet

    page.get_by_role("button", name="Create agent").click()

    expect(page).to_have_url(re.compile(r"/agents/record_cleaner$"))
    expect(page.get_by_text("Requires approval: a person decides on each call before it runs")).to_contain_text(
        "(from the server's hints)"
    )
