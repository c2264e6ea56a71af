"""The agent pages through Flask's test client: list, view, create, edit, delete, the htmx fragments."""

import re

import pytest

from engine.tools import default_registry
from store import agents as agent_store
from store import execute
from tests.html_reader import page_of
from tests.support import agent_form_data

RESTRICTED_TOOLS = {"list_bundles": {"restrict_multiple_calls": True, "multiple_call_error_message": "Error: once."}}


def test_list_is_the_home_page_and_explains_toolgate(client):
    for url in ("/", "/agents"):
        html = client.get(url).get_data(as_text=True)
        assert "Toolgate configures LLM agents" in html
        assert "No agents yet" in html


def test_list_shows_label_id_model_round_cap_and_marks_restricted_tools(client, actions):
    actions.create(
        label="Bundle lister",
        id="bundle_lister",
        model="gpt-test",
        max_rounds=7,
        tools={**RESTRICTED_TOOLS, "list_entity_types": {}},
    )
    html = client.get("/agents").get_data(as_text=True)
    assert "Bundle lister" in html and "<code>bundle_lister</code>" in html
    assert "gpt-test" in html and "<td>7</td>" in html
    restricted = re.search(r'<li class="tool-tag restricted">\s*<code>(\w+)</code>', html)
    assert restricted.group(1) == "list_bundles"
    assert '<li class="tool-tag">\n        <code>list_entity_types</code>' in html
    assert 'href="/agents/bundle_lister/edit"' in html and 'href="/agents/bundle_lister/delete"' in html


def test_new_form_lists_no_tool_and_offers_every_registry_tool_in_its_picker(client):
    response = client.get("/agents/new")
    html, page = response.get_data(as_text=True), page_of(response)
    assert 'data-testid="no-tools">No tools yet: the model answers without calling any.</p>' in html
    for tool in default_registry():
        assert f'<button type="submit" class="secondary small" name="add_tool" value="{tool.name}"' in html
        assert not page.has_field(f"tools-{tool.name}-enabled")
    assert "General tool settings" not in html
    assert "List the bundles (sub-types) of one entity type" in html
    assert f'Built-in <span class="muted">({len(default_registry().names())} tools)</span>' in html


def test_adding_a_tool_brings_the_form_back_with_it_enabled_and_its_settings_and_saves_nothing(client):
    data = agent_form_data({"label": "Adder", "id": "adder", "system_prompt": "Kept."})
    response = client.post("/agents/new", data={**data, "add_tool": "list_bundles"})

    assert response.status_code == 200
    html = response.get_data(as_text=True)
    page = page_of(response)
    assert "Added the tool &#34;list_bundles&#34;: set its settings below, then save the agent to keep it." in html
    assert page.checked("tools-list_bundles-enabled") and page.text("system_prompt") == "Kept."
    assert '<input autofocus checked id="tools-list_bundles-enabled"' in html
    assert not page.has_field("tools-list_entity_types-enabled")
    assert 'name="add_tool" value="list_bundles"' not in html and 'name="add_tool" value="list_entity_types"' in html
    assert html.count("General tool settings") == 1
    for label in (
        "Restrict to one call per response",
        "Multiple call error message",
        "Require usage",
        "Return directly",
        "Description override",
        "Max calls per run",
    ):
        assert f">{label}</label>" in html
    assert client.get("/api/agents/adder").status_code == 404


def test_a_tool_left_unticked_stays_on_the_form_until_it_is_saved(client, actions):
    actions.create(label="Keeper", id="keeper", tools={"list_bundles": {}})
    data = agent_form_data(actions.get("keeper"))
    del data["tools-list_bundles-enabled"]  # unticked, then another tool added
    page = page_of(client.post("/agents/keeper/edit", data={**data, "tool": "list_bundles", "add_tool": "get_layout"}))

    assert page.has_field("tools-list_bundles-enabled") and not page.checked("tools-list_bundles-enabled")
    assert page.checked("tools-get_layout-enabled")
    assert actions.get("keeper")["tools"] == {"list_bundles": actions.get("keeper")["tools"]["list_bundles"]}

    client.post("/agents/keeper/edit", data={**data, "tool": ["list_bundles", "get_layout"]})
    assert actions.get("keeper")["tools"] == {}  # saved with both unticked
    assert not page_of(client.get("/agents/keeper/edit")).has_field("tools-list_bundles-enabled")


