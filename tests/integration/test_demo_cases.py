"""Each demo agent ships with one regression case, and it passes; unticking a demo's restriction fails its case."""

import re
from pathlib import Path

import pytest

from engine.tools import default_registry
from services import cases as case_service
from services.demo import DEMO_AGENTS, DEMO_CASES, load_demo
from store import agents as agent_store
from store import cases as case_store
from tests.html_reader import form_fields


@pytest.fixture
def demo_db(database):
    load_demo(database, default_registry().names())
    return database


def test_each_demo_agent_has_one_case_and_it_passes(demo_db):
    cases = case_store.list_cases(demo_db)

    assert sorted(case["agent_id"] for case in cases) == sorted(agent["id"] for agent in DEMO_AGENTS)
    assert {case["name"] for case in cases} == {name for name, _message in DEMO_CASES.values()}
    checked = case_service.check_cases(demo_db, cases)
    assert [case["last_check"]["differences"] for case in checked] == [[]] * len(DEMO_AGENTS)


@pytest.mark.parametrize(
    ("agent_id", "tool"), [("canvas_builder", "place_component"), ("catalog_explorer", "list_bundles")]
)
def test_turning_a_demo_restriction_off_fails_its_case_on_round_one(demo_db, agent_id, tool):
    agent = agent_store.get_agent(demo_db, agent_id)
    agent["tools"][tool]["restrict_multiple_calls"] = False
    agent_store.save_agent(demo_db, agent, default_registry().names())

    [case] = case_service.check_agent_cases(demo_db, agent_id)

    assert not case["last_check"]["passed"]
    assert case["last_check"]["differences"][0].startswith(f"round 1, call_1_1 ({tool}): expected rejected")


def test_the_proxied_demo_case_plays_the_app_and_fails_once_its_client_tool_may_be_called_twice(demo_db):
    [case] = case_store.list_cases(demo_db, "browser_canvas")
    assert case["client"]["results"] == {"hero": "hero-5f2c1a", "call_3_1": "text-9b7e4d"}
    agent = agent_store.get_agent(demo_db, "browser_canvas")
    agent["client_tools"]["place_block"]["restrict_multiple_calls"] = False
    agent_store.save_agent(demo_db, agent, default_registry().names())

    [case] = case_service.check_agent_cases(demo_db, "browser_canvas")

    assert not case["last_check"]["passed"]
    assert (
        "round 1, call_1_1 (place_block): expected rejected (restricted_repeat), got allowed"
        in (case["last_check"]["differences"])
    )


def test_loading_the_demo_again_keeps_one_case_per_agent(demo_db):
    load_demo(demo_db, default_registry().names(), replace=True)

    assert len(case_store.list_cases(demo_db)) == len(DEMO_AGENTS)


def test_the_readmes_check_cases_example_is_what_the_command_prints(runner, demo_db, tmp_path, monkeypatch):
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    example = re.search(
        r"```sh\n\$ \.venv/bin/flask --app app (check-cases .*?)\n(.*?)\$ echo \$\?\n(\d)\n```", readme, re.S
    )
    command, printed, status = example.groups()
    agent = agent_store.get_agent(demo_db, "catalog_explorer")
    agent["tools"]["list_bundles"]["restrict_multiple_calls"] = False
    agent_store.save_agent(demo_db, agent, default_registry().names())
    monkeypatch.chdir(tmp_path)  # where the example's JUnit file goes

    result = runner.invoke(args=command.split())

    assert result.output == printed
    assert result.exit_code == int(status)
    assert (tmp_path / "cases.xml").exists()


@pytest.mark.parametrize("agent_id", sorted(DEMO_CASES))
def test_a_demo_agents_run_page_is_prefilled_with_its_cases_message(client, demo_db, agent_id):
    fields = form_fields(client.get(f"/agents/{agent_id}/run").get_data(as_text=True))

    assert fields["message"] == DEMO_CASES[agent_id][1]


def test_an_agent_without_a_case_starts_with_an_empty_message_and_a_repeated_run_keeps_its_own(client, demo_db):
    assert client.put("/api/agents/no_case", json={"label": "No case"}).status_code == 201
    assert form_fields(client.get("/agents/no_case/run").get_data(as_text=True))["message"] == ""
    run = client.post("/api/agents/catalog_explorer/runs", json={"message": "Only nodes."}).get_json()

    fields = form_fields(client.get(f"/agents/catalog_explorer/run?from={run['id']}").get_data(as_text=True))

    assert fields["message"] == "Only nodes."
