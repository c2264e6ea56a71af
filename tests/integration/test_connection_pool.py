"""Each request takes a connection from the pool and gives it back at teardown (store/db.py): what one request left
behind never reaches the next."""

from store.db import get_db


def test_a_request_that_ended_inside_a_transaction_leaves_nothing_to_the_next(app):
    with app.app_context():
        first = get_db()
        first.exec_driver_sql("BEGIN IMMEDIATE")
        first.exec_driver_sql(
            "INSERT INTO log (created_at, level, kind, message) VALUES ('now', 'error', 'x', 'Half done.')"
        )
        driver_connection = first.connection.driver_connection
    with app.app_context():
        second = get_db()
        assert second.connection.driver_connection is driver_connection  # given back and taken again
        assert not driver_connection.in_transaction
        assert second.exec_driver_sql("SELECT count(*) FROM log WHERE message = 'Half done.'").scalar() == 0
        second.exec_driver_sql("BEGIN IMMEDIATE")  # and the write lock is free
        second.exec_driver_sql("ROLLBACK")


def test_two_requests_at_once_hold_two_connections(app):
    with app.app_context():
        outer = get_db()
        with app.app_context():
            inner = get_db()
            assert inner is not outer
