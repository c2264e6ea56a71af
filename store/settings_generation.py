"""The settings' generation: a number that changes whenever an agent, its tools, a provider connection, a tool
server or an API token is written, by anyone (triggers: store/alembic/versions/0004_settings_generation.py and
0005_tokens_in_generation.py). What was read of them under one generation is what a read would give again while the
generation is the same."""

from . import select_value


def current(db):
    return select_value(db, "SELECT generation FROM settings_generation WHERE id = 1")


class Kept:
    """What a process read of the settings, each value under the generation it was read at (read the generation
    first: a value read after a change that came in between is kept under the older number, and read again next
    time). At most `size` values are kept."""

    def __init__(self, size):
        self.size = size
        self._kept = {}  # key -> (generation, value)

    def get(self, key, generation, read):
        """The value of `key` read under `generation`, or `read()` now, kept under it."""
        kept = self._kept.get(key)
        if kept is not None and kept[0] == generation:
            return kept[1]
        value = read()
        if len(self._kept) >= self.size:
            self._kept.clear()
        self._kept[key] = (generation, value)
        return value
