"""The counts the run charts are drawn from (atop /runs and on an agent's page): runs per day by stop reason, rounds
per run, and rejected calls per tool and reason, under the runs list's filters (agent, stop reason, source, the
API a proxied run's client spoke).

Each run row carries what the charts need of it (`rounds_used`, and `rejections`: its rejected calls counted per
tool and reason, as JSON), and triggers (step 0062) keep two small counts tables in step with every insert, delete
and change of the runs, as `run_counts` is kept: `run_chart_counts` (runs per agent, stop reason, source, client
API, day and rounds used) and `rejection_counts` (rejected calls per agent, stop reason, source, client API, day, tool
and reason). A chart reads a counts table, never the runs, so it costs the same at 100,000 runs as at 100.
"""

import json
from collections import Counter

from . import execute

DAYS = 14  # the days the runs-per-day chart shows, ending with the latest day that has runs


def chart_columns(run):
    """The runs columns the charts count a run by: its rounds used, and its rejected calls per tool and reason
    (null when it has none)."""
    rejected = Counter(
        (call.get("name"), call.get("reason"))
        for round_ in run.get("rounds") or []
        if isinstance(round_, dict)
        for call in round_.get("calls") or []
        if isinstance(call, dict) and call.get("status") == "rejected"
    )
    rejections = [
        {"tool": tool or "", "reason": reason or "", "count": count}
        for (tool, reason), count in sorted(rejected.items(), key=lambda item: (str(item[0][0]), str(item[0][1])))
    ]
    rounds_used = run.get("rounds_used")
    return {
        "rounds_used": rounds_used if type(rounds_used) is int else None,
        "rejections": json.dumps(rejections, separators=(",", ":")) if rejections else None,
    }


def _where(filters):
    clauses, parameters = [], {}
    for column, value in filters.items():
        if value is not None:  # "" is a filter: the runs that have not ended have no stop reason
            clauses.append(f"{column} = :{column}")
            parameters[column] = value
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", parameters


def run_charts(db, agent_id=None, stop_reason=None, source=None, api=None):
    """What the three charts show under the filters: {"days": [(day, {stop reason: runs})], "rounds": [(rounds
    used, runs)], "rejections": [(tool, reason, calls)]}. A stop reason of "" is a run that has not ended; None
    filters nothing."""
    filters = {"agent_id": agent_id, "stop_reason": stop_reason, "source": source, "api": api}
    where, parameters = _where(filters)
    by_day = {}
    last_days = f"SELECT DISTINCT day FROM run_chart_counts{where} ORDER BY day DESC LIMIT {DAYS}"
    days = sorted(execute(db, last_days, parameters).scalars())
    if days:
        day_clause = (" AND " if where else " WHERE ") + "day >= :first_day"
        sql = (
            f"SELECT day, stop_reason, CAST(sum(count) AS BIGINT) FROM run_chart_counts{where}{day_clause} "
            "GROUP BY day, stop_reason"
        )
        for day, reason, count in execute(db, sql, {**parameters, "first_day": days[0]}):
            by_day.setdefault(day, {})[reason] = count
    rounds = execute(
        db,
        f"SELECT rounds_used, CAST(sum(count) AS BIGINT) FROM run_chart_counts{where} GROUP BY rounds_used "
        "ORDER BY rounds_used",
        parameters,
    ).fetchall()
    rejections = execute(
        db,
        f"SELECT tool, reason, CAST(sum(count) AS BIGINT) AS calls FROM rejection_counts{where} GROUP BY tool, reason "
        "ORDER BY calls DESC, tool, reason LIMIT 12",
        parameters,
    ).fetchall()
    return {
        "days": [(day, by_day.get(day, {})) for day in days],
        "rounds": [(used, count) for used, count in rounds if used >= 0],
        "rejections": [tuple(row) for row in rejections],
    }


