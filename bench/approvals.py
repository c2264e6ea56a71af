"""200 proxied requests held for approval at once, through the server `make run` uses, in a process of its own:
what a held request costs the others. GET /agents is loaded one request after the other before and while they
wait; then a reviewer approves every call through the API and the clients get their answers.

`python -m bench.approvals`."""

import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from bench.concurrency import page_latencies, percentile
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


def ask(client, number):
    """One proxied request (a conversation of its own): whether it received its call."""
    body = {"model": "m", "messages": [{"role": "user", "content": f"List the files ({number})."}], "tools": [SHELL]}
    try:
        response = post_json(client, PATH, body)
        return response.status_code == 200 and bool(response.json()["choices"][0]["message"].get("tool_calls"))
    except Exception:  # a dropped connection is a failure to count, not a crash of the bench
        return False


def held_runs(client, deadline):
    while time.monotonic() < deadline:
        runs = client.get("/api/runs?state=awaiting_approval&agent=bench_held").json()
        if runs["total"] >= HELD:
            return [run["id"] for run in runs["runs"]]
        time.sleep(0.2)
    raise RuntimeError(f"only {runs['total']} of {HELD} requests were held")


def latencies_for(url, seconds):
    stop = threading.Event()
    threading.Timer(seconds, stop.set).start()
    return [latency * 1000 for latency in page_latencies(url, stop)[0]]


def measure(folder):
    app = AppProcess(MAKE_RUN, f"{folder}/approvals.db", f"{folder}/approvals.log")
    try:
        url = app.ready()
        with browser(url) as client:
            assert post_json(client, "/api/agents/bench_held", AGENT, "PUT").status_code == 201
        idle = latencies_for(url, 2.0)
        clients = [browser(url) for _ in range(HELD)]
        for client in clients:
            client.timeout = 120
        with ThreadPoolExecutor(max_workers=HELD) as pool, browser(url) as reviewer:
            answers = [pool.submit(ask, clients[number], number) for number in range(HELD)]
            run_ids = held_runs(reviewer, time.monotonic() + 60)
            during = latencies_for(url, 3.0)
            started = time.perf_counter()
            decided = [
                post_json(reviewer, f"/api/runs/{run_id}/decisions", {"decisions": {"ls": {"approve": True}}})
                for run_id in run_ids
            ]
            received = [answer.result(timeout=120) for answer in answers]
            released = time.perf_counter() - started
        for client in clients:
            client.close()
        return {
            "idle": idle,
            "during": during,
            "decided": sum(response.status_code == 200 for response in decided),
            "received": sum(received),
            "released": released,
        }
    finally:
        app.stop()


def report():
    print(f"Approvals: {HELD} proxied requests held for approval at once (make run's server)")
    with tempfile.TemporaryDirectory() as folder:
        figures = measure(folder)
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


if __name__ == "__main__":
    report()
