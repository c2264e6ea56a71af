"""What a run's page folds in a message's text (blueprints/folded_text.py): each <system-reminder> block a part of its
own, the rest as written, nothing lost."""

import re

from hypothesis import given
from hypothesis import strategies as st

from blueprints.folded_text import TextPart, folds_whole, text_parts

ENVIRONMENT = "<system-reminder>\n# Environment\nWorking directory: /home/dev\n</system-reminder>"


def test_reminder_blocks_are_parts_of_their_own_between_the_words_around_them():
    content = f"{ENVIRONMENT}\nFix the test.\n<system-reminder>Use TodoWrite.</system-reminder> Thanks."

    assert text_parts(content) == [
        TextPart("# Environment\nWorking directory: /home/dev", folded=True),
        TextPart("Fix the test."),
        TextPart("Use TodoWrite.", folded=True),
        TextPart("Thanks."),
    ]
    assert text_parts(content)[0].title == "# Environment"


def test_content_parts_are_read_in_order_and_parts_that_are_not_text_show_nothing():
    content = [
        {"type": "text", "text": ENVIRONMENT},
        {"type": "image_url", "image_url": {"url": "data:"}},
        {"type": "text", "text": "Fix the test."},
    ]

    assert [(part.text, part.folded) for part in text_parts(content)] == [
        ("# Environment\nWorking directory: /home/dev", True),
        ("Fix the test.", False),
    ]
    assert text_parts(None) == [] and text_parts("  \n") == []


def test_a_long_title_is_cut_and_a_long_system_prompt_folds_whole():
    assert TextPart("x" * 200, folded=True).title == "x" * 79 + "…"
    assert folds_whole("line\n" * 16) and not folds_whole("line\n" * 15)


words = st.text(alphabet=st.characters(blacklist_characters="<>"), max_size=30)


@given(st.lists(st.tuples(words, st.booleans()), max_size=6))
def test_nothing_is_lost_and_only_reminders_are_folded(pieces):
    content = "".join(f"<system-reminder>{text}</system-reminder>" if reminder else text for text, reminder in pieces)

    parts = text_parts(content)

    def squashed(text):
        return re.sub(r"\s+", "", text)

    assert squashed("".join(part.text for part in parts)) == squashed("".join(text for text, _ in pieces))
    assert [squashed(part.text) for part in parts if part.folded] == [
        squashed(text) for text, reminder in pieces if reminder and squashed(text)
    ]
