"""The README's nginx configuration, run as written (tests/nginx.py) in front of two replicas on one PostgreSQL
(tests/replicas.py): a login holds across both, a streamed answer arrives as the model writes it, a streamed request
held for approval outlives a read timeout shorter than its wait, and with one replica killed (`kill -9`) mid-burst
only the requests it had taken fail, none is sent twice, and every request after the kill succeeds."""

import json
import time
from concurrent.futures import ThreadPoolExecutor, wait

import pytest

from tests.async_model_server import AsyncModelServer, running
from tests.live_http import HeldStream, all_at_once, browser, post_json, serving
from tests.nginx import in_front_of
from tests.proxy_support import PLACE, USER
from tests.replicas import form, signed_in, token_on, two_replicas

KEY = "UPSTREAM_API_KEY"
KEEP_ALIVE = 0.3  # seconds between the keep-alive comments of a held stream (PROXY_KEEP_ALIVE_SECONDS)
WAIT = 30  # seconds any step may take before the test fails instead of hanging
JSON = {"Content-Type": "application/json"}
HERO = {"tool_calls": [{"id": "hero", "name": "place_components", "arguments": {"component": "hero"}}]}


@pytest.fixture(scope="module")
def replicas(postgresql_template, tmp_path_factory):
    folder = tmp_path_factory.mktemp("balanced")
    environment = {KEY: "sk-upstream", "TOOLGATE_PROXY_KEEP_ALIVE_SECONDS": str(KEEP_ALIVE)}
    with two_replicas(postgresql_template[0], folder, **environment) as processes:
        yield processes


@pytest.fixture
def nginx(replicas, tmp_path):
    with in_front_of([replica.url for replica in replicas], tmp_path) as balancer:
        yield balancer


@pytest.fixture
def api(nginx):
    """A client of the JSON API and the proxy through nginx, with a token."""
    with signed_in(nginx.url) as person, browser(nginx.url) as client:
        client.headers["Authorization"] = f"Bearer {token_on(person)}"
        yield client


def put(api, path, body):
    saved = post_json(api, path, body, "PUT")
    assert saved.status_code in (200, 201), saved.text


def add_agent(api, agent_id, model_url=None, **fields):
    """An agent, on a provider connection to the model at `model_url` (the scripted model without one)."""
    if model_url:
        connection = {"label": "Upstream", "base_url": f"{model_url}/v1", "api_key_env": KEY, "max_retries": 0}
        put(api, f"/api/providers/{agent_id}", connection)
        fields["provider"] = agent_id
    put(api, f"/api/agents/{agent_id}", {"label": agent_id.title(), **fields})


def data_lines(lines):
    """The JSON of each `data:` line, as each comes."""
    for line in lines:
        if line.startswith("data: {"):
            yield json.loads(line.removeprefix("data: "))


def test_a_login_through_nginx_holds_on_both_replicas_and_log_out_ends_it_on_both(replicas, nginx):
    addresses = {replica.url.removeprefix("http://") for replica in replicas}
    with signed_in(nginx.url) as person:
        assert [person.get("/agents").status_code for _ in range(6)] == [200] * 6
        pages = [line for line in nginx.served() if line[:2] == ("GET", "/agents")]
        assert {(status, replica) for _, _, status, replica, _ in pages} == {("200", address) for address in addresses}

        logged_out = person.post("/logout", data={"csrf_token": form(person, "/agents")})
        assert logged_out.status_code == 303
        assert [person.get("/agents").status_code for _ in range(4)] == [303] * 4  # to the login page, on both
        after = [line for line in nginx.served() if line[:2] == ("GET", "/agents")][-4:]
        assert {replica for _, _, _, replica, _ in after} == addresses


def test_a_body_over_the_apps_4_mb_reaches_the_app_which_refuses_it_in_the_apis_shape(api):
    """nginx lets 4.5 MB through (client_max_body_size 5m): the answer is the app's JSON 413, not nginx's page."""
    refused = api.put("/api/agents/big", content='{"label": "' + "x" * 4_500_000 + '"}', headers=JSON)
    assert refused.status_code == 413 and "larger than this server accepts" in refused.json()["error"]


def test_a_streamed_answer_arrives_through_nginx_while_the_model_is_still_writing(api):
    model = HeldStream(wait=WAIT)
    with serving(model) as model_url:
        add_agent(api, "streamed", model_url)
        body = {"model": "m", "messages": [USER], "stream": True}
        texts = []
        with api.stream("POST", "/proxy/streamed/v1/chat/completions", json=body) as response:
            assert response.status_code == 200
            for chunk in data_lines(response.iter_lines()):
                content = (chunk.get("choices") or [{}])[0].get("delta", {}).get("content")
                if content:
                    texts.append((content, model.written.is_set()))
                    model.released.set()  # the model writes the rest only now
    # The first words came before the model had written all. (Not whether it had when the last came: the model
    # marks itself done only after its last bytes went out, and the client may read them first.)
    assert [text for text, _ in texts] == ["Hello ", "world."] and texts[0] == ("Hello ", False)


