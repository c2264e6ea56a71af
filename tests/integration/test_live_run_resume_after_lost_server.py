"""What the live page asks of the server once it answered again after losing it (static/live_run.js): the step, marked
as a person's Resume. A run whose server died in the middle of a step is held by that step until its lease passes:
meanwhile the page is asked to try again, still as a Resume; once the lease has passed (the run reads interrupted), the
run is resumed and the step taken. Without a Resume, an interrupted run waits for one, as before."""

import re
import time

import pytest

from store import runs as run_store
from tests.integration.test_live_runs import HTMX, api_run, html_of, next_hop, start_live, step
from tests.run_scenarios import bundles_agent


@pytest.fixture
def bundles(client):
    assert client.put("/api/agents/bundles", json=bundles_agent()).status_code == 201


def resume_step(client, run_id, after):
    return client.post(f"/runs/{run_id}/step", data={"after": after, "resume": "1"}, headers=HTMX)


def test_a_resume_while_the_dead_step_still_holds_the_run_asks_again_as_a_resume(client, bundles, database):
    run_id, _html = start_live(client)
    step(client, run_id, after=0)
    assert run_store.claim_run(database, run_id, "step", time.time() + 60)  # the step the dead server was taking

    hop = next_hop(html_of(resume_step(client, run_id, after=1)), run_id)

    assert 'hx-trigger="load delay:1s"' in hop and """hx-vals='{"after": 1, "resume": "1"}'""" in hop
    assert len(api_run(client, run_id)["rounds"]) == 1


def test_a_resume_once_the_dead_step_s_lease_passed_resumes_the_run_and_takes_the_step(client, bundles, database):
    run_id, _html = start_live(client)
    step(client, run_id, after=0)
    assert run_store.claim_run(database, run_id, "step", time.time() - 1)
    assert api_run(client, run_id)["state"] == "interrupted"

    update = html_of(resume_step(client, run_id, after=1))

    run = api_run(client, run_id)
    assert (run["state"], len(run["rounds"])) == ("running", 2)
    assert re.search(r'<section [^>]*data-testid="round"', update)  # round 2, for the page
    assert 'hx-trigger="load"' in next_hop(update, run_id) and "resume" not in next_hop(update, run_id)


def test_without_a_resume_an_interrupted_run_waits_for_one(client, bundles, database):
    run_id, _html = start_live(client)
    step(client, run_id, after=0)
    assert run_store.claim_run(database, run_id, "step", time.time() - 1)

    update = html_of(step(client, run_id, after=1))

    assert "hx-post" not in next_hop(update, run_id) and ">Resume</button>" in update
    assert api_run(client, run_id)["state"] == "interrupted"


def test_the_element_asking_for_the_next_step_says_where_to_ask_whether_the_server_answers(client, bundles):
    run_id, html = start_live(client)
    assert f'data-run-url="/runs/{run_id}"' in next_hop(html, run_id)
