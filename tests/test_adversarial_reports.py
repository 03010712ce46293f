"""The adversarial corpus against the reports (issue 11 items 1-3): hostile text graded through the
real engine, then written out in every channel a student or an instructor reads.

Each case (tests/adversarial/cases/report_*) replaces simple_attention.py with functions that raise
or return hostile text; it is graded with its two witness parts, as in test_adversarial.py. Every
test states the real score (simple_attention 0 of 10, the witnesses full) and that no report is
forged: each channel gives that score once, as the grader wrote it; no student text becomes a
terminal control, Markdown or HTML markup, an XML error, invalid JSON or a workflow command; no
report grows past 300 KB.
"""
import json
import re
import xml.etree.ElementTree as ET

import pytest
from test_adversarial import assert_others_keep_full_marks, engine, grade_case, nothing_left_behind, outside  # noqa: F401

from autograder import reports
from autograder.deploy import ghactions
from autograder.reports import notebook_cells
from autograder.reports.common import fmt, what_to_fix

CASES = ["report_ansi_forgery", "report_huge_class_name", "report_lone_surrogates", "report_markup_injection",
         "report_workflow_commands"]
LIMIT = 300_000
TERMINAL_CONTROLS = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\ufffe\uffff]")


def channels(grade):
    """{channel: text} of every report of a grade."""
    results = reports.results_json(grade)
    student = reports.markdown(grade)
    return {"table": reports.table(grade), "student table": reports.table(grade, show_hidden=False),
            "job log": reports.job_log(grade), "markdown": student,
            "comment": ghactions.comment_body(student, {"pr": 1, "sha": None}, grade.protections),
            "results.json": reports.dumps(results), "ci results.json": reports.dumps(reports.student_results(grade)),
            "gradescope results.json": reports.dumps(reports.gradescope_results(grade)),
            "feedback": reports.feedback("eve", results), "junit": reports.junit_xml(grade)}


def assert_the_real_score(grade):
    assert grade.parts["simple_attention"].score == 0, grade.parts["simple_attention"]
    assert_others_keep_full_marks(grade, "simple_attention")
    assert grade.score == grade.max_score - 10


def assert_no_report_is_forged(grade):
    said = channels(grade)
    score = f"{fmt(grade.score)} / {fmt(grade.max_score)}"
    for channel, text in said.items():
        assert len(text) < LIMIT, f"the {channel} holds {len(text)} characters"
        text.encode("utf-8", "strict")
    # terminals: the one total line is the grader's, and nothing acts on the terminal
    for channel in ("table", "student table", "job log"):
        text = said[channel]
        assert not TERMINAL_CONTROLS.search(text), channel
        totals = [line for line in text.splitlines() if re.match(r"(  \| )?total\b", line)]
        assert len(totals) == 1 and totals[0].endswith(score), (channel, totals)
    # the job log: every line the grader's, no workflow command in either form
    log = said["job log"].splitlines()
    assert all(line.startswith("  | ") for line in log) and "::" not in said["job log"] and "##[" not in said["job log"]
    # JSON: valid, strict UTF-8, the real score
    for channel in ("results.json", "ci results.json", "gradescope results.json"):
        data = json.loads(said[channel])
        assert data["score"] == grade.score and not re.search(r"\\ud[89a-f]", said[channel]), channel
    # JUnit parses, with the real failures
    root = ET.fromstring(said["junit"].encode("utf-8"))
    assert int(root.get("failures")) == sum(not c.passed for c in grade.checks)
    # Markdown: one score heading, no markup the student wrote
    for channel in ("markdown", "comment", "feedback"):
        assert_markdown_is_the_graders(said[channel].replace(ghactions.COMMENT_MARKER, ""), channel)
    assert said["markdown"].count("## Chapter 3 score: ") == 1 and f"## Chapter 3 score: {score}" in said["markdown"]
    nbgrader_lines = "\n".join(graded_cell_lines(grade))
    assert len(nbgrader_lines) < LIMIT and not TERMINAL_CONTROLS.search(nbgrader_lines)
    return said


def assert_markdown_is_the_graders(text, channel):
    for line in text.splitlines():  # no line begins with markup a student wrote
        assert not re.match(r"(#+ regraded|```|<|::|\| simple_attention \| 10 / 10)", line), (channel, line)
    mistune = pytest.importorskip("mistune")
    html = mistune.create_markdown(escape=False, plugins=["table", "strikethrough", "url"])(text)
    for tag in ("<script", "<img", "<!--", "<a ", "<pre"):
        assert tag not in html, f"{tag} rendered in the {channel}"
    assert not [h for h in re.findall(r"<h\d>(.*?)</h\d>", html) if "regraded" in h], channel


def graded_cell_lines(grade):
    """The lines GradeInSandbox writes into the graded cell (reports/notebook_cells.py: no nbgrader needed)."""
    return notebook_cells.what_to_fix_lines([c for c in grade.checks if c.part == "simple_attention"],
                                            {"simple_attention": grade.parts["simple_attention"]})


def visible_own_text(said):
    """The student's own error text as the student table shows it (visible checks)."""
    return [line for line in said["student table"].splitlines() if line.lstrip().startswith("your error: ")]


def test_ansi_escape_sequences_redraw_nothing(engine, tmp_path):
    """Threat: error messages and printed output that clear the screen and redraw every part full and
    100/100. The sequences arrive as visible escapes (\\x1b[2J), the table's one total is the real one."""
    grade = grade_case(engine, tmp_path, "report_ansi_forgery", "simple_attention")
    assert_the_real_score(grade)
    said = assert_no_report_is_forged(grade)
    own = visible_own_text(said)
    assert own and all("\\x1b[2J" in line and "full / full" in line for line in own), own[:1]
    assert "\x1b" not in json.dumps(grade.output) and "\\x1b[2J" in grade.output.get("simple_attention", "")


