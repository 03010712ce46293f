"""What each report shows, and how it writes student text (issues 11 items 1-3 and 10, 12 item 4).

A grade is built here through the real rubric loader and grading.score_part (no sandbox): one part
with a failed visible check, two failed hidden checks with one diagnosis, a failed hidden check whose
diagnosis grading.yml withholds, and a passed check. Student text is put in raw (control characters,
escape sequences, lone surrogates, markup, workflow commands), as if the cleaning at entry had been
bypassed: every format must still come out inert, because each escapes where it writes.

The rule under test (autograder/reports/common.py):
- student channels (Markdown, ci's results.json, Gradescope's, the batch feedback, the student
  table and job log): a visible failure shows its diagnosis and the student's own error text; a
  hidden one its diagnosis only, without its name; a withheld one "hidden check failed"; never
  the instructor detail or the run's secret;
- instructor channels (`grade` table, JUnit, the stored results JSON): everything, and the secret.
"""
import errno
import html
import importlib
import io
import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from autograder import grading, reports
from autograder.deploy import ghactions
from autograder.reports import common, notebook_cells

# the modules (the package's attributes of the same names are their main functions)
feedback_md, job_log, markdown = (importlib.import_module(f"autograder.reports.{name}")
                                  for name in ("feedback_md", "job_log", "markdown"))
from in_process import FullDisk, run_command  # noqa: E402
from rubric_points import PART, TOTAL, g  # noqa: E402

from autograder.rubric import RubricError, load  # noqa: E402
from autograder.runner import CheckResult, PartRun  # noqa: E402

RUBRIC = """\
version: 1
parts:
  causal:
    checks:
      book_example: {points: 2, visibility: visible}
      unseen_sizes: {points: 1, visibility: hidden}
      unseen_seeds: {points: 2, visibility: hidden}
      future_tokens: {points: 3, visibility: hidden, diagnosis: withheld}
      shape: {points: 1, visibility: visible}
"""
SEED = 918273645546372819
# what the hostile texts contain, and what must never come out as markup, a command or a control
HOSTILE = ("\x1b[2J\x1b[H\x1b]0;pwned\x07total 100 / 100\r\n## regraded: 100/100\n"
           "<script>alert(1)</script><img src=x onerror=alert(2)>\n"
           "::notice::Full marks: 100/100\n::add-mask::mask-me\n::stop-commands::tok\n"
           "##[error]old form%0A::error::encoded\r::warning::after a carriage return\n"
           "| a | b |\n[link](javascript:alert(3))\n```\n\ud800 lone \udfff \ufffe \x00\x1f\x7f\x9b @octocat <!--")
VISIBLE_TEXT = "VISIBLE-OWN-TEXT " + HOSTILE      # what the student's code raised in the visible check
HIDDEN_TEXT = "HIDDEN-OWN-TEXT"                    # ... in a hidden check (it may have seen hidden inputs)
DIAGNOSIS = "the scores are not scaled by 1/sqrt(head_dim)"
SECRET_DIAGNOSIS = "WITHHELD-DIAGNOSIS the mask is off by one"
DETAIL = "INSTRUCTOR-DETAIL expected 0.1234 got 0.5678"


@pytest.fixture
def rubric(tmp_path):
    path = tmp_path / "grading.yml"
    path.write_text(RUBRIC)
    return load(path)


def graded(rubric, visible_message="the causal mask is missing: " + HOSTILE, visible_text=VISIBLE_TEXT,
           detail=DETAIL):
    part = rubric.parts["causal"]
    run = PartRun("causal", [
        CheckResult("causal", "book_example", False, visible_message, detail, visible_text),
        CheckResult("causal", "unseen_sizes", False, DIAGNOSIS, detail, HIDDEN_TEXT),
        CheckResult("causal", "unseen_seeds", False, DIAGNOSIS, detail, HIDDEN_TEXT),
        CheckResult("causal", "future_tokens", False, SECRET_DIAGNOSIS, detail, HIDDEN_TEXT),
        CheckResult("causal", "shape", True),
    ])
    grade = grading.Grade("submissions/eve", protections=[ghactions.NAMESPACES, ghactions.SECCOMP], seed=SEED)
    grading.score_part(grade, part, run)
    return grade