@pytest.mark.parametrize("name", ["no_such_tool", ""])
def test_adding_a_tool_that_is_not_registered_is_refused(client, name):
    data = agent_form_data({"label": "Adder", "id": "adder"})
    assert client.post("/agents/new", data={**data, "add_tool": name}).status_code == 400


def test_create_redirects_to_the_agent_and_stores_every_field(client, actions):
    response = actions.create(
        label="Shop helper",
        id="shop_helper",
        description="Helps.",
        system_prompt="Be brief.\r\nAlways.",
        model="gpt-4o-mini",
        max_rounds=3,
        on_round_cap="message",
        max_rounds_message="Stopped.",
        parallel_tool_calls=False,
        tool_choice="list_bundles",
        temperature=0.2,
        top_p=0.9,
        seed=7,
        max_tokens=300,
        tools={
            "list_bundles": {
                "restrict_multiple_calls": True,
                "multiple_call_error_message": "Error: [tool_name]!",
                "require_usage": True,
                "max_calls_per_run": 4,
                "max_identical_calls": 0,
                "argument_rules": {},
                "argument_descriptions": {},
                "use_artifacts": False,
                "progress_message": "",
                "require_approval": False,
            },
            "read_document": {"return_directly": True, "description_override": "Read it."},
        },
        script=[{"content": "Hi"}],
        approval_timeout_seconds=45,
        approval_webhook="https://hooks.example.com/toolgate",
    )
    assert response.status_code == 303
    assert response.headers["Location"] == "/agents/shop_helper"
    agent = actions.get("shop_helper")
    assert agent == {
        "id": "shop_helper",
        "label": "Shop helper",
        "description": "Helps.",
        "system_prompt": "Be brief.\nAlways.",
        "provider": "scripted",
        "model": "gpt-4o-mini",
        "max_rounds": 3,
        "on_round_cap": "message",
        "max_rounds_message": "Stopped.",
        "parallel_tool_calls": False,
        "tool_choice": "list_bundles",
        "temperature": 0.2,
        "top_p": 0.9,
        "seed": 7,
        "max_tokens": 300,
        "tools": {
            "list_bundles": {
                "restrict_multiple_calls": True,
                "multiple_call_error_message": "Error: [tool_name]!",
                "require_usage": True,
                "return_directly": False,
                "description_override": "",
                "max_calls_per_run": 4,
                "max_identical_calls": 0,
                "argument_rules": {},
                "argument_descriptions": {},
                "use_artifacts": False,
                "progress_message": "",
                "require_approval": False,
            },
            "read_document": {
                "restrict_multiple_calls": False,
                "multiple_call_error_message": "",
                "require_usage": False,
                "return_directly": True,
                "description_override": "Read it.",
                "max_calls_per_run": 0,
                "max_identical_calls": 0,
                "argument_rules": {},
                "argument_descriptions": {},
                "use_artifacts": False,
                "progress_message": "",
                "require_approval": False,
            },
        },
        "client_tools": {},
        "script": [{"content": "Hi"}],
        "approval_timeout_seconds": 45,
        "approval_webhook": "https://hooks.example.com/toolgate",
        "revision": 1,
    }
    view = client.get("/agents/shop_helper").get_data(as_text=True)
    assert "Created the agent" in view and "Error: [tool_name]!" in view


