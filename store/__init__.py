"""sqlite-utils code per aggregate: rows in, engine dicts out. No Flask here, so the CLI and tests use it too.

Every function takes the sqlite-utils Database as its first argument (`db.get_db()` in a request,
`db.open_db(path)` elsewhere).
"""

from datetime import UTC, datetime


class NotFound(LookupError):
    """No row with that id; the web layer turns it into a 404."""


class RevisionConflict(Exception):
    """A save carried a revision older (or newer) than the stored one: someone else saved first."""

    def __init__(self, agent_id, current_revision, sent_revision):
        self.agent_id = agent_id
        self.current_revision = current_revision
        self.sent_revision = sent_revision
        super().__init__(
            f'The agent "{agent_id}" was saved by someone else since you loaded it: it is now at revision '
            f"{current_revision}, and your save was based on revision {sent_revision}. Nothing was saved."
        )


class ValidationError(ValueError):
    """Bad input for a store other than agents (agents raise engine.config.AgentValidationError).
    `errors` maps each field to a message, like AgentValidationError."""

    def __init__(self, errors):
        self.errors = dict(errors)
        field_name, message = next(iter(self.errors.items()))
        super().__init__(f"{field_name}: {message}")


def now():
    return datetime.now(UTC).isoformat(timespec="seconds")