def test_a_39_mb_class_name_leaves_every_report_small(engine, tmp_path):
    """Threat: exceptions and answers of classes whose __name__ is 3.9 MB. The name is cut where it
    enters the grader; every report stays under 300 KB."""
    grade = grade_case(engine, tmp_path, "report_huge_class_name", "simple_attention")
    assert_the_real_score(grade)
    said = assert_no_report_is_forged(grade)
    failed = [c for c in grade.checks if c.part == "simple_attention" and not c.passed]
    assert any("HugeHuge" in c.message or "HugeHuge" in c.student_text for c in failed), failed[:1]
    assert max(len(c.message) + len(c.student_text) for c in failed) < 5000
    assert max(len(text) for text in said.values()) < 100_000


def test_lone_surrogates_break_no_report(engine, tmp_path):
    """Threat: exception text and printed output with lone surrogates (which crashed the printing
    before any report was written), direction overrides, zero-width characters and noncharacters.
    Every report is written and printable; the overrides and zero-width characters are gone (they
    are format characters), the noncharacters shown as visible escapes."""
    grade = grade_case(engine, tmp_path, "report_lone_surrogates", "simple_attention")
    assert_the_real_score(grade)
    said = assert_no_report_is_forged(grade)
    own = visible_own_text(said)
    assert own and all("LONE-" in line and "REVERSED" in line and "zerowidth" in line for line in own), own[:1]
    for text in said.values():
        assert not re.search("[\u202e\u200b\ufeff\ud800]", text)


def test_tag_characters_reach_no_report(engine, tmp_path):
    """Round 3, class 5: invisible tag characters (U+E0000..U+E007F, which some language models read
    as text) and other format characters in exception text, printed output and a class name. Not
    one reaches the Markdown report, results.json, junit.xml or any other report; the visible words
    around them do."""
    grade = grade_case(engine, tmp_path, "report_tag_characters", "simple_attention")
    assert_the_real_score(grade)
    said = assert_no_report_is_forged(grade)
    assert any("TAGGED" in line for line in visible_own_text(said))
    for channel, text in said.items():
        assert not re.search("[\U000e0000-\U000e007f\u200b-\u200f\u2060-\u2064\u00ad\u061c]", text), channel
    every = json.dumps([c.message + c.student_text for c in grade.checks], ensure_ascii=False)
    assert "TAGGED" in every and not re.search("[\U000e0000-\U000e007f]", every + json.dumps(grade.output))


def test_invisible_letters_reach_no_report(engine, tmp_path):
    """Round 4, class 5: variation selectors (70 bytes spelled one per selector) and invisible filler
    letters, none of category Cf, and the Braille pattern blank (round 5), in exception text, printed
    output and a class name. No code point of Unicode's Default_Ignorable_Code_Point nor a blank letter
    reaches report.md, results.json, junit.xml or any other report; the visible words around them do."""
    from autograder import text

    grade = grade_case(engine, tmp_path, "report_invisible_letters", "simple_attention")
    assert_the_real_score(grade)
    said = assert_no_report_is_forged(grade)
    assert any("FILLED" in line for line in visible_own_text(said))
    ignorable = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in text.DEFAULT_IGNORABLE + text.BLANK) + "]")
    assert ignorable.search("\u2800")
    for channel, written in said.items():
        assert not ignorable.search(written), channel
    every = json.dumps([c.message + c.student_text for c in grade.checks], ensure_ascii=False)
    assert "FILLED" in every and "hangulhalfchoseongjungcgjmvsbraillenote" in every
    assert not ignorable.search(every + json.dumps(grade.output, ensure_ascii=False))


@pytest.mark.quick
def test_markup_injection_opens_no_section(engine, tmp_path):
    """Threat: exception text and a raising place (quoted in the grader's own diagnosis) that open a
    fake "regraded: 100/100" section and table row, a script, an image with onerror, a link, a code
    fence and a trailing HTML comment. The Markdown renders none of it; the real feedback is all there."""
    grade = grade_case(engine, tmp_path, "report_markup_injection", "simple_attention")
    assert_the_real_score(grade)
    said = assert_no_report_is_forged(grade)
    # every entry of "what to fix" is rendered as its own list item: the trailing <!-- hid nothing
    items = what_to_fix(grade.checks, grade.parts)
    assert sum(len(item.places) for item in items) >= 5  # one item per diagnosis, each check listed
    mistune = pytest.importorskip("mistune")
    html = mistune.create_markdown(escape=False, plugins=["table", "strikethrough", "url"])(said["markdown"])
    assert html.count("<li>") == len(items)
    assert sum(line.startswith("- **simple_attention") for line in said["feedback"].splitlines()) == len(items)
    assert "regraded" in said["markdown"]  # shown as text: escaped, or in the code span of the student's error


def test_workflow_commands_reach_no_line_start(engine, tmp_path):
    """Threat: exception text and a raising place with ::notice, ::add-mask::, ::stop-commands::,
    ::error with %0A, a carriage return and the ##[...] form. No line of the job log (or of the files
    ci writes) starts with a command, and neither form survives anywhere in the log."""
    grade = grade_case(engine, tmp_path, "report_workflow_commands", "simple_attention")
    assert_the_real_score(grade)
    said = assert_no_report_is_forged(grade)
    own = visible_own_text(said)
    assert own and all("add-mask" in line for line in own), own[:1]
    for channel in ("markdown", "comment", "ci results.json"):  # files, not the log: no line starts a command
        for line in said[channel].splitlines():
            assert not line.lstrip().startswith("::"), (channel, line)