def test_textarea_line_breaks_are_stored_as_newlines(actions):
    actions.create(
        label="Line breaks",
        id="line_breaks",
        description="One.\r\nTwo.",
        max_rounds_message="Stopped.\r\nSorry.",
        tools={
            "list_bundles": {
                "restrict_multiple_calls": True,
                "multiple_call_error_message": "Error: [tool_name] once.\r\nThen again.",
                "description_override": "Bundles.\r\nOf one type.",
            }
        },
    )
    agent = actions.get("line_breaks")
    settings = agent["tools"]["list_bundles"]
    assert (agent["description"], agent["max_rounds_message"]) == ("One.\nTwo.", "Stopped.\nSorry.")
    assert settings["multiple_call_error_message"] == "Error: [tool_name] once.\nThen again."
    assert settings["description_override"] == "Bundles.\nOf one type."


def test_the_id_is_derived_from_the_label_when_left_empty(actions):
    response = actions.create(label="My Shop -- Helper!", id="")
    assert response.headers["Location"] == "/agents/my_shop_helper"


def test_an_id_in_use_is_an_error_next_to_the_id(client, actions):
    actions.create(label="One", id="one")
    response = actions.create(label="Another", id="one")
    assert response.status_code == 400
    assert page_of(response).errors("id") == ['Machine name is already used by another agent ("one").']


@pytest.mark.parametrize(
    ("label", "typed_id", "derived_before", "expected_value"),
    [
        ("Hello World", "", "", "hello_world"),
        ("Hello World 2", "hello_world", "hello_world", "hello_world_2"),  # still following the label
        ("Hello World 2", "my_own", "hello_world", "my_own"),  # typed by the user: kept
        ("42 answers", "", "", "agent_42_answers"),
    ],
)
def test_machine_name_fragment_follows_the_label_until_the_user_types_one(
    client, label, typed_id, derived_before, expected_value
):
    response = client.get(
        "/agents/new/machine-name", query_string={"label": label, "id": typed_id, "id_derived": derived_before}
    )
    assert response.get_data(as_text=True).lstrip().startswith('<div id="machine-name-field">')
    assert page_of(response).value("id") == expected_value


# (form input, field id, expected message) — each field's errors come from engine.config.validate_agent, except
# the JSON syntax of the script, which only the form can see.
VALIDATION_CASES = [
    ({"label": ""}, "label", "Label is required."),
    ({"label": "x" * 201}, "label", "Label must be at most 200 characters (got 201)."),
    (
        {"id": "Bad Id"},
        "id",
        "Machine name must start with a lowercase letter and contain only lowercase letters, "
        "digits and underscores (at most 64 characters).",
    ),
    ({"description": "d" * 2001}, "description", "Description must be at most 2,000 characters (got 2,001)."),
    (
        {"system_prompt": "s" * 100_001},
        "system_prompt",
        "System prompt must be at most 100,000 characters (got 100,001).",
    ),
    ({"model": "m" * 201}, "model", "Model must be at most 200 characters (got 201)."),
    ({"provider": "nowhere"}, "provider", 'Provider no provider connection has the id "nowhere".'),
    ({"max_rounds": "101"}, "max_rounds", "Max rounds must be from 0 to 100 (got 101)."),
    ({"max_rounds": "-1"}, "max_rounds", "Max rounds must be from 0 to 100 (got -1)."),
    ({"max_rounds": "ten"}, "max_rounds", "Max rounds must be a whole number from 0 to 100."),
    ({"max_rounds": ""}, "max_rounds", "Max rounds must be a whole number from 0 to 100."),
    ({"on_round_cap": "explode"}, "on_round_cap", "At the round cap must be one of: final_answer, message."),
    (
        {"max_rounds_message": "m" * 2001},
        "max_rounds_message",
        "Round cap message must be at most 2,000 characters (got 2,001).",
    ),
    ({"parallel_tool_calls": "maybe"}, "parallel_tool_calls", "Parallel tool calls must be true, false or null."),
    (
        {"script": "[{"},
        "script",
        "Script is not valid JSON: Expecting property name enclosed in double quotes (line 1, column 3).",
    ),
    ({"script": '{"content": "hi"}'}, "script", "Script must be a list of responses."),
    ({"script": '[{"say": "hi"}]'}, "script", "Script response 1 has unknown key(s): say."),
    ({"script": '[{"tool_calls": [{"arguments": {}}]}]'}, "script", 'Script response 1, tool call 1 needs a "name".'),
    (
        {"tools-list_bundles-max_calls_per_run": "-1"},
        "tools-list_bundles-max_calls_per_run",
        "Max calls per run must be from 0 to 10000 (got -1).",
    ),
    (
        {"tools-list_bundles-max_calls_per_run": "lots"},
        "tools-list_bundles-max_calls_per_run",
        "Max calls per run must be a whole number from 0 to 10000.",
    ),
    (
        {
            "tools-list_bundles-restrict_multiple_calls": "y",
            "tools-list_bundles-multiple_call_error_message": "e" * 2001,
        },
        "tools-list_bundles-multiple_call_error_message",
        "Multiple call error message must be at most 2,000 characters (got 2,001).",
    ),
    (
        {"tools-list_bundles-description_override": "d" * 2001},
        "tools-list_bundles-description_override",
        "Description override must be at most 2,000 characters (got 2,001).",
    ),
]


