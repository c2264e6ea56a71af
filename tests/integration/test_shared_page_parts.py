"""What the pages share: one tool-settings group on the agent form and the run page, help texts from the fields,
one way to show a stored time, one set of words for parallel_tool_calls."""

import re

import pytest
from markupsafe import Markup

from blueprints import timestamp
from engine import texts
from engine.tools import default_registry
from store import runs as run_store
from tests.html_reader import form_fields
from tests.run_scenarios import BUNDLES_MESSAGE, bundles_agent

ERROR_MESSAGE_FRAGMENT = "/agents/tool-settings/{}/error-message"
RESTRICT = "tools-{}-restrict_multiple_calls"
MESSAGE = "tools-{}-multiple_call_error_message"


@pytest.fixture
def bundles(client):
    agent = bundles_agent()
    agent["tools"]["list_bundles"]["multiple_call_error_message"] = "Error: once."
    assert client.put("/api/agents/bundles", json=agent).status_code == 201


def html(client, url, query=None):
    response = client.get(url, query_string=query)
    assert response.status_code == 200
    return response.get_data(as_text=True)


@pytest.mark.parametrize("url", ["/agents/bundles/edit", "/agents/bundles/run"])
def test_every_tool_has_the_same_settings_group_on_the_agent_form_and_the_run_page(client, bundles, url):
    """The run page offers every tool for one run; the agent form lists the agent's (the others are in its
    picker)."""
    page = html(client, url)
    names = list(bundles_agent()["tools"]) if url.endswith("/edit") else default_registry().names()
    for name in names:
        assert f'<legend id="tool-{name}-name">{name}</legend>' in page
        assert f'<p class="tool-description" id="tool-{name}-description" title="' in page
        assert f'hx-get="{ERROR_MESSAGE_FRAGMENT.format(name)}"' in page
        assert f'id="error-message-{name}"' in page
    assert page.count("General tool settings") == len(names)


def test_the_run_page_reveals_the_custom_message_with_the_agent_forms_fragment(client, bundles):
    page = html(client, "/agents/bundles/run")
    query = {RESTRICT.format("list_bundles"): "y", MESSAGE.format("list_bundles"): "Error: once."}
    restricted = html(client, ERROR_MESSAGE_FRAGMENT.format("list_bundles"), query)
    assert restricted.strip() in page
    unrestricted = page.split('id="error-message-list_entity_types">')[1].split("</div>")[0]
    assert unrestricted.lstrip().startswith("<noscript>")  # without JavaScript the field is there all the same


def test_a_restriction_unticked_for_a_run_is_the_only_override(client, bundles, database):
    fields = form_fields(html(client, "/agents/bundles/run"))
    del fields[RESTRICT.format("list_bundles")]
    del fields[MESSAGE.format("list_bundles")]  # htmx takes the message field away with the tick
    response = client.post("/agents/bundles/run", data={**fields, "message": BUNDLES_MESSAGE})
    assert response.status_code == 200
    overrides = run_store.get_run(database, 1)["overrides"]
    assert overrides == {"tools": {"list_bundles": {"restrict_multiple_calls": False}}}


@pytest.mark.parametrize(
    "url", ["/agents/new", "/agents/bundles/edit", "/agents/bundles/run", "/providers/new", "/documents/new"]
)
def test_every_help_text_is_wired_to_its_field(client, bundles, url):
    page = html(client, url)
    described = re.findall(r'aria-describedby="([^"]+)"', page)
    assert described
    for ids in described:
        for element_id in ids.split():
            assert f'id="{element_id}"' in page


@pytest.mark.parametrize(
    ("url", "field_id", "help"),
    [
        ("/agents/new", "max_rounds", "Tool rounds allowed, 0 to 100. 0 turns the tools off: one request, no tools."),
        ("/agents/new", "id", "Lowercase letters, digits and underscores, starting with a letter."),
        ("/agents/bundles/run", "max_rounds", "Tool rounds allowed; 0 turns the tools off (one request, no tools)."),
        ("/agents/bundles/run", "message", "What the user says to the agent."),
        (
            "/agents/bundles/run",
            "tools-list_bundles-max_calls_per_run",
            "Calls past this number in one run are rejected.",
        ),
        ("/providers/new", "api_key_env", "The name of the environment variable that holds the key"),
        ("/documents/new", "id", "Lowercase letters, digits, hyphens and underscores."),
    ],
)
def test_a_fields_help_text_comes_from_its_description(client, bundles, url, field_id, help):
    page = html(client, url)
    field = re.search(rf'<(?:input|textarea|select)\b[^>]*\bid="{field_id}"[^>]*>', page).group(0)
    assert f'aria-describedby="{field_id}-help"' in field
    assert f'<p class="help" id="{field_id}-help">{help}' in page


