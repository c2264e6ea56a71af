"""The settings' generation: a number that changes whenever an agent, its tools, a provider connection, a tool
server or an API token is written, by anyone (triggers: store/alembic/versions/0004_settings_generation.py and
0005_tokens_in_generation.py). What was read of them under one generation is what a read would give again while the
generation is the same.

A proxied request need not read it before it goes on: it may go on under the generation its process saw last, and
its first look-up of runs reads the current one with them (store.runs.proxied_runs_and_generation), which confirms
it or sends the request round again under the new one (services.proxy.SettingsChanged). On PostgreSQL that is one
round trip fewer a request."""

from . import select_value

STATEMENT = "SELECT generation FROM settings_generation WHERE id = 1"
SEEN_KEPT = 64  # databases whose generation a process remembers (one, unless it is a test run)
_seen = {}  # the database's URL -> the generation this process read from it last


def current(db):
    return saw(db, select_value(db, STATEMENT))


def saw(db, generation):
    """`generation`, read from `db`'s database now, remembered as the one this process saw last there."""
    url = db.engine.url
    if url not in _seen and len(_seen) >= SEEN_KEPT:
        _seen.clear()
    _seen[url] = generation
    return generation


def to_go_on_under(db):
    """(the generation a request goes on under, whether it was read for it): the one this process saw last in the
    database, which the request's look-up must confirm, or, when it has seen none, the current one, read now."""
    generation = _seen.get(db.engine.url)
    return (current(db), True) if generation is None else (generation, False)


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
