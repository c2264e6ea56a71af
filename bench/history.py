"""The history pages at 100 and at 100,000 stored runs (/runs with its charts, which read the counts tables), each
page timed beside itself on the small database in the same process; and the bytes a stored run takes, beside the
form runs were stored in before step 0007.

Both databases are built in a temporary folder through the store's own insert path (store.runs.save_run, 1,000
runs per transaction), from a few real runs of scripted agents spread over five agent ids. Each page shows as many
rows on both databases, so the ratio is what the number of stored runs costs."""

import json
import tempfile
import time

from sqlalchemy import inspect

import engine
from store import execute, select_value
from store import runs as run_store
from store.db import open_db, write_transaction

from .timing import compare, microseconds, milliseconds, per_call_seconds

SMALL, BIG = 100, 100_000
AGENT_IDS = [f"agent_{number}" for number in range(5)]
BUNDLE_CALLS = [{"name": "list_bundles", "arguments": {"entity_type": kind}} for kind in ("node", "taxonomy_term")]
TEMPLATES = [
    {  # a restricted tool called twice (rejected, logged), then three rounds of three calls
        "id": "template",
        "label": "Restricted, then three rounds of three calls",
        "system_prompt": "List the bundles the user asks about.",
        "tools": {"list_bundles": {"restrict_multiple_calls": True}, "list_entity_types": {}},
        "script": [{"tool_calls": BUNDLE_CALLS}]
        + [{"tool_calls": [BUNDLE_CALLS[0]]}] * 3
        + [{"content": "Nodes have article and page bundles."}],
    },
    {
        "id": "template",
        "label": "Capped",
        "max_rounds": 1,
        "tools": {"list_entity_types": {}},
        "script": [{"tool_calls": [{"name": "list_entity_types", "arguments": {}}]}, {"content": "Four types."}],
    },
    {"id": "template", "label": "Answers", "script": [{"content": "Hello."}]},
    {"id": "template", "label": "No provider", "provider": "gone"},  # stop_reason error, logged
]
THREE_BY_THREE = {
    "id": "three_by_three",
    "label": "Three rounds of three calls",
    "system_prompt": "List the bundles the user asks about.\nUse the tools.",
    "max_rounds": 5,
    "tools": {"list_bundles": {}, "list_entity_types": {}},
    "script": [
        {
            "tool_calls": [
                {"name": "list_bundles", "arguments": {"entity_type": kind}} for kind in ("node", "user", "media")
            ]
        }
    ]
    * 3
    + [{"content": "Nodes: article, page; users: user; media: image, video."}],
}


def _app(folder, name):
    from app import create_app  # the web layer only when this benchmark runs

    config = {"TESTING": True, "DATABASE": f"{folder}/{name}.db", "SECRET_KEY": "bench"}
    return create_app(config, instance_path=folder)


