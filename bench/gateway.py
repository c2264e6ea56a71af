"""Toolgate as a gateway under load: N chat completions at once against a model server that answers after 1.0 s,
sent directly and through the policy proxy of the app served as `make run` serves it (a process of its own), in
the same run, every figure a ratio to the direct one.

The model server is tests/async_model_server.py in a process of its own (asyncio: it holds a thousand connections
at once). The clients are httpx2's async client in this process: each request on a connection of its own, closed
after the answer; then the same with clients that keep their connections open, as SDK clients do. Measured beside
the bursts: `GET /agents` opened every 200 ms on a fresh connection from a process of its own during the largest
burst and two more of its size (p95 over the three), the server's CPU time over the requests it served (user +
system of its processes, from /proc), its peak memory (two ways: the sum of its processes' resident high-water
marks, and the peak of the sum of their proportional set sizes sampled throughout, which counts a page shared
between processes once), a streamed answer of 40 chunks over 2 s (its first and last text and the end of the
response, p50), 50 at once and then one at a time, and one request at a time against a model that answers at once
(the latency the proxy adds).

Beside Toolgate, for the CPU per request, the streams and one request at a time: bench.proxy_floor served the same
way (Flask, JSON forwarded through a urllib3 pool, one SQLite row; nothing of Toolgate's), the floor of this stack
under any proxy built on it. What Toolgate adds above that floor is its own work.

Beside Toolgate too, when `make peers` has installed them (bench.peers): the gateways a user would pick instead, the
LiteLLM proxy and the Portkey gateway, each a process of its own pointed at the same model server, sent at each step
what Toolgate is sent (the bursts, the kept-alive one, the CPU and memory, the streams, and one request at a time in
the same alternation), each figure beside Toolgate's and, like it, a ratio to or an addition over direct. Without
them, one line says which are not installed.

`python -m bench.gateway [--servers make-run,waitress-32] [--sizes 100,300,1000]`: `waitress-32` is how `make run`
served the app before (waitress, 32 threads), measured in the same run for the before and after;
`make-run-postgresql` serves it as `make run` does on a database of a throwaway PostgreSQL cluster that waits for the
disk (tests/postgresql.py), and `two-replicas-nginx` as two such replicas on one database behind the README's nginx
(tests/replicas.py, tests/nginx.py), one gevent worker each (`make run WORKERS=1`: together the two workers one
replica has on this 2-core machine), signed in with an API token; after them, one replica of two is killed
(`kill -9`) during N = KILLED_DURING requests through nginx. On PostgreSQL the CPU per request counts the cluster's
processes beside the app's, and nginx's (SQLite's work is in the app's own). With both `make-run` and
`make-run-postgresql`, a last phase serves the two side by side and sends one request at a time to each in
alternation (engines_side_by_side).
"""

import argparse
import asyncio
import json
import multiprocessing
import os
import tempfile
import threading
import time
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx2
from sqlalchemy import text

from store.db import engine_for
from tests.live_http import MAKE_RUN, AppProcess, make_run_server
from tests.nginx import in_front_of
from tests.postgresql import Cluster
from tests.replicas import signed_in, token_on, two_replicas

from . import peers
from .concurrency import WAITRESS_32, percentile
from .proxy import AGENT_ID, FLOOR_SERVER, KEY_VARIABLE, MESSAGES, PLACE, prepare

SIZES = (100, 300, 1000)
KEEP_ALIVE_SIZE = 300
STREAMED = 50
STREAMED_ALONE = 5  # rounds of one streamed answer at a time to each server, about 2 s each
ONE_AT_A_TIME = 200
WARM_UP = 20
WARM_UP_BURSTS = 3
PAGE_EVERY = 0.2  # seconds between two GET /agents during the largest burst
# How many of the largest bursts the pages are opened during: one gives 12-25 pages, whose p95 is their worst but one.
PAGE_BURSTS = 3
REQUEST_TIMEOUT = 120.0
SERVERS = {
    "make-run": MAKE_RUN,
    "waitress-32": WAITRESS_32,
    "make-run-postgresql": MAKE_RUN,
    # Each replica as `make run WORKERS=1` serves it: the two share this machine's two cores as one replica's two
    # workers do, so what they add is the extra hop and the shared database, not four workers crowding two cores.
    "two-replicas-nginx": make_run_server(workers=1),
}
ON_POSTGRESQL = ("make-run-postgresql", "two-replicas-nginx")
KILLED_DURING = 300
KILL_AFTER = 0.5  # seconds into the burst, while the model (1.0 s) still holds every request
TICK = os.sysconf("SC_CLK_TCK")
PSS_EVERY = 0.1  # seconds between two samples of the servers' proportional set size


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


