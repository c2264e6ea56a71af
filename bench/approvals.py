"""200 proxied requests held for approval at once, through the server `make run` uses, in a process of its own:
what a held request costs the others. Before they are held, while all of them wait, and after they are released:
GET /agents loaded one request after the other; other proxied traffic that needs no approval — a burst of N = 100
chat completions at once against a model that answers in 1.0 s (its wall and p95), and one request at a time against
a model that answers at once (what the proxy adds over asking the model directly) — sent as bench.gateway sends
them, to the same model server (tests/async_model_server.py, a process of its own). Then a reviewer approves every
call through the API and the clients get their answers.

`python -m bench.approvals`."""

import asyncio
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from bench.concurrency import page_latencies, percentile
from bench.gateway import WARM_UP, WARM_UP_BURSTS, burst, one_at_a_time
from bench.proxy import AGENT_ID, KEY_VARIABLE, prepare
from tests.live_http import MAKE_RUN, AppProcess, browser, post_json

HELD = 200
SHELL = {
    "type": "function",
    "function": {"name": "Bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}},
}
AGENT = {
    "label": "Held shell",
    "client_tools": {"Bash": {"require_approval": True}},
    "approval_timeout_seconds": 300,
    "script": [{"tool_calls": [{"id": "ls", "name": "Bash", "arguments": {"command": "ls"}}]}, {"content": "Done."}],
}
PATH = "/proxy/bench_held/v1/chat/completions"
BURST = 100  # proxied requests at once that need no approval, against the model that answers in 1.0 s
ALONE = 100  # requests one at a time, to the model directly and through the proxy in alternation


def ask(client, number):
    """One proxied request (a conversation of its own): whether it received its call."""
    body = {"model": "m", "messages": [{"role": "user", "content": f"List the files ({number})."}], "tools": [SHELL]}
    try:
        response = post_json(client, PATH, body)
        return response.status_code == 200 and bool(response.json()["choices"][0]["message"].get("tool_calls"))
    except Exception:  # a dropped connection is a failure to count, not a crash of the bench
        return False


def awaiting(client):
    """The agent's runs awaiting approval, newest first: the API's page of them, with their `total`."""
    return client.get("/api/runs?state=awaiting_approval&agent=bench_held").json()


def held_runs(client, deadline):
    while time.monotonic() < deadline:
        runs = awaiting(client)
        if len(runs["runs"]) >= HELD:  # the page and its total are read apart: a run held in between counts in one
            return [run["id"] for run in runs["runs"]]
        time.sleep(0.2)
    raise RuntimeError(f"only {runs['total']} of {HELD} requests were held")


def latencies_for(url, seconds):
    stop = threading.Event()
    threading.Timer(seconds, stop.set).start()
    return [latency * 1000 for latency in page_latencies(url, stop)[0]]


def other_traffic(proxy, direct):
    """The proxied traffic that needs no approval: (the burst's (wall, latencies, failures), {url: latencies one at a
    time})."""
    return asyncio.run(burst(proxy, BURST, keep_alive=False)), asyncio.run(one_at_a_time([direct, proxy], ALONE))


def measure(folder, upstream_url):
    database = prepare(folder, upstream_url, "approvals.db")
    app = AppProcess(MAKE_RUN, database, f"{folder}/approvals.log", **{KEY_VARIABLE: "sk-bench-upstream"})
    try:
        url = app.ready()
        proxy, direct = f"{url}/proxy/{AGENT_ID}/v1/chat/completions", f"{upstream_url}/v1/chat/completions"
        with browser(url) as client:
            assert post_json(client, "/api/agents/bench_held", AGENT, "PUT").status_code == 201
        for _ in range(WARM_UP_BURSTS):  # each worker process imports the SDK and builds its client once
            asyncio.run(burst(proxy, WARM_UP, keep_alive=False, model="instant"))
        idle = latencies_for(url, 2.0)
        before = other_traffic(proxy, direct)
        clients = [browser(url) for _ in range(HELD)]
        for client in clients:
            client.timeout = 120
        with ThreadPoolExecutor(max_workers=HELD) as pool, browser(url) as reviewer:
            answers = [pool.submit(ask, clients[number], number) for number in range(HELD)]
            run_ids = held_runs(reviewer, time.monotonic() + 60)
            during = latencies_for(url, 3.0)
            held = other_traffic(proxy, direct)
            still_held = awaiting(reviewer)["total"]
            started = time.perf_counter()
            decided = [
                post_json(reviewer, f"/api/runs/{run_id}/decisions", {"decisions": {"ls": {"approve": True}}})
                for run_id in run_ids
            ]
            received = [answer.result(timeout=120) for answer in answers]
            released = time.perf_counter() - started
        for client in clients:
            client.close()
        after = other_traffic(proxy, direct)
        return {
            "idle": idle,
            "during": during,
            "traffic": {"none held, before": before, f"{HELD} held": held, "none held, after": after},
            "direct": direct,
            "still_held": still_held,
            "decided": sum(response.status_code == 200 for response in decided),
            "refused": [
                f"{response.status_code} {response.text[:200]}" for response in decided if response.status_code != 200
            ],
            "received": sum(received),
            "released": released,
        }
    finally:
        app.stop()


def print_traffic(figures):
    """The other proxied traffic with none held and with HELD held, and each figure's ratio to none held before."""
    traffic, direct = figures["traffic"], figures["direct"]
    (base_wall, base_latencies, _), base_alone = traffic["none held, before"]
    base_p95 = percentile(base_latencies, 0.95)
    print(f"  other proxied traffic, no approval needed ({figures['still_held']} requests still held during it):")
    for label, ((wall, latencies, failures), _alone) in traffic.items():
        p95 = percentile(latencies, 0.95)
        print(
            f"    N = {BURST} at once, 1.0 s model, {label:18s} wall {wall:6.2f} s ({wall / base_wall:5.2f}x)   "
            f"p95 {p95:6.2f} s ({p95 / base_p95:5.2f}x)   {failures} failed"
        )
    for label, (_burst, alone) in traffic.items():
        [proxy] = [url for url in alone if url != direct]
        p50, p95 = (
            (percentile(alone[proxy], share) - percentile(alone[direct], share)) * 1000 for share in (0.5, 0.95)
        )
        print(
            f"    one at a time ({ALONE}), instant model, {label:18s} added over direct: "
            f"p50 {p50:+6.2f} ms   p95 {p95:+6.2f} ms"
        )


def report():
    print(f"Approvals: {HELD} proxied requests held for approval at once (make run's server)")
    with tempfile.TemporaryDirectory() as folder:
        upstream = AppProcess(["-m", "tests.async_model_server"], f"{folder}/unused.db", f"{folder}/upstream.log")
        try:
            figures = measure(folder, upstream.ready())
        finally:
            upstream.stop()
    idle, during = figures["idle"], figures["during"]
    print(f"  GET /agents, none held       p50 {percentile(idle, 0.5):6.1f} ms   p95 {percentile(idle, 0.95):6.1f} ms")
    print(
        f"  GET /agents, {HELD} held       p50 {percentile(during, 0.5):6.1f} ms   "
        f"p95 {percentile(during, 0.95):6.1f} ms (target p95 <= 200 ms, {len(during)} requests)"
    )
    print(
        f"  {HELD} approvals, one after the other, to every client answered: {figures['released'] * 1000:8.1f} ms "
        f"({figures['decided']} decisions taken, {figures['received']} clients got their call)"
    )
    for refused in figures["refused"]:
        print(f"    a decision refused: {refused}")
    print_traffic(figures)


if __name__ == "__main__":
    report()
