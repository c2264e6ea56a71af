"""Every response carries the security headers — pages, fragments, redirects, errors, JSON, static files — and
no template needs what the Content-Security-Policy forbids (inline scripts, styles or event handlers)."""

import pytest

from blueprints.security import SECURITY_HEADERS
from tests.bad_input_support import AGENT_ID, store_agent
from tests.html_reader import parse_html
from tests.run_scenarios import BUNDLES_MESSAGE
from tests.support import agent_form_data


def assert_secured(response):
    for name, value in SECURITY_HEADERS.items():
        assert response.headers.get(name) == value, (name, response.request.path)


def test_the_policy_allows_scripts_and_styles_from_this_site_only_and_no_framing():
    policy = dict(part.strip().split(" ", 1) for part in SECURITY_HEADERS["Content-Security-Policy"].split(";"))
    assert policy["script-src"] == "'self'" and policy["style-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'" and policy["default-src"] == "'self'"
    assert "unsafe" not in SECURITY_HEADERS["Content-Security-Policy"]
    assert SECURITY_HEADERS["X-Frame-Options"] == "DENY"
    assert SECURITY_HEADERS["X-Content-Type-Options"] == "nosniff"
    assert SECURITY_HEADERS["Referrer-Policy"] == "same-origin"


@pytest.mark.parametrize(
    "path",
    ["/agents", f"/agents/{AGENT_ID}/delete", "/agents/nobody", "/static/site.css", "/api/agents", "/api/runs/999"],
)
def test_pages_errors_static_files_and_json_carry_the_headers(client, path):
    store_agent(client)
    with client.get(path) as response:  # a static file stays open until its response is closed
        assert_secured(response)


def test_redirects_fragments_and_refusals_carry_the_headers(client):
    store_agent(client)
    assert_secured(client.post("/agents/new", data=agent_form_data({"label": "New", "id": "new_one"})))
    assert_secured(client.get("/agents/new/machine-name?label=Hi", headers={"HX-Request": "true"}))
    assert_secured(client.put(f"/api/agents/{AGENT_ID}", data="label=x"))  # 415
    assert_secured(client.get("/agents", headers={"Host": "evil.example"}))  # 400
    assert_secured(client.post("/api/agents/x/runs", json={"message": "x" * (5 * 1024 * 1024)}))  # 413


def inline_code(response):
    """What a strict Content-Security-Policy would block: inline <script> and <style>, style="…", on…= handlers,
    htmx's hx-on (it evaluates code), javascript: links."""
    found = []
    for element in parse_html(response.get_data(as_text=True)).elements():
        tag, attributes = element.tag, element.attrs
        if tag == "script" and not attributes.get("src"):
            found.append("inline <script>")
        if tag == "style":
            found.append("<style>")
        for name, value in attributes.items():
            if name == "style" or name.startswith("on") or name.startswith(("hx-on", "data-hx-on")):
                found.append(f"{tag} {name}=")
            if name in ("href", "src", "action") and (value or "").strip().lower().startswith("javascript:"):
                found.append(f"{tag} {name}=javascript:")
    return found


def test_no_page_or_fragment_holds_inline_code(client):
    store_agent(client)
    run = client.post(f"/api/agents/{AGENT_ID}/runs", json={"message": BUNDLES_MESSAGE}).get_json()
    second = client.post(f"/api/agents/{AGENT_ID}/runs", json={"message": BUNDLES_MESSAGE}).get_json()
    case_page = client.post(f"/runs/{run['id']}/case", data={"name": "Both listings"}).headers["Location"]
    assert case_page.startswith("/cases/")
    client.post("/documents/new", data={"title": "Menu", "body": "Soup."})
    htmx = {"HX-Request": "true"}
    responses = [
        client.get(path)
        for path in (
            "/agents",
            "/agents/new",
            f"/agents/{AGENT_ID}",
            f"/agents/{AGENT_ID}/edit",
            f"/agents/{AGENT_ID}/run",
            f"/agents/{AGENT_ID}/delete",
            "/runs",
            f"/runs/{run['id']}",
            f"/runs/{run['id']}/compare",
            f"/runs/{run['id']}/compare/{second['id']}",
            case_page,
            "/log",
            "/documents",
            "/documents/menu",
            "/providers",
            "/providers/new",
            "/tokens",
            "/agents/nobody",
        )
    ]
    responses.append(client.post(f"/agents/{AGENT_ID}/run", data={"message": BUNDLES_MESSAGE, "max_rounds": "10"}))
    responses.append(client.post(f"/agents/{AGENT_ID}/run", data={"message": BUNDLES_MESSAGE}, headers=htmx))
    responses.append(
        client.get("/agents/tool-settings/list_bundles/error-message?tools-list_bundles-restrict_multiple_calls=y")
    )
    for response in responses:
        assert response.status_code < 500
        assert inline_code(response) == [], response.request.path