def cpu_seconds(*pids):
    """User + system CPU time of the servers' processes so far."""
    total = 0
    for process in (found for pid in pids for found in _processes(pid)):
        with open(f"/proc/{process}/stat") as file:
            fields = file.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICK


def resident_mb(*pids, field="VmHWM"):
    """The resident set of the servers' processes in MB: VmHWM the peak of each, VmRSS now."""
    total = 0
    for process in (found for pid in pids for found in _processes(pid)):
        with open(f"/proc/{process}/status") as file:
            total += next(int(line.split()[1]) for line in file if line.startswith(f"{field}:"))
    return total / 1024


def proportional_mb(*pids):
    """The proportional set size of the servers' processes now, in MB: a page shared by n processes (the libraries,
    what a worker shares with the process it was forked from) counts 1/n in each, so their sum counts it once."""
    total = 0
    for process in (found for pid in pids for found in _processes(pid)):
        with open(f"/proc/{process}/smaps_rollup") as file:
            total += next(int(line.split()[1]) for line in file if line.startswith("Pss:"))
    return total / 1024


class PeakPss:
    """The peak of each server's PSS (proportional_mb), sampled every PSS_EVERY s in a thread of its own while the
    block runs: `peaks` is {name: MB} of `servers` ({name: pids})."""

    def __init__(self, servers):
        self.servers = servers
        self.peaks = dict.fromkeys(servers, 0.0)
        self.stop = threading.Event()
        self.sampler = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while not self.stop.is_set():
            for name, pids in self.servers.items():
                try:
                    self.peaks[name] = max(self.peaks[name], proportional_mb(*pids))
                except (FileNotFoundError, ProcessLookupError):  # a process ended between two reads
                    pass
            self.stop.wait(PSS_EVERY)

    def __enter__(self):
        self.sampler.start()
        return self

    def __exit__(self, *exception):
        self.stop.set()
        self.sampler.join()


async def _ask(client, url, body, headers=None):
    """(seconds, whether it failed) of one chat completion."""
    started = time.perf_counter()
    try:
        response = await client.post(url, json=body, headers=headers)
        failed = response.status_code != 200 or not response.json().get("choices")
    except (httpx2.HTTPError, ValueError):
        failed = True
    return time.perf_counter() - started, failed


async def burst(url, size, keep_alive, model="bench-1s", headers=None):
    """`size` requests released together: (wall seconds, latencies, failures). Without keep-alive each request's
    connection closes after its answer; with it, every connection stays open, idle, until the burst ends."""
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=None if keep_alive else 0)
    async with httpx2.AsyncClient(limits=limits, timeout=REQUEST_TIMEOUT) as client:
        started = time.perf_counter()
        results = await asyncio.gather(*(_ask(client, url, _body(model), headers) for _ in range(size)))
        wall = time.perf_counter() - started
    return wall, [seconds for seconds, _ in results], sum(failed for _, failed in results)


async def _stream(client, url, headers=None):
    """(seconds to the first text, to the last text, to the end of the response) of one streamed answer; None when
    it failed. The end comes after the finish reason, the usage and `[DONE]`: through the proxy, once the run is
    recorded too."""
    started = time.perf_counter()
    texts = []
    try:
        async with client.stream("POST", url, json=_body("stream-2s", stream=True), headers=headers) as response:
            if response.status_code != 200:
                return None
            async for line in response.aiter_lines():
                if _has_text(line):
                    texts.append(time.perf_counter() - started)
    except httpx2.HTTPError:
        return None
    return (texts[0], texts[-1], time.perf_counter() - started) if texts else None


def _has_text(line):
    if not line.startswith("data: {"):
        return False
    choices = json.loads(line[len("data: ") :]).get("choices") or [{}]
    return bool(choices[0].get("delta", {}).get("content"))