@pytest.mark.parametrize(("changes", "field_id", "message"), VALIDATION_CASES)
def test_each_field_error_is_shown_next_to_its_field_and_nothing_is_stored(client, changes, field_id, message):
    data = agent_form_data({"label": "Valid", "id": "valid", "tools": {"list_bundles": {}}})
    data.update(changes)
    response = client.post("/agents/new", data=data)
    assert response.status_code == 400
    assert "Not saved." in response.get_data(as_text=True)
    assert page_of(response).errors(field_id) == [message]
    assert client.get("/api/agents/valid").status_code == 404


def test_invalid_input_is_kept_in_the_form(client):
    data = agent_form_data(
        {
            "label": "",
            "id": "kept",
            "system_prompt": "<b>my prompt</b>",
            "max_rounds": 500,
            "tools": {"list_bundles": {"restrict_multiple_calls": True, "multiple_call_error_message": "Error: mine"}},
        }
    )
    data["script"] = "[not json"
    page = page_of(client.post("/agents/new", data=data))
    assert page.value("id") == "kept"
    assert page.text("system_prompt") == "<b>my prompt</b>"
    assert page.value("max_rounds") == "500"
    assert page.text("script") == "[not json"
    assert page.checked("tools-list_bundles-enabled")
    assert page.checked("tools-list_bundles-restrict_multiple_calls")
    assert page.text("tools-list_bundles-multiple_call_error_message") == "Error: mine"
    assert not page.has_field("tools-list_documents-enabled")  # in the picker, not on the form


def test_edit_form_shows_the_stored_values(client, actions):
    actions.create(label="Editable", id="editable", tools=RESTRICTED_TOOLS, max_rounds=4)
    page = page_of(client.get("/agents/editable/edit"))
    assert page.value("label") == "Editable"
    assert page.value("max_rounds") == "4"
    assert page.checked("tools-list_bundles-enabled")
    assert page.checked("tools-list_bundles-restrict_multiple_calls")
    assert page.text("tools-list_bundles-multiple_call_error_message") == "Error: once."
    assert not page.has_field("tools-list_entity_types-enabled")  # in the picker, not on the form
    assert page.value("revision") == "1"
    assert not page.has_field("id")  # fixed after creation


def test_edit_saves_and_increments_the_revision(client, actions):
    actions.create(label="Editable", id="editable")
    response = actions.edit("editable", label="Edited", tools=RESTRICTED_TOOLS)
    assert response.status_code == 303 and response.headers["Location"] == "/agents/editable"
    agent = actions.get("editable")
    assert agent["label"] == "Edited" and agent["revision"] == 2
    assert agent["tools"]["list_bundles"]["multiple_call_error_message"] == "Error: once."


