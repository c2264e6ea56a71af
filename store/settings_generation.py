"""The settings' generation: a number that changes whenever an agent, its tools, a provider connection or a tool
server is written, by anyone (triggers: store/alembic/versions/0004_settings_generation.py). What was read of them
under one generation is what a read would give again while the generation is the same."""

from . import select_value


def current(db):
    return select_value(db, "SELECT generation FROM settings_generation WHERE id = 1")
