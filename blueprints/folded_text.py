"""How a run's page shows the text a client wrote around its user's words: the `<system-reminder>` blocks Claude Code
adds to a user's message (its environment, its reminders beside tool results) are folded, one click away, so the
user's own words and the conversation read first; a long system prompt is folded the same way."""

import re
from dataclasses import dataclass

REMINDER = re.compile(r"<system-reminder>\s*(.*?)\s*</system-reminder>", re.S)
FOLD_LINES = 15  # a system prompt longer than this is folded, as a long tool output is (runs/_tool_output.html)
TITLE_CHARS = 80


@dataclass(frozen=True)
class TextPart:
    text: str
    folded: bool = False  # a reminder block, shown under its title

    @property
    def title(self):
        """Its first line that says something, cut to TITLE_CHARS."""
        first = next((line.strip() for line in self.text.splitlines() if line.strip()), "")
        return first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1] + "…"

    @property
    def lines(self):
        return len(self.text.splitlines())


def text_parts(content):
    """A message's content (a string, a list of content parts, or None) as what to show, in order: its text, with
    each reminder block a folded part of its own. Parts that are not text, and blank text, show nothing."""
    if isinstance(content, str):
        texts = [content]
    else:
        texts = [part.get("text") for part in content or () if isinstance(part, dict)]
    parts = []
    for text in (text for text in texts if isinstance(text, str)):
        position = 0
        for match in REMINDER.finditer(text):
            parts += [TextPart(text[position : match.start()].strip()), TextPart(match.group(1), folded=True)]
            position = match.end()
        parts.append(TextPart(text[position:].strip()))
    return [part for part in parts if part.text]


def folds_whole(content):
    """Whether a system message is long enough to fold whole."""
    return sum(part.lines for part in text_parts(content)) > FOLD_LINES
