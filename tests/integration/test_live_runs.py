"""Live runs through the app: a run stored when it starts and after every step, one step per htmx request, each
step's fragment exactly the part the run's permanent page renders, Stop, and a run whose process died shown as
interrupted, then resumed from its last round."""

import re
import threading
import time

import pytest

from engine.types import ModelResponse, ToolCall
from services import runs as run_service
from store import agents as agent_store
from store import providers as provider_store
from store import runs as run_store
from tests.database import Database
from tests.doubles import ModelDouble
from tests.html_reader import form_fields, html_of
from tests.live_http import serving
from tests.run_panel import read_run_panel
from tests.run_scenarios import BUNDLES_MESSAGE, bundles_agent

pytestmark = pytest.mark.both_engines


HTMX = {"HX-Request": "true"}


@pytest.fixture
def bundles(client):
    assert client.put("/api/agents/bundles", json=bundles_agent()).status_code == 201


def start_live(client, agent_id="bundles", message=BUNDLES_MESSAGE):
    """Press Run with JavaScript: the run page's form, asking for a live run."""
    fields = {**form_fields(html_of(client.get(f"/agents/{agent_id}/run"))), "message": message, "live": "1"}
    response = client.post(f"/agents/{agent_id}/run", data=fields, headers=HTMX)
    assert response.status_code == 200, html_of(response)
    return int(re.search(r'<article class="run" id="run-(\d+)"', html_of(response)).group(1)), html_of(response)


def step(client, run_id, after):
    return client.post(f"/runs/{run_id}/step", data={"after": after}, headers=HTMX)


def api_run(client, run_id):
    return client.get(f"/api/runs/{run_id}").get_json()


def without_latency(rounds):
    """The rounds without what the clock decides: each request's latency."""
    return [
        {key: value for key, value in round_.items() if key not in ("latency_ms", "started_at")} for round_ in rounds
    ]


def next_hop(html, run_id):
    """The element that asks for the run's next step, as the page gets it."""
    return re.search(rf'<div id="run-{run_id}-next"[^>]*>', html).group(0)


def round_sections(html):
    """Each round's markup, to compare two renderings whole."""
    return re.findall(r'<section [^>]*data-testid="round">.*?</section>', html, re.S)


def drive(client, run_id):
    """Take steps as the page does until it is told to stop asking; the responses, in order."""
    responses, after = [], 0
    while True:
        response = step(client, run_id, after)
        responses.append(html_of(response))
        after = len(api_run(client, run_id)["rounds"])
        if "hx-post" not in next_hop(responses[-1], run_id):
            return responses


def test_a_live_run_is_stored_as_running_before_its_first_request_then_after_each_round(client, bundles):
    run_id, html = start_live(client)

    started = api_run(client, run_id)
    assert (started["state"], started["stop_reason"], started["rounds"]) == ("running", None, [])
    assert 'hx-post="/runs/1/step" hx-trigger="load"' in next_hop(html, run_id)
    assert "Not yet: the run has not ended." in html

    step(client, run_id, after=0)
    after_round_1 = api_run(client, run_id)
    assert after_round_1["state"] == "running" and after_round_1["stop_reason"] is None
    assert [[call["reason"] for call in round_["calls"]] for round_ in after_round_1["rounds"]] == [
        ["restricted_repeat", "restricted_repeat"]
    ]
    listed = client.get("/runs").get_data(as_text=True)
    assert '<span class="stop-badge stop-running">Running</span>' in listed

    drive(client, run_id)
    finished = api_run(client, run_id)
    assert finished["state"] == "finished" and finished["stop_reason"] == "answered"
    assert len(finished["rounds"]) == 4
    sync = client.post("/api/agents/bundles/runs", json={"message": BUNDLES_MESSAGE}).get_json()
    assert without_latency(finished["rounds"]) == without_latency(sync["rounds"])
    assert finished["messages"] == sync["messages"]


def test_each_step_s_log_entries_are_stored_once(client, bundles, database):
    run_id, _html = start_live(client)
    drive(client, run_id)

    entries = list(database["log"].rows_where("run_id = :run_id", {"run_id": run_id}))
    assert [entry["kind"] for entry in entries] == ["policy_violation"]


def test_a_step_returns_its_round_exactly_as_the_permanent_page_renders_it(client, bundles):
    run_id, _html = start_live(client)
    responses = drive(client, run_id)
    permalink = html_of(client.get(f"/runs/{run_id}"))

    steps = [section for response in responses for section in round_sections(response)]
    assert steps == round_sections(permalink) and len(steps) == 4
    header = re.search(r'<header class="run-header.*?</header>', responses[-1], re.S).group(0)
    assert header.replace(' hx-swap-oob="true"', "") in permalink