def chart_triggers_sql():
    """The counts tables and the triggers that keep them in step with the runs (step 0062)."""
    key = (
        "coalesce({0}.agent_id, ''), coalesce({0}.stop_reason, ''), coalesce({0}.source, ''), coalesce({0}.api, ''), "
        "substr({0}.created_at, 1, 10)"
    )
    new_key = key.format("new")
    old_match = (
        "agent_id = coalesce(old.agent_id, '') AND stop_reason = coalesce(old.stop_reason, '') "
        "AND source = coalesce(old.source, '') AND api = coalesce(old.api, '') AND day = substr(old.created_at, 1, 10)"
    )
    add_run = (
        "INSERT INTO run_chart_counts (agent_id, stop_reason, source, api, day, rounds_used, count) "
        f"VALUES ({new_key}, coalesce(new.rounds_used, -1), 1) "
        "ON CONFLICT (agent_id, stop_reason, source, api, day, rounds_used) DO UPDATE SET count = count + 1;"
    )
    remove_run = (
        "UPDATE run_chart_counts SET count = count - 1 "
        f"WHERE {old_match} AND rounds_used = coalesce(old.rounds_used, -1);"
        f"DELETE FROM run_chart_counts WHERE {old_match} AND count = 0;"
    )
    add_rejections = (
        "INSERT INTO rejection_counts (agent_id, stop_reason, source, api, day, tool, reason, count) "
        f"SELECT {new_key}, json_extract(value, '$.tool'), json_extract(value, '$.reason'), "
        "json_extract(value, '$.count') FROM json_each(coalesce(new.rejections, '[]')) WHERE true "
        "ON CONFLICT (agent_id, stop_reason, source, api, day, tool, reason) "
        "DO UPDATE SET count = count + excluded.count;"
    )
    remove_rejections = (
        "UPDATE rejection_counts SET count = count - (SELECT json_extract(value, '$.count') "
        "FROM json_each(coalesce(old.rejections, '[]')) WHERE json_extract(value, '$.tool') = rejection_counts.tool "
        "AND json_extract(value, '$.reason') = rejection_counts.reason) "
        f"WHERE {old_match} AND EXISTS (SELECT 1 FROM json_each(coalesce(old.rejections, '[]')) "
        "WHERE json_extract(value, '$.tool') = rejection_counts.tool "
        "AND json_extract(value, '$.reason') = rejection_counts.reason);"
        f"DELETE FROM rejection_counts WHERE {old_match} AND count <= 0;"
    )
    columns = "agent_id, stop_reason, source, api, created_at, rounds_used, rejections"
    return f"""
        CREATE TABLE run_chart_counts (
            agent_id TEXT NOT NULL, stop_reason TEXT NOT NULL, source TEXT NOT NULL, api TEXT NOT NULL,
            day TEXT NOT NULL, rounds_used INTEGER NOT NULL, count INTEGER NOT NULL,
            PRIMARY KEY (agent_id, stop_reason, source, api, day, rounds_used)
        );
        CREATE TABLE rejection_counts (
            agent_id TEXT NOT NULL, stop_reason TEXT NOT NULL, source TEXT NOT NULL, api TEXT NOT NULL,
            day TEXT NOT NULL, tool TEXT NOT NULL, reason TEXT NOT NULL, count INTEGER NOT NULL,
            PRIMARY KEY (agent_id, stop_reason, source, api, day, tool, reason)
        );
        CREATE INDEX run_chart_counts_day ON run_chart_counts (day);
        CREATE TRIGGER run_chart_counts_insert AFTER INSERT ON runs BEGIN {add_run} {add_rejections} END;
        CREATE TRIGGER run_chart_counts_delete AFTER DELETE ON runs BEGIN {remove_run} {remove_rejections} END;
        CREATE TRIGGER run_chart_counts_update AFTER UPDATE OF {columns} ON runs
            BEGIN {remove_run} {remove_rejections} {add_run} {add_rejections} END;
        """


def fill_counts_sql():
    """Count the runs already stored (step 0062, after their chart columns are filled)."""
    return """
        INSERT INTO run_chart_counts (agent_id, stop_reason, source, api, day, rounds_used, count)
            SELECT coalesce(agent_id, ''), coalesce(stop_reason, ''), coalesce(source, ''), coalesce(api, ''),
                substr(created_at, 1, 10), coalesce(rounds_used, -1), count(*) FROM runs GROUP BY 1, 2, 3, 4, 5, 6;
        INSERT INTO rejection_counts (agent_id, stop_reason, source, api, day, tool, reason, count)
            SELECT coalesce(agent_id, ''), coalesce(stop_reason, ''), coalesce(source, ''), coalesce(api, ''),
                substr(created_at, 1, 10), json_extract(value, '$.tool'), json_extract(value, '$.reason'),
                sum(json_extract(value, '$.count'))
            FROM runs, json_each(runs.rejections) WHERE runs.rejections IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6, 7;
        """
