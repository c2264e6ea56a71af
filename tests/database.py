"""The app's database as a test reads it, and changes it behind the app's back, on either engine: a connection of
the app's pool that the store's functions take as it is, plus `database["runs"].count` and the like, and
`execute("… :name …", {...})` for SQL written in the test, each statement committed when it returns."""

from contextlib import contextmanager

from sqlalchemy import event, inspect, text

from store.db import WRITING, open_db


class Table:
    def __init__(self, database, name):
        self.database = database
        self.name = name

    @property
    def count(self):
        return self.database.value(f'SELECT count(*) FROM "{self.name}"')

    @property
    def column_names(self):
        return [column["name"] for column in inspect(self.database.connection).get_columns(self.name)]

    @property
    def rows(self):
        return self.rows_where()

    def rows_where(self, where=None, parameters=None, order_by="1"):
        condition = f" WHERE {where}" if where else ""
        return self.database.query(f'SELECT * FROM "{self.name}"{condition} ORDER BY {order_by}', parameters)

    def get(self, row_id):
        [row] = self.rows_where("id = :id", {"id": row_id})
        return row

    def insert(self, row):
        columns = ", ".join(row)
        marks = ", ".join(f":{column}" for column in row)
        self.database.execute(f'INSERT INTO "{self.name}" ({columns}) VALUES ({marks})', row)

    def update(self, row_id, values):
        assignments = ", ".join(f"{column} = :{column}" for column in values)
        statement = f'UPDATE "{self.name}" SET {assignments} WHERE id = :row_id'
        self.database.execute(statement, {**values, "row_id": row_id})

    def delete(self, row_id):
        self.database.execute(f'DELETE FROM "{self.name}" WHERE id = :id', {"id": row_id})

    def delete_where(self, where="1 = 1", parameters=None):
        self.database.execute(f'DELETE FROM "{self.name}" WHERE {where}', parameters)


class Database:
    """`database["runs"].count`, `.rows`, `.get(id)`; `execute(sql, {...})` and `query(sql, {...})` with named
    parameters, in the SQL both engines run."""

    def __init__(self, url):
        self.connection = open_db(url)

    def __getattr__(self, name):  # what the store's functions use of their connection
        return getattr(self.connection, name)

    def __getitem__(self, name):
        return Table(self, name)

    def execute(self, statement, parameters=None):
        """Run one statement: SQL text written in a test gives its rows (a buffered result: fetchone, fetchall,
        scalar) or its row count; a statement of the store runs as on its connection."""
        if not isinstance(statement, str):
            return self.connection.execute(statement, parameters)
        if isinstance(parameters, list | tuple):  # as the driver was sent it (`tracer`)
            result = self.connection.exec_driver_sql(statement, tuple(parameters))
        else:
            result = self.connection.execute(text(statement), parameters or {})
        answer = result.freeze()() if result.returns_rows else result.rowcount
        if not self.connection.info.get(WRITING):
            self.connection.commit()
        return answer

    @contextmanager
    def tracer(self, record):
        """`record(sql, parameters)` of every statement the connection sends the driver meanwhile."""

        def listen(_connection, _cursor, statement, parameters, _context, _executemany):
            record(statement, parameters)

        event.listen(self.connection, "before_cursor_execute", listen)
        try:
            yield
        finally:
            event.remove(self.connection, "before_cursor_execute", listen)

    def table_names(self):
        return inspect(self.connection).get_table_names()

    def query(self, sql, parameters=None):
        return [dict(row) for row in self.execute(sql, parameters).mappings()]

    def value(self, sql, parameters=None):
        return self.execute(sql, parameters).scalar()

    def close(self):
        self.connection.close()
