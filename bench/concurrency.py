"""20 runs at once against a model that answers in 200 ms, beside one run alone, through a production WSGI server
in a process of its own; meanwhile a person keeps loading GET /agents. The fake model (an OpenAI-compatible server
on 127.0.0.1) and the HTTP clients live in this process.

`python -m bench.concurrency` measures the server `make run` uses and waitress with 32 threads, which it used before
(`--servers make-run` for one)."""

import argparse
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from store import providers as provider_store
from store.db import open_db
from tests.live_http import MAKE_RUN, AppProcess, SlowModel, all_at_once, browser, post_json, serving

RUNS = 20
MODEL_DELAY = 0.2
BURSTS = 3
MODEL_KEY = "BENCH_MODEL_API_KEY"
SCRIPT = [
    {"tool_calls": [{"name": "list_entity_types", "arguments": {}}]},
    {"content": "There are four entity types."},
]
WAITRESS_32 = ["-m", "waitress", "--host=127.0.0.1", "--port=0", "--threads=32", "--call", "app:create_app"]
SERVERS = {"make-run": MAKE_RUN, "waitress-32": WAITRESS_32}  # as `make run` serves the app, and as it did before


def percentile(samples, fraction):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def run_once(client, number):
    """One run through the API: (seconds, whether it failed)."""
    started = time.perf_counter()
    try:
        response = post_json(client, "/api/agents/bench_slow/runs", {"message": f"Question {number}"})
        failed = response.status_code != 201 or response.json()["stop_reason"] != "answered"
    except Exception:  # a refused or dropped connection is a failure to count, not a crash of the bench
        failed = True
    return time.perf_counter() - started, failed


def page_latencies(url, stop):
    """GET /agents one after the other until `stop` is set: the latencies in seconds, and the failures."""
    latencies, failures = [], 0
    with browser(url) as client:
        while not stop.is_set():
            started = time.perf_counter()
            try:
                ok = client.get("/agents").status_code == 200
            except Exception:
                ok = False
            latencies.append(time.perf_counter() - started)
            failures += not ok
    return latencies, failures


def burst(url, clients):
    """The runs all at once, one per client, while GET /agents is loaded one request after the other:
    (seconds until the last run ended, failed runs, page latencies, failed pages)."""
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=1) as pool:
        pages = pool.submit(page_latencies, url, stop)
        started = time.perf_counter()
        results = all_at_once(lambda number: run_once(clients[number], number), range(len(clients)))
        seconds = time.perf_counter() - started
        stop.set()
        latencies, pages_failed = pages.result()
    return seconds, sum(failed for _, failed in results), latencies, pages_failed


def measure(server, folder, model_url):
    app = AppProcess(SERVERS[server], f"{folder}/{server}.db", f"{folder}/{server}.log", **{MODEL_KEY: "not a key"})
    try:
        url = app.ready()
        provider = {"id": "slow", "label": "Slow", "base_url": f"{model_url}/v1", "api_key_env": MODEL_KEY}
        provider_store.create_provider(open_db(f"{folder}/{server}.db"), provider)
        agent = {"label": "Slow", "provider": "slow", "model": "slow-1", "tools": {"list_entity_types": {}}}
        with browser(url) as client:
            assert post_json(client, "/api/agents/bench_slow", agent, "PUT").status_code == 201
        idle_stop = threading.Event()
        threading.Timer(1.0, idle_stop.set).start()
        idle, _ = page_latencies(url, idle_stop)
        # The clients are ready before the clock starts: building one is not the server's time.
        clients = [browser(url) for _ in range(RUNS)]
        single = statistics.median(run_once(clients[0], number)[0] for number in range(5))
        bursts, failures, during, page_failures = [], 0, [], 0
        for _ in range(BURSTS):
            seconds, failed, latencies, pages_failed = burst(url, clients)
            bursts.append(seconds)
            failures += failed
            during += latencies
            page_failures += pages_failed
        for client in clients:
            client.close()
        return {
            "single": single,
            "burst": statistics.median(bursts),
            "failures": failures,
            "idle": idle,
            "during": during,
            "page_failures": page_failures,
        }
    finally:
        app.stop()


def report(servers=tuple(SERVERS)):
    print(f"Concurrency: {RUNS} runs at once, model answering in {MODEL_DELAY * 1000:.0f} ms (2 requests per run)")
    with tempfile.TemporaryDirectory() as folder, serving(SlowModel(SCRIPT, MODEL_DELAY)) as model_url:
        for server in servers:
            figures = measure(server, folder, model_url)
            ms = {key: [seconds * 1000 for seconds in figures[key]] for key in ("idle", "during")}
            print(f"  {server}")
            print(f"    one run alone                   {figures['single'] * 1000:8.1f} ms")
            print(
                f"    {RUNS} runs at once (median of {BURSTS})  {figures['burst'] * 1000:8.1f} ms   "
                f"ratio {figures['burst'] / figures['single']:.2f}x (target <= 1.50x)   "
                f"failed runs: {figures['failures']} of {RUNS * BURSTS}"
            )
            print(
                f"    GET /agents idle                p50 {percentile(ms['idle'], 0.5):6.1f} ms   "
                f"p95 {percentile(ms['idle'], 0.95):6.1f} ms"
            )
            print(
                f"    GET /agents during the bursts   p50 {percentile(ms['during'], 0.5):6.1f} ms   "
                f"p95 {percentile(ms['during'], 0.95):6.1f} ms (target p95 <= 50 ms, {len(ms['during'])} requests, "
                f"{figures['page_failures']} failed)"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--servers", default=",".join(SERVERS), help="comma-separated: make-run, waitress-32")
    report(tuple(parser.parse_args().servers.split(",")))
