"""Agents calling an MCP server's tools through Toolgate, on the scripted model, against a real MCP server on
127.0.0.1: the gate applies the agent's settings and the server's input schema, an executed call is a tools/call,
and whatever the server does (an error, a timeout, stopping) is that call's error while the run goes on."""

import re

import pytest

from tests.html_reader import Page, form_fields
from tests.mcp_support import build_test_server, hints_as_strings, live_mcp_server
from tests.support import agent_form_data

SLOW_TIMEOUT = 1.0


@pytest.fixture(scope="module")
def mcp_server():
    with live_mcp_server() as server:
        yield server


@pytest.fixture
def kinds(client, mcp_server):
    response = client.put("/api/tool-servers/kinds", json={"label": "Kinds", "url": mcp_server.url, "timeout": 10})
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def call(name, **arguments):
    return {"name": f"kinds__{name}", "arguments": arguments}


def run(client, tools, script, message="Go"):
    response = client.put("/api/agents/mcp_agent", json={"label": "MCP agent", "tools": tools, "script": script})
    assert response.status_code in (200, 201), response.get_json()
    response = client.post("/api/agents/mcp_agent/runs", json={"message": message})
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def calls_of(run_, number):
    return [
        (item["name"], item["status"], item["reason"], item["message"] or item["output"])
        for item in run_["rounds"][number - 1]["calls"]
    ]


def assert_one_tool_message_per_call(run_):
    call_ids = [item["id"] for round_ in run_["rounds"] for item in round_["calls"]]
    answered = [message["tool_call_id"] for message in run_["messages"] if message["role"] == "tool"]
    assert answered == call_ids


def test_free_tools_of_every_kind_execute_as_tools_calls(client, kinds):
    tools = {f"kinds__{name}": {} for name in ("echo", "weather", "parts", "picture")}
    script = [
        {
            "tool_calls": [
                call("echo", text="héllo"),
                call("weather", city="Oslo"),
                call("parts", count=2),
                call("picture"),
                call("echo", text="again"),
            ]
        },
        {"content": "Done."},
    ]

    result = run(client, tools, script)

    assert result["stop_reason"] == "answered" and result["answer"] == "Done."
    assert calls_of(result, 1) == [
        ("kinds__echo", "executed", None, "héllo"),
        ("kinds__weather", "executed", None, '{\n  "city": "Oslo",\n  "degrees": 21.5\n}'),
        ("kinds__parts", "executed", None, "part 1\npart 2"),
        ("kinds__picture", "executed", None, "[image]\nA dot."),
        ("kinds__echo", "executed", None, "again"),
    ]
    assert_one_tool_message_per_call(result)


def test_a_restricted_tool_called_twice_runs_neither_call_and_the_retry_runs(client, kinds):
    tools = {"kinds__add_record": {"restrict_multiple_calls": True}, "kinds__echo": {}}
    script = [
        {"tool_calls": [call("add_record", text="a"), call("add_record", text="b"), call("echo", text="x")]},
        {"tool_calls": [call("add_record", text="a")]},
        {"content": "Added."},
    ]

    result = run(client, tools, script)

    assert [status for _name, status, _reason, _text in calls_of(result, 1)] == ["rejected"] * 3
    assert [reason for _name, _status, reason, _text in calls_of(result, 1)] == [
        "restricted_repeat",
        "restricted_repeat",
        "collateral",
    ]
    assert calls_of(result, 2) == [("kinds__add_record", "executed", None, "added")]
    assert result["stop_reason"] == "answered"
    assert_one_tool_message_per_call(result)


def test_the_gate_checks_arguments_against_the_servers_input_schema(client, kinds):
    script = [{"tool_calls": [call("echo"), call("echo", text=3)]}, {"content": "."}]

    result = run(client, {"kinds__echo": {}}, script)

    (first, second) = calls_of(result, 1)
    assert first[1:3] == ("rejected", "invalid_arguments") and "text" in first[3]
    assert second[1:3] == ("rejected", "invalid_arguments") and "3 is not of type 'string'" in second[3]


def test_an_is_error_result_is_that_calls_error_and_the_run_goes_on(client, kinds):
    script = [{"tool_calls": [call("fail", reason="testing"), call("echo", text="still")]}, {"content": "Recovered."}]

    result = run(client, {"kinds__fail": {}, "kinds__echo": {}}, script)

    assert calls_of(result, 1) == [
        ("kinds__fail", "error", "tool_error", "Error: Error executing tool fail: Failed on purpose: testing"),
        ("kinds__echo", "executed", None, "still"),
    ]
    assert result["stop_reason"] == "answered" and result["answer"] == "Recovered."
    assert_one_tool_message_per_call(result)