def student_channels(grade):
    """{channel: text} of everything a student may read."""
    stored = reports.results_json(grade)
    return {"markdown": reports.markdown(grade),
            "comment": ghactions.comment_body(reports.markdown(grade), {"pr": 7, "sha": None}, grade.protections),
            "ci results.json": reports.dumps(reports.student_results(grade)),
            "gradescope results.json": reports.dumps(reports.gradescope_results(grade)),
            "batch feedback": reports.feedback("eve", stored),
            "student table": reports.table(grade, show_hidden=False),
            "job log": reports.job_log(grade)}


def instructor_channels(grade):
    return {"table": reports.table(grade), "junit": reports.junit_xml(grade),
            "results.json": reports.dumps(reports.results_json(grade))}


def readable(text):
    """The words a reader sees: Markdown's backslash escapes, code tags and entities taken away."""
    text = re.sub(r"</?code>", "", re.sub(r"\\(.)", r"\1", text))
    return html.unescape(text) if "&lt;" in text or "&amp;" in text else text


# ---------------------------------------------------------------- grading.yml: diagnosis

def test_the_rubric_reads_diagnosis_per_check(rubric):
    checks = rubric.parts["causal"].checks
    assert checks["future_tokens"].diagnosis == "withheld"
    assert checks["unseen_sizes"].diagnosis == checks["book_example"].diagnosis == "shown"


@pytest.mark.parametrize("value, words", [("secret", "causal.checks.future_tokens.diagnosis must be one of shown, "
                                                      "withheld, not 'secret'"),
                                          ("[shown]", "causal.checks.future_tokens.diagnosis must be a single value")])
def test_a_bad_diagnosis_names_the_file_and_the_line(tmp_path, value, words):
    path = tmp_path / "bad.yml"
    path.write_text(RUBRIC.replace("diagnosis: withheld", f"diagnosis: {value}"))
    with pytest.raises(RubricError) as error:
        load(path)
    assert str(error.value) == f"{path}:8: {words}"


# ---------------------------------------------------------------- the rule

@pytest.mark.quick
def test_a_visible_failure_shows_its_diagnosis_and_the_students_own_error(rubric):
    grade = graded(rubric)
    for channel, text in student_channels(grade).items():
        seen = readable(text)
        assert "the causal mask is missing" in seen, channel
        assert "your error: VISIBLE-OWN-TEXT" in seen, channel
        assert "book_example" in text, channel


@pytest.mark.quick
def test_a_hidden_failure_shows_its_diagnosis_unnamed_and_never_the_students_text(rubric):
    grade = graded(rubric)
    for channel, text in student_channels(grade).items():
        assert DIAGNOSIS in readable(text), channel
        for never in (HIDDEN_TEXT, "INSTRUCTOR-DETAIL", "WITHHELD-DIAGNOSIS", str(SEED)):
            assert never not in text, f"{never} in the {channel}"
        if channel != "gradescope results.json":  # Gradescope hides its hidden tests by their visibility
            for name in ("unseen_sizes", "unseen_seeds", "future_tokens"):
                assert name not in text, f"{name} in the {channel}"
    # the two checks that said the same thing are counted once, with their points
    assert "- **causal: 2 hidden checks** (-3): " in reports.markdown(grade)
    tests = reports.student_results(grade)["tests"]
    assert [t["name"] for t in tests] == ["causal: book_example", "causal: hidden check 1", "causal: hidden check 2",
                                          "causal: hidden check 3", "causal: shape"]
    assert [t["output"] for t in tests[1:4]] == [DIAGNOSIS, DIAGNOSIS, common.WITHHELD]


def test_a_withheld_diagnosis_says_only_that_a_hidden_check_failed(rubric):
    grade = graded(rubric)
    for channel, text in student_channels(grade).items():
        assert "hidden check failed" in readable(text), channel
        assert "WITHHELD-DIAGNOSIS" not in text, channel
    gradescope = {t["name"]: t["output"] for t in reports.gradescope_results(grade)["tests"]}
    assert gradescope["causal: future_tokens"] == "hidden check failed"


