"""The proxy looks up, on every request, the latest run of a conversation (and of a held one) by its key
(store.runs.CONVERSATION_LOOKUP). Many runs may share a key — the same opening answered the same way, as a
deterministic model answers a batch — and the look-up must still read one index entry, not every run with the key
(then sorted), nor the runs table backwards until one matches: on PostgreSQL that cost 0.39 ms a request at 2,000
runs sharing a key, growing with the table. SQLite's index always ended with the id (the rowid)."""

import json

import pytest

from store.runs import CONVERSATION_LOOKUP, proxied_run_with_conversation

pytestmark = pytest.mark.both_engines

SHARING = 300  # runs with one conversation key

RUNS_WITH_ONE_KEY = """
    WITH RECURSIVE numbers (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM numbers WHERE n < :count)
    INSERT INTO runs (agent_id, message, stop_reason, source, api, created_at, rounds_used, tool_calls,
                      rejected_calls, conversation_key, result)
    SELECT :agent_id, 'run ' || n, 'answered', 'proxy', 'chat_completions', '2026-12-06T00:00:00+00:00', 1, 0, 0, :key,
           '{}'
    FROM numbers
"""

RUNS_OF_OTHER_CONVERSATIONS = RUNS_WITH_ONE_KEY.replace(":key,", "'conversation ' || n,")


def _plan_nodes(plan):
    yield plan
    for child in plan.get("Plans", []):
        yield from _plan_nodes(child)


def _postgresql_rows_read(database, agent_id, key, plan_mode):
    """The most rows any step of the look-up's plan produced or threw away, as PostgreSQL ran it."""
    database.execute(f"SET plan_cache_mode = {plan_mode}")
    prepared = CONVERSATION_LOOKUP.replace(":agent_id", "$1").replace(":key", "$2")
    database.execute(f"PREPARE lookup (text, text) AS {prepared}")
    try:
        [[explained]] = database.execute(
            f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE lookup ('{agent_id}', '{key}')"
        ).fetchall()
    finally:
        database.execute("DEALLOCATE lookup")
        database.execute("RESET plan_cache_mode")
    plan = (explained if isinstance(explained, list) else json.loads(explained))[0]["Plan"]
    return max(node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0) for node in _plan_nodes(plan))


@pytest.fixture
def shared_key(database):
    database.execute(RUNS_WITH_ONE_KEY, {"count": SHARING, "agent_id": "canvas", "key": "opening"})
    database.execute(RUNS_OF_OTHER_CONVERSATIONS, {"count": SHARING, "agent_id": "other"})
    database.execute("ANALYZE")
    return "opening"


def test_the_lookup_finds_the_latest_run_with_the_key(database, shared_key):
    latest = database.execute(
        "SELECT max(id) FROM runs WHERE agent_id = 'canvas' AND conversation_key = :key", {"key": shared_key}
    ).scalar()
    assert proxied_run_with_conversation(database, "canvas", shared_key)["id"] == latest
    assert proxied_run_with_conversation(database, "canvas", "held:opening") is None


def _postgresql_reads_one_entry(database, key):
    for plan_mode in ("force_generic_plan", "force_custom_plan"):  # psycopg prepares a statement after 5 uses
        assert _postgresql_rows_read(database, "canvas", key, plan_mode) == 1, plan_mode
        assert _postgresql_rows_read(database, "canvas", f"held:{key}", plan_mode) == 0, plan_mode


def _sqlite_reads_one_entry(database, key):
    statement = CONVERSATION_LOOKUP.replace(":agent_id", "'canvas'").replace(":key", f"'{key}'")
    [step] = [row[-1] for row in database.execute(f"EXPLAIN QUERY PLAN {statement}").fetchall()]
    assert step.startswith("SEARCH runs USING INDEX ") and step.endswith("(agent_id=? AND conversation_key=?)"), step


def test_the_lookup_reads_one_index_entry_however_many_runs_share_the_key(engine, database, shared_key):
    {"postgresql": _postgresql_reads_one_entry, "sqlite": _sqlite_reads_one_entry}[engine](database, shared_key)