def test_the_permanent_page_of_a_running_run_takes_its_next_step_when_nobody_else_does(client, bundles):
    run_id, _html = start_live(client)
    step(client, run_id, after=0)  # then the page that drove it went away

    page = html_of(client.get(f"/runs/{run_id}"))

    assert f'hx-post="/runs/{run_id}/step" hx-trigger="load" hx-swap="none" hx-vals=\'{{"after": 1}}\'' in page
    drive(client, run_id)
    assert api_run(client, run_id)["stop_reason"] == "answered"


def test_a_step_while_another_request_holds_the_run_takes_none_and_asks_again_later(app, client, bundles, database):
    run_id, _html = start_live(client)
    assert run_store.claim_run(database, run_id, "step", time.time() + 60)  # another request is stepping it

    response = step(client, run_id, after=0)

    assert response.status_code == 200
    assert f'hx-post="/runs/{run_id}/step" hx-trigger="load delay:1s"' in next_hop(html_of(response), run_id)
    assert api_run(client, run_id)["rounds"] == []
    with pytest.raises(run_service.RunConflict, match="Another request is taking this run's next step"):
        run_service.step_stored_run(app.config["DATABASE_URL"], run_id)


def test_a_step_on_a_run_that_has_ended_says_so_and_asks_for_nothing(client, bundles):
    run_id, _html = start_live(client)
    drive(client, run_id)

    response = step(client, run_id, after=4)

    assert response.status_code == 200
    assert "hx-post" not in next_hop(html_of(response), run_id) and not round_sections(html_of(response))


# --- Stop ------------------------------------------------------------------------------------------------------


def test_stop_between_two_steps_ends_the_run_at_once_with_its_rounds(client, bundles):
    run_id, _html = start_live(client)
    step(client, run_id, after=0)

    response = client.post(f"/runs/{run_id}/stop")

    assert response.status_code == 303 and response.headers["Location"] == f"/runs/{run_id}"
    run = api_run(client, run_id)
    assert (run["state"], run["stop_reason"], len(run["rounds"])) == ("finished", "stopped", 1)
    panel = read_run_panel(html_of(client.get(f"/runs/{run_id}")))
    assert panel.facts["Stop reason"] == "Stopped by a person"
    assert panel.answer == "None: a person stopped the run."


class StopWhileAnswering:
    """A model that, while it answers, gets Stop pressed from another request (its own database connection)."""

    def __init__(self, database_path, run_id):
        self.database_path, self.run_id = database_path, run_id

    def complete(self, messages, tools=None, parallel_tool_calls=None):
        other = Database(self.database_path)
        try:
            still_running = run_service.stop_stored_run(other, self.run_id)
        finally:
            other.close()
        assert still_running["state"] == "running" and still_running["stop_requested"]
        call = ToolCall("call_1_1", "list_entity_types", "{}")
        return ModelResponse(content=None, tool_calls=(call,))


def test_stop_during_a_step_ends_the_run_as_that_step_ends_with_every_call_answered(app, client, database):
    client.put("/api/agents/types", json={"label": "Types", "tools": {"list_entity_types": {}}})
    run_id, _html = start_live(client, "types", "Which entity types are there?")

    url = app.config["DATABASE_URL"]
    run = run_service.step_stored_run(url, run_id, model=StopWhileAnswering(url, run_id))

    assert (run["state"], run["stop_reason"]) == ("finished", "stopped")
    assert [call["status"] for call in run["rounds"][0]["calls"]] == ["executed"]
    assert [message["tool_call_id"] for message in run["messages"] if message["role"] == "tool"] == ["call_1_1"]


def test_stop_on_a_run_that_has_ended_says_so(client, bundles):
    run_id, _html = start_live(client)
    drive(client, run_id)

    response = client.post(f"/runs/{run_id}/stop", follow_redirects=True)

    assert "The run has already ended." in html_of(response)


def test_stop_with_htmx_swaps_the_stopped_run_in(client, bundles):
    run_id, _html = start_live(client)
    step(client, run_id, after=0)

    update = html_of(client.post(f"/runs/{run_id}/stop", data={"after": 1}, headers=HTMX))

    assert "Stopped by a person" in update and "hx-post" not in next_hop(update, run_id)
    assert not round_sections(update)  # the page has round 1 already


