"""The run page (plain POST and htmx), the permanent page of a run, run again, and the run history."""

import html as html_text
import json
import re

import pytest

from engine import texts
from store import runs as run_store
from tests.html_reader import form_fields, html_of, parse_html
from tests.run_panel import read_run_panel
from tests.run_scenarios import (
    BUNDLES_ANSWER,
    BUNDLES_MESSAGE,
    CANVAS_AGENT,
    CANVAS_MESSAGE,
    bundles_agent,
    mixed_script,
)

HTMX = {"HX-Request": "true"}
MISSING_KEY = (
    'The environment variable "OPENAI_API_KEY" that holds the API key is not set (leave the variable\'s name empty '
    "on the provider connection if the server takes no key)."
)


@pytest.fixture
def bundles(client):
    assert client.put("/api/agents/bundles", json=bundles_agent()).status_code == 201


def run_form(client, agent_id="bundles", query=""):
    """The run page's form as a browser would post it untouched (prefilled from the agent)."""
    response = client.get(f"/agents/{agent_id}/run{query}")
    assert response.status_code == 200
    return form_fields(response.get_data(as_text=True))


def post_run(client, agent_id="bundles", message=BUNDLES_MESSAGE, headers=None, **changes):
    fields = {**run_form(client, agent_id), "message": message, **changes}
    fields = {name: value for name, value in fields.items() if value is not None}  # None: untick a box
    return client.post(f"/agents/{agent_id}/run", data=fields, headers=headers or {})


def panel_markup(html):
    """The run's markup below its heading, to compare two renderings whole: the one partial renders it everywhere
    (the run's own page heads it with its h1, the run page with an h2)."""
    match = re.search(r'<article [^>]*data-testid="run".*?(<header .*?</article>)', html, re.S)
    assert match, "no run on the page"
    return match.group(1)


def panel_of(response):
    return read_run_panel(response.get_data(as_text=True))


def all_calls(panel):
    return [call for round_ in panel.rounds for call in round_.calls]


def test_run_page_is_prefilled_from_the_agent(client, bundles):
    fields = run_form(client)
    assert fields["message"] == ""
    assert fields["max_rounds"] == "10"
    assert fields["on_round_cap"] == "final_answer"
    assert fields["tools-list_bundles-enabled"] == "y"
    assert fields["tools-list_bundles-restrict_multiple_calls"] == "y"
    assert "tools-list_entity_types-restrict_multiple_calls" not in fields
    assert "tools-place_component-enabled" not in fields  # offered, not enabled
    assert json.loads(fields["script"]) == bundles_agent()["script"]


def test_run_page_of_an_unknown_agent_is_a_404(client):
    assert client.get("/agents/nobody/run").status_code == 404
    assert client.post("/agents/nobody/run", data={"message": "hi"}).status_code == 404


def test_plain_post_renders_the_full_page_with_the_run(client, bundles, database):
    response = post_run(client)
    assert response.status_code == 200
    html = html_of(response)
    assert "<html" in html and 'id="run-form"' in html
    panel = read_run_panel(html)
    assert panel.answer == BUNDLES_ANSWER
    assert (panel.rounds[0].verdict, panel.rounds[0].verdict_mark) == (
        "All 2 calls rejected — nothing executed",
        "rejected",
    )
    assert [(call.status, call.status_mark, call.reason) for call in all_calls(panel)] == [
        ("Rejected", "rejected", "Restricted tool called more than once"),
        ("Rejected", "rejected", "Restricted tool called more than once"),
        ("Executed", "executed", None),
        ("Executed", "executed", None),
    ]
    assert database["runs"].count == 1
    assert run_store.get_run(database, 1)["overrides"] == {}


def test_htmx_post_returns_only_the_run_panel(client, bundles):
    response = post_run(client, headers=HTMX)
    html = html_of(response)
    assert response.status_code == 200
    assert "<html" not in html and "run-form" not in html
    assert html.strip().startswith("<article")


def test_run_page_permalink_and_fragment_render_the_run_identically(client, bundles):
    full_page = panel_markup(html_of(post_run(client)))
    fragment = panel_markup(html_of(post_run(client, headers=HTMX)))
    first, second = panel_markup(html_of(client.get("/runs/1"))), panel_markup(html_of(client.get("/runs/2")))
    assert full_page == first
    assert fragment == second