async def streamed(url, size=STREAMED, headers=None):
    async with httpx2.AsyncClient(limits=httpx2.Limits(max_connections=None), timeout=REQUEST_TIMEOUT) as client:
        results = await asyncio.gather(*(_stream(client, url, headers) for _ in range(size)))
    done = [result for result in results if result is not None]
    return [list(figure) for figure in zip(*done, strict=True)] if done else [[], [], []], size - len(done)


async def _in_turn(urls, rounds, headers, measure):
    """`rounds` rounds of `await measure(client, url, headers)` for each URL in alternation, one at a time, on
    kept-alive connections: {url: [what it gave]}. `headers`: {url: the headers its requests carry}, for those that
    need some."""
    samples = {url: [] for url in urls}
    headers = headers or {}
    async with httpx2.AsyncClient(timeout=REQUEST_TIMEOUT) as client:
        for _ in range(rounds):
            for url in urls:
                samples[url].append(await measure(client, url, headers.get(url)))
    return samples


async def _answered_at_once(client, url, headers):
    seconds, failed = await _ask(client, url, _body("instant"), headers)
    assert not failed, url
    return seconds


async def _streamed_once(client, url, headers):
    figures = await _stream(client, url, headers)
    assert figures is not None, url
    return figures


async def one_at_a_time(urls, requests=ONE_AT_A_TIME, headers=None):
    """Requests to each URL in alternation, one at a time, against the instant model: {url: latencies}."""
    return await _in_turn(urls, requests, headers, _answered_at_once)


async def streams_one_at_a_time(urls, rounds=STREAMED_ALONE, headers=None):
    """One streamed answer at a time to each URL in alternation: {url: [firsts, lasts, ends]} as `streamed` gives
    them."""
    samples = await _in_turn(urls, rounds, headers, _streamed_once)
    return {url: [list(figure) for figure in zip(*results, strict=True)] for url, results in samples.items()}


def pages_while(base_url, stop, latencies, headers):
    """GET /agents every PAGE_EVERY seconds until `stop` is set, each on a fresh connection, as a person opening the
    page does (run in a process of its own, apart from the load generator), with `headers` (a signed-in person's
    cookie): its latency in `latencies`, None for a failure."""
    next_at = time.monotonic()
    while not stop.is_set():
        started = time.perf_counter()
        try:
            page = urllib.request.Request(f"{base_url}/agents", headers=headers)
            with urllib.request.urlopen(page, timeout=REQUEST_TIMEOUT) as response:
                response.read()
                latencies.put(time.perf_counter() - started)
        except OSError:
            latencies.put(None)
        next_at = max(next_at + PAGE_EVERY, time.monotonic())
        stop.wait(next_at - time.monotonic())


def burst_with_pages(app, url, size, bursts=PAGE_BURSTS):
    """`bursts` bursts, one after the other, while a person keeps opening GET /agents: the first burst's figures, the
    page latencies over them all and the pages that failed."""
    context = multiprocessing.get_context("spawn")
    latencies, first = [], None
    for _ in range(bursts):
        stop, samples = context.Event(), context.Queue()
        pages = context.Process(target=pages_while, args=(app.base_url, stop, samples, app.page_headers))
        pages.start()
        try:
            figures = asyncio.run(burst(url, size, keep_alive=False, headers=app.headers))
        finally:
            stop.set()
            pages.join()
        first = first or figures
        while not samples.empty():
            latencies.append(samples.get())
    return first, [seconds for seconds in latencies if seconds is not None], latencies.count(None)


def _cpu_per_request(groups, url, sizes, headers=None):
    """A burst of each of `sizes` sent to `url`: the CPU time over them of each of `groups` ({name: the pids of
    its processes}), per request (ms): {name: ms}."""
    cpu, requests = {name: cpu_seconds(*pids) for name, pids in groups.items()}, 0
    for size in sizes:
        asyncio.run(burst(url, size, keep_alive=False, headers=headers))
        requests += size
    return {name: (cpu_seconds(*pids) - cpu[name]) / max(requests, 1) * 1000 for name, pids in groups.items()}