def test_the_instructor_sees_everything_and_the_seed(rubric):
    grade = graded(rubric)
    for channel, text in instructor_channels(grade).items():
        for said in ("unseen_sizes", "future_tokens", "WITHHELD-DIAGNOSIS", HIDDEN_TEXT, "INSTRUCTOR-DETAIL",
                     "VISIBLE-OWN-TEXT"):
            assert said in text, f"{said} not in the instructor's {channel}"
    assert f"regrade with --seed {SEED}" in reports.table(grade)
    assert reports.results_json(grade)["extra_data"]["seed"] == SEED
    assert str(SEED) not in reports.table(grade, seed=False)  # Gradescope's log sits beside a student's file


def test_gradescope_output_is_the_score_and_what_to_fix(rubric):
    results = reports.gradescope_results(graded(rubric))
    assert results["output"].startswith("Score: 1 / 9\n\nWhat to fix:\n- causal / book_example (-2): ")
    assert "namespaces" not in results["output"] and "seccomp" not in results["output"]
    assert results["extra_data"]["protections"] == [ghactions.NAMESPACES, ghactions.SECCOMP]
    assert results["extra_data"]["parts"] == {"causal": {"score": 1.0, "max_score": 9.0}} and "parts" not in results
    assert results["output_format"] == results["test_output_format"] == "text"
    assert str(SEED) not in json.dumps(results) and "seed" not in results["extra_data"]


def test_no_promise_of_details_after_grading_closes(rubric):
    for channel, text in student_channels(graded(rubric)).items():
        assert "after grading closes" not in text and "are not shown" not in text, channel


# ---------------------------------------------------------------- escaping, format by format

@pytest.mark.quick
def test_markdown_renders_no_markup_from_student_text(rubric):
    mistune = pytest.importorskip("mistune")
    grade = graded(rubric)
    for channel in ("markdown", "comment", "batch feedback"):
        text = student_channels(grade)[channel].replace(ghactions.COMMENT_MARKER, "")  # the comment's own marker
        html = mistune.create_markdown(escape=False, plugins=["table", "strikethrough", "url"])(text)
        for tag in ("<script", "<img", "<!--", "<a ", "<pre", "<h4"):
            assert tag not in html, f"{tag} rendered in the {channel}"
        headings = re.findall(r"<h\d>(.*?)</h\d>", html)
        assert headings and not [h for h in headings if "regraded" in h], headings
        assert html.count("<table>") == (1 if channel != "batch feedback" else 0), channel
        assert html.count("<code>") == 1, channel  # the student's own text, in one inline code span
    # raw: no line of it begins with markup a student wrote
    for line in reports.markdown(grade).splitlines():
        assert not line.startswith(("## regraded", "|", "```", "::", "<")) or line.startswith(("| causal", "| part",
                                                                                               "| ---")), line


def test_markdown_code_holds_the_students_backticks():
    assert markdown.md_code("a ``` b") == "<code>a \\`\\`\\` b</code>"
    assert markdown.md_code("`x`") == "<code>\\`x\\`</code>"
    assert markdown.md_text("<b>*x*</b> [l](u) #") == "&lt;b>\\*x\\*&lt;/b> \\[l\\](u) #"


@pytest.mark.quick
@pytest.mark.parametrize("plain", [
    "torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch) is wrong: the heads are split",
    "divide them by sqrt(d_k) (d_k ** 0.5), e.g. keys.shape[-1] ** 0.5 - or 1/sqrt(head_dim)!",
    "the row's weights: 'a' and \"b\" = 1.0 + 2 > 0",
])
def test_markdown_escapes_only_what_would_render(plain):
    # issue 22: a plain sentence reads as it is written (no \( \_ \. ...) ...
    said = markdown.md_text(plain.replace("[-1]", "").replace("**", "^"))
    assert "\\" not in said, said
    # ... and what would render is escaped
    assert markdown.md_text("# a_b __init__ *x* `y` [z] ~w~ $m$ | 1. a&b") == \
        "\\# a_b \\_\\_init\\_\\_ \\*x\\* \\`y\\` \\[z\\] \\~w\\~ \\$m\\$ \\| 1. a&amp;b"
    assert markdown.md_text("1. first") == "1\\. first" and markdown.md_text("- item") == "\\- item"
    assert markdown.md_text("see https://x.org and www.y.org, @octocat") == \
        "see https\\://x.org and www\\.y.org, @\u200boctocat"