def _agent_id(number):
    """Every other run is agent_0's, so that its filtered pages are full pages at 100 runs too; the others share
    the rest."""
    return AGENT_IDS[0] if number % 2 == 0 else AGENT_IDS[1 + number // 2 % (len(AGENT_IDS) - 1)]


def _fill(app, count, templates):
    db = open_db(app.config["DATABASE"])
    for start in range(0, count, 1000):
        with write_transaction(db):
            for number in range(start, min(count, start + 1000)):
                run_store.save_run(db, {**templates[number % len(templates)], "agent_id": _agent_id(number)})
    db.close()


def _pages(app):
    """The page addresses to time on a database: first pages, far back (near the oldest), both filters."""
    db = open_db(app.config["DATABASE"])
    oldest_run, oldest_entry = (select_value(db, f"SELECT min(id) FROM {table}") for table in ("runs", "log"))
    # A run from the middle made from the first template on both databases, so both pages render the same run.
    middle = oldest_run + select_value(db, "SELECT count(*) FROM runs") // 2 // len(TEMPLATES) * len(TEMPLATES)
    db.close()
    return {
        "/runs (with its charts)": "/runs",
        "/runs one agent (charts too)": "/runs?agent=agent_0",
        "/runs far back": f"/runs?before={oldest_run + 30}",
        "/runs agent + stop reason": "/runs?agent=agent_0&stop_reason=answered",
        "/log": "/log",
        "/log far back": f"/log?before={oldest_entry + 60}",
        "/api/runs agent + stop reason": "/api/runs?agent=agent_0&stop_reason=answered",
        "/api/runs far back": f"/api/runs?agent=agent_0&before={oldest_run + 60}",
        "/runs/<id>": f"/runs/{middle}",
    }


def _timer(client, address):
    def get():
        response = client.get(address)
        assert response.status_code == 200, (address, response.status_code)
        return response.data

    return get


def report_pages(folder, templates):
    small, big = _app(folder, "small"), _app(folder, "big")
    _fill(small, SMALL, templates)
    started = time.perf_counter()
    _fill(big, BIG, templates)
    print(f"History: every page at {BIG:,} runs beside the same page at {SMALL} runs (target <= 1.50x)")
    print(f"  built {BIG:,} runs with store.runs.save_run in {time.perf_counter() - started:.1f} s")
    small_pages, big_pages = _pages(small), _pages(big)
    small_client, big_client = small.test_client(), big.test_client()
    for name in small_pages:
        at_big, at_small = compare(
            _timer(big_client, big_pages[name]), _timer(small_client, small_pages[name]), repeat=60, number=3
        )
        print(
            f"  {name:30s} {SMALL} runs {milliseconds(at_small)}   {BIG:,} runs {milliseconds(at_big)}   "
            f"ratio {at_big / at_small:.2f}x"
        )


def report_counts(folder):
    """Why the totals and the agent filter read the counts tables: the same answers from the runs themselves,
    even through an index only, cost a walk over every run."""
    db = open_db(f"{folder}/big.db")
    choices = {
        "agent filter choices, from run_counts": "SELECT DISTINCT agent_id FROM run_counts ORDER BY agent_id",
        "agent filter choices, index-only DISTINCT over runs": "SELECT DISTINCT agent_id FROM runs ORDER BY agent_id",
        "total of one agent, from run_counts": "SELECT sum(count) FROM run_counts WHERE agent_id = 'agent_0'",
        "total of one agent, count(*) over its index": "SELECT count(*) FROM runs WHERE agent_id = 'agent_0'",
    }
    print(f"  at {BIG:,} runs:")
    for name, sql in choices.items():
        print(f"    {name:52s} {microseconds(per_call_seconds(lambda sql=sql: execute(db, sql).fetchall(), number=5))}")
    db.close()


def _previous_form_bytes(run):
    """What the code before step 0007 stored for a run: the run whole, the agent snapshot again, the columns."""
    columns = [run["agent_id"], run["message"], run["stop_reason"], run.get("answer"), run["created_at"]]
    return (
        len(json.dumps({key: value for key, value in run.items() if key not in ("id", "created_at")}).encode())
        + len(json.dumps(run.get("overrides") or {}).encode())
        + len(json.dumps(run.get("agent") or {}).encode())
        + sum(len(str(value).encode()) for value in columns if value is not None)
        + len(str(run["tool_calls"])) * 2
        + len(str(run["duration_ms"]))
    )


def report_bytes(folder):
    app = _app(folder, "bytes")
    db = open_db(app.config["DATABASE"])
    run = run_store.save_run(db, engine.run_agent(THREE_BY_THREE, "Which bundles do nodes, users and media have?"))
    columns = [column["name"] for column in inspect(db).get_columns("runs")]
    total = " + ".join(f"coalesce(length(CAST({column} AS BLOB)), 0)" for column in columns)
    stored = select_value(db, f"SELECT {total} FROM runs WHERE id = :id", {"id": run["id"]})
    db.close()
    previous = _previous_form_bytes(run)
    print("Storage: one stored 3-round x 3-call run (the values of its row)")
    print(f"  as stored before step 0007   {previous:6,} bytes")
    print(f"  stored now                   {stored:6,} bytes   ratio {stored / previous:.2f}x (target <= 6,144 bytes)")


def report():
    templates = [engine.run_agent(agent, "Which bundles do nodes and taxonomy terms have?") for agent in TEMPLATES]
    with tempfile.TemporaryDirectory() as folder:
        report_bytes(folder)
        print()
        report_pages(folder, templates)
        report_counts(folder)
        big = open_db(f"{folder}/big.db")
        size = select_value(big, "PRAGMA page_count") * select_value(big, "PRAGMA page_size")
        big.close()
        print(
            f"  the database file at {BIG:,} runs: {size / 1e6:.0f} MB, {size / BIG:,.0f} bytes per run (log, indexes)"
        )


if __name__ == "__main__":
    report()
