"""The agent form's Client tools section, as a browser without JavaScript uses it: Add and Remove buttons post the
form and bring it back changed (nothing saved until Save), each client tool's settings are the shared tool settings
a tool the client runs can have, arguments are added by name; and the gate API applying them."""

import html as html_text
import re

from tests.html_reader import page_of
from tests.support import agent_form_data

PREFIX = "client_tools-place_components-"


def client_tool_data(name, **settings):
    """What a browser posts for one client tool: its hidden name and its settings, unticked boxes absent."""
    prefix = f"client_tools-{name}-"
    data = {"client_tool": name, prefix + "max_calls_per_run": "0", prefix + "max_identical_calls": "0"}
    for key, value in settings.items():
        if value is True:
            data[prefix + key] = "y"
        elif value is not False:
            data[prefix + key] = str(value)
    return data


def post_new(client, *parts, **fields):
    data = agent_form_data({"label": "Canvas", **fields})
    for part in parts:
        data.update(part)
    return client.post("/agents/new", data=data)


def test_the_new_agent_forms_picker_adds_client_tools_and_gives_the_proxy_address(client):
    html = client.get("/agents/new").get_data(as_text=True)
    assert "<legend>Client tools</legend>" not in html  # none on the form yet
    assert "<strong>Client tools</strong>: tools the client runs" in html
    assert 'name="new_client_tool"' in html and 'name="add_client_tool"' in html
    assert "/proxy/AGENT_ID/v1" in html


def test_add_brings_the_form_back_with_the_tool_and_saves_nothing_until_save(client):
    response = post_new(client, {"add_client_tool": "add", "new_client_tool": "place_components"}, system_prompt="Hi.")

    assert response.status_code == 200
    html = html_text.unescape(response.get_data(as_text=True))
    assert 'Added the client tool "place_components". Save the agent to keep it.' in html
    assert '<input type="hidden" name="client_tool" value="place_components">' in html
    page = page_of(response)
    assert page.has_field(PREFIX + "restrict_multiple_calls") and page.has_field(PREFIX + "max_identical_calls")
    assert not page.has_field(PREFIX + "return_directly") and not page.has_field(PREFIX + "use_artifacts")
    assert page.text("system_prompt") == "Hi." and page.value("new_client_tool") == ""
    assert client.get("/api/agents").json == {"agents": []}


def test_save_stores_the_client_tool_with_its_settings(client, actions):
    settings = {
        "restrict_multiple_calls": True,
        "multiple_call_error_message": "Error: one [tool_name] at a time.",
        "max_calls_per_run": "5",
        "description_override": "Place one component.",
    }
    response = post_new(client, client_tool_data("place_components", **settings))

    assert response.status_code == 303
    stored = actions.get("canvas")["client_tools"]["place_components"]
    assert stored["restrict_multiple_calls"] is True and stored["max_calls_per_run"] == 5
    assert stored["multiple_call_error_message"] == "Error: one [tool_name] at a time."
    view = client.get("/agents/canvas").get_data(as_text=True)
    assert "<h2>Client tools</h2>" in view and "Error: one [tool_name] at a time." in view
    assert "http://localhost/proxy/canvas/v1" in view
    listed = client.get("/agents").get_data(as_text=True)
    assert re.search(
        r'<li class="tool-tag client restricted">\s*<span class="mark"[^>]*>client</span> <code>place_components',
        listed,
    )


def test_a_client_tool_that_requires_approval_is_saved_from_the_form_with_the_agents_approval_settings(client, actions):
    response = post_new(
        client,
        client_tool_data("Bash", require_approval=True),
        approval_timeout_seconds=30,
        approval_webhook="http://127.0.0.1:9/hook",
    )

    assert response.status_code == 303
    stored = actions.get("canvas")
    assert stored["client_tools"]["Bash"]["require_approval"] is True
    assert (stored["approval_timeout_seconds"], stored["approval_webhook"]) == (30, "http://127.0.0.1:9/hook")
    edit = page_of(client.get("/agents/canvas/edit"))
    assert edit.checked("client_tools-Bash-require_approval")
    assert (
        edit.value("approval_timeout_seconds") == "30" and edit.value("approval_webhook") == "http://127.0.0.1:9/hook"
    )
    view = client.get("/agents/canvas").get_data(as_text=True)
    assert "<dt>Approval timeout</dt><dd>30 seconds</dd>" in view


