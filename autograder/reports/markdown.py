"""Markdown for students: the step summary, the pull-request comment, `grade --markdown` (and the
batch's feedback files, reports/feedback_md.py). What a failed check shows follows
common.what_to_fix; how text is written follows the two escapes below.

    md_text(s)  the grader's words (a diagnosis may quote a name the student chose): one line, every
                character Markdown or HTML reads (`<`, `&`, `*`, `[`, `#`, `|`, ...) escaped, so no
                tag, comment, heading, list, table, link or fence can start inside it
    md_code(s)  the student's own text: one line in an inline code span whose fence is longer than
                any run of backticks inside, where nothing is read as Markdown or HTML
"""
import re

from autograder.reports.common import FIELD, OWN_TEXT, fmt, printable, what_to_fix

_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_PUNCTUATION = set("\\`*_{}[]()#+-.!|~:\"'=$")  # escaped with a backslash (CommonMark allows it for all)


def md_text(value, limit=FIELD):
    """Text as literal Markdown on one line (see the module's docstring); '@' mentions nobody."""
    out = []
    for ch in printable(value, limit):
        if ch in _ENTITIES:
            out.append(_ENTITIES[ch])
        elif ch in _PUNCTUATION:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return re.sub(r"@(?=\w)", "@\u200b", "".join(out))


def md_code(value, limit=FIELD):
    """Text as one inline code span (see the module's docstring)."""
    text = printable(value, limit)
    if not text:
        return ""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown(grade):
    """A score table per part, then what to fix as a student may see it (hidden checks are never
    named), then the notes."""
    lines = [f"## Chapter 3 score: {fmt(grade.score)} / {fmt(grade.max_score)}", "",
             "| part | score |", "| --- | ---: |"]
    lines += [f"| {_title(part)} | {fmt(p['score'])} / {fmt(p['max_score'])} |" for part, p in grade.parts.items()]
    lines += fix_section(what_to_fix(grade.checks, grade.parts), "###")
    if grade.notes:
        lines += ["", "### Notes", ""] + [f"- {md_text(note)}" for note in grade.notes]
    return "\n".join(lines) + "\n"


_NAME = r"[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*"  # an identifier whose underscores are all inside a word
_TITLE = re.compile(rf"{_NAME}(?: / {_NAME}|: \d+ hidden checks?|(?:, {_NAME})*)")


def _title(title):
    """Part and check names (identifiers from grading.yml and the suites) as they are: an underscore
    inside a word is never emphasis; anything else is escaped."""
    return title if _TITLE.fullmatch(title) else md_text(title, 300)


def fix_section(items, heading):
    """Markdown lines of "what to fix" (common.Item); [] when nothing failed."""
    if not items:
        return []
    lines = ["", f"{heading} What to fix", ""]
    for item in items:
        lines.append(f"- **{_title(item.title)}** (-{fmt(item.points)}): {md_text(item.message)}")
        if item.own_text:
            lines.append(f"  {OWN_TEXT}: {md_code(item.own_text)}")
    return lines