class ServedPeers:
    """The installed peers (bench.peers), each served beside Toolgate and sent what Toolgate is sent, step by step:
    `figures` is {name: {"pairs": {burst: figures}, "cpu_ms", "memory", "streams", "alone"}}."""

    def __init__(self):
        self.served, self.urls, self.figures = [], {}, {}

    def start(self, folder, upstream_url):
        for peer in peers.installed():
            self.served.append(peers.Served(peer, folder, upstream_url))

    def ready(self):
        for served in self.served:
            name = served.peer.name
            self.urls[name] = served.ready()
            at_start = resident_mb(served.process.pid, field="VmRSS")
            self.figures[name] = {"peer": served.peer, "pairs": {}, "at_start": at_start}

    def _each(self):
        """(name, URL, headers, pid) of each peer."""
        for served in self.served:
            name = served.peer.name
            yield name, self.urls[name], served.headers, served.process.pid

    def warm_up(self):
        for _, url, headers, _ in self._each():
            asyncio.run(burst(url, WARM_UP, keep_alive=False, model="instant", headers=headers))

    def send_burst(self, label, size, keep_alive):
        for name, url, headers, _ in self._each():
            self.figures[name]["pairs"][label] = asyncio.run(burst(url, size, keep_alive, headers=headers))

    def measure_cpu(self, sizes):
        for name, url, headers, pid in self._each():
            self.figures[name]["cpu_ms"] = _cpu_per_request({name: [pid]}, url, sizes, headers)[name]

    def send_streams(self):
        for name, url, headers, _ in self._each():
            self.figures[name]["streams"] = asyncio.run(streamed(url, headers=headers))

    def headers(self):
        """{URL: headers}, for one_at_a_time."""
        return {url: headers for _, url, headers, _ in self._each()}

    def pids(self):
        """{name: [pid]}, for PeakPss."""
        return {name: [pid] for name, _, _, pid in self._each()}

    def finish(self, alone, streams_alone, pss_peaks):
        """The peers' figures, with their latencies one at a time (from `alone` and `streams_alone`) and their peak
        memory (resident, and the peak of PSS from `pss_peaks`)."""
        for name, url, _, pid in self._each():
            figures = self.figures[name]
            figures["alone"] = alone[url]
            figures["streams_alone"] = streams_alone[url]
            figures["memory"] = (figures.pop("at_start"), resident_mb(pid), pss_peaks[name])
        return self.figures

    def stop(self):
        for served in self.served:
            served.stop()


class Served:
    """The app as a server serves it: its base URL, the headers of its proxied requests and of a person's pages, the
    processes whose memory counts (the app's), and `beside` those whose CPU time counts besides ({"PostgreSQL": pids,
    "nginx": pids})."""

    def __init__(self, base_url, app_pids, beside=None, headers=None, page_headers=None):
        self.base_url, self.app_pids, self.beside = base_url, app_pids, beside or {}
        self.headers, self.page_headers = headers, page_headers or {}


def postmaster(cluster):
    """The pid of the cluster's server (its connections are its children)."""
    return int((cluster.folder / "data" / "postmaster.pid").read_text().split()[0])


@contextmanager
def serving(server, folder, upstream_url, cluster):
    """The app served as `server` says (SERVERS), on a database prepared for the bench (bench.proxy.prepare): yields
    a Served."""
    key = {KEY_VARIABLE: "sk-bench-upstream"}
    if server == "two-replicas-nginx":
        url = prepare(folder, upstream_url, url=cluster.create_database())
        with ExitStack() as stack:
            replicas = stack.enter_context(
                two_replicas(cluster, Path(folder), SERVERS[server], TOOLGATE_DATABASE_URL=url, **key)
            )
            nginx = stack.enter_context(in_front_of([replica.url for replica in replicas], Path(folder) / "nginx"))
            person = stack.enter_context(signed_in(nginx.url))
            headers = {"Authorization": f"Bearer {token_on(person)}"}
            cookie = "; ".join(f"{name}={value}" for name, value in person.cookies.items())
            pids = [replica.process.pid for replica in replicas]
            beside = {"PostgreSQL": [postmaster(cluster)], "nginx": [nginx.process.pid]}
            yield Served(nginx.url, pids, beside, headers, {"Cookie": cookie})
        return
    if server == "make-run-postgresql":
        key["TOOLGATE_DATABASE_URL"] = prepare(folder, upstream_url, url=cluster.create_database())
        database = f"{folder}/unused.db"
    else:
        database = prepare(folder, upstream_url, f"{server}.db")
    app = AppProcess(SERVERS[server], database, f"{folder}/{server}.log", **key)
    try:
        base_url = app.ready()
        beside = {"PostgreSQL": [postmaster(cluster)]} if server in ON_POSTGRESQL else {}
        yield Served(base_url, [app.process.pid], beside)
    finally:
        app.stop()