def test_an_approval_timeout_out_of_range_is_refused_beside_its_field(client, actions):
    response = post_new(client, approval_timeout_seconds=0)

    assert response.status_code == 400
    assert "must be from 1 to 3600 (got 0)" in response.get_data(as_text=True)
    assert page_of(response).value("approval_timeout_seconds") == "0"
    assert client.get("/api/agents").json == {"agents": []}


def test_the_edit_form_shows_the_stored_client_tool_and_remove_takes_it_out_until_saved(client, actions):
    client.put(
        "/api/agents/canvas", json={"label": "Canvas", "client_tools": {"place_components": {"max_calls_per_run": 3}}}
    )
    edit = page_of(client.get("/agents/canvas/edit"))
    assert edit.value(PREFIX + "max_calls_per_run") == "3"

    data = {**agent_form_data(actions.get("canvas")), **client_tool_data("place_components", max_calls_per_run="3")}
    removed = client.post("/agents/canvas/edit", data={**data, "remove_client_tool": "place_components"})

    assert removed.status_code == 200
    assert 'Removed the client tool "place_components"' in html_text.unescape(removed.get_data(as_text=True))
    assert not page_of(removed).has_field(PREFIX + "max_calls_per_run")
    assert actions.get("canvas")["client_tools"] != {}
    saved = client.post("/agents/canvas/edit", data=agent_form_data(actions.get("canvas")))
    assert saved.status_code == 303 and actions.get("canvas")["client_tools"] == {}


def test_an_argument_added_by_name_takes_a_rule_that_is_saved(client, actions):
    tool = client_tool_data("place_components")
    added = post_new(client, tool, {"add_client_argument": "place_components", PREFIX + "new_argument": "region"})
    assert added.status_code == 200
    page = page_of(added)
    assert page.has_field(PREFIX + "arguments-region-action")
    assert '<input type="hidden" name="client_tools-place_components-argument" value="region">' in added.get_data(
        as_text=True
    )

    rule = {
        PREFIX + "argument": "region",
        PREFIX + "arguments-region-action": "force_value",
        PREFIX + "arguments-region-values": "footer",
        PREFIX + "arguments-region-hide": "y",
    }
    assert post_new(client, tool, rule).status_code == 303
    stored = actions.get("canvas")["client_tools"]["place_components"]
    assert stored["argument_rules"] == {"region": {"action": "force_value", "values": ["footer"], "hide": True}}
    assert page_of(client.get("/agents/canvas/edit")).text(PREFIX + "arguments-region-values") == "footer"


def error_beside(response, field_id):
    return page_of(response).errors(field_id)


def test_a_bad_name_to_add_is_refused_beside_the_field(client):
    cases = [
        ("", "Tool name is required"),
        ("place components", "Tool name must be 1 to 64 letters"),
    ]
    for name, message in cases:
        response = post_new(client, {"add_client_tool": "add", "new_client_tool": name})
        assert response.status_code == 400
        assert message in error_beside(response, "new_client_tool")[0]
    twice = post_new(client, client_tool_data("place"), {"add_client_tool": "add", "new_client_tool": "place"})
    assert "already a client tool" in error_beside(twice, "new_client_tool")[0]
    enabled = post_new(
        client, {"add_client_tool": "add", "new_client_tool": "list_bundles"}, tools={"list_bundles": {}}
    )
    assert "untick it there first" in error_beside(enabled, "new_client_tool")[0]


def test_a_bad_setting_is_shown_beside_the_client_tools_field_and_nothing_is_saved(client):
    response = post_new(client, client_tool_data("place_components", max_calls_per_run="-2"))
    assert response.status_code == 400
    assert error_beside(response, PREFIX + "max_calls_per_run") == [
        "Max calls per run must be from 0 to 10000 (got -2)."
    ]
    assert client.get("/api/agents").json == {"agents": []}


def test_a_client_tool_that_is_also_an_enabled_tool_is_refused_at_the_top(client):
    response = post_new(client, client_tool_data("list_bundles"), tools={"list_bundles": {}})
    assert response.status_code == 400
    assert "client_tools.list_bundles: " in response.get_data(as_text=True)