def test_a_call_past_the_servers_timeout_is_that_calls_error_told_in_words(client, mcp_server):
    client.put("/api/tool-servers/kinds", json={"label": "K", "url": mcp_server.url, "timeout": SLOW_TIMEOUT})
    script = [{"tool_calls": [call("slow", seconds=2.5), call("echo", text="quick")]}, {"content": "Finished."}]

    result = run(client, {"kinds__slow": {}, "kinds__echo": {}}, script)

    assert calls_of(result, 1)[0] == (
        "kinds__slow",
        "error",
        "tool_error",
        f'Error: the tool server "kinds" failed: {mcp_server.url} did not answer within {SLOW_TIMEOUT:g} seconds.',
    )
    assert calls_of(result, 1)[1][1] == "executed"
    assert result["stop_reason"] == "answered"


def test_a_stopped_server_makes_each_call_an_error_and_the_run_finishes(client):
    with live_mcp_server() as server:
        client.put("/api/tool-servers/kinds", json={"label": "K", "url": server.url, "timeout": 5})
    script = [{"tool_calls": [call("echo", text="a"), call("weather", city="Oslo")]}, {"content": "It is down."}]

    result = run(client, {"kinds__echo": {}, "kinds__weather": {}}, script)

    assert [(name, status) for name, status, _reason, _text in calls_of(result, 1)] == [
        ("kinds__echo", "error"),
        ("kinds__weather", "error"),
    ]
    assert calls_of(result, 1)[0][3].startswith(
        f'Error: the tool server "kinds" failed: {server.url} cannot be reached'
    )
    assert result["stop_reason"] == "answered" and result["answer"] == "It is down."
    assert_one_tool_message_per_call(result)


def test_a_tool_the_server_no_longer_lists_is_unknown_at_the_gate_and_the_agent_page_says_so(client, kinds):
    smaller = build_test_server()
    smaller.remove_tool("weather")
    with live_mcp_server(smaller) as server:
        replaced = client.put("/api/tool-servers/kinds", json={"label": "K", "url": server.url, "timeout": 5})
        assert replaced.status_code == 200
        assert replaced.get_json()["vanished"] == ["kinds__weather"]
        client.put("/api/agents/mcp_agent", json={"label": "MCP agent", "tools": {"kinds__weather": {}}})
        script = [{"tool_calls": [call("weather", city="Oslo"), call("echo", text="x")]}, {"content": "."}]
        result = run(client, {"kinds__weather": {}, "kinds__echo": {}}, script)
        offered = result["rounds"][0]["tools_offered"]

    assert offered == ["kinds__echo"]
    assert calls_of(result, 1) == [
        ("kinds__weather", "rejected", "unknown_tool", "Unknown tool."),
        ("kinds__echo", "executed", None, "x"),
    ]
    page = client.get("/agents/mcp_agent").get_data(as_text=True)
    assert "kinds__weather" in page and "No longer listed by its tool server" in page


def squashed(response):
    """The page's text with every run of white space made one space."""
    return " ".join(response.get_data(as_text=True).split())


def checkbox_is_ticked(page, name):
    tag = re.search(rf'<input[^>]*name="{re.escape(name)}"[^>]*>', page).group(0)
    return " checked" in tag


KINDS_TOOLS = ["echo", "weather", "parts", "picture", "fail", "slow", "delete_record", "add_record"]


def test_the_agent_forms_picker_offers_a_servers_tools_in_their_own_group(client, kinds):
    page = squashed(client.get("/agents/new"))

    assert 'Tool server Kinds <code>kinds</code> <span class="muted">(8 tools)</span>' in page
    for name in KINDS_TOOLS:
        assert f'name="add_tool" value="kinds__{name}"' in page
    assert "Tools of the tool server Kinds" not in page  # none is on the form


def test_the_agent_form_groups_a_servers_tools_with_their_hints_and_proposals(client, kinds):
    on_form = {"tool": [f"kinds__{name}" for name in KINDS_TOOLS], "add_tool": "kinds__echo"}
    page = squashed(client.post("/agents/new", data={**agent_form_data({"label": "Kinds"}), **on_form}))

    assert "Tools of the tool server Kinds" in page
    assert "Hints from the server: <code>readOnlyHint: true</code>" in page
    assert "The server's hints say read-only: nothing is proposed." in page  # echo
    # delete_record's description claims it is safe and read-only: only the hints count.
    assert "Proposed from the server's hints: <strong>Require approval</strong>." in page
    assert "Proposed from the server's hints: <strong>Max identical calls 1</strong>." in page  # add_record
    assert "Proposed from the server's hints: <strong>Require approval, Max identical calls 1</strong>." in page
    assert page.count('name="accept_hints"') == 7  # every tool but the read-only echo


