"""Text on PostgreSQL, which stores no NUL character in text while a model or a tool may send one."""

import re

# PostgreSQL stores no NUL character in text, and a model or a tool may send one. On PostgreSQL every text value is
# escaped on its way in and unescaped on its way out, here and nowhere else: NUL becomes NUL_ESCAPE + "0", and
# NUL_ESCAPE itself (a private-use character) is doubled, so every other text reads back exactly as it was written.
NUL_ESCAPE = "\ue000"
_ESCAPED = re.compile(NUL_ESCAPE + "(.)", re.DOTALL)


def escape_nul(text):
    if "\x00" not in text and NUL_ESCAPE not in text:
        return text
    return text.replace(NUL_ESCAPE, NUL_ESCAPE * 2).replace("\x00", NUL_ESCAPE + "0")


def unescape_nul(text):
    if NUL_ESCAPE not in text:
        return text
    return _ESCAPED.sub(lambda found: "\x00" if found.group(1) == "0" else found.group(1), text)


def _escaped(parameters):
    if isinstance(parameters, dict):
        return {name: escape_nul(value) if isinstance(value, str) else value for name, value in parameters.items()}
    if isinstance(parameters, list | tuple):
        return type(parameters)(_escaped(each) for each in parameters)
    return parameters


def escape_parameters(_connection, _cursor, statement, parameters, _context, _executemany):
    return statement, _escaped(parameters)
