"""Toolgate as a gateway under load: N chat completions at once against a model server that answers after 1.0 s,
sent directly and through the policy proxy of the app served as `make run` serves it (a process of its own), in
the same run, every figure a ratio to the direct one.

The model server is tests/async_model_server.py in a process of its own (asyncio: it holds a thousand connections
at once). The clients are httpx2's async client in this process: each request on a connection of its own, closed
after the answer; then the same with clients that keep their connections open, as SDK clients do. Measured beside
the bursts: `GET /agents` loaded one request after the other during the largest burst (p95), the server's CPU time
over the requests it served (user + system of its processes, from /proc), its peak memory (resident set, the sum
of its processes), a streamed answer of 40 chunks over 2 s (first and last token, p50), and one request at a time
against a model that answers at once (the latency the proxy adds).

`python -m bench.gateway [--servers make-run,waitress-32] [--sizes 100,300,1000]`: `waitress-32` is how `make run`
served the app before (waitress, 32 threads), measured in the same run for the before and after.
"""

import argparse
import asyncio
import json
import os
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx2

from tests.live_http import MAKE_RUN, AppProcess

from .concurrency import WAITRESS_32, percentile
from .proxy import AGENT_ID, KEY_VARIABLE, MESSAGES, PLACE, prepare

SIZES = (100, 300, 1000)
KEEP_ALIVE_SIZE = 300
STREAMED = 50
ONE_AT_A_TIME = 200
WARM_UP = 20
WARM_UP_BURSTS = 3
REQUEST_TIMEOUT = 120.0
SERVERS = {
    "make-run": MAKE_RUN,
    "waitress-32": WAITRESS_32,
}
TICK = os.sysconf("SC_CLK_TCK")


def _body(model, stream=False):
    body = {"model": model, "messages": MESSAGES, "tools": [PLACE]}
    return {**body, "stream": True} if stream else body


def _processes(pid):
    """The server's process and its children (gunicorn's workers), as /proc lists them."""
    found = [pid]
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as file:
            for child in file.read().split():
                found += _processes(int(child))
    return found


def cpu_seconds(pid):
    """User + system CPU time of the server's processes so far."""
    total = 0
    for process in _processes(pid):
        with open(f"/proc/{process}/stat") as file:
            fields = file.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICK


def resident_mb(pid, field="VmHWM"):
    """The resident set of the server's processes in MB: VmHWM the peak of each, VmRSS now."""
    total = 0
    for process in _processes(pid):
        with open(f"/proc/{process}/status") as file:
            total += next(int(line.split()[1]) for line in file if line.startswith(f"{field}:"))
    return total / 1024


async def _ask(client, url, body):
    """(seconds, whether it failed) of one chat completion."""
    started = time.perf_counter()
    try:
        response = await client.post(url, json=body)
        failed = response.status_code != 200 or not response.json().get("choices")
    except (httpx2.HTTPError, ValueError):
        failed = True
    return time.perf_counter() - started, failed


async def burst(url, size, keep_alive, model="bench-1s"):
    """`size` requests released together: (wall seconds, latencies, failures). Without keep-alive each request's
    connection closes after its answer; with it, every connection stays open, idle, until the burst ends."""
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=None if keep_alive else 0)
    async with httpx2.AsyncClient(limits=limits, timeout=REQUEST_TIMEOUT) as client:
        started = time.perf_counter()
        results = await asyncio.gather(*(_ask(client, url, _body(model)) for _ in range(size)))
        wall = time.perf_counter() - started
    return wall, [seconds for seconds, _ in results], sum(failed for _, failed in results)


async def _stream(client, url):
    """(seconds to the first text, seconds to the end) of one streamed answer; None when it failed."""
    started = time.perf_counter()
    first = None
    try:
        async with client.stream("POST", url, json=_body("stream-2s", stream=True)) as response:
            if response.status_code != 200:
                return None
            async for line in response.aiter_lines():
                if first is None and _has_text(line):
                    first = time.perf_counter() - started
    except httpx2.HTTPError:
        return None
    return None if first is None else (first, time.perf_counter() - started)


def _has_text(line):
    if not line.startswith("data: {"):
        return False
    choices = json.loads(line[len("data: ") :]).get("choices") or [{}]
    return bool(choices[0].get("delta", {}).get("content"))


async def streamed(url, size=STREAMED):
    async with httpx2.AsyncClient(limits=httpx2.Limits(max_connections=None), timeout=REQUEST_TIMEOUT) as client:
        results = await asyncio.gather(*(_stream(client, url) for _ in range(size)))
    done = [result for result in results if result is not None]
    return [first for first, _ in done], [last for _, last in done], size - len(done)


async def one_at_a_time(urls, requests=ONE_AT_A_TIME):
    """Requests to each URL in alternation, one at a time, on kept-alive connections, against the instant model:
    {url: latencies}."""
    samples = {url: [] for url in urls}
    async with httpx2.AsyncClient(timeout=REQUEST_TIMEOUT) as client:
        for _ in range(requests):
            for url in urls:
                seconds, failed = await _ask(client, url, _body("instant"))
                assert not failed, url
                samples[url].append(seconds)
    return samples


def pages_while(base_url, stop):
    """GET /agents one after the other until `stop` is set: latencies, failures."""
    latencies, failures = [], 0
    with httpx2.Client(base_url=base_url, timeout=REQUEST_TIMEOUT) as client:
        while not stop.is_set():
            started = time.perf_counter()
            try:
                failures += client.get("/agents").status_code != 200
            except httpx2.HTTPError:
                failures += 1
            latencies.append(time.perf_counter() - started)
    return latencies, failures