def test_the_htmx_reveals_of_a_client_tool_have_their_own_ids(client):
    ticked = client.get(
        f"/agents/client-tool-settings/place_components/error-message?{PREFIX}restrict_multiple_calls=y"
    )
    html = ticked.get_data(as_text=True)
    assert html.startswith('<div class="error-message-field" id="client-error-message-place_components">')
    assert f'name="{PREFIX}multiple_call_error_message"' in html
    rule = client.get(
        f"/agents/client-tool-settings/place_components/arguments/region/rule?{PREFIX}arguments-region-action=only_allow"
    ).get_data(as_text=True)
    assert (
        'id="client-argument-rule-place_components-region"' in rule
        and f'name="{PREFIX}arguments-region-values"' in rule
    )
    assert client.get("/agents/client-tool-settings/bad%20name/error-message").status_code == 404


def test_the_edit_form_wires_the_client_tools_reveals_to_their_fragments(client):
    client.put("/api/agents/canvas", json={"label": "Canvas", "client_tools": {"place_components": {}}})
    html = client.get("/agents/canvas/edit").get_data(as_text=True)
    box = re.search(rf'<input[^>]*name="{PREFIX}restrict_multiple_calls"[^>]*>', html).group(0)
    assert 'hx-get="/agents/client-tool-settings/place_components/error-message"' in box
    assert 'hx-target="#client-error-message-place_components"' in box


# --- The gate API ------------------------------------------------------------------------------------------------


def test_the_gate_api_applies_client_tools(client):
    client.put(
        "/api/agents/canvas",
        json={"label": "Canvas", "client_tools": {"place_components": {"restrict_multiple_calls": True}}},
    )
    calls = [
        {"id": "a", "type": "function", "function": {"name": "place_components", "arguments": '{"component": "hero"}'}},
        {"id": "b", "type": "function", "function": {"name": "place_components", "arguments": '{"component": "text"}'}},
    ]
    review = client.post("/api/agents/canvas/gate", json={"tool_calls": calls}).json
    assert review["execute"] == [] and [call["reason"] for call in review["calls"]] == ["restricted_repeat"] * 2
    assert [message["tool_call_id"] for message in review["tool_messages"]] == ["a", "b"]
    one = client.post("/api/agents/canvas/gate", json={"tool_calls": calls[:1]}).json
    assert one["execute"] == ["a"]
    log = html_text.unescape(client.get("/log").get_data(as_text=True))
    assert 'called the single-call tool(s) "place_components" multiple times' in log


CLIENT_ONLY = {
    "label": "Client canvas",
    "client_tools": {"place_components": {"restrict_multiple_calls": True}},
    "script": [{"content": "A page, from no tools at all."}],
}


def test_the_run_page_of_an_agent_whose_tools_all_run_in_its_client_says_so_and_where_to_point_a_client(client):
    assert client.put("/api/agents/client_only", json=CLIENT_ONLY).status_code == 201

    html = html_text.unescape(client.get("/agents/client_only/run").get_data(as_text=True))

    assert "This agent's tools run in its client" in html
    assert "a run from this page offers the model no tools" in html
    assert '<code data-testid="proxy-base-url">http://localhost/proxy/client_only/v1</code>' in html
    assert "TOOLGATE_URL=http://localhost .venv/bin/python examples/proxy_client.py" in html


def test_a_run_from_the_page_of_an_agent_with_only_client_tools_is_marked_as_offering_none(client):
    assert client.put("/api/agents/client_only", json=CLIENT_ONLY).status_code == 201
    run = client.post("/api/agents/client_only/runs", json={"message": "Build a page."}).get_json()

    html = client.get(f"/runs/{run['id']}").get_data(as_text=True)

    assert run["rounds"][0]["tools_offered"] is None
    assert "<strong>No tools offered.</strong> This agent" in html


def test_an_agent_with_tools_of_its_own_gets_neither_note(client):
    assert client.put("/api/agents/both", json={**CLIENT_ONLY, "tools": {"get_layout": {}}}).status_code == 201
    run = client.post("/api/agents/both/runs", json={"message": "Build a page."}).get_json()

    assert "tools run in its client" not in client.get("/agents/both/run").get_data(as_text=True)
    assert "No tools offered." not in client.get(f"/runs/{run['id']}").get_data(as_text=True)
