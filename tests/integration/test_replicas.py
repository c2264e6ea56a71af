"""Several replicas, one truth: two servers started as `make run` starts one (gunicorn, gevent, two workers each), on
one PostgreSQL database and one secret key, behave as one Toolgate, whichever of them a request reaches."""

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx2
import pytest

from tests.html_reader import form_fields
from tests.live_http import all_at_once, browser, post_form, post_json
from tests.replicas import form, signed_in, token_on, two_replicas
from tests.run_scenarios import BUNDLES_MESSAGE, bundles_agent

WRONG = "Password is not right."
CHAT = "/proxy/proxied/v1/chat/completions"


@pytest.fixture(scope="module")
def replicas(postgresql_template, tmp_path_factory):
    """The base URLs of two replicas on one database."""
    with two_replicas(postgresql_template[0], tmp_path_factory.mktemp("replicas")) as processes:
        yield [process.url for process in processes]


def test_a_login_holds_on_every_replica_and_log_out_on_one_ends_it_on_both(replicas):
    first, second = replicas
    with signed_in(first) as client:
        _log_out_on_the_other(client, first, second)


def _log_out_on_the_other(client, first, second):
    assert client.get(f"{second}/agents").status_code == 200  # the session opened on the first replica
    logged_out = client.post(f"{second}/logout", data={"csrf_token": form(client, f"{second}/agents")})
    assert logged_out.status_code == 303
    assert client.get(f"{first}/agents").status_code == 303  # back to the login page


def test_a_token_made_on_one_replica_opens_the_other_until_revoked_there(replicas):
    first, second = replicas
    with signed_in(first) as person:
        secret = token_on(person)
        with browser(second) as api:
            api.headers["Authorization"] = f"Bearer {secret}"
            assert api.get("/api/agents").status_code == 200
            tokens = person.get(f"{second}/tokens").text
            [token_id] = re.findall(r'href="/tokens/(\d+)/revoke"', tokens)
            revoke = person.post(f"{second}/tokens/{token_id}/revoke", data={"csrf_token": form(person, "/tokens")})
            assert revoke.status_code == 303
            api.base_url = first
            refused = api.get("/api/agents")
            assert refused.status_code == 401 and refused.json()["field"] == "Authorization"


def test_an_agent_saved_on_one_replica_is_what_the_other_runs_and_a_stale_save_is_refused(replicas):
    first, second = replicas
    with signed_in(first) as person:
        with browser(first) as on_first, browser(second) as on_second:
            for api in (on_first, on_second):
                api.headers["Authorization"] = f"Bearer {token_on(person)}"
            saved = post_json(
                on_first, "/api/agents/shared", {"label": "Shared", "script": [{"content": "One."}]}, "PUT"
            )
            assert saved.status_code == 201, saved.text
            assert _proxied_answer(on_second) == "One."  # the second replica keeps what it read of the agent ...
            changed = {**saved.json(), "script": [{"content": "Two."}]}
            assert post_json(on_first, "/api/agents/shared", changed, "PUT").json()["revision"] == 2
            assert post_json(on_second, "/api/agents/shared/runs", {"message": "Hi"}).json()["answer"] == "Two."
            assert _proxied_answer(on_second) == "Two."  # ... until a save on any replica changes it
            stale = post_json(on_second, "/api/agents/shared", {**saved.json(), "label": "Stale"}, "PUT")
            assert stale.status_code == 409


def _proxied_answer(api):
    body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}
    return post_json(api, "/proxy/shared/v1/chat/completions", body).json()["choices"][0]["message"]["content"]


