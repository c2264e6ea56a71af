"""Approvals through the API and the pages: a run that waits, `POST /api/runs/<id>/decisions` with its bad cases,
and the plain forms (no JavaScript) and their htmx updates."""

import re
import time
from datetime import UTC, datetime

import pytest

from engine.cases import case_from_run, check_case
from engine.run_diff import compare_runs
from store import runs as run_store
from tests.html_reader import form_fields, html_of
from tests.run_panel import read_run_panel

pytestmark = pytest.mark.both_engines


REJECTED_BY_REVIEWER = "Error: A reviewer rejected this tool call."
HTMX = {"HX-Request": "true"}
AGENT = {
    "label": "Approvals",
    "tools": {"list_bundles": {"require_approval": True}, "list_entity_types": {}},
    "script": [
        {
            "tool_calls": [
                {"name": "list_bundles", "arguments": {"entity_type": "node"}},
                {"name": "list_bundles", "arguments": {"entity_type": "media"}},
                {"name": "list_entity_types", "arguments": {}},
            ]
        },
        {"content": "Done."},
    ],
}


@pytest.fixture
def waiting_run(client):
    assert client.put("/api/agents/approvals", json=AGENT).status_code == 201
    response = client.post("/api/agents/approvals/runs", json={"message": "Which bundles?"})
    assert response.status_code == 201
    return response.get_json()


def decide(client, run_id, decisions, **body):
    return client.post(f"/api/runs/{run_id}/decisions", json={"decisions": decisions, **body})


def tool_messages(run):
    return {message["tool_call_id"]: message["content"] for message in run["messages"] if message["role"] == "tool"}


# --- The API ---------------------------------------------------------------------------------------------------


def test_a_run_with_a_call_that_requires_approval_comes_back_waiting_with_nothing_run(waiting_run):
    assert waiting_run["state"] == "awaiting_approval" and waiting_run["stop_reason"] is None
    assert [(call["id"], call["status"]) for call in waiting_run["pending_round"]["calls"]] == [
        ("call_1_1", "awaiting_approval"),
        ("call_1_2", "awaiting_approval"),
        ("call_1_3", "allowed"),
    ]
    assert tool_messages(waiting_run) == {} and waiting_run["tool_calls"] == 0


def test_decisions_run_the_round_and_the_run_goes_on_to_its_end(client, waiting_run):
    response = decide(
        client,
        waiting_run["id"],
        {"call_1_1": {"approve": True, "arguments": {"entity_type": "user"}}, "call_1_2": {"reject": "Not media."}},
    )

    assert response.status_code == 200
    run = response.get_json()
    assert (run["state"], run["stop_reason"], run["answer"]) == ("finished", "answered", "Done.")
    messages = tool_messages(run)
    assert '"user"' in messages["call_1_1"] and messages["call_1_2"] == f"{REJECTED_BY_REVIEWER} Not media."
    assert '"node"' in messages["call_1_3"]  # the free call ran as usual
    assert [call.get("review", {}).get("decision") for call in run["rounds"][0]["calls"]] == [
        "approved",
        "rejected",
        None,
    ]
    assert client.get(f"/api/runs/{waiting_run['id']}").get_json() == run


@pytest.mark.parametrize(
    ("body", "status", "field", "message"),
    [
        ({}, 400, "decisions", "is required"),
        ({"decisions": [], "why": 1}, 400, "why", "is not a field of this request"),
        ({"decisions": {"call_1_1": {"approve": True}}}, 400, "decisions.call_1_2", "needs a decision"),
        ({"decisions": {"call_9": {"approve": True}}}, 400, "decisions.call_9", "is not a call awaiting approval"),
        ({"decisions": {"call_1_3": {"approve": True}}}, 400, "decisions.call_1_3", "is not a call awaiting approval"),
        ({"decisions": {"call_1_1": {"approve": "yes"}}}, 400, "decisions.call_1_1", "must be"),
        (
            {"decisions": {"call_1_1": {"approve": True, "arguments": {"entity_type": 3}}, "call_1_2": {"reject": ""}}},
            400,
            "decisions.call_1_1.arguments",
            "Error: invalid arguments for list_bundles: entity_type: 3 is not of type 'string'",
        ),
        ({"decisions": "all"}, 400, "decisions", "must be an object"),
    ],
)
def test_a_bad_decision_is_refused_naming_it_and_the_run_still_waits(client, waiting_run, body, status, field, message):
    response = client.post(f"/api/runs/{waiting_run['id']}/decisions", json=body)

    assert response.status_code == status
    assert response.get_json()["field"] == field and message in response.get_json()["error"]
    assert client.get(f"/api/runs/{waiting_run['id']}").get_json()["state"] == "awaiting_approval"