def test_the_runs_own_page_names_the_run_once(client, bundles, database):
    post_run(client)
    page = parse_html(html_of(client.get("/runs/1"), 200))
    headings = [element for element in page.elements() if element.tag in ("h1", "h2", "h3")]
    created_at = run_store.get_run(database, 1)["created_at"].replace("T", " ").replace("+00:00", " UTC")
    assert [heading.text for heading in headings if "Run #1" in heading.text] == [
        f"Run #1 of {bundles_agent()['label']} (bundles) · {created_at}"
    ]
    run = next(element for element in page.elements() if element.attrs.get("data-testid") == "run")
    assert page_heading_of(page, run) == headings[0]


def page_heading_of(page, element):
    """The element that names `element` (its aria-labelledby)."""
    return next(found for found in page.elements() if found.attrs.get("id") == element.attrs["aria-labelledby"])


def test_stop_reason_and_counts_in_words(client, bundles):
    panel = panel_of(post_run(client))
    assert panel.facts["Stop reason"] == "Answered"
    assert panel.facts["Tool rounds"] == "3 of 10"
    assert panel.facts["Calls executed"] == "2"
    assert panel.facts["Calls rejected"] == "2"
    assert panel.highlighted_facts == ["Calls rejected"]


def test_every_call_shows_what_went_back_to_the_model(client, bundles):
    calls = all_calls(panel_of(post_run(client)))
    restricted = texts.RESTRICTED_REPEAT.replace("[tool_name]", "list_bundles")
    assert [call.id for call in calls] == ["call_1_1", "call_1_2", "call_2_1", "call_3_1"]
    assert [call.sent_back for call in calls[:2]] == [restricted, restricted]
    # An output that is JSON reads formatted: round 2's and round 3's.
    assert calls[2].sent_back.startswith('{\n  "entity_type": "node",\n  "bundles": [\n    {\n      "id": "article"')
    assert json.loads(calls[3].sent_back)["bundles"] == [{"id": "tags", "label": "Tags"}]


def test_mixed_response_rejects_the_unrestricted_call_as_collateral(client, bundles):
    first = panel_of(post_run(client, script=json.dumps(mixed_script()))).rounds[0]
    assert (first.verdict, first.verdict_mark) == ("All 3 calls rejected — nothing executed", "rejected")
    collateral = first.calls[2]
    assert (collateral.tool, collateral.status) == ("list_entity_types", "Rejected")
    assert collateral.reason == "Collateral: another tool in this response is restricted"
    assert collateral.sent_back.startswith('Error: This tool call was not executed, because the tool(s) "list_bundles"')


def test_overrides_are_only_what_differs_from_the_agent(client, bundles, database):
    post_run(client, **{"tools-list_bundles-restrict_multiple_calls": None, "max_rounds": "5"})
    run = run_store.get_run(database, 1)
    assert run["overrides"] == {"max_rounds": 5, "tools": {"list_bundles": {"restrict_multiple_calls": False}}}
    assert run["rejected_calls"] == 0
    assert client.get("/api/agents/bundles").json["tools"]["list_bundles"]["restrict_multiple_calls"] is True


def test_a_tool_can_be_enabled_and_disabled_for_one_run(client, bundles, database):
    post_run(client, **{"tools-list_entity_types-enabled": None, "tools-get_layout-enabled": "y"})
    run = run_store.get_run(database, 1)
    assert run["overrides"] == {"tools": {"list_entity_types": None, "get_layout": {}}}
    assert run["rounds"][0]["tools_offered"] == ["list_bundles", "get_layout"]


def test_custom_message_from_the_run_settings(client, bundles):
    message = "Custom: [tool_name] once only."
    panel = panel_of(post_run(client, **{"tools-list_bundles-multiple_call_error_message": message}))
    assert [call.sent_back for call in all_calls(panel)].count("Custom: list_bundles once only.") == 2


@pytest.mark.parametrize(
    ("changes", "field_id", "expected"),
    [
        ({"message": "  "}, "message", "Message is required."),
        ({"max_rounds": "many"}, "max_rounds", "Round cap must be a whole number from 0 to 100."),
        ({"max_rounds": "101"}, "max_rounds", "Round cap must be from 0 to 100 (got 101)."),
        ({"script": "[{"}, "script", "Script is not valid JSON"),
        ({"script": '[{"nonsense": 1}]'}, "script", "Script (JSON) response 1 has unknown key(s): nonsense."),
        (
            {"tools-list_bundles-max_calls_per_run": "-1"},
            "tools-list_bundles-max_calls_per_run",
            "Max calls per run must be from 0 to 10000 (got -1).",
        ),
    ],
)
def test_bad_input_is_shown_beside_its_field_and_runs_nothing(client, bundles, database, changes, field_id, expected):
    message = changes.pop("message", BUNDLES_MESSAGE)
    response = post_run(client, message=message, **changes)
    assert response.status_code == 400
    html = html_of(response)
    errors = re.search(rf'<ul class="errors" id="{re.escape(field_id)}-errors">(.*?)</ul>', html, re.S)
    assert errors and expected in errors.group(1).replace("&#34;", '"').replace("&#39;", "'")
    assert database["runs"].count == 0


