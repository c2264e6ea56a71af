"""Case files are bounded like runs: a model answer larger than 5 MB of text ends a run with an error, so a case
that expects one, or whose script plays one, could never pass. Import refuses it naming the file and the field, and
nothing is imported; at the limit it is taken. An answer a tool returned directly is no model answer, and is not
bounded so."""

import json

import pytest

from engine.providers import MAX_RESPONSE_MB
from store import cases as case_store
from tests.bad_input_support import database_state
from tests.run_scenarios import BUNDLES_MESSAGE, bundles_agent

LIMIT = MAX_RESPONSE_MB * 1024 * 1024


@pytest.fixture
def exported(runner, client, database, tmp_path):
    """The bundles agent's case, exported to a file and deleted from the database: (its path, its JSON)."""
    client.put("/api/agents/bundles", json=bundles_agent())
    run = client.post("/api/agents/bundles/runs", json={"message": BUNDLES_MESSAGE}).get_json()
    client.post(f"/runs/{run['id']}/case", data={"name": "Big"})
    runner.invoke(args=["export-cases", "bundles", str(tmp_path)])
    for case in case_store.list_cases(database):
        case_store.delete_case(database, case["id"])
    path = tmp_path / "bundles.big.json"
    return path, json.loads(path.read_text())


def with_answer(case, answer, stop_reason="answered"):
    script = [*case["script"][:-1], {"content": "short"}]
    return {**case, "script": script, "expected": {**case["expected"], "answer": answer, "stop_reason": stop_reason}}


def with_last_response(case, response):
    return {**case, "script": [*case["script"][:-1], response]}


def refusal(what, size):
    return (
        f"{what} is larger than 5 MB ({size:,} bytes of text): a model answer that large ends a run with an error, "
        "so this case could never pass"
    )


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda case: with_answer(case, "a" * (LIMIT + 1)), "expected.answer: " + refusal("it", LIMIT + 1)),
        (lambda case: with_answer(case, "é" * (LIMIT // 2 + 1)), "expected.answer: " + refusal("it", LIMIT + 2)),
        (lambda case: with_answer(case, "b" * (2 * LIMIT)), "expected.answer: " + refusal("it", 2 * LIMIT)),
        (
            lambda case: with_last_response(case, {"content": "c" * (LIMIT + 1)}),
            "script: " + refusal("response 4", LIMIT + 1),
        ),
        (
            lambda case: with_last_response(
                case, {"tool_calls": [{"id": "x", "name": "list_entity_types", "arguments": "d" * LIMIT}]}
            ),
            "script: " + refusal("response 4", LIMIT + len("x") + len("list_entity_types")),
        ),
    ],
    ids=["answer", "answer in two-byte characters", "answer of 10 MB", "script answer", "script call"],
)
def test_a_case_file_a_run_could_never_play_is_refused_at_import(runner, database, exported, change, problem):
    path, case = exported
    assert len(case["script"]) == 4  # the last one answers
    path.write_text(json.dumps(change(case)))
    before = database_state(database)
    result = runner.invoke(args=["import-cases", str(path.parent)])
    assert result.exit_code == 2
    assert f"Nothing was imported:\n  bundles.big.json: {problem}" in result.output
    assert database_state(database) == before


@pytest.mark.parametrize(
    "change",
    [
        lambda case: with_answer(case, "a" * LIMIT),
        lambda case: with_answer(case, "a" * (LIMIT + 1), stop_reason="return_directly"),
    ],
    ids=["answer at the limit", "a tool's output returned directly"],
)
def test_a_case_file_within_the_bounds_is_imported(runner, database, exported, change):
    path, case = exported
    path.write_text(json.dumps(change(case)))
    result = runner.invoke(args=["import-cases", str(path.parent)])
    assert result.exit_code == 0, result.output[:500]
    assert len(case_store.list_cases(database)) == 1