# --- A run whose process died -----------------------------------------------------------------------------------


def test_a_run_left_midway_reads_interrupted_everywhere_and_resume_goes_on_from_its_last_round(
    client, bundles, database
):
    run_id, _html = start_live(client)
    step(client, run_id, after=0)
    # The process taking step 2 died: it held the run, and its lease has passed.
    assert run_store.claim_run(database, run_id, "step", time.time() - 1)

    assert api_run(client, run_id)["state"] == "interrupted"
    page = html_of(client.get(f"/runs/{run_id}"))
    assert read_run_panel(page).facts["Stop reason"] == "Interrupted" and ">Resume</button>" in page
    assert len(round_sections(page)) == 1
    assert '<span class="stop-badge stop-interrupted">Interrupted</span>' in html_of(client.get("/runs"))
    assert client.get("/api/runs").get_json()["runs"][0]["state"] == "interrupted"

    response = client.post(f"/runs/{run_id}/resume")

    assert response.status_code == 303
    run = api_run(client, run_id)
    assert (run["state"], run["stop_reason"], len(run["rounds"])) == ("finished", "answered", 4)
    sync = client.post("/api/agents/bundles/runs", json={"message": BUNDLES_MESSAGE}).get_json()
    assert without_latency(run["rounds"]) == without_latency(sync["rounds"])


def test_resume_with_htmx_hands_the_page_the_next_step(client, bundles, database):
    run_id, _html = start_live(client)
    database.execute("UPDATE runs SET lease_until = :lease WHERE id = :id", {"lease": time.time() - 1, "id": run_id})

    update = html_of(client.post(f"/runs/{run_id}/resume", data={"after": 0}, headers=HTMX))

    assert f'hx-post="/runs/{run_id}/step" hx-trigger="load"' in next_hop(update, run_id)
    assert api_run(client, run_id)["state"] == "running"


def test_resume_of_a_run_that_is_not_interrupted_is_refused(client, bundles):
    run_id, _html = start_live(client)
    drive(client, run_id)

    response = client.post(f"/runs/{run_id}/resume", follow_redirects=True)

    assert "The run has already ended." in html_of(response)


def test_live_run_pages_of_an_unknown_run_are_not_found(client):
    for response in (
        client.post("/runs/99/step"),
        client.get("/runs/99/live"),
        client.post("/runs/99/stop"),
        client.post("/runs/99/resume"),
        client.post("/runs/99/decisions", data={"call_id": "x", "decision": "approve"}),
    ):
        assert response.status_code == 404


def test_the_live_run_requests_need_their_csrf_token(csrf_app):
    client = csrf_app.test_client()
    client.put("/api/agents/bundles", json=bundles_agent())
    client.post("/api/agents/bundles/runs", json={"message": "Hi"})

    for path in ("/runs/1/step", "/runs/1/stop", "/runs/1/resume", "/runs/1/decisions"):
        response = client.post(path, headers=HTMX)
        assert response.status_code == 400 and "The form could not be sent" in html_of(response)


def test_a_step_holds_its_run_for_its_models_timeout_plus_the_lease_so_a_slow_step_is_not_taken_over(app, database):
    """The lease alone (1 s here) would let the run read "interrupted" while its model is still answering within
    its 30 s timeout, and another request could resume it and step it a second time."""
    model = ModelDouble("Late.")
    model.hold(from_request=1)  # it answers only when released
    with serving(model) as url:
        provider_store.create_provider(
            database,
            {
                "id": "slow",
                "label": "Slow",
                "base_url": f"{url}/v1",
                "api_key_env": "",
                "timeout": 30,
                "max_retries": 0,
            },
        )
        agent_store.save_agent(database, {"id": "waits", "label": "Waits", "provider": "slow", "model": "m"}, [])
        run_id = run_service.start_stored_run(database, "waits", "Hi", source="api", lease_seconds=1)
        stepping = threading.Thread(
            target=lambda: run_service.step_stored_run(app.config["DATABASE_URL"], run_id, lease_seconds=1)
        )
        stepping.start()
        try:
            model.wait_for_request(1, timeout=10)
            model.released.wait(1.5)  # past the lease, well within the model's timeout
            assert run_store.get_run(database, run_id)["state"] == "running"
            with pytest.raises(run_service.RunConflict, match="not interrupted"):
                run_service.resume_stored_run(database, run_id, lease_seconds=1)
        finally:
            model.release()
            stepping.join(10)
    assert run_store.get_run(database, run_id)["answer"] == "Late."