HOSTILE_HTML = '<img src=x onerror=alert(1)><script>alert(2)</script>&lt;b&gt;<a href="javascript:x">l</a>'


@pytest.mark.quick
def test_raw_html_never_reaches_markdown_or_the_comment(rubric):
    """Raw HTML a student wrote (in a diagnosis that quotes it, and in their own error text) reaches
    `grade --markdown` and the ci PR comment with every < and & escaped: no tag, no entity."""
    grade = graded(rubric, visible_message="your code raised: " + HOSTILE_HTML, visible_text=HOSTILE_HTML)
    said = student_channels(grade)
    for channel in ("markdown", "comment", "batch feedback"):
        text = said[channel].replace(ghactions.COMMENT_MARKER, "")
        tags = re.findall(r"<[^>]*>", text)
        assert set(tags) <= {"<code>", "</code>"}, (channel, tags)
        assert "&amp;lt;b&amp;gt;" in text, channel  # the student's own &lt; is text, not an entity
        assert "&lt;img src=x onerror=alert(1)>" in text and "&lt;script>alert(2)&lt;/script>" in text, channel
    mistune = pytest.importorskip("mistune")
    for channel in ("markdown", "comment"):
        rendered = mistune.create_markdown(escape=False, plugins=["table", "strikethrough", "url"])(said[channel])
        assert "<img" not in rendered and "<script" not in rendered and "<a " not in rendered, channel


SPLIT = "the heads are split without the transpose: view the projections as (b, num_tokens, num_heads, head_dim)"


@pytest.mark.quick
def test_feedback_groups_checks_by_diagnosis(rubric):
    """One bug, one paragraph: the checks that failed with the same diagnosis are one item listing
    where each failed, in every student channel (issue 22: one bug was explained 9 times)."""
    part = rubric.parts["causal"]
    run = PartRun("causal", [
        CheckResult("causal", "book_example", False, f"the book's example is wrong: {SPLIT}"),
        CheckResult("causal", "unseen_sizes", False, f"CausalAttention with other sizes is wrong: {SPLIT}"),
        CheckResult("causal", "unseen_seeds", False, f"CausalAttention after another seed is wrong: {SPLIT}"),
        CheckResult("causal", "future_tokens", False, "a different bug"),
        CheckResult("causal", "shape", True),
    ])
    grade = grading.Grade("submissions/eve", protections=[ghactions.NAMESPACES, ghactions.SECCOMP], seed=SEED)
    grading.score_part(grade, part, run)
    items = common.what_to_fix(grade.checks, grade.parts)
    assert [(i.title, i.points, i.message) for i in items] == [
        ("causal: book_example and 2 hidden checks", 5.0, SPLIT), ("causal: 1 hidden check", 3.0, common.WITHHELD)]
    assert items[0].failed_in == ("failed in: book_example (the book's example); CausalAttention with other "
                                  "sizes; CausalAttention after another seed")
    said = student_channels(grade)
    for channel in ("markdown", "comment", "batch feedback", "gradescope results.json", "ci results.json", "student table"):
        text = readable(said[channel]) if "json" not in channel else json.loads(said[channel])["output"]
        assert text.count("the heads are split without the transpose") == 1, channel
        assert "CausalAttention after another seed" in text, channel
    from autograder.reports.html_feedback import feedback_html
    page = feedback_html("eve", reports.results_json(grade))
    assert page.count("the heads are split without the transpose") == 1
    lines = notebook_cells.what_to_fix_lines(grade.checks, grade.parts)
    assert lines[1] == f"  - book_example and 2 hidden checks (-5): {SPLIT}"
    assert lines[2] == "    " + items[0].failed_in


