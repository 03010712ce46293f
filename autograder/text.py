"""Text that student code produced, made safe once, where it enters the grader.

Everything a submission controls (exception messages, type names, printed output, any string in a
reply) passes through `clean` before the grader keeps it. What comes out is plain, printable text
of bounded length: no escape sequences or control characters (shown as visible escapes such as
`\\x1b`), no invisible format characters (Unicode category Cf: zero-width characters, bidirectional
controls, the tag characters U+E0000..U+E007F; removed), no code point Unicode calls
Default_Ignorable (variation selectors, the Hangul fillers, the Mongolian vowel separator, combining
grapheme joiner, ...: drawn as nothing, so also removed), no blank letters (the Braille pattern blank
U+2800, the musical null notehead: `BLANK`, removed), no space but the plain one (the other space
separators become ' '), no lone surrogates, newlines only where the
caller allows them. Each report still escapes it for its own format (Markdown, HTML, XML, the GitHub
job log); this module only makes it inert. csv_cell makes a cell no spreadsheet reads as a formula.
"""
import re
import unicodedata

SHORT = 300        # an excerpt of student text in a student-visible message
MESSAGE = 2000     # an exception message kept for the instructor
OUTPUT = 16 << 10  # what the student's code printed, per part
CUT = " ...[truncated]"  # ends a text cut to its limit (counted in the limit)

# C0 and C1 controls (tab and newline handled apart), DEL, the Unicode format characters that
# reorder or hide text (bidirectional overrides and isolates, zero-width joiners, BOM), the line and
# paragraph separators, and the noncharacters (U+FDD0..U+FDEF, U+FFFE, U+FFFF: XML refuses the last two)
_FORMAT = "\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufdd0-\ufdef\ufeff\ufff9-\ufffb\ufffe\uffff"
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_FORMAT}]")
# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt, 15.1), each range in full: code
# points a renderer draws as nothing (variation selectors, Hangul fillers, ...), reserved ones included
DEFAULT_IGNORABLE = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
                     (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                     (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
                     (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
# letters and symbols outside Default_Ignorable that fonts draw as an empty cell (issue 37.7): the
# Braille pattern blank U+2800 and the musical null notehead U+1D159; dropped like the ignorable ones
BLANK = ((0x2800, 0x2800), (0x1D159, 0x1D159))
_IGNORABLE = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in DEFAULT_IGNORABLE + BLANK) + "]")
# the other space separators (no-break, ideographic, en/em, ...: category Zs) become one plain space
_SPACES = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")


def _visible(match):
    char = match.group()
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(value: object, limit: int = MESSAGE, newlines: bool = False) -> str:
    """`value` (any object; str() is taken) as inert text of at most `limit` characters.

    newlines=False folds every line break into a visible ' | ' (one-line fields: type names,
    messages in tables); newlines=True keeps '\\n' (printed output) and drops '\\r'.
    """
    if not isinstance(value, str):
        try:
            value = str(value)
        except Exception:  # a __str__ that raises: nothing to show
            value = "<unprintable>"
    value = value[: limit * 2 + 16]  # bound the work before anything else
    # most text is printable ASCII: nothing to replace, only the limit to keep
    if type(value) is str and value.isascii() and value.isprintable():
        return value if len(value) <= limit else value[: max(0, limit - len(CUT))].rstrip() + CUT
    # lone surrogates (and anything else that is not encodable) become U+FFFD
    value = value.encode("utf-8", "replace").decode("utf-8", "replace")
    value = value.replace("\r\n", "\n").replace("\r", "\n" if newlines else " ")
    value = value.replace("\t", "    ")
    if not newlines:
        value = re.sub(r"\n+", " | ", value)
    value = _IGNORABLE.sub("", value)  # drawn as nothing: dropped
    value = _SPACES.sub(" ", value)
    value = "".join(_kept(c) for c in value)  # format characters dropped, private use replaced
    value = _UNSAFE.sub(_visible, value)
    if len(value) > limit:
        value = value[: max(0, limit - len(CUT))].rstrip() + CUT
    return value


def _kept(char):
    category = unicodedata.category(char)
    return "" if category == "Cf" else "\ufffd" if category == "Co" else char


# a cell (or any part of it after a separator some spreadsheet splits at: comma, semicolon, tab, a
# line break, |) that starts with = + - @ is a formula to Excel, LibreOffice and Google Sheets
_FORMULA = re.compile(r"(^|[,;\t\r\n|])([ \t\r\n]*)([=+\-@])")


def csv_cell(value: object) -> str:
    """A text cell of grades.csv or misconceptions.csv that no spreadsheet evaluates: every part that
    would start a formula (at the start or after a separator) gets a leading apostrophe, as does a
    cell that starts with a tab or a carriage return."""
    value = _FORMULA.sub(lambda m: f"{m.group(1)}{m.group(2)}'{m.group(3)}", str(value))
    return "'" + value if value[:1] in ("\t", "\r") else value


def excerpt(value: object, limit: int = SHORT) -> str:
    """A short one-line excerpt of student text, for a student-visible message."""
    return clean(value, limit=limit, newlines=False)


def identifier(value: object, limit: int = 100) -> str:
    """A name the student chose (a class or exception type name) as a short plain identifier."""
    value = re.sub(r"[^\w.]", "", clean(value, limit=limit * 2), flags=re.ASCII)
    return value[:limit] or "?"