def test_a_streamed_request_held_for_approval_outlives_a_read_timeout_shorter_than_its_wait(replicas, tmp_path, api):
    """With nginx's read timeout cut to 3 s, a streamed request held 6 s gets its call (its keep-alive comments come
    every 0.3 s), where a request that is not streamed, held as long, is cut off by nginx with a 504."""
    approval = {"place_components": {"require_approval": True}}
    add_agent(api, "held", script=[HERO, {"content": "Placed."}] * 2, client_tools=approval)
    short = (("proxy_read_timeout 600s;", "proxy_read_timeout 3s;"),)
    with in_front_of([replica.url for replica in replicas], tmp_path / "short", short) as impatient:
        with browser(impatient.url) as client, ThreadPoolExecutor(max_workers=2) as pool:
            client.headers["Authorization"] = api.headers["Authorization"]

            def streamed():
                body = {"model": "m", "messages": [USER], "tools": [PLACE], "stream": True}
                with client.stream("POST", "/proxy/held/v1/chat/completions", json=body) as answer:
                    return answer.status_code, list(answer.iter_lines())

            def not_streamed():
                other = {"role": "user", "content": "Place a footer."}  # a conversation of its own
                return post_json(
                    client, "/proxy/held/v1/chat/completions", {"model": "m", "messages": [other], "tools": [PLACE]}
                )

            lines = pool.submit(streamed)
            run_id = _held_run(api, "held")
            cut = pool.submit(not_streamed)
            time.sleep(6)
            assert not lines.done()
            decided = post_json(api, f"/api/runs/{run_id}/decisions", {"decisions": {"hero": {"approve": True}}})
            assert decided.status_code == 200, decided.text
            status, received = lines.result(timeout=WAIT)
            assert cut.result(timeout=WAIT).status_code == 504

    assert status == 200 and received.count(": keep-alive") >= 10
    calls = [call for chunk in data_lines(received) for call in chunk["choices"][0]["delta"].get("tool_calls") or []]
    assert [call["id"] for call in calls] == ["hero"] and [line for line in received if line][-1] == "data: [DONE]"


def _held_run(api, agent_id):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        runs = api.get(f"/api/runs?state=awaiting_approval&agent={agent_id}").json()["runs"]
        if runs:
            return runs[0]["id"]
        time.sleep(0.05)
    raise AssertionError("no run awaited approval")


def test_a_replica_killed_mid_burst_fails_only_the_posts_it_held_and_every_later_request_succeeds(
    postgresql_template, tmp_path
):
    """20 proxied requests through nginx, all held at the model, then `kill -9` of one replica: the requests it had
    taken end in 502 and are not sent again (the model sees 20), the other's are answered, and everything sent after
    the kill (proxied requests and pages) succeeds."""
    model = AsyncModelServer(delay=0).held()
    with (
        running(model) as model_url,
        two_replicas(postgresql_template[0], tmp_path, **{KEY: "sk-upstream"}) as (survivor, victim),
        in_front_of([survivor.url, victim.url], tmp_path / "nginx") as nginx,
        signed_in(nginx.url) as person,
        browser(nginx.url) as api,
        ThreadPoolExecutor(max_workers=20) as pool,
    ):
        api.headers["Authorization"] = token = f"Bearer {token_on(person)}"
        add_agent(api, "burst", model_url)

        def ask(number):
            with browser(nginx.url) as client:
                client.headers["Authorization"] = token
                messages = [{"role": "user", "content": f"Request {number}"}]
                body = {"model": "held-model", "messages": messages, "tools": [PLACE]}
                answered = post_json(client, "/proxy/burst/v1/chat/completions", body)
                return answered.status_code, answered.headers.get("X-Toolgate-Run")

        burst = [pool.submit(ask, number) for number in range(20)]
        deadline = time.monotonic() + WAIT
        while model.arrived < 20:
            assert time.monotonic() < deadline, f"{model.arrived} of 20 requests reached the model"
            time.sleep(0.05)
        victim.kill()
        model.release()
        _, late = wait(burst, timeout=WAIT)
        assert not late
        during = [future.result() for future in burst]
        sent_to_model = model.arrived

        after = all_at_once(ask, range(20, 40), timeout=WAIT)
        pages = [person.get("/agents").status_code for _ in range(4)]
        stored = [api.get(f"/api/runs/{run_id}") for status, run_id in during + after if status == 200]

    victim_address, survivor_address = victim.url.removeprefix("http://"), survivor.url.removeprefix("http://")
    proxied = [line for line in nginx.served() if line[0] == "POST" and line[1].startswith("/proxy/")][:20]
    assert {(status, replica) for _, _, status, replica, _ in proxied} == {
        ("200", survivor_address),
        ("502", victim_address),
    }
    assert sorted(status for status, _ in during) == sorted(int(line[2]) for line in proxied)
    assert sent_to_model == 20  # none of the victim's requests was sent again to the survivor
    assert [status for status, _ in after] == [200] * 20 and pages == [200] * 4
    assert all(run.status_code == 200 and run.json()["source"] == "proxy" for run in stored)