def test_junit_parses_whatever_the_text_held(rubric):
    nasty = "".join(chr(c) for c in range(0x20)) + "\ufffe\uffff\ud800\udfff" + HOSTILE
    grade = graded(rubric, visible_message=nasty, visible_text="VISIBLE-OWN-TEXT " + nasty, detail=nasty)
    root = ET.fromstring(reports.junit_xml(grade).encode("utf-8"))
    failures = [case.find("failure") for case in root.iter("testcase") if case.find("failure") is not None]
    assert len(failures) == 4 and int(root.get("failures")) == 4
    assert all(len(f.get("message")) <= 500 for f in failures)
    assert "VISIBLE-OWN-TEXT" in failures[0].text and "INSTRUCTOR-DETAIL" not in failures[0].get("message")


def test_results_json_is_valid_utf8_whatever_the_strings_held(rubric):
    grade = graded(rubric, visible_message="\ud800" + HOSTILE, visible_text="\udfff" + HOSTILE)
    grade.notes.append("a note \ud83d")
    for build in (reports.results_json, reports.student_results, reports.gradescope_results):
        text = reports.dumps(build(grade))
        assert not re.search(r"\\ud[89a-f][0-9a-f]{2}", text), build.__name__  # no surrogate escape
        again = json.loads(text.encode("utf-8").decode("utf-8", "strict"))
        assert again["score"] == 1


def test_no_line_of_the_job_log_is_a_workflow_command(rubric):
    log = reports.job_log(graded(rubric))
    assert log.splitlines() and all(line.startswith(job_log.PREFIX) for line in log.splitlines())
    assert "::" not in log and "##[" not in log and "\r" not in log and "\x1b" not in log
    assert "your error: VISIBLE-OWN-TEXT" in log and ": :notice: :Full marks" in log


def test_terminal_tables_hold_no_control_character(rubric):
    grade = graded(rubric)
    for text in (reports.table(grade), reports.table(grade, show_hidden=False), reports.job_log(grade)):
        text.encode("utf-8", "strict")  # no lone surrogate left to crash a print
        assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\ufffe\uffff]", text)
        assert "\\x1b[2J" in text  # shown as a visible escape, not acted on


def test_every_report_stays_small_with_a_39_mb_name(rubric):
    """A class whose __name__ is 3.9 MB reaching every field: no report grows past 300 KB."""
    huge = "Huge" * 1_000_000
    grade = graded(rubric, visible_message=f"returned a {huge} object", visible_text=huge, detail=huge)
    grade.checks[1].message = grade.checks[2].message = f"your code raised {huge}"
    grade.notes.append(huge)
    grade.parts["causal"].problem = huge
    everything = {**student_channels(grade), **instructor_channels(grade)}
    for channel, text in everything.items():
        assert len(text) < 300_000, f"the {channel} holds {len(text)} characters"


def test_printing_never_fails_on_an_ascii_terminal(rubric):
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict")
    common.emit(reports.table(graded(rubric, visible_text="caf\u00e9 \u2713 \ufffd")), stream)
    stream.seek(0)
    assert "caf? ? ?" in stream.read()


# ---------------------------------------------------------------- records: broken submissions, feedback

def test_a_broken_submission_has_the_keys_of_any_other(rubric):
    broken = reports.broken_results(rubric, "the zip holds a file and a folder named ch03")
    normal = reports.results_json(graded(rubric))
    assert set(broken) == set(normal) and set(broken["extra_data"]) == set(normal["extra_data"])
    assert [set(t) for t in broken["tests"]] == [set(t) for t in normal["tests"]]
    assert broken["score"] == 0 and broken["max_score"] == rubric.max_score == 9
    assert sum(t["max_score"] for t in broken["tests"]) == 9
    assert broken["extra_data"]["problems"] == {"causal": "the zip holds a file and a folder named ch03"}


def test_feedback_says_a_problem_once(rubric):
    broken = reports.broken_results(rubric, "the zip holds a file and a folder named ch03")
    page = readable(reports.feedback("eve", broken))
    assert page.count("the zip holds a file and a folder named ch03") == 1
    assert "Score: 0 / 9" in page and "- causal: 0 / 9" in page


