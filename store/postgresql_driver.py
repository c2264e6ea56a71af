"""What a PostgreSQL engine of store.db needs, psycopg included, imported only when a process opens one: text
escaped on its way in and unescaped on its way out (store.nul_text), and a pooled connection the server ended found
at checkout."""

import psycopg
from psycopg import pq
from psycopg.adapt import Loader
from sqlalchemy import event, exc

from .nul_text import escape_parameters, unescape_nul


def configure(engine):
    event.listen(engine, "connect", on_connect)
    event.listen(engine.pool, "checkout", check_checkout)
    event.listen(engine, "before_cursor_execute", escape_parameters, retval=True)


class _UnescapedText(Loader):
    """psycopg's loader of text values, unescaping them (store.nul_text)."""

    def load(self, data):
        return unescape_nul(bytes(data).decode())


def on_connect(dbapi_connection, _record):
    for type_name in ("text", "varchar"):
        dbapi_connection.adapters.register_loader(type_name, _UnescapedText)


def hung_up(dbapi_connection):
    """Whether the server ended a pooled connection while it was idle, found without a round trip: what has arrived
    on its socket is read (a non-blocking read), and an idle connection in autocommit hears nothing unless the server
    is ending it (the notice of a shutdown or restart, of its process terminated, of another's crash) or has closed
    it. A round trip per checkout (SQLAlchemy's pool_pre_ping) cost a proxied request four."""
    heard = []
    dbapi_connection.add_notice_handler(heard.append)
    try:
        dbapi_connection.pgconn.consume_input()  # reads, without waiting
        dbapi_connection.pgconn.is_busy()  # parses what was read: a message while idle goes to the notice handlers
    except psycopg.OperationalError:
        return True
    finally:
        dbapi_connection.remove_notice_handler(heard.append)
    return bool(heard) or dbapi_connection.pgconn.status != pq.ConnStatus.OK


def check_checkout(dbapi_connection, _record, _proxy):
    """A connection the server ended is replaced by a new one before anyone uses it (the pool opens it)."""
    if hung_up(dbapi_connection):
        raise exc.DisconnectionError("The database ended this connection.")