def test_saving_with_the_restriction_off_clears_the_message(client, actions):
    actions.create(label="Editable", id="editable", tools=RESTRICTED_TOOLS)
    data = agent_form_data(actions.get("editable"))
    del data["tools-list_bundles-restrict_multiple_calls"]  # unticked; the message is still posted (no JS)
    assert data["tools-list_bundles-multiple_call_error_message"] == "Error: once."
    assert client.post("/agents/editable/edit", data=data).status_code == 303
    assert actions.get("editable")["tools"]["list_bundles"] == {
        "restrict_multiple_calls": False,
        "multiple_call_error_message": "",
        "require_usage": False,
        "return_directly": False,
        "description_override": "",
        "max_calls_per_run": 0,
        "max_identical_calls": 0,
        "argument_rules": {},
        "argument_descriptions": {},
        "use_artifacts": False,
        "progress_message": "",
        "require_approval": False,
    }


def test_the_id_cannot_change_on_edit(client, actions):
    actions.create(label="Fixed", id="fixed")
    data = agent_form_data({**actions.get("fixed"), "id": "renamed"})
    assert client.post("/agents/fixed/edit", data=data).status_code == 303
    assert client.get("/api/agents/renamed").status_code == 404
    assert actions.get("fixed")["revision"] == 2


def test_saving_over_a_newer_revision_is_a_conflict_that_keeps_the_input_and_stores_nothing(client, actions):
    actions.create(label="Shared", id="shared")
    stale = agent_form_data({**actions.get("shared"), "label": "Mine"})
    actions.edit("shared", label="Theirs")  # someone else saves first: revision 2
    response = client.post("/agents/shared/edit", data=stale)
    html = " ".join(response.get_data(as_text=True).split())
    assert response.status_code == 409
    assert "Not saved: someone else saved this agent after you opened it." in html
    assert "It is now at revision 2; your changes were made to revision 1." in html
    assert page_of(response).value("label") == "Mine"
    assert actions.get("shared")["label"] == "Theirs"
    # Saving again, knowing, goes over the current revision.
    assert page_of(response).value("revision") == "2"
    assert client.post("/agents/shared/edit", data={**stale, "revision": "2"}).status_code == 303
    assert actions.get("shared")["label"] == "Mine"


def test_a_missing_revision_is_refused(client, actions):
    actions.create(label="Shared", id="shared")
    data = agent_form_data(actions.get("shared"))
    del data["revision"]
    response = client.post("/agents/shared/edit", data=data)
    assert response.status_code == 400
    assert "The form&#39;s revision is missing" in response.get_data(as_text=True)


def test_a_failed_save_leaves_the_previous_agent_intact(app, client, actions, monkeypatch):
    actions.create(label="Before", id="atomic", tools=RESTRICTED_TOOLS)
    app.testing = False  # answer with the 500 page instead of raising into the test

    def fail(db, agent):
        execute(db, "DELETE FROM agent_tools WHERE agent_id = :agent_id", {"agent_id": agent["id"]})
        raise RuntimeError("disk full")

    monkeypatch.setattr(agent_store, "_write_tools", fail)
    response = actions.edit("atomic", label="After")
    assert response.status_code == 500
    assert "Something went wrong" in response.get_data(as_text=True)
    monkeypatch.undo()
    agent = actions.get("atomic")
    assert agent["label"] == "Before" and agent["revision"] == 1 and "list_bundles" in agent["tools"]


@pytest.mark.parametrize("url", ["/agents/ghost", "/agents/ghost/edit", "/agents/ghost/delete"])
def test_unknown_agent_is_a_friendly_404(client, url):
    response = client.get(url)
    assert response.status_code == 404
    assert "There is nothing at this address." in response.get_data(as_text=True)


def test_post_to_an_unknown_agent_is_a_404(client):
    assert client.post("/agents/ghost/edit", data={"label": "x"}).status_code == 404
    assert client.post("/agents/ghost/delete").status_code == 404


def test_view_shows_fields_tools_settings_and_script(client, actions):
    actions.create(label="Viewed", id="viewed", tools=RESTRICTED_TOOLS, script=[{"content": "Done <now>"}])
    html = client.get("/agents/viewed").get_data(as_text=True)
    assert "<h1>Viewed</h1>" in html
    row = html.split('<tr class="restricted">')[1].split("</tr>")[0]
    assert "<code>list_bundles</code>" in row and "<td>yes</td>" in row
    assert "<q>Error: once.</q>" in row
    assert "Done &lt;now&gt;" in html
    assert 'href="/agents/viewed/edit"' in html


