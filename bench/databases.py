"""Runs recorded per second by one process, on SQLite (the default) and on PostgreSQL (a durable throwaway cluster of
Debian's postgresql, tests/postgresql.py, on this machine): BURST runs handed in at once by as many threads, each by
the database's URL as a proxied request records its run, holding no connection, committed together
(store.db.write_together) by whichever takes a connection of the pool (on PostgreSQL the pool has a cap, 10 by
default). Each engine's first burst opens its connections; the figures are of the bursts after it."""

import tempfile
import time

from sqlalchemy import event

from app import create_app
from store import runs as run_store
from store.db import WRITING, engine_for
from tests.live_http import all_at_once
from tests.postgresql import Cluster

BURST = 300
BURSTS = 3
RUN = {"agent_id": "bench", "message": "Which bundles?", "stop_reason": "answered", "rounds": []}


def _bursts(url):
    """[(runs per second, write transactions)] of each burst after the first."""
    engine = engine_for(url)
    transactions = []
    event.listen(engine, "begin", lambda connection: connection.info.get(WRITING) and transactions.append(1))

    def save(_number):
        return run_store.save_run(url, RUN)["id"]

    figures = []
    for _ in range(BURSTS + 1):
        transactions.clear()
        started = time.perf_counter()
        all_at_once(save, range(BURST))
        figures.append((BURST / (time.perf_counter() - started), len(transactions)))
    return figures[1:]


def report():
    print(f"Runs recorded per second, one process, {BURST} at once from as many threads ({BURSTS} bursts):")
    cluster = Cluster(durable=True)
    try:
        with tempfile.TemporaryDirectory() as folder:
            urls = {"SQLite": f"{folder}/toolgate.db", "PostgreSQL": cluster.create_database()}
            measured = {}
            for name, url in urls.items():
                create_app({"DATABASE_URL": url, "SECRET_KEY": "bench"}, instance_path=f"{folder}/{name}")
                measured[name] = _bursts(url)
                rates = ", ".join(f"{rate:,.0f}/s ({count} commits)" for rate, count in measured[name])
                print(f"  {name:11s} {rates}")
            best = {name: max(rate for rate, _ in figures) for name, figures in measured.items()}
            print(f"  PostgreSQL / SQLite, best bursts: {best['PostgreSQL'] / best['SQLite']:.2f}x (target >= 0.7x)")
    finally:
        cluster.stop()


if __name__ == "__main__":
    report()