def test_decisions_for_a_run_that_does_not_wait_are_a_conflict(client, waiting_run):
    decide(client, waiting_run["id"], {"call_1_1": {"approve": True}, "call_1_2": {"approve": True}})

    response = decide(client, waiting_run["id"], {"call_1_1": {"approve": True}})

    assert response.status_code == 409
    assert response.get_json()["error"] == "state: The run has already ended."


def test_decisions_for_an_unknown_run_or_not_as_json_are_refused(client):
    assert client.post("/api/runs/99/decisions", json={"decisions": {}}).status_code == 404
    response = client.post("/api/runs/99/decisions", data="decisions")
    assert response.status_code == 415 and response.get_json()["field"] == "body"


# --- The pages -------------------------------------------------------------------------------------------------


def run_page(client, run_id):
    return html_of(client.get(f"/runs/{run_id}"))


def post_decision(client, run_id, call_id, decision, headers=None, **fields):
    data = {"call_id": call_id, "decision": decision, **fields}
    return client.post(f"/runs/{run_id}/decisions", data=data, headers=headers or {})


def test_without_javascript_the_run_page_shows_each_waiting_call_with_its_three_choices(client):
    client.put("/api/agents/approvals", json=AGENT)
    fields = {**form_fields(html_of(client.get("/agents/approvals/run"))), "message": "Which bundles?"}

    page = html_of(client.post("/agents/approvals/run", data=fields))

    assert page.count('<form method="post" action="/runs/1/decisions"') == 6  # three per waiting call
    assert page.count('<button type="submit" name="decision" value="approve">Approve</button>') == 2
    assert page.count('value="reject" class="secondary danger">Reject</button>') == 2
    assert 'id="arguments-call_1_1"' in page and "Approve with these arguments" in page
    assert "Runs once every call awaiting approval is decided." in page  # list_entity_types, free
    assert '<span class="state-badge state-awaiting_approval">Awaiting approval</span>' in page


def test_plain_forms_decide_one_call_at_a_time_and_the_last_one_runs_the_round(client, waiting_run):
    run_id = waiting_run["id"]

    first = post_decision(client, run_id, "call_1_1", "approve")

    assert first.status_code == 303 and first.headers["Location"] == f"/runs/{run_id}#run-{run_id}-pending"
    page = run_page(client, run_id)
    assert "Approved by a reviewer" in page
    assert page.count(f'<form method="post" action="/runs/{run_id}/decisions"') == 3  # call_1_2's only
    assert client.get(f"/api/runs/{run_id}").get_json()["state"] == "awaiting_approval"

    last = post_decision(client, run_id, "call_1_2", "reject", reason="Not media.")

    assert last.status_code == 303 and last.headers["Location"] == f"/runs/{run_id}"
    page = run_page(client, run_id)
    assert f"{REJECTED_BY_REVIEWER} Not media." in page and page.count("Rejected by a reviewer") == 1
    assert read_run_panel(page).facts["Stop reason"] == "Answered"


def test_edited_arguments_that_are_not_json_or_do_not_fit_are_shown_beside_the_box_and_kept(client, waiting_run):
    run_id = waiting_run["id"]

    not_json = post_decision(client, run_id, "call_1_1", "edit", arguments='{"entity_type": ')
    wrong = post_decision(client, run_id, "call_1_1", "edit", arguments='{"entity_type": 3}')

    assert not_json.status_code == 400 and "The arguments are not valid JSON" in html_of(not_json)
    assert "{&#34;entity_type&#34;: </textarea>" in html_of(not_json)
    assert wrong.status_code == 400
    assert re.search(r'id="arguments-call_1_1-errors"><li>Error: invalid arguments for list_bundles', html_of(wrong))
    assert client.get(f"/api/runs/{run_id}").get_json()["pending_round"]["calls"][0].get("review") is None