def measure(server, folder, upstream_url, sizes, cluster=None):
    """Every figure of one server, and of the floor (bench.proxy_floor) served the same way: {name: (direct,
    Toolgate)} for the bursts, and for the streams and one request at a time (direct, the floor, Toolgate); and
    under "peers" those of each installed peer (ServedPeers)."""
    floor_environment = {"FLOOR_UPSTREAM_URL": f"{upstream_url}/v1", "FLOOR_DATABASE": f"{folder}/floor.db"}
    floor = AppProcess(
        FLOOR_SERVER, f"{folder}/unused.db", f"{folder}/floor.log", ready_path="/ready", **floor_environment
    )
    others = ServedPeers()
    try:
        others.start(folder, upstream_url)  # LiteLLM takes seconds to start: meanwhile
        with serving(server, folder, upstream_url, cluster) as app:
            return _measure(app, floor, others, upstream_url, sizes)
    finally:
        floor.stop()
        others.stop()


def _measure(app, floor, others, upstream_url, sizes):
    proxy = f"{app.base_url}/proxy/{AGENT_ID}/v1/chat/completions"
    floor_url = f"{floor.ready()}/v1/chat/completions"
    direct = f"{upstream_url}/v1/chat/completions"
    at_start = resident_mb(*app.app_pids, field="VmRSS")
    others.ready()
    with PeakPss({"Toolgate": app.app_pids, **others.pids()}) as pss:
        for _ in range(WARM_UP_BURSTS):  # each worker process builds its connection's pool once
            for url, headers in ((proxy, app.headers), (floor_url, None)):
                asyncio.run(burst(url, WARM_UP, keep_alive=False, model="instant", headers=headers))
            others.warm_up()
        pairs = {}
        for size in sizes:
            alone = asyncio.run(burst(direct, size, keep_alive=False))
            if size == max(sizes):
                through, pages, page_failures = burst_with_pages(app, proxy, size)
            else:
                through = asyncio.run(burst(proxy, size, keep_alive=False, headers=app.headers))
            pairs[f"N = {size}"] = (alone, through)
            others.send_burst(f"N = {size}", size, keep_alive=False)
        pairs[f"N = {KEEP_ALIVE_SIZE}, keep-alive"] = tuple(
            asyncio.run(burst(url, KEEP_ALIVE_SIZE, keep_alive=True, headers=headers))
            for url, headers in ((direct, None), (proxy, app.headers))
        )
        others.send_burst(f"N = {KEEP_ALIVE_SIZE}, keep-alive", KEEP_ALIVE_SIZE, keep_alive=True)
        smaller = [size for size in sizes if size != max(sizes)] or list(sizes)
        cpu_ms = (
            _cpu_per_request({"floor": [floor.process.pid]}, floor_url, smaller)["floor"],
            _cpu_per_request({"the app": app.app_pids, **app.beside}, proxy, smaller, app.headers),
        )
        others.measure_cpu(smaller)
        streams = tuple(
            asyncio.run(streamed(url, headers=headers))
            for url, headers in ((direct, None), (floor_url, None), (proxy, app.headers))
        )
        others.send_streams()
        headers = {**others.headers(), proxy: app.headers}
        urls = [direct, floor_url, *headers]
        alone = asyncio.run(one_at_a_time(urls, headers=headers))
        streams_alone = asyncio.run(streams_one_at_a_time(urls, headers=headers))
    return {
        "pairs": pairs,
        "pages": (pages, page_failures, max(sizes)),
        "cpu_ms": cpu_ms,
        "cpu_sizes": smaller,
        "memory": (at_start, resident_mb(*app.app_pids), pss.peaks["Toolgate"]),
        "streams": streams,
        "alone": (alone[direct], alone[floor_url], alone[proxy]),
        "streams_alone": (streams_alone[direct], streams_alone[floor_url], streams_alone[proxy]),
        "peers": others.finish(alone, streams_alone, pss.peaks),
    }


