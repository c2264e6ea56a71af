"""`flask check-cases [AGENT_ID ...] [--junit FILE]`, `flask export-cases AGENT_ID DIR` and `flask import-cases
DIR`; and `POST /api/agents/<id>/cases/check`, the same check over HTTP."""

import json
from xml.etree import ElementTree

import pytest

from store import cases as case_store
from tests.run_scenarios import BUNDLES_MESSAGE, bundles_agent

FAILURES = [
    "round 1, call_1_1 (list_bundles): expected rejected (restricted_repeat), got executed",
    "round 1, call_1_2 (list_bundles): expected rejected (restricted_repeat), got executed",
]


@pytest.fixture
def case_id(client):
    """The bundles agent and one case recorded from its run: both list_bundles calls of round 1 rejected."""
    client.put("/api/agents/bundles", json=bundles_agent())
    run = client.post("/api/agents/bundles/runs", json={"message": BUNDLES_MESSAGE}).get_json()
    response = client.post(f"/runs/{run['id']}/case", data={"name": "Both listings rejected"})
    return int(response.headers["Location"].rsplit("/", 1)[1])


def turn_restriction_off(client):
    agent = client.get("/api/agents/bundles").get_json()
    agent["tools"]["list_bundles"]["restrict_multiple_calls"] = False
    client.put("/api/agents/bundles", json=agent)


def test_check_cases_prints_a_line_per_case_and_exits_zero_when_all_pass(runner, case_id):
    result = runner.invoke(args=["check-cases", "bundles"])

    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"PASS  bundles: Both listings rejected (case {case_id})",
        "Checked 1 case: 1 passed, 0 failed.",
    ]


def test_check_cases_exits_non_zero_and_says_what_changed_when_a_case_fails(runner, client, case_id, tmp_path):
    turn_restriction_off(client)
    junit = tmp_path / "cases.xml"

    result = runner.invoke(args=["check-cases", "--junit", str(junit)])

    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"FAIL  bundles: Both listings rejected (case {case_id})",
        *(f"      {line}" for line in FAILURES),
        "Checked 1 case: 0 passed, 1 failed.",
    ]
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("errors")) == (
        "bundles",
        "1",
        "1",
        "0",
    )
    failure = suite.find("testcase[@name='Both listings rejected']/failure")
    assert failure.get("message") == "2 expectations changed"
    assert failure.text.splitlines() == FAILURES


def test_the_junit_file_of_a_passing_check_has_no_failure(runner, case_id, tmp_path):
    junit = tmp_path / "cases.xml"

    runner.invoke(args=["check-cases", "--junit", str(junit)])

    testcase = ElementTree.parse(junit).getroot().find("testsuite/testcase")
    assert testcase.get("classname") == "bundles" and list(testcase) == []


def test_a_case_whose_agent_is_gone_is_a_junit_error(runner, client, case_id, tmp_path):
    client.delete("/api/agents/bundles")
    junit = tmp_path / "cases.xml"

    result = runner.invoke(args=["check-cases", "--junit", str(junit)])

    assert result.exit_code == 1
    assert '      The agent "bundles" no longer exists.' in result.output
    assert ElementTree.parse(junit).getroot().find("testsuite").get("errors") == "1"


def test_check_cases_refuses_an_unknown_agent_and_checks_nothing(runner, case_id, database):
    result = runner.invoke(args=["check-cases", "bundles", "nobody"])

    assert result.exit_code == 2
    assert 'No agent with id "nobody"; nothing was checked.' in result.output
    assert case_store.get_case(database, case_id)["last_check"] is None


def test_check_cases_with_no_case_passes_and_says_so(runner):
    result = runner.invoke(args=["check-cases"])

    assert result.exit_code == 0 and result.output == "There are no cases to check.\n"


def test_the_api_checks_every_case_of_an_agent(client, case_id):
    assert client.post("/api/agents/bundles/cases/check", json={}).get_json()["passed"] is True
    turn_restriction_off(client)

    body = client.post("/api/agents/bundles/cases/check", json={}).get_json()

    assert (body["passed"], body["total"], body["failed"]) == (False, 1, 1)
    assert body["cases"][0]["id"] == case_id and body["cases"][0]["differences"] == FAILURES
    listed = client.get("/api/agents/bundles/cases").get_json()["cases"]
    assert listed[0]["latest"]["passed"] is False and listed[0]["name"] == "Both listings rejected"


def test_the_api_answers_404_for_an_unknown_agent(client):
    response = client.post("/api/agents/nobody/cases/check", json={})

    assert response.status_code == 404 and response.get_json()["field"] == "agent_id"
    assert client.get("/api/agents/nobody/cases").status_code == 404


