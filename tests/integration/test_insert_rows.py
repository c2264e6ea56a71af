"""Rows inserted many to a statement (store.insert_rows: a group commit's runs) read back exactly as written, each
under the id it was given back, in order, on both engines: on PostgreSQL they travel as one JSON parameter, whose
NUL escaping must match every other value's (store/db.py)."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import ROWS_PER_INSERT, insert_rows, select_rows
from store.nul_text import NUL_ESCAPE

pytestmark = pytest.mark.both_engines

# Any text UTF-8 encodes (a lone surrogate is no text either engine stores), and the characters escaping plays on.
texts = st.text(alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(["\x00", NUL_ESCAPE, "0", '"', "\\"])))
entries = st.lists(
    st.fixed_dictionaries(
        {"created_at": texts, "level": texts, "kind": texts, "agent_id": st.none() | texts, "message": texts}
    ),
    min_size=1,
    max_size=12,
)


def _stored(database, ids):
    rows = select_rows(database, f"SELECT * FROM log WHERE id IN ({', '.join(map(str, ids))})")
    return [{key: value for key, value in row.items() if key not in ("run_id",)} for row in rows]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=entries)
def test_rows_inserted_together_read_back_unchanged_under_their_ids(database, rows):
    ids = insert_rows(database, "log", rows)

    stored = {row.pop("id"): row for row in _stored(database, ids)}
    assert [stored[row_id] for row_id in ids] == rows


def test_more_rows_than_one_statement_holds_and_rows_of_other_columns_keep_their_order(database):
    rows = [
        {"created_at": "2026-12-06", "level": "info", "kind": "proxy_error", "message": f"entry {number}"}
        if number % 7
        else {
            "created_at": "2026-12-06",
            "level": "info",
            "kind": "proxy_error",
            "agent_id": "a",
            "message": f"entry {number}",
        }
        for number in range(ROWS_PER_INSERT * 2 + 50)
    ]

    ids = insert_rows(database, "log", rows)

    messages = {row["id"]: row["message"] for row in select_rows(database, "SELECT id, message FROM log")}
    assert [messages[row_id] for row_id in ids] == [row["message"] for row in rows]


def test_rows_that_carry_their_ids_are_given_back_theirs(database):
    rows = [{"id": row_id, "created_at": "2026-12-06", "message": f"entry {row_id}"} for row_id in (907, 12, 450)]

    assert insert_rows(database, "log", rows) == [907, 12, 450]
    assert select_rows(database, "SELECT id, message FROM log ORDER BY message") == [
        {"id": 12, "message": "entry 12"},
        {"id": 450, "message": "entry 450"},
        {"id": 907, "message": "entry 907"},
    ]