# Served side by side, both at once, for one request at a time to each in alternation (engines_side_by_side).
SIDE_BY_SIDE = ("make-run", "make-run-postgresql")


def engines_side_by_side(folder, upstream_url, cluster):
    """One request at a time to the model directly and through each of SIDE_BY_SIDE in alternation, both served at
    once on fresh databases, after WARM_UP_BURSTS bursts of WARM_UP to each: {name: latencies}, "direct" first.
    Measured phase after phase, each engine met the machine in another state (direct one at a time took 0.7 ms in
    one phase and 1.7 ms in the next of the same run): side by side, both meet the same."""
    place = Path(folder) / "side by side"
    place.mkdir()
    direct = f"{upstream_url}/v1/chat/completions"
    with ExitStack() as stack:
        served = {server: stack.enter_context(serving(server, place, upstream_url, cluster)) for server in SIDE_BY_SIDE}
        urls = {server: f"{app.base_url}/proxy/{AGENT_ID}/v1/chat/completions" for server, app in served.items()}
        headers = {urls[server]: app.headers for server, app in served.items()}
        for _ in range(WARM_UP_BURSTS):
            for url in urls.values():
                asyncio.run(burst(url, WARM_UP, keep_alive=False, model="instant", headers=headers[url]))
        alone = asyncio.run(one_at_a_time([direct, *urls.values()], headers=headers))
    return {"direct": alone[direct], **{server: alone[url] for server, url in urls.items()}}


def print_side_by_side(latencies):
    direct = latencies.pop("direct")
    print(
        f"  {' and '.join(latencies)} served side by side, one request at a time to each in alternation "
        f"({ONE_AT_A_TIME} each), added over direct:"
    )
    for share in (0.5, 0.95):
        base = percentile(direct, share)
        added = {server: (percentile(samples, share) - base) * 1000 for server, samples in latencies.items()}
        first, second = added.values()
        figures = ", ".join(f"{server} {ms:+.2f} ms" for server, ms in added.items())
        print(f"    p{round(share * 100)}: direct {base * 1000:.2f} ms, {figures} ({second / first:.2f}x)")


async def _ask_each(url, size, headers):
    """`size` requests released together: [(status or None when the connection failed)] of each."""

    async def ask(client):
        try:
            return (await client.post(url, json=_body("bench-1s"), headers=headers)).status_code
        except httpx2.HTTPError:
            return None

    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=0)
    async with httpx2.AsyncClient(limits=limits, timeout=REQUEST_TIMEOUT) as client:
        return await asyncio.gather(*(ask(client) for _ in range(size)))


def replica_killed(folder, upstream_url, cluster):
    """KILLED_DURING requests through nginx to two replicas, one of them killed (`kill -9`) KILL_AFTER s in: (the
    clients' statuses, {replica's address: statuses nginx logged from it}, the survivor's address, runs stored)."""
    url = prepare(folder, upstream_url, url=cluster.create_database())
    place = Path(folder) / "killed"
    place.mkdir()
    key = {KEY_VARIABLE: "sk-bench-upstream", "TOOLGATE_DATABASE_URL": url}
    with (
        two_replicas(cluster, place, SERVERS["two-replicas-nginx"], **key) as (survivor, victim),
        in_front_of([survivor.url, victim.url], place / "nginx") as nginx,
        signed_in(nginx.url) as person,
    ):
        headers = {"Authorization": f"Bearer {token_on(person)}"}
        proxy = f"{nginx.url}/proxy/{AGENT_ID}/v1/chat/completions"
        killer = threading.Timer(KILL_AFTER, victim.kill)
        killer.start()
        statuses = asyncio.run(_ask_each(proxy, KILLED_DURING, headers))
        killer.join()
        by_replica = {}
        for method, path, status, replicas, _ in nginx.served():
            if method == "POST" and path.startswith("/proxy/"):
                by_replica.setdefault(replicas, []).append(status)
        with engine_for(url).connect() as db:
            stored = db.execute(text("SELECT count(*) FROM runs")).scalar()
    return statuses, by_replica, survivor.url.removeprefix("http://"), stored


