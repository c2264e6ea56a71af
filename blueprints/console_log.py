"""The `toolgate` logger on the console: each entry on one line (a provider's multi-line error or a message with
newlines is folded), with its time and level, so a terminal or a log collector reads one entry per line."""

import logging
import sys

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class OneLineFormatter(logging.Formatter):
    """An entry, its traceback included, on one line: each line break becomes " ⏎ "."""

    def format(self, record):
        return " ⏎ ".join(super().format(record).splitlines())


class StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is when an entry comes (as logging's last resort does), so an entry never goes
    to a stream that was swapped out and closed since the app started (a test runner's capture)."""

    def __init__(self):
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def attach():
    """Send the `toolgate` logger to stderr, once per process; returns the handler."""
    logger = logging.getLogger("toolgate")
    attached = [handler for handler in logger.handlers if isinstance(handler, StderrHandler)]
    if attached:
        return attached[0]
    handler = StderrHandler()
    handler.setFormatter(OneLineFormatter(FORMAT))
    logger.addHandler(handler)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    return handler
