"""Live runs in the browser, against a slow model (about a second a response, a real HTTP server configured as a
provider connection): each round on the page as soon as its response is handled, the clock running, Stop in the
middle of a step, and a run whose server was killed shown as interrupted after a restart and finished by Resume."""

import json
import re

import pytest
from playwright.sync_api import expect

from tests.e2e.run_page import fact, round_section, run_below_its_heading, start_run
from tests.e2e.slow_model import API_KEY_VARIABLE, slow_model
from tests.live_http import MAKE_RUN, AppProcess

pytestmark = pytest.mark.e2e

ANSWER = "Content has the bundles Article and Basic page."
SCRIPT = [
    {"content": "Which entity types are there?", "tool_calls": [{"name": "list_entity_types", "arguments": {}}]},
    {
        "content": "The bundles of content, then.",
        "tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "node"}}],
    },
    {"content": ANSWER},
]
SLOW = 15_000  # ms: a second a response, on a machine that may be busy
# When each round's section appears on the page (Date.now(), per round number): the first time it is seen.
WATCH_ROUNDS = """
window.roundsSeen = {};
new MutationObserver(() => {
  for (const heading of document.querySelectorAll(".rounds section.round > h3")) {
    const number = heading.id.replace(/^round-(\\d+)-heading$/, "$1");
    if (!(number in window.roundsSeen)) window.roundsSeen[number] = Date.now();
  }
}).observe(document, {subtree: true, childList: true});
"""


def slow_agent(provider_id, script=SCRIPT):
    return {
        "label": "Slow live agent",
        "provider": provider_id,
        "tools": {"list_entity_types": {}, "list_bundles": {}},
        "script": script,
    }


def answer_region(page):
    return page.get_by_role("region", name="Answer", exact=True)


def test_each_round_shows_as_soon_as_its_response_is_handled_with_a_clock_running(
    page, new_agent, suffix, live_server, monkeypatch
):
    provider_id = f"slow_{suffix}"
    with slow_model(live_server.app.config["DATABASE"], provider_id, SCRIPT, monkeypatch=monkeypatch) as model:
        agent_id = new_agent("e2e_live", slow_agent(provider_id))
        page.add_init_script(WATCH_ROUNDS)
        page.goto(f"/agents/{agent_id}/run")
        start_run(page, "Which bundles does content have?")

        clock = page.locator(".run-state .elapsed")
        expect(clock).to_be_visible(timeout=SLOW)
        first_reading = clock.inner_text()
        expect(clock).not_to_have_text(first_reading, timeout=SLOW)  # it counts on by itself
        expect(round_section(page, 1)).to_be_visible(timeout=SLOW)
        expect(round_section(page, 1)).to_contain_text("list_entity_types")
        expect(round_section(page, 2)).to_have_count(0)
        expect(answer_region(page)).to_contain_text("Not yet: the run has not ended.")

        expect(answer_region(page)).to_contain_text(ANSWER, timeout=SLOW * 2)
        expect(fact(page, "Stop reason")).to_have_text("Answered")
        expect(page.locator(".run-state")).to_have_count(0)
        seen = page.evaluate("window.roundsSeen")

    latencies = [seen[str(number)] / 1000 - sent for number, sent in enumerate(model.sent, start=1)]
    print(f"\nresponse → round on the page, per round (s): {', '.join(f'{latency:.3f}' for latency in latencies)}")
    assert len(latencies) == 3
    assert all(0 < latency < 0.5 for latency in latencies), latencies


def test_the_finished_live_page_reads_as_the_run_s_permanent_page(page, new_agent, suffix, live_server, monkeypatch):
    provider_id = f"slow_{suffix}"
    with slow_model(live_server.app.config["DATABASE"], provider_id, SCRIPT, delay=0.2, monkeypatch=monkeypatch):
        agent_id = new_agent("e2e_live", slow_agent(provider_id))
        page.goto(f"/agents/{agent_id}/run")
        start_run(page, "Which bundles does content have?")
        expect(answer_region(page)).to_contain_text(ANSWER, timeout=SLOW)
        live = run_below_its_heading(page).all_inner_texts()
        page.get_by_role("link", name=re.compile(r"^Run #\d+$")).click()
        expect(page).to_have_url(re.compile(r"/runs/\d+$"))
        # The same text below the heading, laid out by the stylesheet (inner text follows the CSS), once it loads.
        expect(run_below_its_heading(page)).to_have_text(live, use_inner_text=True)