def test_one_submit_shows_the_form_errors_and_the_settings_errors_together(client, bundles, database):
    response = post_run(client, message="  ", script="[{", max_rounds="101")

    html = html_of(response)
    for field_id, expected in (
        ("message", "Message is required."),
        ("script", "Script is not valid JSON"),
        ("max_rounds", "Round cap must be from 0 to 100 (got 101)."),
    ):
        errors = re.search(rf'<ul class="errors" id="{re.escape(field_id)}-errors">(.*?)</ul>', html, re.S)
        assert errors and expected in errors.group(1)
    assert database["runs"].count == 0


def test_htmx_post_with_errors_swaps_the_form_instead_of_the_panel(client, bundles, database):
    response = post_run(client, message="", headers=HTMX)
    assert response.status_code == 200
    assert response.headers["HX-Retarget"] == "#run-form"
    assert response.headers["HX-Reswap"] == "outerHTML"
    html = html_of(response)
    assert html.strip().startswith("<form") and "Message is required." in html
    assert database["runs"].count == 0


def test_run_form_needs_its_csrf_token(csrf_app):
    client = csrf_app.test_client()
    client.put("/api/agents/bundles", json=bundles_agent())
    response = client.post("/agents/bundles/run", data={"message": "Hi", "max_rounds": "10"})
    assert response.status_code == 400
    assert csrf_app.test_client().get("/runs").status_code == 200
    fields = form_fields(html_of(client.get("/agents/bundles/run")))
    assert client.post("/agents/bundles/run", data={**fields, "message": "Hi"}).status_code == 200


def test_a_run_posted_without_its_csrf_token_says_why_and_runs_nothing(csrf_app):
    client = csrf_app.test_client()
    client.put("/api/agents/bundles", json=bundles_agent())
    client.post("/api/agents/bundles/runs", json={"message": "Hi"})
    fields = {**form_fields(html_of(client.get("/agents/bundles/run"))), "message": "Hi"}
    del fields["csrf_token"]
    for response in (
        client.post("/agents/bundles/run", data=fields),
        client.post("/agents/bundles/run", data=fields, headers=HTMX),
        client.post("/runs/1/again"),
    ):
        assert response.status_code == 400
        assert "The form could not be sent" in html_of(response)
    assert client.get("/api/runs").json["total"] == 1


def test_model_and_tool_text_is_escaped(client, bundles):
    script = [{"content": "<script>alert('model')</script>"}]
    panel = panel_of(post_run(client, message="<b>hello</b>", script=json.dumps(script)))
    assert (panel.message, panel.answer) == ("<b>hello</b>", "<script>alert('model')</script>")
    assert panel.rounds[0].model_said == "The model said: <script>alert('model')</script>"
    assert not {"script", "b"} & panel.tags  # shown as text, nowhere read as markup


def test_tool_call_arguments_are_escaped(client, bundles):
    script = [
        {
            "tool_calls": [
                {"name": "list_bundles", "arguments": {"entity_type": "<script>alert('json')</script>"}},
                {"name": "list_entity_types", "arguments": "<img src=x onerror=alert('raw')>"},
            ]
        },
        {"content": "Done."},
    ]
    panel = panel_of(post_run(client, script=json.dumps(script)))
    calls = panel.rounds[0].calls
    assert calls[0].arguments == '{\n  "entity_type": "<script>alert(\'json\')</script>"\n}'
    assert calls[1].arguments == "<img src=x onerror=alert('raw')>"
    assert not {"script", "img"} & panel.tags  # shown as text, nowhere read as markup


def test_a_partly_rejected_round_says_how_many_of_its_calls_were_rejected(client, bundles):
    script = [
        {"tool_calls": [{"name": "list_entity_types", "arguments": {}}, {"name": "drop_database", "arguments": {}}]},
        {"content": "Done."},
    ]
    panel = panel_of(post_run(client, script=json.dumps(script)))
    assert (panel.rounds[0].verdict, panel.rounds[0].verdict_mark) == ("1 of 2 calls rejected", "rejected")
    assert [(call.status, call.status_mark) for call in all_calls(panel)] == [
        ("Executed", "executed"),
        ("Rejected", "rejected"),
    ]


