"""A raw HTTP server on 127.0.0.1 for the tests that need a server to answer as no WSGI app can: a body cut off
midway, a connection reset or left silent mid-stream, bytes that are not what the protocol says."""

import socket
import threading
from contextlib import contextmanager


def read_request(connection):
    """(the request's head, its body) as read from the socket; None once the client closed the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    while len(body) < length:
        body += connection.recv(65536)
    return head.decode("latin-1"), body


@contextmanager
def raw_server(answer):
    """A server on 127.0.0.1 that calls `answer(connection, head, body, number)` for each request it reads (number
    counts requests across connections from 0), each connection in a thread; yields (its port, the connections
    it accepted, the request heads)."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted, heads = [], []

    def serve(connection):
        with connection:
            while (request := read_request(connection)) is not None:
                heads.append(request[0])
                if answer(connection, *request, len(heads) - 1) is False:
                    return

    def accept():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            accepted.append(connection)
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1], accepted, heads
    finally:
        listener.close()
