"""The new tool settings on the pages: the agent form lists each tool's arguments with a rule and a description,
reveals a rule's values through htmx (or <noscript>), saves them, shows them again and puts errors beside them;
the run page overrides them for one run and shows what they did."""

import re

import pytest

from engine.tools import default_registry
from services.demo import CATALOG_PAGE
from store import runs as run_store
from tests.html_reader import form_fields, page_of
from tests.run_panel import read_run_panel
from tests.support import agent_form_data

ONLY_NODE_OR_MEDIA = {"entity_type": {"action": "only_allow", "values": ["node", "media"], "hide": False}}
FOOTER_HIDDEN = {"region": {"action": "force_value", "values": ["footer"], "hide": True}}
RULES_AGENT = {
    "label": "Rules",
    "id": "rules",
    "tools": {
        "list_bundles": {
            "argument_rules": ONLY_NODE_OR_MEDIA,
            "max_identical_calls": 2,
            "use_artifacts": True,
            "progress_message": "Listing…",
        },
        "place_component": {
            "argument_rules": FOOTER_HIDDEN,
            "argument_descriptions": {"component": "Hero or text."},
        },
        "edit_component": {"argument_rules": {"props": {"action": "force_value", "values": [{"text": "Hi"}]}}},
    },
}
ENTITY_TYPE = "tools-list_bundles-arguments-entity_type-"
REGION = "tools-place_component-arguments-region-"


def argument_names(html, tool):
    return re.findall(rf'name="tools-{tool}-arguments-([a-z_]+)-action"', html)


def form_with_every_tool(client):
    """The new agent form with every registered tool on it (as the picker's Add buttons put them there)."""
    names = default_registry().names()
    data = {**agent_form_data({"label": "Every tool"}), "tool": names, "add_tool": names[0]}
    return client.post("/agents/new", data=data).get_data(as_text=True)


def test_the_form_lists_the_top_level_arguments_of_each_tools_schema(client):
    html = form_with_every_tool(client)

    assert argument_names(html, "list_bundles") == ["entity_type"]
    assert argument_names(html, "place_component") == ["component", "region", "below_uuid", "inside_uuid"]
    assert argument_names(html, "list_entity_types") == []
    for label in ("Max identical calls", "Use artifacts", "Progress message", "Rule", "Description for the model"):
        assert f">{label}</label>" in html
    assert "Leave empty to keep: “An entity type id from list_entity_types, e.g. &#39;node&#39;.”" in html


def test_the_settings_are_saved_from_the_form_and_shown_on_the_edit_form(client, actions):
    assert actions.create(**RULES_AGENT).status_code == 303

    stored = actions.get("rules")["tools"]
    assert stored["list_bundles"]["argument_rules"] == ONLY_NODE_OR_MEDIA
    assert (stored["list_bundles"]["max_identical_calls"], stored["list_bundles"]["use_artifacts"]) == (2, True)
    assert stored["list_bundles"]["progress_message"] == "Listing…"
    assert stored["place_component"]["argument_rules"] == FOOTER_HIDDEN
    assert stored["place_component"]["argument_descriptions"] == {"component": "Hero or text."}
    assert stored["edit_component"]["argument_rules"]["props"]["values"] == [{"text": "Hi"}]

    page = page_of(client.get("/agents/rules/edit"))
    assert 'selected value="only_allow">Only allow these values' in page.html
    assert page.text(ENTITY_TYPE + "values") == "node\nmedia"
    assert page.checked(REGION + "hide")
    assert page.text(REGION + "values") == "footer"
    assert page.text("tools-place_component-arguments-component-argument_description") == "Hero or text."
    assert page.text("tools-edit_component-arguments-props-values") == '{"text": "Hi"}'
    assert page.value("tools-list_bundles-max_identical_calls") == "2"
    assert page.checked("tools-list_bundles-use_artifacts")
    assert page.value("tools-list_bundles-progress_message") == "Listing…"


def test_saving_the_edit_form_untouched_changes_no_setting(client, actions):
    actions.create(**RULES_AGENT)
    before = actions.get("rules")

    fields = form_fields(client.get("/agents/rules/edit").get_data(as_text=True), form_id="agent-form")
    assert client.post("/agents/rules/edit", data=fields).status_code == 303

    assert actions.get("rules")["tools"] == before["tools"]