def test_stop_in_the_middle_of_a_step_ends_the_run_once_that_step_is_done(
    page, new_agent, suffix, live_server, monkeypatch
):
    provider_id = f"slow_{suffix}"
    with slow_model(
        live_server.app.config["DATABASE"], provider_id, SCRIPT, delay=0.2, monkeypatch=monkeypatch
    ) as model:
        model.hold(from_request=2)
        agent_id = new_agent("e2e_stop", slow_agent(provider_id))
        page.goto(f"/agents/{agent_id}/run")
        start_run(page, "Which bundles does content have?")
        expect(round_section(page, 1)).to_be_visible(timeout=SLOW)
        model.wait_for_request(2)  # Stop comes in the middle of step 2

        page.get_by_role("button", name="Stop").click()
        expect(page.get_by_text("Stopping after the current step…")).to_be_visible(timeout=SLOW)
        model.release()

        expect(fact(page, "Stop reason")).to_have_text("Stopped by a person", timeout=SLOW)
        second = round_section(page, 2)
        expect(second).to_contain_text("1 call executed")  # the response that had come in was carried out
        expect(second.get_by_role("row").filter(has_text="call_2_1")).to_contain_text('"article"')
        expect(round_section(page, 3)).to_have_count(0)
        expect(answer_region(page)).to_contain_text("None: a person stopped the run.")
        assert len(model.requests) == 2


def serve(database, log_name):
    """The app in a process of its own, as `make run` serves it: (process, base URL)."""
    process = AppProcess(MAKE_RUN, database, database.parent / log_name, TOOLGATE_RUN_LEASE_SECONDS="1")
    return process, process.ready()


def test_a_run_whose_server_was_killed_reads_interrupted_after_a_restart_and_resume_finishes_it(
    page, tmp_path, monkeypatch
):
    database = tmp_path / "toolgate.db"
    monkeypatch.setenv(API_KEY_VARIABLE, "not-a-real-key")  # before the app's process starts: it reads it
    server, base = serve(database, "first.log")
    try:
        with slow_model(database, "slow", SCRIPT, delay=0.2, timeout=2, monkeypatch=monkeypatch) as model:
            model.hold(from_request=2)
            agent = {**slow_agent("slow"), "label": "Killed mid-run"}
            response = page.request.put(
                f"{base}/api/agents/killed", data=json.dumps(agent), headers={"Content-Type": "application/json"}
            )
            assert response.status == 201, response.text()
            page.goto(f"{base}/agents/killed/run")
            start_run(page, "Which bundles does content have?")
            expect(round_section(page, 1)).to_be_visible(timeout=SLOW)
            run_url = page.get_by_role("link", name=re.compile(r"^Run #\d+$")).get_attribute("href")
            model.wait_for_request(2)  # step 2 has begun, not only been asked for by the page

            server.kill()  # in the middle of step 2: its response is held
            server.stop()
            model.release()
            server, base = serve(database, "restarted.log")

            page.goto(f"{base}{run_url}")
            expect(fact(page, "Stop reason")).to_have_text("Interrupted", timeout=SLOW)
            expect(round_section(page, 1)).to_contain_text("list_entity_types")
            expect(answer_region(page)).to_contain_text("Not yet")
            page.get_by_role("button", name="Resume").click()

            expect(answer_region(page)).to_contain_text(ANSWER, timeout=SLOW)
            expect(round_section(page, 2)).to_contain_text('"article"')
            expect(fact(page, "Stop reason")).to_have_text("Answered")
            run = page.request.get(f"{base}/api{run_url}").json()
            assert run["state"] == "finished" and len(run["rounds"]) == 3
    finally:
        server.stop()