def print_killed(figures):
    statuses, by_replica, survivor, stored = figures
    answered = statuses.count(200)
    print(
        f"  two replicas behind nginx, one killed (kill -9) {KILL_AFTER} s into N = {KILLED_DURING} proxied requests: "
        f"{answered} answered, {len(statuses) - answered} failed ({', '.join(sorted(map(str, set(statuses))))})"
    )
    for replicas, logged in sorted(by_replica.items()):
        role = " (the survivor)" if replicas == survivor else ""
        counts = ", ".join(f"{logged.count(status)} x {status}" for status in sorted(set(logged)))
        print(f"    nginx's log, taken by {replicas}{role}: {counts}")
    print(f"    runs stored: {stored}, requests answered: {answered}")


def _seconds_row(label, direct, through, unit=1.0, suffix="", others=()):
    """Toolgate's figure beside direct's, and then each of `others` (the peers'), each with its ratio to direct."""
    name = "s" if unit == 1.0 else "ms"
    columns = "".join(f" {figure * unit:9.2f} {name:2s} {figure / direct:7.2f}x" for figure in others)
    print(
        f"    {label:32s} {direct * unit:9.2f} {name:2s} {through * unit:9.2f} {name:2s} "
        f"{through / direct:7.2f}x{columns}{suffix}"
    )


def _added_row(label, direct, floor, through, share, unit="ms", others=None):
    """Latencies over direct at a percentile: the floor's, Toolgate's, and Toolgate's own (less the floor); then
    each peer's of `others` ({name: latencies})."""
    base = percentile(direct, share)
    added_floor = (percentile(floor, share) - base) * 1000
    added = (percentile(through, share) - base) * 1000
    beside = "".join(
        f"   {name} {(percentile(samples, share) - base) * 1000:+7.2f} ms" if samples else f"   {name} all failed"
        for name, samples in (others or {}).items()
    )
    print(
        f"    {label:32s} {base * 1000:9.2f} {unit:2s}   floor {added_floor:+7.2f} ms   Toolgate {added:+7.2f} ms"
        f"   Toolgate's own {added - added_floor:+7.2f} ms{beside}"
    )


def _print_bursts(figures):
    others = figures["peers"]
    columns = "".join(f" {name:>12s} {'ratio':>8s}" for name in others)
    print(f"    {'':32s} {'direct':>12s} {'Toolgate':>12s} {'ratio':>8s}{columns}")
    for name, (direct, through) in figures["pairs"].items():
        beside = {peer: other["pairs"][name] for peer, other in others.items()}
        failures = f"   failed: {direct[2]} direct, {through[2]} through"
        failures += "".join(f", {peer_figures[2]} {peer}" for peer, peer_figures in beside.items())
        walls = [peer_figures[0] for peer_figures in beside.values()]
        _seconds_row(f"{name}, wall", direct[0], through[0], suffix=failures, others=walls)
        p95s = [percentile(peer_figures[1], 0.95) for peer_figures in beside.values()]
        _seconds_row(f"{name}, p95", percentile(direct[1], 0.95), percentile(through[1], 0.95), others=p95s)


def _print_costs(figures):
    others = figures["peers"]
    pages, page_failures, size = figures["pages"]
    latencies = (
        f"p50 {percentile(pages, 0.5) * 1000:.1f} ms, p95 {percentile(pages, 0.95) * 1000:.1f} ms"
        if pages
        else "none answered"
    )
    print(
        f"    GET /agents every {PAGE_EVERY * 1000:.0f} ms on a fresh connection during {PAGE_BURSTS} x N = {size}: "
        f"{latencies} ({len(pages)} requests, {page_failures} failed)"
    )
    floor_cpu, groups = figures["cpu_ms"]
    cpu = sum(groups.values())
    sizes = " and ".join(map(str, figures["cpu_sizes"]))
    parts = f" ({', '.join(f'{name} {ms:.2f} ms' for name, ms in groups.items())})" if len(groups) > 1 else ""
    print(
        f"    CPU per proxied request (N = {sizes}): Toolgate {cpu:.2f} ms{parts}, the floor {floor_cpu:.2f} ms, "
        f"Toolgate's own {cpu - floor_cpu:+.2f} ms (the server's CPU time over the requests served)"
    )
    if others:
        beside = ", ".join(f"{name} {other['cpu_ms']:.2f} ms" for name, other in others.items())
        print(f"    CPU per request through the peers, the same bursts measured the same way: {beside}")
    at_start, peak, pss = figures["memory"]
    print(
        f"    memory: {peak:.0f} MB at the peak, {at_start:.0f} MB at start (resident, all its processes); "
        f"{pss:.0f} MB at the peak of their PSS summed"
    )
    for name, other in others.items():
        at_start, peak, pss = other["memory"]
        print(
            f"    memory of {name}: {peak:.0f} MB at the peak, {at_start:.0f} MB at start; {pss:.0f} MB at the peak of "
            "its PSS"
        )


