"""Regression cases on the pages: save a run as a case, the case page (rename, untick expectations), check one
case or all of an agent's, and what a failing case shows."""

import re

import httpx2
import pytest

from store import cases as case_store
from store import providers as provider_store
from tests.doubles import ModelDouble, completion
from tests.html_reader import form_fields, text_of
from tests.run_scenarios import BUNDLES_ANSWER, BUNDLES_MESSAGE, bundles_agent

pytestmark = pytest.mark.both_engines


@pytest.fixture
def bundles(client):
    assert client.put("/api/agents/bundles", json=bundles_agent()).status_code == 201


@pytest.fixture
def run_id(client, bundles):
    response = client.post("/api/agents/bundles/runs", json={"message": BUNDLES_MESSAGE})
    assert response.status_code == 201
    return response.get_json()["id"]


def save_case(client, run_id, name=""):
    return client.post(f"/runs/{run_id}/case", data={"name": name})


def restriction(client, on):
    agent = client.get("/api/agents/bundles").get_json()
    agent["tools"]["list_bundles"]["restrict_multiple_calls"] = on
    assert client.put("/api/agents/bundles", json=agent).status_code == 200


def test_a_run_page_offers_to_save_the_run_as_a_case(client, run_id):
    page = text_of(client.get(f"/runs/{run_id}"))

    assert "Save as regression case" in page
    assert "Case name Leave empty to name it after the run's message." in page
    assert "Checking the case later replays that script against the agent as it is then." in page


def test_saving_a_run_stores_a_case_of_its_agent_and_shows_it(client, run_id, database):
    response = save_case(client, run_id, name="Both listings rejected")

    assert response.status_code == 303
    case = case_store.list_cases(database, "bundles")[0]
    assert response.headers["Location"] == f"/cases/{case['id']}"
    page = text_of(client.get(response.headers["Location"]))
    assert 'Saved the case "Both listings rejected".' in page
    assert "Recorded from run #1" in page
    assert BUNDLES_MESSAGE in page and BUNDLES_ANSWER in page
    assert page.count("Restricted tool called more than once") == 2
    assert "Not checked yet" in page
    assert case["source_run_id"] == run_id and case["overrides"] == {}


def test_a_case_without_a_name_is_named_after_the_run_and_names_never_repeat(client, run_id, database):
    save_case(client, run_id)
    save_case(client, run_id)

    names = [case["name"] for case in case_store.list_cases(database, "bundles")]
    assert names == [f"Run #1: {BUNDLES_MESSAGE[:59]}…", f"Run #1: {BUNDLES_MESSAGE[:59]}… (2)"]


def test_a_name_already_used_by_the_agent_is_refused_and_nothing_is_stored(client, run_id, database):
    save_case(client, run_id, name="Mine")

    response = save_case(client, run_id, name="Mine")

    assert response.status_code == 303 and response.headers["Location"] == f"/runs/{run_id}"
    page = text_of(client.get(response.headers["Location"]))
    assert 'Not saved as a case: name: is already used by another case of the agent "bundles".' in page
    assert len(case_store.list_cases(database, "bundles")) == 1


REMOTE = {
    "id": "remote",
    "label": "Remote",
    "base_url": "https://models.invalid/v1",
    "api_key_env": "REMOTE_API_KEY",
    "default_model": "m",
    "timeout": 5,
}
# What a real model sent: compact JSON in round 1 (two calls of the restricted tool), one call in round 2, then text.
REAL_MODEL_CALLS = [
    [("r1", '{"entity_type":"node"}'), ("r2", '{"entity_type":"taxonomy_term"}')],
    [("r3", '{"entity_type":"node"}')],
]


def real_model_answer(body):
    """A real model's calls, with its own ids and argument spacing, then its answer."""
    assistant_messages = sum(1 for message in body["messages"] if message["role"] == "assistant")
    if assistant_messages < len(REAL_MODEL_CALLS):
        calls = REAL_MODEL_CALLS[assistant_messages]
        return completion(calls=[(call_id, "list_bundles", arguments) for call_id, arguments in calls])
    return completion("Articles, pages and tags.")


@pytest.fixture
def remote_agent(app, client, database):
    app.config["MODEL_ENVIRON"] = {"REMOTE_API_KEY": "secret"}
    app.config["MODEL_TRANSPORT"] = httpx2.WSGITransport(app=ModelDouble(real_model_answer, ignores_tools=True))
    provider_store.create_provider(database, REMOTE)
    client.put("/api/agents/remote_agent", json=bundles_agent(provider="remote", script=[]))


def test_a_real_models_run_becomes_a_case_that_the_scripted_model_replays(client, remote_agent, database):
    run = client.post("/api/agents/remote_agent/runs", json={"message": "Bundles?"}).get_json()
    assert run["rejected_calls"] == 2 and run["answer"] == "Articles, pages and tags."

    case_id = int(save_case(client, run["id"]).headers["Location"].rsplit("/", 1)[1])
    client.post(f"/cases/{case_id}/check")

    case = case_store.get_case(database, case_id)
    sent = [call["arguments"] for item in case["script"] for call in item.get("tool_calls", [])]
    assert sent == [arguments for calls in REAL_MODEL_CALLS for _id, arguments in calls]
    assert case["last_check"]["passed"], case["last_check"]["differences"]


def test_a_run_that_stopped_on_a_provider_error_says_why_it_cannot_become_a_case(app, client, database):
    app.config["MODEL_ENVIRON"] = {}  # the key is missing: the run stops with an error
    provider_store.create_provider(database, REMOTE)
    client.put("/api/agents/remote_agent", json=bundles_agent(provider="remote"))
    run = client.post("/api/agents/remote_agent/runs", json={"message": "Hi"}).get_json()
    assert run["stop_reason"] == "error"

    page = text_of(client.get(f"/runs/{run['id']}"))
    refused = save_case(client, run["id"])

    assert "This run cannot be saved as a regression case: it stopped on a provider error" in page
    assert "Save as regression case" not in page
    assert "Not saved as a case: run: cannot become a case" in text_of(client.get(refused.headers["Location"]))
    assert case_store.list_cases(database) == []


