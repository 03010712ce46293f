"""text.clean: whatever a submission produced comes out as inert, bounded text."""
import pytest

from autograder import text

pytestmark = pytest.mark.quick  # the whole file is in the quick subset


@pytest.mark.parametrize("value, newlines, expected", [
    ("plain words", False, "plain words"),
    ("tab\there", False, "tab    here"),
    ("two\nlines", False, "two | lines"),
    ("two\r\nlines", True, "two\nlines"),
    ("esc\x1b[31m", False, "esc\\x1b[31m"),
    ("bidi\u202eevil", False, "bidievil"),
    ("tag\U000e0041\U000e0042\U000e007fcharacters", False, "tagcharacters"),
    ("zero\u200bwidth\u2060joiner\ufeff\u00adsoft", False, "zerowidthjoinersoft"),
    ("isolate\u2066x\u2069", False, "isolatex"),
    ("line\u2028separator", False, "line\\u2028separator"),
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


def test_no_format_character_survives_clean():
    """Every code point of Unicode category Cf (zero-width, bidirectional controls, tag characters)
    is gone from what clean returns, whichever path it takes."""
    import sys
    import unicodedata

    every = "".join(chr(c) for c in range(sys.maxunicode + 1)
                    if unicodedata.category(chr(c)) == "Cf")
    assert "\U000e0041" in every and "\u202e" in every
    out = text.clean("a" + every + "b", limit=len(every) * 10)
    assert out == "ab"


def test_no_default_ignorable_code_point_survives_clean():
    """Round 4, class 5: every code point of Unicode's Default_Ignorable_Code_Point (variation
    selectors, Hangul fillers, the Mongolian vowel separator, ...; none of them category Cf alone)."""
    every = "".join(chr(c) for a, b in text.DEFAULT_IGNORABLE for c in range(a, b + 1))
    for sample in ("\ufe0f", "\U000e0100", "\u3164", "\uffa0", "\u115f", "\u180e", "\u034f", "\U0001d173"):
        assert sample in every
    assert text.clean("a" + every + "b", limit=len(every) * 10) == "ab"
    assert text.clean("x\ufe0f\u3164y\n\U000e0101z", newlines=True) == "xy\nz"


def test_blank_letters_are_dropped_and_spaces_folded():
    """Issue 37.7: the Braille pattern blank (U+2800, category So) and the other letters fonts draw as
    an empty cell are dropped like the ignorable ones, alone and among others, with and without
    newlines; the Hangul fillers too (U+3164, U+115F, U+1160, U+FFA0); the other space separators
    become one plain space."""
    for blank in ("\u2800", "\U0001d159", "\u3164", "\u115f", "\u1160", "\uffa0"):
        assert text.clean(f"a{blank}b") == "ab", hex(ord(blank))
        assert text.clean(f"a{blank * 50}b\nc", newlines=True) == "ab\nc"
        assert text.excerpt(blank * 10) == ""
        assert text.identifier(f"Name{blank}") == "Name"
    assert text.clean("a\u00a0b\u3000c\u2007d\u202fe") == "a b c d e"


@pytest.mark.parametrize("value, expected", [
    ("bob", "bob"),
    ("=1+1", "'=1+1"),
    ("-bob", "'-bob"),
    ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "'\t'=1"),
    ("\rx", "'\rx"),
    ("ok;=HYPERLINK(\"http://x\",\"y\")", "ok;'=HYPERLINK(\"http://x\",\"y\")"),
    ("a,+cmd", "a,'+cmd"),
    ("a\t-2", "a\t'-2"),
    ("a; =1", "a; '=1"),
    ("a\n@x", "a\n'@x"),
    ("alice;bob;=evil", "alice;bob;'=evil"),
    ("score 3-2 = 1", "score 3-2 = 1"),
])
def test_csv_cell_leaves_no_formula_after_any_separator(value, expected):
    assert text.csv_cell(value) == expected
