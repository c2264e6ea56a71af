"""`check-cases --junit FILE` where FILE cannot be written (its folder is missing, or is a file) says so in words
and exits 2, the status of bad input, before any case runs: 1 would read as "a case failed", and a check that ran
for minutes should not end in a traceback."""

import pytest

from store import cases as case_store
from tests.run_scenarios import BUNDLES_MESSAGE, bundles_agent


@pytest.fixture
def case_id(client):
    client.put("/api/agents/bundles", json=bundles_agent())
    run = client.post("/api/agents/bundles/runs", json={"message": BUNDLES_MESSAGE}).get_json()
    response = client.post(f"/runs/{run['id']}/case", data={"name": "Both listings rejected"})
    return int(response.headers["Location"].rsplit("/", 1)[1])


@pytest.mark.parametrize(
    ("place", "message"),
    [
        ("missing/cases.xml", "The folder {tmp}/missing does not exist, so the JUnit file cannot be written"),
        ("a/b/c/cases.xml", "The folder {tmp}/a/b/c does not exist, so the JUnit file cannot be written"),
        ("file/cases.xml", "{tmp}/file is not a folder, so the JUnit file cannot be written"),
    ],
)
@pytest.mark.parametrize("agents", [[], ["bundles"]], ids=["every agent", "one agent"])
def test_a_junit_file_that_cannot_be_written_is_bad_input_before_any_case_runs(
    runner, database, case_id, tmp_path, place, message, agents
):
    (tmp_path / "file").write_text("a file, not a folder")
    result = runner.invoke(args=["check-cases", *agents, "--junit", str(tmp_path / place)])
    assert result.exit_code == 2
    assert f"{message.format(tmp=tmp_path)}; nothing was checked." in result.output
    assert "Traceback" not in result.output and "PASS" not in result.output
    assert case_store.get_case(database, case_id)["last_check"] is None


def test_a_junit_file_in_a_folder_that_exists_is_written(runner, case_id, tmp_path):
    result = runner.invoke(args=["check-cases", "--junit", str(tmp_path / "cases.xml")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "cases.xml").read_text().startswith("<?xml")