def test_a_decision_posted_with_htmx_swaps_the_waiting_round_and_then_hands_on_the_next_step(client, waiting_run):
    run_id = waiting_run["id"]

    waiting = html_of(post_decision(client, run_id, "call_1_1", "approve", headers=HTMX, after="0"))
    decided = html_of(post_decision(client, run_id, "call_1_2", "reject", headers=HTMX, after="0"))

    assert f'<div class="pending-round" id="run-{run_id}-pending" hx-swap-oob="true">' in waiting
    assert "Awaiting approval: 1 of 2 calls to decide" in waiting
    assert f'hx-post="/runs/{run_id}/step" hx-trigger="load"' in decided
    assert f'<div hx-swap-oob="beforeend:#run-{run_id}-rounds">' in decided and "Rejected by a reviewer" in decided


def test_a_decision_on_a_run_that_does_not_wait_says_so(client, waiting_run):
    decide(client, waiting_run["id"], {"call_1_1": {"approve": True}, "call_1_2": {"approve": True}})

    response = post_decision(client, waiting_run["id"], "call_1_1", "approve")

    assert response.status_code == 303
    assert "The run has already ended." in html_of(client.get(response.headers["Location"]))


def test_a_posted_decision_that_is_none_of_the_three_is_refused(client, waiting_run):
    response = post_decision(client, waiting_run["id"], "call_1_1", "maybe")

    assert response.status_code == 400 and "choose Approve, Reject or Approve with these arguments" in html_of(response)


def test_the_agent_form_saves_require_approval_and_the_agent_page_says_so(client, actions):
    actions.create(label="Reviewed", tools={"list_bundles": {"require_approval": True}})

    assert actions.get("reviewed")["tools"]["list_bundles"]["require_approval"] is True
    assert "Requires approval" in html_of(client.get("/agents/reviewed"))
    assert 'name="tools-list_bundles-require_approval"' in html_of(client.get("/agents/reviewed/edit"))


def test_a_run_may_switch_require_approval_on_for_itself(client):
    client.put("/api/agents/free", json={**AGENT, "tools": {"list_bundles": {}, "list_entity_types": {}}})

    run = client.post(
        "/api/agents/free/runs",
        json={"message": "Which bundles?", "overrides": {"tools": {"list_entity_types": {"require_approval": True}}}},
    ).get_json()

    assert run["state"] == "awaiting_approval"
    assert [call["status"] for call in run["pending_round"]["calls"]] == ["allowed", "allowed", "awaiting_approval"]
    assert client.get("/api/agents/free").get_json()["tools"]["list_entity_types"]["require_approval"] is False


def test_require_approval_that_is_not_true_or_false_is_refused_naming_it(client):
    response = client.put("/api/agents/bad", json={**AGENT, "tools": {"list_bundles": {"require_approval": "yes"}}})

    assert response.status_code == 400
    assert response.get_json()["errors"] == {"tools.list_bundles.require_approval": "must be true or false"}


def test_the_run_page_s_settings_may_require_approval_for_one_run(client):
    client.put("/api/agents/free", json={**AGENT, "tools": {"list_bundles": {}, "list_entity_types": {}}})
    fields = {**form_fields(html_of(client.get("/agents/free/run"))), "message": "Which bundles?"}

    page = html_of(client.post("/agents/free/run", data={**fields, "tools-list_bundles-require_approval": "y"}))

    assert "Awaiting approval: 2 of 2 calls to decide" in page
    assert "&#34;require_approval&#34;: true" in page  # recorded among the run's overrides


# --- When each decision was taken ------------------------------------------------------------------------------


def shown_time(seconds):
    """How the round shows when a decision was taken, beside who took it."""
    when = datetime.fromtimestamp(seconds, UTC)
    stored, shown = when.isoformat(timespec="seconds"), when.strftime("%Y-%m-%d %H:%M:%S UTC")
    return f'<span class="decided-at">· <time datetime="{stored}">{shown}</time></span>'


