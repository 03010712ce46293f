"""text.clean: whatever a submission produced comes out as inert, bounded text."""
import pytest

from autograder import text


@pytest.mark.parametrize("value, newlines, expected", [
    ("plain words", False, "plain words"),
    ("tab\there", False, "tab    here"),
    ("two\nlines", False, "two | lines"),
    ("two\r\nlines", True, "two\nlines"),
    ("esc\x1b[31m", False, "esc\\x1b[31m"),
    ("bidi\u202eevil", False, "bidi\\u202eevil"),
    ("private\ue000use", False, "private\ufffduse"),
    ("lone \ud800 surrogate", False, "lone ? surrogate"),
    ("del\x7f", False, "del\\x7f"),
    (42, False, "42"),
])
def test_clean_makes_text_inert(value, newlines, expected):
    assert text.clean(value, newlines=newlines) == expected


@pytest.mark.parametrize("value", ["a" * 500, "é" * 500, "x\x01" * 300])
def test_clean_keeps_the_limit_and_says_it_cut(value):
    out = text.clean(value, limit=50)
    assert len(out) <= 50 and out.endswith(text.CUT)


def test_a_string_subclass_is_cleaned_as_its_characters():
    class Shouty(str):
        def __getitem__(self, item):  # keeps its class through the length cut
            return Shouty(str.__getitem__(self, item))

        def isprintable(self):
            return True

        def isascii(self):
            return True

    assert text.clean(Shouty("bell\x07")) == "bell\\x07"