@pytest.mark.parametrize("url", ["/agents/bundles/edit", "/agents/bundles/run"])
def test_the_custom_message_help_says_what_spec_5_says(client, bundles, url):
    default = str(Markup.escape(texts.RESTRICTED_REPEAT))
    assert (
        "Use <code>[tool_name]</code> for the tool's name. Leave empty for the default message: "
        f"<q>{default}</q> Start your message with <q>Error:</q> — a retrying model recovers only if the message "
        "reads as an error."
    ) in html(client, url)


@pytest.mark.parametrize(
    ("parallel_tool_calls", "selected", "shown"),
    [(None, "", "provider default"), (True, "true", "true"), (False, "false", "false")],
)
def test_parallel_tool_calls_reads_the_same_on_the_form_and_the_agents_page(
    client, parallel_tool_calls, selected, shown
):
    agent = {"label": "Parallel", "parallel_tool_calls": parallel_tool_calls}
    assert client.put("/api/agents/parallel", json=agent).status_code == 201
    assert form_fields(html(client, "/agents/parallel/edit"), "agent-form")["parallel_tool_calls"] == selected
    assert f"<dt>Parallel tool calls</dt><dd>{shown}</dd>" in html(client, "/agents/parallel")


def test_the_parallel_tool_calls_select_offers_the_three_values(client):
    select = html(client, "/agents/new").split('id="parallel_tool_calls"')[1].split("</select>")[0]
    options = re.findall(r'<option (?:selected )?value="([^"]*)"[^>]*>([^<]*)</option>', select)
    assert options == [("", "Provider default"), ("true", "true"), ("false", "false")]


@pytest.mark.parametrize(
    ("zone", "expected"),
    [
        (True, '<time datetime="2026-01-02T03:04:05+00:00">2026-01-02 03:04:05 UTC</time>'),
        (False, '<time datetime="2026-01-02T03:04:05+00:00">2026-01-02 03:04:05</time>'),
    ],
)
def test_a_stored_time_reads_as_a_time_element(zone, expected):
    assert timestamp("2026-01-02T03:04:05+00:00", zone=zone) == expected


@pytest.mark.parametrize("value", [None, ""])
def test_no_stored_time_reads_as_nothing(value):
    assert timestamp(value) == ""


def test_a_stored_time_is_escaped():
    assert timestamp('"><b>') == '<time datetime="&#34;&gt;&lt;b&gt;">&#34;&gt;&lt;b&gt;</time>'


def test_the_documents_pages_show_the_stored_time(client):
    client.post("/documents/new", data={"title": "FAQ", "body": "Answers."})
    listed = re.search(r'<time datetime="([^"]+)">([^<]+)</time>', html(client, "/documents"))
    shown = re.search(r'updated <time datetime="([^"]+)">([^<]+)</time>', html(client, "/documents/faq"))
    assert listed.group(1) == shown.group(1)
    assert shown.group(2) == listed.group(2) + " UTC"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", listed.group(2))


def test_the_run_pages_show_the_stored_time(client, bundles, database):
    fields = form_fields(html(client, "/agents/bundles/run"))
    client.post("/agents/bundles/run", data={**fields, "message": BUNDLES_MESSAGE})
    created_at = run_store.get_run(database, 1)["created_at"]
    text = created_at.replace("T", " ").removesuffix("+00:00")
    element = '<time datetime="{}">{}</time>'
    assert element.format(created_at, text + " UTC") in html(client, "/runs/1")
    assert element.format(created_at, text) in html(client, "/runs")
    assert element.format(created_at, text) in html(client, "/log")  # the restriction's log entry, written with it