def test_feedback_reads_a_record_without_extra_data(rubric):
    """A record another builder wrote (no per-test extra_data): visible outputs shown, hidden ones
    by their first line, unnamed."""
    record = {"score": 0, "max_score": 3, "parts": {"causal": {"score": 0, "max_score": 3}}, "tests": [
        {"name": "causal: book_example", "score": 0, "max_score": 2, "status": "failed", "visibility": "visible",
         "output": "missing mask"},
        {"name": "causal: unseen_sizes", "score": 0, "max_score": 1, "status": "failed", "visibility": "hidden",
         "output": "not scaled\nyour error: HIDDEN-OWN-TEXT"}]}
    page = readable(feedback_md.feedback("eve", record))
    assert "causal / book_example** (-2): missing mask" in page
    assert "causal: 1 hidden check** (-1): not scaled" in page and "HIDDEN-OWN-TEXT" not in page
    assert "unseen_sizes" not in page


# ---------------------------------------------------------------- the sandbox's protections

@pytest.mark.parametrize("protections, full", [
    ([ghactions.NAMESPACES, "no capabilities", ghactions.SECCOMP], True),
    ([ghactions.NAMESPACES, "no capabilities"], False),
    (["process group", "private temporary folder", ghactions.SECCOMP], False),
    (["NO SANDBOX (--unsafe-no-sandbox): student code ran with the grader's access", ghactions.NAMESPACES,
      ghactions.SECCOMP], False),
    ([], False),
])
def test_fully_sandboxed_means_namespaces_and_the_syscall_filter(protections, full):
    assert ghactions.fully_sandboxed(protections) is full


def test_the_protection_names_are_the_sandboxs_own():
    """ghactions reads the strings autograder/inside/isolation.py reports: the same words."""
    source = (Path(grading.__file__).parent / "inside" / "isolation.py").read_text()
    assert f'"{ghactions.NAMESPACES}"' in source and f'"{ghactions.SECCOMP}"' in source


# ---------------------------------------------------------------- nbgrader: the graded cell, GradeInSandbox

class _EngineReached(Exception):
    pass


def _reach_the_engine(monkeypatch, require_isolation):
    """GradeInSandbox.preprocess as a non-root user, up to the point where it starts the sandbox ->
    whether the settings it passes allow running without isolation (or None when it refused before that)."""
    pytest.importorskip("nbgrader")
    import nbformat

    from autograder.deploy import nbgrader_plugins
    from autograder.settings import UNSAFE_ENV

    monkeypatch.setenv(UNSAFE_ENV, "0")
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setattr(nbgrader_plugins, "_gradebook_notebook",
                        lambda resources: {"source": {}, "grade": {"score_causal": 22.0}, "solution": set(),
                                           "task": set()})
    seen = {}

    def engine(rubric_path=None, settings=None, chapter=None):
        seen["unsafe"] = settings.sandbox.unsafe
        raise _EngineReached

    monkeypatch.setattr(nbgrader_plugins, "shared_engine", engine)
    step = nbgrader_plugins.GradeInSandbox(require_isolation=require_isolation, restore_deleted_cells=False)
    monkeypatch.setattr(step, "_modules_of_other_notebooks", lambda resources, cells=None: {})
    resources = {"nbgrader": {"notebook": "02_causal", "student": "eve", "assignment": "ch03", "db_url": ""}}
    with pytest.raises(_EngineReached):
        step.preprocess(nbformat.v4.new_notebook(), resources)
    return seen.get("unsafe")


def test_grade_in_sandbox_needs_no_root(monkeypatch):
    """The sandbox works without root (it refuses by itself where it cannot isolate): a non-root
    `nbgrader autograde` reaches it, still requiring isolation."""
    assert _reach_the_engine(monkeypatch, require_isolation=True) is False


def test_grade_in_sandbox_without_required_isolation_allows_the_unsafe_fallback(monkeypatch):
    assert _reach_the_engine(monkeypatch, require_isolation=False) is True