def test_a_string_argument_takes_its_values_as_typed(client, actions):
    data = agent_form_data({"label": "Typed", "id": "typed", "tools": {"list_bundles": {}}})
    data |= {ENTITY_TYPE + "action": "only_allow", ENTITY_TYPE + "values": "5\r\n  node \r\n\r\ntrue"}

    assert client.post("/agents/new", data=data).status_code == 303

    assert actions.get("typed")["tools"]["list_bundles"]["argument_rules"]["entity_type"]["values"] == [
        "5",
        "node",
        "true",
    ]


@pytest.mark.parametrize(
    ("changes", "field_id", "error"),
    [
        (
            {ENTITY_TYPE + "hide": "y"},
            ENTITY_TYPE + "hide",
            "Hide from the model is only possible with a forced value (action force_value).",
        ),
        (
            {ENTITY_TYPE + "action": "only_allow", ENTITY_TYPE + "values": ""},
            ENTITY_TYPE + "values",
            "Values must hold at least one allowed value.",
        ),
        (
            {ENTITY_TYPE + "action": "force_value", ENTITY_TYPE + "values": "node\nuser"},
            ENTITY_TYPE + "values",
            "Values must hold exactly one value to force (got 2).",
        ),
        (
            {"tools-place_component-enabled": "y", REGION + "action": "force_value", REGION + "values": "side"},
            REGION + "values",
            "Values must fit the argument's schema (value 1: 'side' is not one of ['header', 'content', 'footer']).",
        ),
        (
            {"tools-list_bundles-max_identical_calls": "-1"},
            "tools-list_bundles-max_identical_calls",
            "Max identical calls must be from 0 to 10000 (got -1).",
        ),
    ],
    ids=["hide without force", "no allowed value", "two forced values", "value off the schema", "negative"],
)
def test_a_bad_setting_is_shown_beside_its_field_and_nothing_is_saved(client, actions, changes, field_id, error):
    data = agent_form_data({"label": "Bad", "id": "bad", "tools": {"list_bundles": {}}}) | changes

    response = client.post("/agents/new", data=data)

    assert response.status_code == 400
    assert page_of(response).errors(field_id) == [error]
    assert client.get("/api/agents/bad").status_code == 404


# --- The htmx reveal -------------------------------------------------------------------------------------------


def rule_fragment(client, tool, argument, **query):
    return client.get(f"/agents/tool-settings/{tool}/arguments/{argument}/rule", query_string=query)


def test_choosing_a_rule_asks_for_the_fragment_that_reveals_its_values(client):
    html = form_with_every_tool(client)

    select = re.search(rf'<select[^>]*name="{ENTITY_TYPE}action"[^>]*>', html).group(0)
    assert 'hx-get="/agents/tool-settings/list_bundles/arguments/entity_type/rule"' in select
    assert 'hx-target="#argument-rule-list_bundles-entity_type"' in select
    assert 'hx-include="#argument-rule-list_bundles-entity_type"' in select
    assert 'hx-swap="outerHTML"' in select
    wrapper = re.search(
        r'<div class="argument-rule-values" id="argument-rule-list_bundles-entity_type">(.*?)</div>\s*<div', html, re.S
    )
    assert "<noscript>" in wrapper.group(1)  # without JavaScript, the fields are there all along


def test_the_fragment_shows_an_allow_lists_values_keeping_what_was_typed(client):
    response = rule_fragment(
        client, "list_bundles", "entity_type", **{ENTITY_TYPE + "action": "only_allow", ENTITY_TYPE + "values": "node"}
    )

    page = page_of(response)
    assert response.status_code == 200
    assert page.html.lstrip().startswith(
        '<div class="argument-rule-values" id="argument-rule-list_bundles-entity_type">'
    )
    assert page.text(ENTITY_TYPE + "values") == "node"
    assert not page.has_field(ENTITY_TYPE + "hide")
    assert "<noscript>" not in page.html


def test_the_fragment_offers_to_hide_a_forced_value(client):
    page = page_of(
        rule_fragment(client, "place_component", "region", **{REGION + "action": "force_value", REGION + "hide": "y"})
    )

    assert page.has_field(REGION + "values")
    assert page.checked(REGION + "hide")


def test_without_a_rule_the_fragment_is_the_empty_wrapper(client):
    html = rule_fragment(client, "place_component", "region").get_data(as_text=True)

    assert re.fullmatch(
        r'\s*<div class="argument-rule-values" id="argument-rule-place_component-region">\s*</div>\s*', html
    )