def case_page_form(client, case_id):
    return form_fields(client.get(f"/cases/{case_id}").get_data(as_text=True), "case-form")


def test_the_case_form_renames_and_unticks_expectations(client, run_id, database):
    case_id = save_case(client, run_id, name="Old").headers["Location"].rsplit("/", 1)[1]
    assert case_page_form(client, case_id)["name"] == "Old"
    page = client.get(f"/cases/{case_id}").get_data(as_text=True)
    boxes = 2 + 4 * 3  # the stop reason, the answer, and the status, reason and message of each of the 4 calls
    assert page.count('name="pinned" value=') == page.count("checked>") == boxes

    data = {"name": "New", "pinned": ["stop_reason", "rounds/1/1/status", "rounds/1/2/status"]}
    response = client.post(f"/cases/{case_id}", data=data)

    assert response.status_code == 303
    case = case_store.get_case(database, int(case_id))
    assert case["name"] == "New"
    assert "answer" in case["unpinned"] and "rounds/1/1/message" in case["unpinned"]
    assert "rounds/1/1/status" not in case["unpinned"]
    page = client.get(f"/cases/{case_id}").get_data(as_text=True)
    assert re.search(r'value="answer"(?![^>]*checked)', page) and re.search(r'value="stop_reason" checked', page)


def test_an_empty_name_is_shown_next_to_the_field_and_nothing_changes(client, run_id, database):
    case_id = int(save_case(client, run_id, name="Kept").headers["Location"].rsplit("/", 1)[1])

    response = client.post(f"/cases/{case_id}", data={"name": " ", "pinned": ["answer"]})

    assert response.status_code == 400
    assert "Case name is required." in text_of(response)
    assert case_store.get_case(database, case_id)["name"] == "Kept"
    assert case_store.get_case(database, case_id)["unpinned"] == []


def test_checking_a_case_after_the_restriction_is_turned_off_shows_which_verdicts_changed(client, run_id):
    location = save_case(client, run_id, name="Restricted").headers["Location"]
    case_id = location.rsplit("/", 1)[1]
    assert "Passed" in text_of(client.get(client.post(f"/cases/{case_id}/check").headers["Location"]))

    restriction(client, on=False)
    response = client.post(f"/cases/{case_id}/check")

    assert response.status_code == 303 and response.headers["Location"] == f"{location}#latest-check"
    page = text_of(client.get(location))
    assert "The case failed: see what changed below." in page
    assert "Failed checked" in page and "against revision 2 of the agent" in page
    assert "round 1, call_1_1 (list_bundles): expected rejected (restricted_repeat), got executed" in page
    assert "Round 1 changed" in page and "Round 2 as expected" in page
    assert page.count("Round 1 ") == 1  # each round once, expected and actual side by side


def test_the_agent_page_lists_its_cases_and_check_all_checks_them(client, run_id):
    save_case(client, run_id, name="Restricted")
    assert "Restricted Not checked yet" in text_of(client.get("/agents/bundles"))
    restriction(client, on=False)

    response = client.post("/agents/bundles/cases/check")

    assert response.status_code == 303 and response.headers["Location"] == "/agents/bundles#cases"
    page = text_of(client.get("/agents/bundles"))
    assert "Checked 1 case: 0 passed, 1 failed." in page
    assert "Restricted Failed 2 differences" in page


def test_an_agent_without_cases_says_how_to_make_one(client, bundles):
    page = text_of(client.get("/agents/bundles"))

    assert "No cases yet. Open one of this agent's runs and press Save as regression case" in page
    assert "Check all" not in page


def test_a_case_whose_agent_was_deleted_fails_its_check_with_the_reason(client, run_id, database):
    case_id = int(save_case(client, run_id).headers["Location"].rsplit("/", 1)[1])
    client.delete("/api/agents/bundles")

    page = text_of(client.get(f"/cases/{case_id}"))

    assert "has been deleted: this case cannot be checked" in page
    assert case_store.get_case(database, case_id)["name"]


def test_deleting_a_case_asks_first_then_returns_to_the_agent(client, run_id, database):
    case_id = int(save_case(client, run_id, name="Gone").headers["Location"].rsplit("/", 1)[1])

    assert "Delete Gone ? The regression case and its latest check will be deleted." in text_of(
        client.get(f"/cases/{case_id}/delete")
    )
    response = client.post(f"/cases/{case_id}/delete")

    assert response.status_code == 303 and response.headers["Location"] == "/agents/bundles"
    assert case_store.list_cases(database) == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/cases/99"),
        ("post", "/cases/99"),
        ("post", "/cases/99/check"),
        ("get", "/cases/99/delete"),
        ("post", "/runs/99/case"),
        ("post", "/agents/nobody/cases/check"),
        ("get", "/cases/99999999999999999999"),
    ],
)
def test_an_unknown_case_run_or_agent_is_a_404(client, method, path):
    assert getattr(client, method)(path).status_code == 404


def test_the_case_forms_need_their_csrf_token(csrf_app):
    client = csrf_app.test_client()
    client.put("/api/agents/bundles", json=bundles_agent())
    run = client.post("/api/agents/bundles/runs", json={"message": "Hi"}).get_json()

    assert client.post(f"/runs/{run['id']}/case", data={"name": "x"}).status_code == 400
    assert client.post("/agents/bundles/cases/check").status_code == 400