def _stream_rows(prefix, streams, peer_streams):
    """The first text, the last text and the end of the response, p50 over direct: `streams` (direct's, the
    floor's, Toolgate's) and `peer_streams` ({name: the peer's}) each [firsts, lasts, ends]."""
    for index, label in enumerate(("first token", "last token", "end of response")):
        beside = {name: figures[index] for name, figures in peer_streams.items()}
        _added_row(f"{prefix}, {label}, p50", *(figures[index] for figures in streams), 0.5, others=beside)


def _print_added(figures):
    others = figures["peers"]
    print(f"    {'':32s} {'direct':>12s}   added over direct")
    (direct_figures, direct_failed), (floor_figures, floor_failed), (figures_through, failed) = figures["streams"]
    peer_streams = {name: other["streams"][0] for name, other in others.items()}
    _stream_rows("streamed", (direct_figures, floor_figures, figures_through), peer_streams)
    peers_failed = "".join(f", {other['streams'][1]} {name}" for name, other in others.items())
    print(
        f"    streamed: {STREAMED} at once, 40 chunks over 2 s; failed: {direct_failed} direct, {floor_failed} floor, "
        f"{failed} through{peers_failed}"
    )
    peer_streams = {name: other["streams_alone"] for name, other in others.items()}
    _stream_rows("one stream at a time", figures["streams_alone"], peer_streams)
    for share in (0.5, 0.95):
        beside = {name: other["alone"] for name, other in others.items()}
        _added_row(f"one at a time, p{round(share * 100)}", *figures["alone"], share, others=beside)


def print_figures(server, figures):
    print(f"  {server}: {' '.join(SERVERS[server])}")
    for name, other in figures["peers"].items():
        print(f"  beside it, {name}: {other['peer'].release}, {other['peer'].serving}")
    _print_bursts(figures)
    _print_costs(figures)
    _print_added(figures)


def report(servers=("make-run",), sizes=SIZES):
    print(
        "Gateway: N chat completions at once against a model answering in 1.0 s, directly and through the proxy; "
        f"one at a time ({ONE_AT_A_TIME} each) against one answering at once"
    )
    absent = peers.missing()
    if absent:
        releases = ", ".join(peer.release for peer in absent)
        print(f"  not installed, so not measured beside Toolgate: {releases} (`make peers` installs them)")
    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        cluster = None
        if any(server in ON_POSTGRESQL for server in servers):
            cluster = Cluster(durable=True)
            stack.callback(cluster.stop)
        upstream = AppProcess(["-m", "tests.async_model_server"], f"{folder}/unused.db", f"{folder}/upstream.log")
        stack.callback(upstream.stop)
        upstream_url = upstream.ready()
        for server in servers:
            print_figures(server, measure(server, folder, upstream_url, sizes, cluster))
        if "two-replicas-nginx" in servers:
            print_killed(replica_killed(folder, upstream_url, cluster))
        if set(SIDE_BY_SIDE) <= set(servers):
            print_side_by_side(engines_side_by_side(folder, upstream_url, cluster))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--servers", default="make-run", help=f"comma-separated: {', '.join(SERVERS)}")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="the bursts' sizes, comma-separated")
    arguments = parser.parse_args()
    report(tuple(arguments.servers.split(",")), tuple(int(size) for size in arguments.sizes.split(",")))
