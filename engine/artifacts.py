"""Artifacts (SPEC §3 `use_artifacts`): a tool's output kept by the run, the model given a placeholder
`{{artifact:TOOL:N}}` instead, and the placeholder replaced by the output in the arguments of later calls.

The loop keeps the run's artifacts (placeholder → content); the gate resolves placeholders before it checks the
arguments, so the schema and the argument rules see the real content.
"""

import re

from . import texts

# Spaces inside the braces are forgiven; anything else that starts like a placeholder must be one of the run's.
PLACEHOLDER = re.compile(r"\{\{\s*(artifact:[^{}]*?)\s*\}\}")


def _canonical(match):
    return "{{" + match.group(1) + "}}"


def resolve_artifacts(arguments, artifacts):
    """(arguments with every placeholder in their strings replaced, the placeholders replaced in first-seen
    order, None), or (None, (), why) when a placeholder names no artifact of the run."""
    replaced = []

    def resolve_text(text):
        def substitute(match):
            placeholder = _canonical(match)
            if placeholder not in artifacts:
                raise LookupError(placeholder)
            if placeholder not in replaced:
                replaced.append(placeholder)
            return artifacts[placeholder]

        return PLACEHOLDER.sub(substitute, text)

    def walk(value):
        if isinstance(value, str):
            return resolve_text(value)
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    try:
        resolved = walk(arguments)
    except LookupError as unknown:
        return None, (), texts.UNKNOWN_ARTIFACT.format(placeholder=unknown.args[0])
    return resolved, tuple(replaced), None