def test_a_proxied_conversation_goes_on_whichever_replica_its_next_request_reaches(replicas):
    first, second = replicas
    with signed_in(first) as person:
        place = {"type": "function", "function": {"name": "place", "parameters": {"type": "object"}}}
        call = {"name": "place", "arguments": {"component": "hero"}}
        agent = {"label": "Proxied", "script": [{"tool_calls": [call]}, {"content": "Placed."}]}
        with browser(first) as api:
            api.headers["Authorization"] = f"Bearer {token_on(person)}"
            assert post_json(api, "/api/agents/proxied", agent, "PUT").status_code == 201
            messages = [{"role": "user", "content": "Place the hero."}]
            asked = post_json(
                api, "/proxy/proxied/v1/chat/completions", {"model": "m", "messages": messages, "tools": [place]}
            )
            assert asked.status_code == 200, asked.text
            assistant = asked.json()["choices"][0]["message"]
            messages += [
                assistant,
                {"role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"], "content": "uuid-1"},
            ]
            api.base_url = second
            answered = post_json(
                api, "/proxy/proxied/v1/chat/completions", {"model": "m", "messages": messages, "tools": [place]}
            )
            assert answered.json()["choices"][0]["message"]["content"] == "Placed."
            assert answered.headers["X-Toolgate-Run"] == asked.headers["X-Toolgate-Run"]  # one run, continued
            run = api.get(f"/api/runs/{asked.headers['X-Toolgate-Run']}").json()
            assert run["stop_reason"] == "answered" and run["answer"] == "Placed."


def test_a_live_run_started_on_one_replica_is_stepped_and_stopped_on_the_other(replicas):
    first, second = replicas
    with signed_in(first) as person, browser(first) as api:
        api.headers["Authorization"] = f"Bearer {token_on(person)}"
        assert post_json(api, "/api/agents/bundles", bundles_agent(), "PUT").status_code == 201
        fields = {**form_fields(person.get("/agents/bundles/run").text), "message": BUNDLES_MESSAGE, "live": "1"}
        started = person.post("/agents/bundles/run", data=fields, headers={"HX-Request": "true"})
        run_id = int(re.search(r'<article class="run" id="run-(\d+)"', started.text).group(1))
        htmx = {"HX-Request": "true", "X-CSRFToken": fields["csrf_token"]}
        stepped = person.post(f"{second}/runs/{run_id}/step", data={"after": 0}, headers=htmx)
        assert stepped.status_code == 200
        assert len(api.get(f"/api/runs/{run_id}").json()["rounds"]) == 1  # the round, read on the first replica

        stopped = person.post(f"{second}/runs/{run_id}/stop", headers={"X-CSRFToken": fields["csrf_token"]})

        assert stopped.status_code == 303
        run = api.get(f"/api/runs/{run_id}").json()
        assert (run["state"], run["stop_reason"], len(run["rounds"])) == ("finished", "stopped", 1)


def test_an_approval_decided_on_one_replica_resumes_the_run_another_started(replicas):
    first, second = replicas
    agent = {
        "label": "Approvals",
        "tools": {"list_bundles": {"require_approval": True}},
        "script": [
            {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "node"}}]},
            {"content": "Done."},
        ],
    }
    with signed_in(first) as person, browser(first) as api:
        api.headers["Authorization"] = f"Bearer {token_on(person)}"
        assert post_json(api, "/api/agents/approvals", agent, "PUT").status_code == 201
        waiting = post_json(api, "/api/agents/approvals/runs", {"message": "Which bundles?"}).json()
        assert waiting["state"] == "awaiting_approval"
        api.base_url = second
        decided = post_json(api, f"/api/runs/{waiting['id']}/decisions", {"decisions": {"call_1_1": {"approve": True}}})
        assert decided.status_code == 200
        api.base_url = first
        run = api.get(f"/api/runs/{waiting['id']}").json()
        assert (run["state"], run["stop_reason"], run["answer"]) == ("finished", "answered", "Done.")