def decided_times(run):
    return {call["id"]: call.get("review", {}).get("decided_at") for call in run["rounds"][0]["calls"]}


def test_each_decision_records_when_it_was_taken_and_the_run_json_and_page_show_it(client, waiting_run):
    before = time.time()
    run = decide(client, waiting_run["id"], {"call_1_1": {"approve": True}, "call_1_2": {"reject": "No."}}).get_json()
    after = time.time()

    times = decided_times(run)
    assert before - 0.001 <= times["call_1_1"] == times["call_1_2"] <= after
    assert times["call_1_3"] is None  # the free call had no decision
    assert client.get(f"/api/runs/{waiting_run['id']}").get_json() == run
    reviews = re.findall(r'data-testid="call-review">(.*?)</div>', run_page(client, waiting_run["id"]))
    assert reviews == [
        f"Approved by a reviewer {shown_time(times['call_1_1'])}",
        f"Rejected by a reviewer: No. {shown_time(times['call_1_2'])}",
    ]


def test_a_decision_taken_on_the_page_records_its_own_time_and_a_refused_one_changes_none(client, waiting_run):
    run_id = waiting_run["id"]
    before = time.time()
    post_decision(client, run_id, "call_1_1", "approve")
    between = time.time()
    post_decision(client, run_id, "call_1_2", "reject", reason="Not media.")
    after = time.time()

    times = decided_times(client.get(f"/api/runs/{run_id}").get_json())
    assert before - 0.001 <= times["call_1_1"] <= between + 0.001 and between - 0.001 <= times["call_1_2"] <= after
    post_decision(client, run_id, "call_1_1", "approve")  # the run has ended: refused, nothing changes
    assert decided_times(client.get(f"/api/runs/{run_id}").get_json()) == times


def test_the_time_of_a_decision_shows_while_the_round_still_waits_for_the_others(client, waiting_run):
    run_id = waiting_run["id"]
    post_decision(client, run_id, "call_1_1", "approve")

    pending = client.get(f"/api/runs/{run_id}").get_json()["pending_round"]["calls"]
    [decision] = re.findall(r'data-testid="call-decision">(.*?)</p>', run_page(client, run_id))
    assert decision == f"Approved by a reviewer {shown_time(pending[0]['review']['decided_at'])}"


def test_a_client_cannot_send_when_a_decision_was_taken_the_server_stamps_it(client, waiting_run):
    response = decide(
        client, waiting_run["id"], {"call_1_1": {"approve": True, "decided_at": 1}, "call_1_2": {"reject": ""}}
    )

    assert response.status_code == 400 and response.get_json()["field"] == "decisions.call_1_1"
    assert client.get(f"/api/runs/{waiting_run['id']}").get_json()["state"] == "awaiting_approval"


def test_a_run_stored_before_decisions_had_a_time_still_renders_and_loads(client, database, waiting_run):
    run = decide(client, waiting_run["id"], {"call_1_1": {"approve": True}, "call_1_2": {"reject": "No."}}).get_json()
    for call in run["rounds"][0]["calls"]:
        if "review" in call:
            del call["review"]["decided_at"]
    old = run_store.save_run(database, {key: value for key, value in run.items() if key not in ("id", "created_at")})

    assert client.get(f"/api/runs/{old['id']}").get_json()["rounds"] == run["rounds"]
    reviews = re.findall(r'data-testid="call-review">(.*?)</div>', run_page(client, old["id"]))
    assert reviews == ["Approved by a reviewer", "Rejected by a reviewer: No."]


def test_two_runs_decided_at_different_times_compare_equal_and_a_case_of_one_passes(client, waiting_run):
    decisions = {"call_1_1": {"approve": True}, "call_1_2": {"reject": "No."}}
    first = decide(client, waiting_run["id"], decisions).get_json()
    second_id = client.post("/api/agents/approvals/runs", json={"message": "Which bundles?"}).get_json()["id"]
    time.sleep(0.01)
    second = decide(client, second_id, decisions).get_json()
    assert decided_times(first) != decided_times(second)

    assert compare_runs(first, second)["identical"]
    agent = client.get("/api/agents/approvals").get_json()
    assert check_case(agent, case_from_run(second, "Bundles"))["passed"] is True
