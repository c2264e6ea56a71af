"""The history lists (runs, log): newest first, filtered by column, as fast at 100,000 rows as at 100.

- Pages go by id ("keyset"): the older page is the rows below the last id shown, the newer page the rows above the
  first, so no page reads through the rows before it (OFFSET would). An index per filter combination ends in the
  id, so every page is a short walk down one index.
- The totals and the filter choices come from a small counts table per list (`run_counts`, `log_counts`: one row
  per combination of the filtered columns), which triggers keep in step with every insert and delete (step 0008),
  instead of counting the list on every page.

The column names go into the SQL: they come from the code, never from the request.
"""

from dataclasses import dataclass

from . import execute, select_rows, select_value

ID_MAX = 2**63 - 1  # the largest id SQLite stores; above it a query fails
NO_AGENT = ""  # how the counts table records rows without an agent (a NULL is never equal to itself)


@dataclass(frozen=True)
class Page:
    rows: list
    total: int  # rows matching the filters, on every page
    newer: int | None  # `after=` for the newer page; None on the newest
    older: int | None  # `before=` for the older page; None on the oldest


def _where(filters, condition=None):
    clauses = [f"{column} = :{column}" for column in filters] + ([condition] if condition else [])
    return (" WHERE " + " AND ".join(clauses)) if clauses else ""


def _rows(db, table, select, filters, condition, bound, order, limit, offset=0):
    parameters = {**filters, "bound": bound, "limit": limit, "offset": offset}
    sql = f"SELECT {select} FROM {table}{_where(filters, condition)} ORDER BY id {order} LIMIT :limit OFFSET :offset"
    return select_rows(db, sql, parameters)


def _exists(db, table, filters, condition, bound):
    sql = f"SELECT 1 FROM {table}{_where(filters, condition)} LIMIT 1"
    return select_value(db, sql, {**filters, "bound": bound}) is not None


def total(db, counts_table, filters):
    """How many rows match `filters`, from the counts table."""
    filters = {column: value for column, value in filters.items() if value}
    sql = f"SELECT CAST(coalesce(sum(count), 0) AS BIGINT) FROM {counts_table}{_where(filters)}"
    return select_value(db, sql, filters)


def agent_ids(db, counts_table):
    """Every agent id the list has rows of, for its filter."""
    sql = f"SELECT DISTINCT agent_id FROM {counts_table} WHERE agent_id != :no_agent ORDER BY agent_id"
    return execute(db, sql, {"no_agent": NO_AGENT}).scalars().all()


def history_page(db, table, counts_table, filters, select, per_page, before=None, after=None):
    """The page of rows matching `filters` ({column: value}; an empty value filters nothing) just below the id
    `before`, or just above `after`, or the newest page. A newer page that would not be full is the newest page;
    an empty page past either end is the newest page too."""
    filters = {column: value for column, value in filters.items() if value}
    count = total(db, counts_table, filters)
    if after is not None:
        rows = _rows(db, table, select, filters, "id > :bound", after, "ASC", per_page + 1)
        if len(rows) > per_page:
            rows = rows[:per_page][::-1]
            older = rows[-1]["id"] if _exists(db, table, filters, "id < :bound", rows[-1]["id"]) else None
            return Page(rows, count, newer=rows[0]["id"], older=older)
        before = None
    condition = "id < :bound" if before is not None else None
    rows = _rows(db, table, select, filters, condition, before, "DESC", per_page + 1)
    if not rows and before is not None:
        return history_page(db, table, counts_table, filters, select, per_page)
    older = rows[per_page - 1]["id"] if len(rows) > per_page else None
    rows = rows[:per_page]
    newer = None
    if before is not None and _exists(db, table, filters, "id > :bound", rows[0]["id"]):
        newer = rows[0]["id"]
    return Page(rows, count, newer=newer, older=older)


def numbered_page(db, table, counts_table, filters, select, per_page, number):
    """Page `number` counted from the newest (1), for the API's first pages: OFFSET reads through the rows before
    it, so callers bound `number`. A number past the last page is the last page. Returns (Page, number, pages)."""
    filters = {column: value for column, value in filters.items() if value}
    count = total(db, counts_table, filters)
    pages = max(1, -(-count // per_page))
    number = min(max(1, number), pages)
    rows = _rows(db, table, select, filters, None, None, "DESC", per_page, offset=(number - 1) * per_page)
    newer = rows[0]["id"] if rows and number > 1 else None
    older = rows[-1]["id"] if rows and number < pages else None
    return Page(rows, count, newer=newer, older=older), number, pages