def test_delete_asks_for_confirmation_then_deletes_on_post(client, actions):
    actions.create(label="Doomed", id="doomed", tools=RESTRICTED_TOOLS)
    confirm = client.get("/agents/doomed/delete").get_data(as_text=True)
    assert "Delete <q>Doomed</q>?" in confirm and 'method="post"' in confirm
    assert client.get("/api/agents/doomed").status_code == 200  # GET deleted nothing
    response = client.post("/agents/doomed/delete")
    assert response.status_code == 303 and response.headers["Location"] == "/agents"
    assert client.get("/api/agents/doomed").status_code == 404
    assert "Deleted the agent" in client.get("/agents").get_data(as_text=True)


def test_error_message_fragment_has_the_textarea_while_the_restriction_is_ticked(client):
    html = client.get(
        "/agents/tool-settings/list_bundles/error-message",
        query_string={"tools-list_bundles-restrict_multiple_calls": "y"},
    ).get_data(as_text=True)
    assert html.startswith('<div class="error-message-field" id="error-message-list_bundles">')
    assert "<noscript>" not in html
    assert '<label for="tools-list_bundles-multiple_call_error_message">Multiple call error message</label>' in html
    assert "Use <code>[tool_name]</code> for the tool's name." in html
    assert "Leave empty for the default message: <q>Error: The tool &#34;[tool_name]&#34; may only" in html
    assert "Start your message with <q>Error:</q>" in html


def test_error_message_fragment_is_an_empty_wrapper_when_unticked(client):
    html = client.get("/agents/tool-settings/list_bundles/error-message").get_data(as_text=True)
    assert html.split() == ["<div", 'class="error-message-field"', 'id="error-message-list_bundles">', "</div>"]


def test_the_page_carries_the_message_field_for_browsers_without_javascript(client, actions):
    html = client.post("/agents/new", data={**agent_form_data({"label": "New"}), "add_tool": "list_bundles"}).get_data(
        as_text=True
    )
    wrapper = html.split('id="error-message-list_bundles">')[1].split("</noscript>")[0]
    assert wrapper.lstrip().startswith("<noscript>")
    assert 'name="tools-list_bundles-multiple_call_error_message"' in wrapper


def test_error_message_fragment_is_the_partial_the_edit_page_includes(client, actions):
    actions.create(label="Same", id="same", tools=RESTRICTED_TOOLS)
    page = client.get("/agents/same/edit").get_data(as_text=True)
    fragment = client.get(
        "/agents/tool-settings/list_bundles/error-message",
        query_string={
            "tools-list_bundles-restrict_multiple_calls": "y",
            "tools-list_bundles-multiple_call_error_message": "Error: once.",
        },
    ).get_data(as_text=True)
    assert fragment.strip() in page


def test_error_message_fragment_of_an_unknown_tool_is_a_404(client):
    assert client.get("/agents/tool-settings/no_such_tool/error-message").status_code == 404


def test_model_and_tool_text_is_escaped_everywhere(client, actions):
    actions.create(
        label="<script>alert(1)</script>",
        id="xss",
        description="<img src=x onerror=alert(1)>",
        tools={"list_bundles": {"restrict_multiple_calls": True, "multiple_call_error_message": "<b>Error</b>"}},
    )
    for url in ("/agents", "/agents/xss", "/agents/xss/edit", "/agents/xss/delete"):
        html = client.get(url).get_data(as_text=True)
        assert "<script>alert(1)</script>" not in html
        assert "<img src=x" not in html and "<b>Error</b>" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_an_oversized_request_is_a_friendly_413(client):
    response = client.post("/agents/new", data={"label": "big", "system_prompt": "x" * (5 * 1024 * 1024)})
    assert response.status_code == 413
    assert "larger than this server accepts" in response.get_data(as_text=True)
