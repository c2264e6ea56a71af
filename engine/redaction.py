"""The API key never leaves the process in a text Toolgate writes (SPEC §9): wherever a provider echoes it (an
error, an answer), it becomes `[redacted]` before it is logged, stored or shown."""

REDACTED = "[redacted]"
# A shorter "key" (a local server's placeholder) is no secret, and replacing it would garble every text.
SHORTEST_SECRET = 8


def redact(value, secret):
    """`value` (text, or JSON data) with every occurrence of `secret` replaced; a new value, or `value` itself
    when there is nothing to hide."""
    if not secret or len(secret) < SHORTEST_SECRET:
        return value
    return _replace(value, secret)


def _replace(value, secret):
    if isinstance(value, str):
        return value.replace(secret, REDACTED) if secret in value else value
    if isinstance(value, dict):
        return {key: _replace(item, secret) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_replace(item, secret) for item in value]
    return value
