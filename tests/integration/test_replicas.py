"""Several replicas, one truth: two servers started as `make run` starts one (gunicorn, gevent, two workers each), on
one PostgreSQL database and one secret key, behave as one Toolgate, whichever of them a request reaches."""

import re
import secrets
from contextlib import contextmanager

import pytest

from tests.html_reader import form_fields
from tests.live_http import MAKE_RUN, AppProcess, browser, csrf_token, post_form, post_json
from tests.run_scenarios import BUNDLES_MESSAGE, bundles_agent

PASSWORD = "one passphrase for both replicas"
WRONG = "Password is not right."
CHAT = "/proxy/proxied/v1/chat/completions"


@pytest.fixture(scope="module")
def replicas(postgresql_template, tmp_path_factory):
    """The base URLs of two replicas of the app on one new database (migrated by whichever starts first)."""
    cluster, _ = postgresql_template
    url = cluster.create_database()
    folder = tmp_path_factory.mktemp("replicas")
    environment = {"TOOLGATE_DATABASE_URL": url, "TOOLGATE_ADMIN_PASSWORD": PASSWORD}
    processes = [
        AppProcess(MAKE_RUN, folder / "unused.db", folder / f"{name}.log", ready_path="/login", **environment)
        for name in "ab"
    ]
    try:
        yield [process.ready() for process in processes]
    finally:
        for process in processes:
            process.stop()


@contextmanager
def signed_in(base_url):
    with browser(base_url) as client:
        assert post_form(client, "/login", {"password": PASSWORD}).status_code == 303
        yield client


def token_on(client):
    created = client.post("/tokens", data={"name": secrets.token_hex(4), "csrf_token": form(client, "/tokens")})
    assert created.status_code == 201, created.text
    return created.text.split('<code class="secret"', 1)[1].split(">", 1)[1].split("<", 1)[0]


def form(client, path):
    return csrf_token(client.get(path).text)


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
            changed = {**saved.json(), "script": [{"content": "Two."}]}
            assert post_json(on_first, "/api/agents/shared", changed, "PUT").json()["revision"] == 2
            assert post_json(on_second, "/api/agents/shared/runs", {"message": "Hi"}).json()["answer"] == "Two."
            stale = post_json(on_second, "/api/agents/shared", {**saved.json(), "label": "Stale"}, "PUT")
            assert stale.status_code == 409


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