def test_grade_in_sandbox_says_which_cell_each_module_came_from(monkeypatch, tmp_path):
    """nbgrader's path grades the solution cells as .py files: it gives the engine each module's notebook
    and cell (counting from 1), so that a student's error names them (Staged.cells), not causal.py."""
    pytest.importorskip("nbgrader")
    import nbformat

    from autograder.deploy import nbgrader_plugins

    monkeypatch.setattr(nbgrader_plugins, "_gradebook_notebook",
                        lambda resources: {"source": {}, "grade": {"score_causal": 22.0}, "solution": set(),
                                           "task": set()})
    seen = {}

    class Engine:
        rubric = type("Rubric", (), {"parts": {"causal": None}})()

        def grade(self, path, parts=None, cells=None):
            seen["cells"], seen["modules"] = cells, sorted(p.name for p in Path(path).iterdir())
            raise _EngineReached

    monkeypatch.setattr(nbgrader_plugins, "shared_engine", lambda *args, **kwargs: Engine())
    step = nbgrader_plugins.GradeInSandbox(require_isolation=False, restore_deleted_cells=False)

    def others(resources, cells=None):
        cells.update({"mha": ("01_other.ipynb", 5), "causal": ("01_other.ipynb", 6)})
        return {"mha": "x = 1\n", "causal": "y = 2\n"}

    monkeypatch.setattr(step, "_modules_of_other_notebooks", others)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# 3.5"), nbformat.v4.new_code_cell(
        "z = 3", metadata={"nbgrader": {"grade": False, "grade_id": "causal", "locked": False, "solution": True}})]
    resources = {"nbgrader": {"notebook": "02_causal", "student": "eve", "assignment": "ch03", "db_url": ""}}
    with pytest.raises(_EngineReached):
        step.preprocess(notebook, resources)
    assert seen == {"cells": {"causal": ("02_causal.ipynb", 2), "mha": ("01_other.ipynb", 5)},
                    "modules": ["causal.py", "mha.py"]}


@pytest.mark.quick
def test_a_graded_cell_reports_like_every_other_channel(rubric):
    grade = graded(rubric)
    lines = notebook_cells.what_to_fix_lines(grade.checks, grade.parts)
    assert lines[0] == "What to fix:"
    assert lines[1].startswith("  - book_example (-2): the causal mask is missing: ")
    assert lines[2].startswith("    your error: VISIBLE-OWN-TEXT")
    assert lines[3:] == [f"  - 2 hidden checks (-3): {DIAGNOSIS}", "  - 1 hidden check (-3): hidden check failed"]


# ---------------------------------------------------------------- files first, then the terminal
# (grade, ci and gradescope --run in this process, in the session's fork server, with a stdout that
# fails as /dev/full does: tests/in_process.py; each command's real command line is run elsewhere)

ROOT = Path(__file__).resolve().parents[1]
STUBS = ROOT / "assignments" / "ch03"


def run_to_a_full_disk(engine, args, env=None):
    """The command in this process (tests/in_process.py), its stdout on a full disk: the first print
    fails (ENOSPC), and that error ends the command -> the error."""
    with pytest.raises(OSError) as failed:
        run_command(engine, args, env, stdout=FullDisk())
    assert failed.value.errno == errno.ENOSPC
    return failed.value


def test_grade_writes_its_files_before_printing(engine, tmp_path):
    out = {kind: tmp_path / f"report.{kind}" for kind in ("json", "junit", "md")}
    failed = run_to_a_full_disk(engine, ["grade", str(STUBS), "--json", str(out["json"]), "--junit", str(out["junit"]),
                                         "--markdown", str(out["md"])])
    assert "No space left on device" in str(failed)  # the table could not be printed ...
    assert json.loads(out["json"].read_text())["score"] == 0  # ... and every file was written before
    assert ET.fromstring(out["junit"].read_bytes()).get("failures") != "0"
    assert f"## Chapter 3 score: 0 / {g(TOTAL)}" in out["md"].read_text()