def burst_with_pages(base_url, url, size):
    """A burst while a person keeps loading GET /agents: the burst's figures, the page latencies and failures."""
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=1) as pool:
        pages = pool.submit(pages_while, base_url, stop)
        try:
            figures = asyncio.run(burst(url, size, keep_alive=False))
        finally:
            stop.set()
        return figures, *pages.result()


def measure(server, folder, upstream_url, sizes):
    """Every figure of one server: {name: (direct, through)} for the ratios, and the server's own figures."""
    database = prepare(folder, upstream_url, f"{server}.db")
    app = AppProcess(SERVERS[server], database, f"{folder}/{server}.log", **{KEY_VARIABLE: "sk-bench-upstream"})
    try:
        base_url = app.ready()
        proxy = f"{base_url}/proxy/{AGENT_ID}/v1/chat/completions"
        direct = f"{upstream_url}/v1/chat/completions"
        pid = app.process.pid
        at_start = resident_mb(pid, "VmRSS")
        for _ in range(WARM_UP_BURSTS):  # each worker process imports the SDK and builds its client once
            asyncio.run(burst(proxy, WARM_UP, keep_alive=False, model="instant"))
        pairs, own = {}, {"requests": 0, "cpu": 0.0}
        for size in sizes:
            alone = asyncio.run(burst(direct, size, keep_alive=False))
            if size == max(sizes):
                through, pages, page_failures = burst_with_pages(base_url, proxy, size)
            else:
                cpu = cpu_seconds(pid)
                through = asyncio.run(burst(proxy, size, keep_alive=False))
                own["cpu"] += cpu_seconds(pid) - cpu
                own["requests"] += size
            pairs[f"N = {size}"] = (alone, through)
        pairs[f"N = {KEEP_ALIVE_SIZE}, keep-alive"] = tuple(
            asyncio.run(burst(url, KEEP_ALIVE_SIZE, keep_alive=True)) for url in (direct, proxy)
        )
        streams = (asyncio.run(streamed(direct)), asyncio.run(streamed(proxy)))
        alone = asyncio.run(one_at_a_time([direct, proxy]))
        return {
            "pairs": pairs,
            "pages": (pages, page_failures, max(sizes)),
            "cpu_ms": own["cpu"] / max(own["requests"], 1) * 1000,
            "memory": (at_start, resident_mb(pid)),
            "streams": streams,
            "alone": (alone[direct], alone[proxy]),
        }
    finally:
        app.stop()


def _seconds_row(label, direct, through, unit=1.0, suffix=""):
    name = "s" if unit == 1.0 else "ms"
    print(
        f"    {label:32s} {direct * unit:9.2f} {name:2s} {through * unit:9.2f} {name:2s} "
        f"{through / direct:7.2f}x{suffix}"
    )


def print_figures(server, figures):
    print(f"  {server}: {' '.join(SERVERS[server])}")
    print(f"    {'':32s} {'direct':>12s} {'Toolgate':>12s} {'ratio':>8s}")
    for name, (direct, through) in figures["pairs"].items():
        failures = f"   failed: {direct[2]} direct, {through[2]} through"
        _seconds_row(f"{name}, wall", direct[0], through[0], suffix=failures)
        _seconds_row(f"{name}, p95", percentile(direct[1], 0.95), percentile(through[1], 0.95))
    pages, page_failures, size = figures["pages"]
    print(
        f"    GET /agents during N = {size}: p50 {percentile(pages, 0.5) * 1000:.1f} ms, "
        f"p95 {percentile(pages, 0.95) * 1000:.1f} ms ({len(pages)} requests, {page_failures} failed)"
    )
    print(f"    CPU per proxied request: {figures['cpu_ms']:.2f} ms (the server's CPU time over the requests served)")
    at_start, peak = figures["memory"]
    print(f"    memory: {peak:.0f} MB at the peak, {at_start:.0f} MB at start (resident, all its processes)")
    (direct_first, direct_last, direct_failed), (first, last, failed) = figures["streams"]
    for label, ours, theirs in (("first token", first, direct_first), ("last token", last, direct_last)):
        difference = (percentile(ours, 0.5) - percentile(theirs, 0.5)) * 1000
        _seconds_row(
            f"streamed, {label}, p50", percentile(theirs, 0.5), percentile(ours, 0.5), 1000, f"   {difference:+.1f} ms"
        )
    print(f"    streamed: {STREAMED} at once, 40 chunks over 2 s; failed: {direct_failed} direct, {failed} through")
    direct, through = figures["alone"]
    for share in (0.5, 0.95):
        added = (percentile(through, share) - percentile(direct, share)) * 1000
        label = f"one at a time, p{round(share * 100)}"
        _seconds_row(label, percentile(direct, share), percentile(through, share), 1000, f"   {added:+.2f} ms")


def report(servers=("make-run",), sizes=SIZES):
    print(
        "Gateway: N chat completions at once against a model answering in 1.0 s, directly and through the proxy; "
        f"one at a time ({ONE_AT_A_TIME} each) against one answering at once"
    )
    with tempfile.TemporaryDirectory() as folder:
        upstream = AppProcess(["-m", "tests.async_model_server"], f"{folder}/unused.db", f"{folder}/upstream.log")
        try:
            upstream_url = upstream.ready()
            for server in servers:
                print_figures(server, measure(server, folder, upstream_url, sizes))
        finally:
            upstream.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--servers", default="make-run", help=f"comma-separated: {', '.join(SERVERS)}")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="the bursts' sizes, comma-separated")
    arguments = parser.parse_args()
    report(tuple(arguments.servers.split(",")), tuple(int(size) for size in arguments.sizes.split(",")))