STOP_REASON_CASES = [
    pytest.param({"max_rounds": 1}, None, "Round cap reached — forced answer without tools", id="forced answer"),
    pytest.param(
        {"max_rounds": 1, "on_round_cap": "message"},
        None,
        "Round cap reached — stopped with the round cap message",
        id="cap message",
    ),
    pytest.param(
        {"tools": {"list_bundles": {"return_directly": True}}},
        [{"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "user"}}]}],
        "Returned directly",
        id="return directly",
    ),
    pytest.param({"max_rounds": 0}, None, "Answered", id="tools off"),
]


@pytest.mark.parametrize(("changes", "script", "words"), STOP_REASON_CASES)
def test_stop_reasons_read_in_words(client, changes, script, words):
    agent = bundles_agent(**changes)
    if script is not None:
        agent["script"] = script
    client.put("/api/agents/case", json=agent)
    assert panel_of(post_run(client, "case")).facts["Stop reason"] == words


def test_a_provider_error_reads_as_an_error_with_its_text(app, client, database):
    from store import providers as provider_store

    app.config["MODEL_ENVIRON"] = {}
    provider_store.create_provider(
        database, {"id": "remote", "label": "Remote", "base_url": "https://models.invalid/v1", "default_model": "m"}
    )
    client.put("/api/agents/remote_agent", json={"label": "Remote", "provider": "remote"})
    panel = panel_of(post_run(client, "remote_agent", message="Hello"))
    assert panel.facts["Stop reason"] == "Error"
    assert panel.alerts == [f"Error {MISSING_KEY}"]
    assert panel.text.count('The environment variable "OPENAI_API_KEY"') == 1
    assert "The model was not asked: the run stopped before its first request." in panel.text


def test_a_provider_error_is_shown_in_place_of_the_answer(app, client, database):
    from store import providers as provider_store

    app.config["MODEL_ENVIRON"] = {}
    provider_store.create_provider(
        database, {"id": "remote", "label": "Remote", "base_url": "https://models.invalid/v1", "default_model": "m"}
    )
    client.put("/api/agents/remote_agent", json={"label": "Remote", "provider": "remote"})
    assert panel_of(post_run(client, "remote_agent", message="Hello")).answer == f"Error {MISSING_KEY}"


def test_the_request_without_tools_says_no_tools_were_offered(client):
    client.put("/api/agents/capped", json=bundles_agent(max_rounds=1))
    rounds = panel_of(post_run(client, "capped")).rounds
    assert [round_.tools_offered for round_ in rounds] == [
        "Tools offered: list_bundles, list_entity_types",
        "Tools offered: no tools",
    ]


def test_a_held_back_answer_shows_the_reminder_that_was_sent(client):
    agent = {
        "label": "Reminded",
        "tools": {"list_bundles": {"require_usage": True}},
        "script": [
            {"content": "A guess."},
            {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "node"}}]},
            {"content": "Checked."},
        ],
    }
    client.put("/api/agents/reminded", json=agent)
    held_back = panel_of(post_run(client, "reminded", message="Which bundles?")).rounds[0]
    assert (held_back.verdict, held_back.verdict_mark) == ("Answer held back: reminder sent", "reminder")
    assert held_back.reminder == (
        "System reminder sent: Reminder: The following tools should be used based on the instructions, but were not "
        "used: list_bundles. Please make sure to use them in your next response."
    )


def test_the_canvas_layout_is_shown_as_a_tree(client):
    client.put("/api/agents/canvas", json=CANVAS_AGENT)
    panel = panel_of(post_run(client, "canvas", message=CANVAS_MESSAGE))
    assert "Canvas layout" in panel.headings
    assert panel.layout == ["hero", "text"]


def test_the_transcript_is_one_click_away(client, bundles):
    panel = panel_of(post_run(client))
    assert panel.transcript_summary == "Full transcript (10 messages)"
    assert [message.role for message in panel.transcript] == [
        *("system", "user"),
        *("assistant", "tool", "tool"),
        *("assistant", "tool"),
        *("assistant", "tool"),
        "assistant",
    ]
    assert "call_1_2 → list_bundles" in panel.transcript[2].text


def test_each_tool_message_of_the_transcript_names_the_call_it_answers(client, bundles):
    transcript = panel_of(post_run(client)).transcript
    answered = [message.answers for message in transcript if message.role == "tool"]
    assert answered == ["call_1_1", "call_1_2", "call_2_1", "call_3_1"]


def test_permalink_renders_after_the_agent_is_edited_and_deleted(client, bundles):
    post_run(client)
    before = panel_markup(html_of(client.get("/runs/1")))
    agent = client.get("/api/agents/bundles").json
    client.put("/api/agents/bundles", json={**agent, "label": "Renamed", "tools": {}})
    client.delete("/api/agents/bundles")
    response = client.get("/runs/1")
    assert response.status_code == 200
    assert panel_markup(html_of(response)) == before
    assert "has been deleted" in html_of(response)
    assert "Run again</button>" not in html_of(response)