def test_export_then_import_brings_the_same_cases_back(runner, client, case_id, database, tmp_path):
    exported = case_store.case_json(case_store.get_case(database, case_id))

    result = runner.invoke(args=["export-cases", "bundles", str(tmp_path / "cases")])

    assert result.exit_code == 0, result.output
    path = tmp_path / "cases" / "bundles.both-listings-rejected.json"
    assert json.loads(path.read_text()) == exported
    case_store.delete_case(database, case_id)
    result = runner.invoke(args=["import-cases", str(tmp_path / "cases")])
    assert result.exit_code == 0, result.output
    assert "Imported 1 case(s)" in result.output and "1 added, 0 replaced" in result.output
    [imported] = case_store.list_cases(database, "bundles")
    assert case_store.case_json(imported) == exported
    assert runner.invoke(args=["check-cases"]).exit_code == 0


def test_importing_a_case_again_replaces_the_one_with_its_name(runner, case_id, database, tmp_path):
    runner.invoke(args=["export-cases", "bundles", str(tmp_path)])
    path = tmp_path / "bundles.both-listings-rejected.json"
    case = json.loads(path.read_text())
    path.write_text(json.dumps({**case, "unpinned": ["answer"]}))

    result = runner.invoke(args=["import-cases", str(tmp_path)])

    assert "0 added, 1 replaced" in result.output
    assert case_store.get_case(database, case_id)["unpinned"] == ["answer"]


@pytest.mark.parametrize(
    ("bad_file", "problem"),
    [
        (lambda case: b"{", "bad.json: is not valid JSON"),
        (lambda case: b"\xff\xfe", "bad.json: is not UTF-8 text"),
        (lambda case: b"[" * 100_000 + b"]" * 100_000, "bad.json: is nested too deeply"),
        (
            lambda case: (
                json.dumps({**case, "overrides": {"model": [[[]]]}}).replace("[]", "[" * 700 + "]" * 700).encode()
            ),
            "bad.json: is nested too deeply",
        ),
        (lambda case: json.dumps({**case, "message": None}).encode(), "bad.json: message: must be a string"),
        (lambda case: json.dumps({**case, "agent_id": "nobody"}).encode(), "bad.json: agent_id: no agent has the id"),
        (
            lambda case: json.dumps({**case, "expected": {**case["expected"], "stop_reason": "stopped"}}).encode(),
            "bad.json: expected.stop_reason: must be one of: answered, round_cap, return_directly",
        ),
    ],
)
def test_a_bad_file_is_refused_with_its_name_and_field_and_nothing_is_imported(
    runner, case_id, database, tmp_path, bad_file, problem
):
    runner.invoke(args=["export-cases", "bundles", str(tmp_path)])
    good = json.loads((tmp_path / "bundles.both-listings-rejected.json").read_text())
    case_store.delete_case(database, case_id)
    (tmp_path / "bad.json").write_bytes(bad_file(good))

    result = runner.invoke(args=["import-cases", str(tmp_path)])

    assert result.exit_code == 2
    assert "Nothing was imported:" in result.output and f"  {problem}" in result.output
    assert case_store.list_cases(database) == []  # the good file was not imported either


def test_two_files_with_the_same_case_name_are_refused(runner, case_id, database, tmp_path):
    runner.invoke(args=["export-cases", "bundles", str(tmp_path)])
    (tmp_path / "copy.json").write_text((tmp_path / "bundles.both-listings-rejected.json").read_text())

    result = runner.invoke(args=["import-cases", str(tmp_path)])

    assert result.exit_code == 2
    assert "copy.json: name: is the name of the case in bundles.both-listings-rejected.json too" in result.output


def test_a_case_whose_overrides_the_agent_cannot_run_is_refused_naming_the_field(runner, case_id, tmp_path):
    runner.invoke(args=["export-cases", "bundles", str(tmp_path)])
    path = tmp_path / "bundles.both-listings-rejected.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "overrides": {"max_rounds": 500}}))

    result = runner.invoke(args=["import-cases", str(tmp_path)])

    assert result.exit_code == 2
    assert "bundles.both-listings-rejected.json: overrides.max_rounds: must be from 0 to 100 (got 500)" in result.output


def test_export_of_an_unknown_agent_or_an_empty_folder_is_refused(runner, tmp_path):
    assert 'No agent with id "nobody"' in runner.invoke(args=["export-cases", "nobody", str(tmp_path)]).output
    result = runner.invoke(args=["import-cases", str(tmp_path)])
    assert result.exit_code == 2 and "has no .json file" in result.output
