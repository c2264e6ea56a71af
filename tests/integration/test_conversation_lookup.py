"""The proxy looks up, on every request, the latest run of a conversation and of a held one by their keys, in one
statement (store.runs.conversation_lookup). Many runs may share a key — the same opening answered the same way, as a
deterministic model answers a batch — and the look-up must still read one index entry, not every run with the key
(then sorted), nor the runs table backwards until one matches: on PostgreSQL that cost 0.39 ms a request at 2,000
runs sharing a key, growing with the table. SQLite's index always ended with the id (the rowid)."""

import json

import pytest

from store.runs import conversation_lookup, proxied_run_with_conversation, proxied_runs_and_generation

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


# The look-up as a proxied request sends it: the key its conversation continues, and the held one's.
LOOKUP = conversation_lookup(2)


def _postgresql_rows_read(database, agent_id, keys, plan_mode):
    """The most rows any step of the look-up's plan that reads the runs produced or threw away, as PostgreSQL ran
    it (the settings' generation, joined, is one row of its own table)."""
    database.execute(f"SET plan_cache_mode = {plan_mode}")
    prepared = LOOKUP.replace(":agent_id", "$1").replace(":key0", "$2").replace(":key1", "$3")
    database.execute(f"PREPARE lookup (text, text, text) AS {prepared}")
    try:
        [[explained]] = database.execute(
            f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE lookup ('{agent_id}', '{keys[0]}', '{keys[1]}')"
        ).fetchall()
    finally:
        database.execute("DEALLOCATE lookup")
        database.execute("RESET plan_cache_mode")
    plan = (explained if isinstance(explained, list) else json.loads(explained))[0]["Plan"]
    runs_read = [node for node in _plan_nodes(plan) if node.get("Relation Name") == "runs"]
    assert len(runs_read) == len(keys), plan  # an index scan for each key, nothing else of the runs
    return max(node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0) for node in runs_read)


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
    found, _generation = proxied_runs_and_generation(database, "canvas", ["held:opening", shared_key])
    assert found["held:opening"] is None and found[shared_key]["id"] == latest
    assert proxied_runs_and_generation(database, "other", ["conversation 7", "conversation 9"])[0] == {
        "conversation 7": proxied_run_with_conversation(database, "other", "conversation 7"),
        "conversation 9": proxied_run_with_conversation(database, "other", "conversation 9"),
    }


def _postgresql_reads_one_entry(database, key):
    for plan_mode in ("force_generic_plan", "force_custom_plan"):  # psycopg prepares a statement after 5 uses
        assert _postgresql_rows_read(database, "canvas", (key, f"held:{key}"), plan_mode) == 1, plan_mode
        assert _postgresql_rows_read(database, "canvas", (f"held:{key}", "held:other"), plan_mode) == 0, plan_mode


def _sqlite_reads_one_entry(database, key):
    statement = LOOKUP.replace(":agent_id", "'canvas'").replace(":key0", f"'{key}'").replace(":key1", f"'held:{key}'")
    steps = [row[-1] for row in database.execute(f"EXPLAIN QUERY PLAN {statement}").fetchall()]
    searches = [step for step in steps if step.split()[1:2] == ["runs"]]  # not the scan of each one-row subquery
    assert len(searches) == 2 and not [step for step in steps if "TEMP B-TREE" in step], steps
    for step in searches:
        assert step.startswith("SEARCH runs USING INDEX "), steps
        assert step.endswith("(agent_id=? AND conversation_key=?)"), steps


def test_the_lookup_reads_one_index_entry_however_many_runs_share_the_key(engine, database, shared_key):
    {"postgresql": _postgresql_reads_one_entry, "sqlite": _sqlite_reads_one_entry}[engine](database, shared_key)