def test_ci_writes_its_files_before_printing(engine, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env.update(GITHUB_OUTPUT=str(tmp_path / "output"), GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"))
    failed = run_to_a_full_disk(engine, ["ci", str(STUBS), "--json", str(tmp_path / "results.json"), "--comment",
                                         str(tmp_path / "comment.md")], env)
    assert "No space left on device" in str(failed)
    assert json.loads((tmp_path / "results.json").read_text())["score"] == 0
    assert (tmp_path / "comment.md").read_text().startswith(ghactions.COMMENT_MARKER)
    assert f"Chapter 3 score: 0 / {g(TOTAL)}" in (tmp_path / "summary.md").read_text()
    assert "score=0\n" in (tmp_path / "output").read_text()


def test_gradescope_writes_results_before_printing(engine, tmp_path):
    (tmp_path / "submission").mkdir()
    for module in STUBS.glob("*.py"):
        (tmp_path / "submission" / module.name).write_text(module.read_text())
    failed = run_to_a_full_disk(engine, ["gradescope", "--run", "--root", str(tmp_path)])
    assert "No space left on device" in str(failed)
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert results["score"] == 0 and results["max_score"] == TOTAL and results["output"].startswith(f"Score: 0 / {g(TOTAL)}")


def test_grade_prints_on_a_terminal_that_cannot_encode_the_text(engine, tmp_path):
    """stdout and stderr in ASCII (strict, as PYTHONIOENCODING=ascii:strict makes them): the table
    holds the stubs' non-ASCII text ("→"): it is printed with replacements, after the files, and the
    command succeeds."""
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for module in STUBS.glob("*.py"):
        text = module.read_text().replace('raise NotImplementedError("', 'raise NotImplementedError("\\u2192 ')
        (stubs / module.name).write_text(text)
    terminal = {name: io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict") for name in ("out", "err")}
    status, _, _ = run_command(engine, ["grade", str(stubs), "--json", str(tmp_path / "r.json")],
                               stdout=terminal["out"], stderr=terminal["err"])
    terminal["err"].flush()
    assert status == 0, terminal["err"].buffer.getvalue()[-2000:]
    terminal["out"].flush()
    assert b"your error: NotImplementedError: ? simple_attention.softmax_naive" in terminal["out"].buffer.getvalue()
    outputs = [t["output"] for t in json.loads((tmp_path / "r.json").read_text())["tests"]]
    assert any("NotImplementedError: \u2192 simple_attention.softmax_naive" in o for o in outputs)


# ---------------------------------------------------------------- issue 12 item 4, on the grader's own mutant

def test_the_unscaled_mha_diagnosis_reaches_every_student_channel(engine, tmp_path):
    """MultiHeadAttention without 1/sqrt(head_dim) passes the visible checks as such (the book's
    example has head_dim 1), but they earn their points only with the hidden checks of the same math
    (grading.yml `requires`): 5 of 22 points. Every student channel names the mistake, and none names
    a hidden check or shows the instructor's detail (the hidden sizes)."""
    from autograder import selftest

    entry = {e.id: e for e in selftest.corpus()}["mha-unscaled"]
    grade = engine.grade(selftest.apply(entry, tmp_path / "submission"), parts=["mha"])  # the session's engine
    assert grade.parts["mha"].score == 5 and grade.parts["mha"].max_score == PART["mha"]
    failed = [c for c in grade.checks if not c.passed]
    assert failed and all(c.visibility != "visible" or c.message == grading.GATED for c in failed)
    hidden_names = [c.name for c in grade.checks if c.visibility != "visible"]
    for channel, text in student_channels(grade).items():
        assert "the scores are not scaled by 1/sqrt(head_dim)" in readable(text), channel
        assert not [name for name in hidden_names if name in text] or channel == "gradescope results.json", channel
        assert not [c.detail for c in failed if c.detail and c.detail in text], channel
        assert "not shown" not in text, channel


def test_a_graded_cell_carries_its_parts_notes(rubric):
    pytest.importorskip("nbgrader")
    from nbformat.notebooknode import from_dict

    from autograder.deploy import nbgrader_plugins

    grade = graded(rubric)
    grade.notes += ["causal: Note (no points taken): the weights share storage", "mha: another part's note",
                    "skipped ch03/passwd.txt: symbolic links are not accepted"]
    cell = from_dict({"cell_type": "code", "metadata": {"nbgrader": {"points": 9}}, "source": "", "outputs": []})
    report, score = nbgrader_plugins.GradeInSandbox()._outputs(cell, "causal", grade, False, "")
    lines = report["data"]["text/plain"].split("\n")
    assert lines[0] == "causal: 1 / 9 points" and score["data"]["text/plain"] == "1.0"
    assert lines[-1] == "note: causal: Note (no points taken): the weights share storage"
    assert not [line for line in lines if "another part" in line or "passwd" in line]
