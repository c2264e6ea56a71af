"""Copy every row of one database into another, empty one: how a SQLite database moves up to PostgreSQL for
several replicas (`flask copy-database --to postgresql://…`).

The counts tables are not copied: the target's triggers count each run and log entry as it arrives, as they do
for every write. A database's own bookkeeping (its schema history) stays its own; the target is migrated first.
"""

from sqlalchemy import inspect

from . import execute, select_value
from .db import write_transaction

# In an order the foreign keys accept: an agent before its tools, a run before its trace.
TABLES = (
    "agents",
    "agent_tools",
    "agent_tool_hints",
    "providers",
    "tool_servers",
    "documents",
    "runs",
    "run_traces",
    "log",
    "responses",
    "cases",
    "api_tokens",
    "login_sessions",
    "login_failures",
)
COUNTED = ("run_counts", "log_counts", "run_chart_counts", "rejection_counts")
BATCH = 500


class TargetNotEmpty(Exception):
    """The target database holds rows already: nothing was copied."""

    def __init__(self, tables):
        self.tables = tables
        super().__init__(f"The target database is not empty: {', '.join(tables)} hold rows. Nothing was copied.")


def _columns(target, source, table):
    """The columns both databases have, but those the target computes itself (PostgreSQL's full-text column)."""
    computed = {column["name"] for column in inspect(target).get_columns(table) if column.get("computed")}
    wanted = [column["name"] for column in inspect(source).get_columns(table)]
    return [column for column in wanted if column not in computed]


def _continue_ids(target, table, columns):
    """After rows came with their ids, the target's next id follows the largest (PostgreSQL's identity columns)."""
    if target.dialect.name != "postgresql" or "id" not in columns:
        return
    if select_value(target, "SELECT pg_get_serial_sequence(:table, 'id')", {"table": table}):
        execute(
            target,
            f"SELECT setval(pg_get_serial_sequence(:table, 'id'), coalesce(max(id), 0) + 1, false) FROM {table}",
            {"table": table},
        )


def row_counts(db, tables=TABLES + COUNTED):
    return {table: select_value(db, f"SELECT count(*) FROM {table}") for table in tables}


def copy_database(source, target):
    """Copy every row of TABLES from `source` into `target` (both migrated), in one transaction of the target.
    Returns {table: rows in the target} for TABLES and COUNTED. Raises TargetNotEmpty."""
    with write_transaction(target):
        filled = [table for table, count in row_counts(target).items() if count]
        if filled:
            raise TargetNotEmpty(filled)
        for table in TABLES:
            columns = _columns(target, source, table)
            names = ", ".join(columns)
            insert = f"INSERT INTO {table} ({names}) VALUES ({', '.join(f':{column}' for column in columns)})"
            for rows in execute(source, f"SELECT {names} FROM {table}").mappings().partitions(BATCH):
                execute(target, insert, [dict(row) for row in rows])
            _continue_ids(target, table, columns)
    return row_counts(target)