def test_a_proxied_request_held_on_one_replica_is_answered_with_the_stop_pressed_on_the_other(replicas):
    first, second = replicas
    place = {"type": "function", "function": {"name": "place", "parameters": {"type": "object"}}}
    agent = {
        "label": "Held",
        "client_tools": {"place": {"require_approval": True}},
        "script": [{"tool_calls": [{"id": "hero", "name": "place", "arguments": {}}]}, {"content": "Placed."}],
    }
    body = {"model": "m", "messages": [{"role": "user", "content": "Place the hero."}], "tools": [place]}
    with signed_in(first) as person, browser(first) as api, browser(first) as client:
        token = f"Bearer {token_on(person)}"
        api.headers["Authorization"] = client.headers["Authorization"] = token
        assert post_json(api, "/api/agents/held", agent, "PUT").status_code == 201
        with ThreadPoolExecutor(max_workers=1) as pool:
            answer = pool.submit(post_json, client, "/proxy/held/v1/chat/completions", body)
            deadline = time.monotonic() + 15
            while not (held := api.get("/api/runs?state=awaiting_approval&agent=held").json()["runs"]):
                assert time.monotonic() < deadline, "the proxied call never waited for approval"
                time.sleep(0.05)
            api.base_url = second
            pressed = time.monotonic()
            stopped = post_json(api, f"/api/runs/{held[0]['id']}/stop", {})
            answered = answer.result(timeout=15)
            waited = time.monotonic() - pressed

    assert stopped.status_code == 200 and stopped.json()["stop_reason"] == "stopped"
    assert answered.status_code == 200 and waited < 1.5
    message = answered.json()["choices"][0]["message"]
    assert "tool_calls" not in message and message["content"] == (
        "A person stopped this run in Toolgate while its tool calls waited for approval: none of them was run."
    )


def test_a_replica_killed_during_a_burst_loses_no_run_a_client_was_answered_for(postgresql_template, tmp_path):
    """kill -9 of one replica while 60 proxied requests go to both: every request to the other succeeds, and each
    answer any client got names a run that is stored."""
    with two_replicas(postgresql_template[0], tmp_path) as (survivor, victim), signed_in(survivor.url) as person:
        with browser(survivor.url) as api:
            api.headers["Authorization"] = token = f"Bearer {token_on(person)}"
            agent = {"label": "Burst", "script": [{"content": "Answered."}] * 100}
            assert post_json(api, "/api/agents/burst", agent, "PUT").status_code == 201
        sent = threading.Event()

        def ask(number):
            replica = (survivor, victim)[number % 2]
            if number == 31:
                sent.wait(timeout=10)
                victim.kill()
                return ("killed", None)
            if number % 2:
                sent.set()
            try:
                with browser(replica.url) as client:
                    client.headers["Authorization"] = token
                    body = {"model": "m", "messages": [{"role": "user", "content": f"Request {number}"}]}
                    answered = post_json(client, "/proxy/burst/v1/chat/completions", body)
            except httpx2.HTTPError as error:
                return (f"failed on the {'survivor' if replica is survivor else 'victim'}: {error!r}", None)
            return (answered.status_code, answered.headers.get("X-Toolgate-Run"))

        outcomes = all_at_once(ask, range(60))

        to_survivor = [outcomes[number] for number in range(0, 60, 2)]
        assert all(status == 200 for status, _ in to_survivor), to_survivor
        answered = [int(run_id) for status, run_id in outcomes if status == 200]
        assert len(answered) >= 30 and len(set(answered)) == len(answered)
        with browser(survivor.url) as api:
            api.headers["Authorization"] = token
            for run_id in answered:
                run = api.get(f"/api/runs/{run_id}")
                assert run.status_code == 200 and run.json()["answer"] == "Answered.", run_id


def test_wrong_passwords_on_one_replica_slow_down_the_other(replicas):
    """Last: the address waits afterwards."""
    first, second = replicas
    for number in range(5):
        with browser(first) as guesser:
            page = post_form(guesser, "/login", {"password": f"guess {number}"})
            assert page.status_code == 400 and WRONG in page.text
    with browser(second) as guesser:
        throttled = post_form(guesser, "/login", {"password": "guess 6"})
    assert throttled.status_code == 429 and "Too many wrong passwords from your address" in throttled.text