def test_unknown_run_is_a_404(client):
    assert client.get("/runs/42").status_code == 404
    assert client.post("/runs/42/again").status_code == 404


def test_a_run_id_too_large_for_the_database_is_a_404(client, bundles):
    assert client.get("/runs/99999999999999999999").status_code == 404
    assert client.get("/agents/bundles/run?from=99999999999999999999").status_code == 404


def test_run_again_repeats_message_and_overrides(client, bundles, database):
    post_run(client, **{"tools-list_bundles-restrict_multiple_calls": None})
    response = client.post("/runs/1/again")
    assert response.status_code == 303
    assert response.headers["Location"] == "/runs/2"
    first, second = run_store.get_run(database, 1), run_store.get_run(database, 2)
    assert (second["message"], second["overrides"]) == (first["message"], first["overrides"])


def test_run_again_after_the_agent_was_deleted_says_so(client, bundles, database):
    post_run(client)
    client.delete("/api/agents/bundles")
    response = client.post("/runs/1/again", follow_redirects=True)
    assert "no longer exists" in html_of(response)
    assert database["runs"].count == 1


def test_change_and_run_again_prefills_the_previous_run(client, bundles):
    post_run(client, message="Once more", max_rounds="3")
    fields = run_form(client, query="?from=1")
    assert (fields["message"], fields["max_rounds"]) == ("Once more", "3")


def test_history_lists_runs_newest_first_with_filters(client, bundles):
    client.put("/api/agents/capped", json=bundles_agent(max_rounds=1))
    post_run(client)
    post_run(client, "capped")
    html = html_of(client.get("/runs"))
    assert html.index('href="/runs/2"') < html.index('href="/runs/1"')
    only_bundles = html_of(client.get("/runs?agent=bundles"))
    assert 'href="/runs/1"' in only_bundles and 'href="/runs/2"' not in only_bundles
    capped = html_of(client.get("/runs?stop_reason=round_cap"))
    assert 'href="/runs/2"' in capped and 'href="/runs/1"' not in capped
    assert "No runs match this filter" in html_of(client.get("/runs?agent=nobody"))


def test_history_is_paginated(client, bundles, database):
    run = client.post("/api/agents/bundles/runs", json={"message": "Hi"}).json
    for _ in range(run_store.PER_PAGE + 4):
        run_store.save_run(database, {key: value for key, value in run.items() if key not in ("id", "created_at")})
    first = html_of(client.get("/runs"))
    assert first.count('<a href="/runs/') == run_store.PER_PAGE and 'rel="next" href="/runs?before=6"' in first
    second = html_of(client.get("/runs?before=6"))
    assert second.count('<a href="/runs/') == 5 and 'rel="prev" href="/runs?after=5"' in second


def test_history_of_nothing(client):
    assert "No runs yet" in html_of(client.get("/runs"))


def test_the_run_page_offers_parallel_tool_calls_and_a_run_lists_its_overrides_in_words(client, bundles):
    response = post_run(client, parallel_tool_calls="false", max_rounds="3")
    run = client.get("/api/runs/1").get_json()

    assert run["overrides"] == {"max_rounds": 3, "parallel_tool_calls": False}
    html = html_text.unescape(response.get_data(as_text=True))
    overrides = re.search(r'<ul class="changed-settings" data-testid="overrides">(.*?)</ul>', html, re.S).group(1)
    assert re.findall(r"<li>(.*?)</li>", overrides) == [
        "Round cap: <strong>3</strong>",
        "Parallel tool calls: <strong>off</strong>",
    ]


def test_change_and_run_again_marks_the_settings_that_differ_from_the_agent(client, bundles):
    post_run(client, max_rounds="2", **{"tools-list_bundles-restrict_multiple_calls": None})

    html = html_text.unescape(client.get("/agents/bundles/run?from=1").get_data(as_text=True))

    assert 'Settings for this run <span class="changed-count">— 2 changed from the agent</span>' in html
    changed = re.search(r'data-testid="changed-settings">(.*?)</ul>', html, re.S).group(1)
    assert re.findall(r"<li>(.*?)</li>", changed) == [
        "Round cap: <strong>2</strong>",
        "list_bundles: Restrict to one call per response: <strong>off</strong>",
    ]
    assert '<div class="field changed-for-run">' in html and 'class="tool changed-for-run"' in html
    assert "changed from the agent" not in client.get("/agents/bundles/run").get_data(as_text=True)
