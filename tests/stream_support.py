"""What a streaming client reads: the server-sent events the proxy writes, decoded as a client decodes them."""

import json

from engine.proxy.stream import server_sent_events


def read_events(written):
    """The JSON of each `data:` event in `written` (the bytes of a stream, in pieces), in order; comments skipped."""
    events = []
    for block in b"".join(written).split(b"\n\n"):
        data = [line[len(b"data: ") :] for line in block.split(b"\n") if line.startswith(b"data: ")]
        if data and data != [b"[DONE]"]:
            events.append(json.loads(b"\n".join(data)))
    return events


def as_read(events, named=False):
    """`events` (what an API's module gives server_sent_events) as the client reads them once written."""
    return read_events(server_sent_events(events, named))