@pytest.mark.parametrize(
    ("tool", "argument"), [("no_such_tool", "x"), ("list_bundles", "bundle"), ("list_entity_types", "x")]
)
def test_the_fragment_of_an_unknown_tool_or_argument_is_a_404(client, tool, argument):
    assert rule_fragment(client, tool, argument).status_code == 404


# --- The agent's page and the run page -----------------------------------------------------------------------


def test_the_agents_page_lists_the_rules(client, actions):
    actions.create(**RULES_AGENT)

    html = client.get("/agents/rules").get_data(as_text=True)

    assert 'only "node", "media"' in html
    assert 'forced to "footer", hidden from the model' in html
    assert "<code>component</code> described as <q>Hero or text.</q>" in html
    assert "Progress message: <q>Listing…</q>" in html


@pytest.fixture
def catalog_page(client):
    assert client.put("/api/agents/catalog_page", json=CATALOG_PAGE).status_code == 201


def run_page_fields(client):
    return form_fields(client.get("/agents/catalog_page/run").get_data(as_text=True))


def test_the_run_page_shows_rejections_forced_values_artifacts_and_progress(client, catalog_page):
    response = client.post("/agents/catalog_page/run", data={**run_page_fields(client), "message": "Go"})
    panel = read_run_panel(response.get_data(as_text=True))
    refused, kept, forced, replaced, repeated = (round_.calls[0] for round_ in panel.rounds[:5])

    assert response.status_code == 200
    assert refused.sent_back == "Error: invalid value for entity_type in list_bundles: user is not one of node, media."
    assert refused.reason == "Value not allowed"
    assert forced.forced == ['Forced region: ran with "footer"; the model sent none']
    assert replaced.replaced == "Replaced by their artifacts: {{artifact:list_bundles:1}}"
    assert kept.sent_back == "{{artifact:list_bundles:1}}"
    assert "Artifacts" in panel.headings
    assert panel.artifacts[0].startswith("{{artifact:list_bundles:1}} from call_2_1, round 2 ")
    calls = [call for round_ in panel.rounds for call in round_.calls]
    assert [call.progress for call in calls].count("Listing the bundles…") == 3
    assert repeated.sent_back.startswith(
        "Error: list_bundles was already called with these arguments 1 times in this run."
    )
    assert len(panel.rounds) == 6
    assert all(round_.model_saw.startswith("What the model saw ") for round_ in panel.rounds)


def test_what_the_model_saw_is_the_tools_the_request_sent(client, catalog_page):
    client.post("/agents/catalog_page/run", data={**run_page_fields(client), "message": "Go"})
    stored = client.get("/api/runs/1").json
    tools = client.get("/api/agents/catalog_page/tools").json["tools"]

    panel = read_run_panel(client.get("/runs/1").get_data(as_text=True))

    assert stored["rounds"][0]["tools_sent"] == tools
    shown = [round_.tools_sent for round_ in panel.rounds]
    assert len(shown) == 6 and None not in shown
    assert '"enum": [\n              "node",\n              "media"\n            ]' in shown[0]
    assert '"region"' not in shown[0].split("place_component")[1].split("edit_component")[0]


def test_a_run_stored_before_tools_were_recorded_says_so(client, database):
    old = {
        "agent_id": "old",
        "message": "Hi",
        "stop_reason": "answered",
        "answer": "Hello.",
        "rounds": [
            {"number": 1, "tools_offered": None, "assistant": {"content": "Hello.", "tool_calls": []}, "calls": []}
        ],
        "messages": [],
    }
    stored = run_store.save_run(database, old)

    panel = read_run_panel(client.get(f"/runs/{stored['id']}").get_data(as_text=True))

    assert panel.rounds[0].model_saw == (
        "What the model saw Not recorded: this run was stored before Toolgate kept the tools it sent."
    )


def test_a_run_can_override_an_argument_rule(client, catalog_page):
    fields = run_page_fields(client) | {"message": "Go", ENTITY_TYPE + "values": "node\nuser\nmedia"}

    client.post("/agents/catalog_page/run", data=fields)
    stored = client.get("/api/runs/1").json

    assert stored["overrides"] == {
        "tools": {
            "list_bundles": {
                "argument_rules": {
                    "entity_type": {"action": "only_allow", "values": ["node", "user", "media"], "hide": False}
                }
            }
        }
    }
    assert stored["rounds"][0]["calls"][0]["status"] == "executed"
