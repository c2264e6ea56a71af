"""The demo agents do what their descriptions promise, on the scripted model, with the documents the app stores."""

import pytest

from engine import run_agent
from engine.tools import default_registry
from services.demo import DEMO_AGENTS, load_demo
from store import agents as agent_store
from store.documents import DocumentTable


@pytest.fixture
def demo_db(app, database):
    load_demo(database, default_registry().parameters_by_name())
    return database


def run_stored(app, database, agent_id, message="What is the refund policy?"):
    agent = agent_store.get_agent(database, agent_id)
    return run_agent(agent, message, documents=DocumentTable(database))


def calls(run):
    return [[(call["name"], call["status"], call["reason"]) for call in round_["calls"]] for round_ in run["rounds"]]


def test_one_demo_agent_per_tool_family_all_scripted():
    families = {tool.name: tool.family for tool in default_registry()}
    assert sorted({families[name] for agent in DEMO_AGENTS for name in agent["tools"]}) == [
        "canvas",
        "catalog",
        "documents",
    ]
    assert all(agent["provider"] == "scripted" and agent["description"] for agent in DEMO_AGENTS)


def test_canvas_builder_is_rejected_then_recovers_placing_one_at_a_time(app, demo_db):
    run = run_stored(app, demo_db, "canvas_builder", "Build a landing page")
    assert calls(run)[:4] == [
        [("place_component", "rejected", "restricted_repeat")] * 2,
        [("place_component", "executed", None)],
        [("place_component", "executed", None)],  # below the UUID call_2_1 returned
        [("edit_component", "executed", None)],
    ]
    placed_uuid = run["rounds"][1]["calls"][0]["output"]
    assert run["rounds"][2]["calls"][0]["arguments"]["below_uuid"] == placed_uuid
    assert run["stop_reason"] == "answered" and "Welcome" in run["answer"]
    assert run["rejected_calls"] == 2


def test_catalog_explorer_lists_bundles_of_two_entity_types_one_per_response(app, demo_db):
    run = run_stored(app, demo_db, "catalog_explorer", "Which bundles do nodes and tags have?")
    assert calls(run)[:3] == [
        [("list_bundles", "rejected", "restricted_repeat")] * 2,
        [("list_bundles", "executed", None)],
        [("list_bundles", "executed", None)],
    ]
    assert run["stop_reason"] == "answered"


def test_docs_assistant_reads_two_documents_at_once_and_relists(app, demo_db):
    run = run_stored(app, demo_db, "docs_assistant", "How long does shipping take?")
    assert calls(run)[:3] == [
        [("list_documents", "executed", None)],
        [("read_document", "executed", None)] * 2,
        [("list_documents", "executed", None)],
    ]
    assert run["rejected_calls"] == 0 and run["stop_reason"] == "answered"
    assert {"refund-policy", "shipping-times"} <= {source["id"] for source in run["sources"]}


def test_catalog_page_shows_argument_rules_and_artifacts(app, demo_db):
    run = run_stored(app, demo_db, "catalog_page", "Put the content types on the page")

    assert calls(run) == [
        [("list_bundles", "rejected", "argument_not_allowed")],
        [("list_bundles", "executed", None)],
        [("place_component", "executed", None)],
        [("edit_component", "executed", None)],
        [("list_bundles", "rejected", "repeated_call")],
        [],
    ]
    bundles = run["rounds"][1]["calls"][0]["output"]
    (text,) = run["layout"]
    assert (text["region"], text["props"]) == ("footer", {"text": bundles})
    assert run["rounds"][2]["calls"][0]["forced_arguments"] == {"region": "footer"}
    assert run["rounds"][3]["calls"][0]["replaced_placeholders"] == ["{{artifact:list_bundles:1}}"]
    assert run["stop_reason"] == "answered"


def test_the_engine_searches_the_documents_the_app_stores(app, demo_db):
    store = DocumentTable(demo_db)
    assert store.search("refund")[0]["id"] == "refund-policy"
    assert {"id": "shipping-times", "title": "Shipping times"} in store.list_documents()