def test_accepting_proposals_fills_the_form_saves_nothing_and_the_saved_settings_are_marked(client, kinds):
    form = agent_form_data({"label": "Cleaner", "id": "cleaner", "tools": {"kinds__delete_record": {}}})
    approval = "tools-kinds__delete_record-require_approval"

    added = squashed(client.post("/agents/new", data={**form, "add_tool": "kinds__delete_record"}))
    accepted = client.post("/agents/new", data={**form, "accept_hints": "kinds__delete_record"})

    assert not checkbox_is_ticked(added, approval)
    assert accepted.status_code == 200
    page = squashed(accepted)
    assert (
        "Filled in the settings proposed for kinds__delete_record by its server&#39;s hints: Require approval." in page
    )
    assert checkbox_is_ticked(page, approval)
    assert '<input type="hidden" name="from_hint" value="kinds__delete_record:require_approval">' in page
    assert client.get("/api/agents/cleaner").status_code == 404  # nothing saved

    saved = client.post(
        "/agents/new", data={**form, approval: "y", "from_hint": "kinds__delete_record:require_approval"}
    )

    assert saved.status_code == 303
    assert client.get("/api/agents/cleaner").get_json()["tools"]["kinds__delete_record"]["require_approval"] is True
    view = squashed(client.get("/agents/cleaner"))
    assert 'before it runs <span class="from-hint">(from the server\'s hints)</span>' in view


def test_a_proposed_setting_changed_before_save_is_not_marked(client, kinds):
    form = agent_form_data(
        {"label": "Adder", "id": "adder", "tools": {"kinds__add_record": {"max_identical_calls": 3}}}
    )
    form["from_hint"] = "kinds__add_record:max_identical_calls"

    assert client.post("/agents/new", data=form).status_code == 303

    assert client.get("/api/agents/adder").get_json()["tools"]["kinds__add_record"]["max_identical_calls"] == 3
    assert "from the server" not in squashed(client.get("/agents/adder"))


def test_the_run_page_names_the_server_each_call_went_to(client, kinds):
    script = [{"tool_calls": [call("echo", text="hi"), call("fail", reason="not enabled")]}, {"content": "Done."}]
    result = run(client, {"kinds__echo": {}}, script)

    page = squashed(client.get(f"/runs/{result['id']}"))

    link = '<a href="/tool-servers/kinds"><code>kinds</code></a>'
    assert f'data-testid="call-server">a <code>tools/call</code> to the tool server {link}</div>' in page
    assert f'data-testid="call-server">a tool of the tool server {link}</div>' in page  # rejected: nothing sent


def test_a_vanished_tool_is_on_the_form_only_of_an_agent_that_still_enables_it(client, kinds):
    client.put("/api/agents/keeper", json={"label": "Keeper", "tools": {"kinds__weather": {}}})
    smaller = build_test_server()
    smaller.remove_tool("weather")
    with live_mcp_server(smaller) as server:
        client.put("/api/tool-servers/kinds", json={"label": "K", "url": server.url, "timeout": 5})

    assert 'name="tools-kinds__weather-enabled"' not in client.get("/agents/new").get_data(as_text=True)
    kept = squashed(client.get("/agents/keeper/edit"))
    assert 'name="tools-kinds__weather-enabled"' in kept and "No longer listed by its tool server" in kept


def test_accepting_max_identical_calls_fills_in_1_and_the_form_as_shown_saves_it(client, kinds):
    form = agent_form_data({"label": "Adder", "id": "adder", "tools": {"kinds__add_record": {}}})

    accepted = client.post("/agents/new", data={**form, "accept_hints": "kinds__add_record"})

    assert accepted.status_code == 200
    page = accepted.get_data(as_text=True)
    notice = "Filled in the settings proposed for kinds__add_record by its server&#39;s hints: Max identical calls 1."
    assert notice in squashed(accepted)
    assert Page(page).value("tools-kinds__add_record-max_identical_calls") == "1"
    assert "at most 1 identical calls" in squashed(accepted)  # the folded group's summary
    saved = client.post("/agents/new", data=form_fields(page, "agent-form"))

    assert saved.status_code == 303
    assert client.get("/api/agents/adder").get_json()["tools"]["kinds__add_record"]["max_identical_calls"] == 1
    assert "(from the server's hints)" in client.get("/agents/adder").get_data(as_text=True)


def test_a_server_sending_its_hints_as_strings_gets_mcps_defaults_and_their_proposals(client):
    with live_mcp_server(wrap=hints_as_strings) as server:
        added = client.put("/api/tool-servers/kinds", json={"label": "Kinds", "url": server.url, "timeout": 10})
        assert added.status_code == 201, added.get_json()
        on_form = {"tool": [f"kinds__{name}" for name in KINDS_TOOLS], "add_tool": "kinds__echo"}

        page = squashed(client.post("/agents/new", data={**agent_form_data({"label": "Kinds"}), **on_form}))

    assert "readOnlyHint" not in page  # "true" as a string is no hint: MCP's default, not read-only
    assert "The server's hints say read-only" not in page
    assert (
        page.count("Proposed from the server's hints: <strong>Require approval, Max identical calls 1</strong>.") == 8
    )
