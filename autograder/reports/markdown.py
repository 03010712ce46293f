"""Markdown for students: the step summary, the pull-request comment, `grade --markdown` (and the
batch's feedback files, reports/feedback_md.py). What a failed check shows follows
common.what_to_fix; how text is written follows the two escapes below.

    md_text(s)  any text (the grader's words may quote a name the student chose): one line where
                only what would change the rendering is escaped: `<` and `&` always (as &lt; and
                &amp;: no tag, comment or entity can start), the inline markup characters
                (backslash, backtick, `*`, `[`, `]`, `~`, `|`, `$`), `_` where it touches no letter
                or digit on one side (inside a word it is never emphasis), a block marker at the start
                (`#`, `>`, `-`, `+`, `=`, `1.`), the start of a bare link (`://`, `www.`) and of a
                mention (`@`); a plain sentence reads as it is written
    md_code(s)  the student's own text: the same escapes inside <code>...</code>, so nothing of it is
                read as Markdown or HTML, whatever backticks it holds
"""
import re

from autograder.reports.common import FIELD, OWN_TEXT, fmt, printable, what_to_fix

_ENTITIES = {"&": "&amp;", "<": "&lt;"}
_INLINE = set("\\`*[]~|$")      # always escaped with a backslash (CommonMark allows it for all)
_BLOCK_START = re.compile(r"^(\s*)([#>+=-]|\d+(?=[.)]))")  # what would open a heading, quote, list...


def _escape_char(text, i):
    ch = text[i]
    if ch in _ENTITIES:
        return _ENTITIES[ch]
    if ch in _INLINE:
        return "\\" + ch
    if ch == "_":
        before = text[i - 1] if i else " "
        after = text[i + 1] if i + 1 < len(text) else " "
        return ch if before.isalnum() and after.isalnum() else "\\_"
    return ch


def md_text(value, limit=FIELD):
    """Text as literal Markdown on one line (see the module's docstring); '@' mentions nobody."""
    text = printable(value, limit)
    out = "".join(_escape_char(text, i) for i in range(len(text)))
    start = _BLOCK_START.match(out)
    if start:  # "1." and "1)" get their punctuation escaped, the other markers themselves
        if start[2][0].isdigit():
            end = start.end()
            out = out[:end] + "\\" + out[end:]
        else:
            out = out[:start.start(2)] + "\\" + out[start.start(2):]
    out = re.sub(r"(?i)(?<=[a-z0-9])(:)(?=//)", r"\\\1", out)  # no bare link: http\://
    out = re.sub(r"(?i)\b(www)\.", r"\1\\.", out)
    return re.sub(r"@(?=\w)", "@\u200b", out)


def md_code(value, limit=FIELD):
    """Text as code (see the module's docstring)."""
    text = md_text(value, limit)
    return f"<code>{text}</code>" if text else ""


def markdown(grade):
    """A score table per part, then what to fix as a student may see it (hidden checks are never
    named), then the notes. A grade the machine kept from running says only that (runner.NOT_GRADED)."""
    if grade.not_graded:
        from autograder.grading import NOT_GRADED_MESSAGE

        return f"## Not graded\n\n{NOT_GRADED_MESSAGE}\n"
    lines = [f"## Chapter 3 score: {fmt(grade.score)} / {fmt(grade.max_score)}", "",
             "| part | score |", "| --- | ---: |"]
    lines += [f"| {_title(part)} | {fmt(p.score)} / {fmt(p.max_score)} |" for part, p in grade.parts.items()]
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
        lines += [f"  {md_text(note)}" for note in item.notes]
        if item.own_text:
            lines.append(f"  {OWN_TEXT}: {md_code(item.own_text)}")
    return lines
