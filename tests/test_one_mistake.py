"""One mistake, one item (issue 31 item 2, issue 30 item 4's fourth point), in every output format.

Graded for real, in one sandbox, on the mha and exercises parts:
- `syntax`: the solutions with `def forward(self x):` in mha.py. mha scores 0 / 22 with one item, the
  error and its line ("mha.py does not import: SyntaxError: invalid syntax (line 26: def forward(self
  x):)"), and nothing else about mha: no "N hidden checks: your code raised an exception", no advice
  about d_out; the exercises, which get the grader's mha in its place, keep 8 / 8.
- `bad_import`: mha.py imports a name causal.py does not define. The same, with the ImportError and
  its line as the student's code raised it (a check with visible inputs saw it).
- `unscaled`: MultiHeadAttention without 1/sqrt(head_dim) (the selftest mutant). Its book example and
  its d_out check pass but earn nothing without the hidden checks of the same math (grading.yml
  `requires`): 5 / 22, and one item, the missing scaling, which names the voided checks; no item
  "passes here, but ..." of its own.
Formats: the student's table and job log, Markdown (report.md), the pull-request comment, ci's
results.json, Gradescope's results.json (top-level output; each test keeps its own points), the batch
feedback (.md and .html, from the stored record), nbgrader's graded cell; for the instructor the table
and JUnit.
"""
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from rubric_points import PART

from autograder import grading, import_failure, reports, selftest
from autograder.deploy import ghactions
from autograder.reports import common, records
from autograder.reports.html_feedback import feedback_html
from autograder.runner import CheckResult, PartRun
from autograder.student import StudentError

SYNTAX_LINE = "    def forward(self x):"
ROOT = Path(__file__).resolve().parents[1]


def _submission(kind, folder):
    if kind == "unscaled":
        entry = {e.id: e for e in selftest.corpus()}["mha-unscaled"]
        return selftest.apply(entry, folder)
    shutil.copytree(selftest.SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    mha = folder / "mha.py"
    lines = mha.read_text().splitlines()
    if kind == "syntax":
        at = next(i for i, line in enumerate(lines) if line.strip().startswith("def forward("))
        lines[at] = SYNTAX_LINE
    else:
        at = next(i for i, line in enumerate(lines) if line.startswith(("import ", "from ")))
        lines.insert(at, "from causal import CausalAttentionThatIsNotThere")
    mha.write_text("\n".join(lines) + "\n")
    return folder, at + 1


@pytest.fixture(scope="module")
def grades(engine, tmp_path_factory):
    """Each mistake's grade in mha and exercises, by the session's engine (Engine.grade)."""
    root = tmp_path_factory.mktemp("one-mistake")
    found = {}
    for kind in ("syntax", "bad_import", "unscaled"):
        made = _submission(kind, root / kind)
        folder, line = made if isinstance(made, tuple) else (made, None)
        grade = engine.grade(folder, parts=["mha", "exercises"])
        found[kind] = SimpleNamespace(grade=grade, line=line, rubric=engine.rubric)
    return found


def channels(grade):
    """{format: what it says to the student} (the Gradescope one: its top-level output)."""
    stored = reports.results_json(grade)
    gradescope = reports.gradescope_results(grade)
    return {"table": reports.table(grade, show_hidden=False), "job log": reports.job_log(grade),
            "markdown": reports.markdown(grade),
            "comment": ghactions.comment_body(reports.markdown(grade), {"pr": 7, "sha": None}, grade.protections),
            "ci results.json": reports.student_results(grade)["output"], "gradescope": gradescope["output"],
            "feedback.md": reports.feedback("eve", stored), "feedback.html": feedback_html("eve", stored),
            "nbgrader cell": graded_cell(grade, "mha")}


def graded_cell(grade, part):
    pytest.importorskip("nbgrader")
    from nbformat.notebooknode import from_dict

    from autograder.deploy import nbgrader_plugins

    cell = from_dict({"cell_type": "code", "metadata": {"nbgrader": {"points": 22}}, "source": "", "outputs": []})
    shown, _ = nbgrader_plugins.GradeInSandbox()._outputs(cell, part, grade, False, "")
    return shown["data"]["text/plain"]


def mha_items(text, fmt):
    """The lines of `text` that open an item about mha, with the points it cost (each format writes an
    item as one line)."""
    if fmt == "feedback.html":
        return re.findall(r'<div class="check">(mha[^<]*)</div>', text)
    if fmt == "nbgrader cell":  # the graded cell of mha: every item is mha's
        return [line for line in text.splitlines() if line.startswith("  - ")]
    return [line for line in text.splitlines()
            if re.match(r"\s*(\|\s*)?\s*- (\*\*)?mha\b", line) and re.search(r"\(-\d", line)]


@pytest.mark.quick
@pytest.mark.parametrize("kind", ["syntax", "bad_import"])
def test_a_module_that_does_not_import_is_one_item_in_every_format(grades, kind):
    graded = grades[kind]
    grade = graded.grade
    assert grade.parts["mha"].score == 0 and grade.parts["mha"].max_score == PART["mha"]
    assert grade.parts["exercises"].score == grade.parts["exercises"].max_score == 8  # the grader's mha
    problem = grade.parts["mha"].problem
    if kind == "syntax":
        assert problem == f"mha.py does not import: SyntaxError: invalid syntax (line {graded.line}: def forward(self x):)"
    else:
        assert problem.startswith("mha.py does not import: ImportError: cannot import name "
                                  "'CausalAttentionThatIsNotThere' from 'causal'")
        assert problem.endswith(f"(mha.py, line {graded.line}, in <module>)")
    for fmt, text in channels(grade).items():
        readable = text.replace("&#x27;", "'").replace("&#39;", "'")
        items = mha_items(text, fmt)
        assert len(items) == 1, (fmt, items)
        assert "(-22)" in items[0], (fmt, items)
        assert "does not import" in readable and f"line {graded.line}" in readable, fmt
        for said in ("hidden check", "your code raised", "ValueError", "passes here"):
            assert said not in readable, (fmt, said)
    # the instructor's table says it once, with how many checks failed with it; JUnit keeps every check
    table = reports.table(grade)
    assert table.count("does not import") == 1 and "(16 checks failed with it)" in table
    junit = reports.junit_xml(grade)
    assert junit.count('<testsuite name="mha" tests="16" failures="16"') == 1
    assert junit.count('<testsuite name="exercises" tests="4" failures="0"') == 1


@pytest.mark.quick
def test_a_voided_check_is_folded_into_the_mistake_that_voids_it(grades):
    grade = grades["unscaled"].grade
    assert grade.parts["mha"].score == 5 and grade.parts["exercises"].score == PART["exercises"]
    voided = {c.name: c.voided_by for c in grade.checks if c.voided_by}
    assert set(voided) == {"mha_book_example", "mha_rejects_indivisible_d_out", "mha_structure"}
    assert voided["mha_book_example"] == ("mha_unseen_seeds",)
    lost = sum(c.max_score - c.score for c in grade.checks if c.part == "mha")
    assert lost == 17
    for fmt, text in channels(grade).items():
        items = mha_items(text, fmt)
        assert len(items) == 1, (fmt, items)
        assert "(-17)" in items[0], (fmt, items)
        readable = re.sub(r"\\(.)", r"\1", text)
        assert "the scores are not scaled by 1/sqrt(head_dim)" in readable, fmt
        assert "this also costs the points of mha_book_example, mha_rejects_indivisible_d_out and 1 hidden " \
               "check" in readable, fmt
        assert "passes here" not in readable, fmt
    # the release README's example of what a student reads about hidden checks is this one, as it reads
    example = re.search(r'for example\s+"([^"]+)"', (ROOT / "autograder/templates/release/README.md").read_text())
    assert " ".join(example.group(1).split()) in channels(grade)["table"]
    # Gradescope keeps one test per check, each with its own points: the voided ones score 0 and say why
    tests = {t["name"]: t for t in reports.gradescope_results(grade)["tests"]}
    assert tests["mha: mha_book_example"]["score"] == 0 and tests["mha: mha_book_example"]["max_score"] == 2
    assert tests["mha: mha_book_example"]["output"].startswith("passes here, but")


def test_a_stored_record_keeps_what_voids_a_check(grades):
    """The batch's feedback is written from the stored record: voided_by travels in it (and an older
    record, without it, is read from the instructor detail beside the fixed message)."""
    grade = grades["unscaled"].grade
    stored = reports.results_json(grade)
    [book] = [t for t in stored["tests"] if t["name"] == "mha: mha_book_example"]
    assert book["extra_data"]["voided_by"] == ["mha_unseen_seeds"]
    del book["extra_data"]["voided_by"]
    [check] = [c for c in records.checks_of(stored) if c.name == "mha_book_example"]
    assert common.voided_by(check) == ("mha_unseen_seeds",)


# ---------------------------------------------------------------- import_failure on its own

def _run(results):
    return PartRun("mha", results)


def test_a_syntax_error_is_named_only_when_the_graders_own_parse_finds_it(tmp_path):
    (tmp_path / "mha.py").write_text("x = 1\n")  # parses: whatever the child said, no problem is made up
    run = _run([CheckResult("mha", "a", False, "your code raised SyntaxError",
                            student_text="SyntaxError: invalid syntax (mha.py, line 3)")])
    import_failure.explain(run, tmp_path, {"a"})
    assert run.problem == "" and run.results[0].message == "your code raised SyntaxError"
    (tmp_path / "mha.py").write_text("x = 1\nif x\n    y = 2\n")
    import_failure.explain(run, tmp_path, {"a"})
    assert run.problem == "mha.py does not import: SyntaxError: expected ':' (line 2: if x)"
    assert run.results[0].message == run.problem


def test_a_part_with_a_passing_check_is_never_said_not_to_import(tmp_path):
    (tmp_path / "mha.py").write_text("def f(:\n")
    run = _run([CheckResult("mha", "a", False, "m", student_text="SyntaxError: invalid syntax (mha.py, line 1)"),
                CheckResult("mha", "b", True)])
    import_failure.explain(run, tmp_path, {"a", "b"})
    assert run.problem == ""


def test_an_error_at_import_is_said_only_from_a_check_with_visible_inputs(tmp_path):
    said = "NameError: name 'torch' is not defined (mha.py, line 4, in <module>)"
    run = _run([CheckResult("mha", "hidden_one", False, "your code raised an exception", student_text=said)])
    import_failure.explain(run, tmp_path, {"visible_one"})
    assert run.problem == ""  # a child that saw hidden inputs chose that text
    run = _run([CheckResult("mha", "visible_one", False, "your code raised NameError", student_text=said),
                CheckResult("mha", "hidden_one", False, "your code raised an exception", student_text=said)])
    import_failure.explain(run, tmp_path, {"visible_one"})
    assert run.problem == f"mha.py does not import: {said}"
    assert [r.message for r in run.results] == [run.problem] * 2
    # an error inside a function is a bug of that function, not an import that fails
    run = _run([CheckResult("mha", "visible_one", False, "your code raised NameError",
                            student_text="NameError: name 'torch' is not defined (mha.py, line 9, in forward)")])
    import_failure.explain(run, tmp_path, {"visible_one"})
    assert run.problem == ""


def test_a_module_from_a_notebook_that_does_not_import_is_named_as_its_cell(tmp_path):
    """Staged from a notebook (Staged.cells), the module's problem names the notebook's cell: a syntax
    error with the cell's line, an error at import as the student text says it (StudentError.student_text)."""
    cells = {"mha": ("ch03.ipynb", 7)}
    (tmp_path / "mha.py").write_text("x = 1\nif x\n    y = 2\n")
    said = StudentError("SyntaxError", "invalid syntax (mha.py, line 2)", files=frozenset({"mha.py"}),
                        cells=cells).student_text()
    assert said == "SyntaxError: invalid syntax (ch03.ipynb, the solution cell 'mha' (cell 7 from the top), line 2)"
    run = _run([CheckResult("mha", "a", False, "m", student_text=said)])
    import_failure.explain(run, tmp_path, {"a"}, cells)
    assert run.problem == "the solution cell 'mha' of ch03.ipynb does not import: SyntaxError: expected ':' (line 2: if x)"
    said = ("NameError: name 'torch' is not defined "
            "(ch03.ipynb, the solution cell 'mha' (cell 7 from the top), line 4, in <module>)")
    run = _run([CheckResult("mha", "visible_one", False, "your code raised NameError", student_text=said)])
    import_failure.explain(run, tmp_path / "none", {"visible_one"}, cells)
    assert run.problem == f"the solution cell 'mha' of ch03.ipynb does not import: {said}"


def test_a_check_voided_by_a_check_that_never_ran_counts_once():
    """A part that timed out: its visible book example passed before, the hidden check it requires was
    not run. The problem's item holds every point the part lost, the voided check's once."""
    checks = [grading.ScoredCheck("causal", "book", False, 0, 2, "visible", grading.GATED, voided_by=("unseen",)),
              grading.ScoredCheck("causal", "unseen", False, 0, 3, "hidden", "not run: the causal process timed out")]
    parts = {"causal": grading.PartScore(0, 5, problem="the causal process timed out")}
    [item] = common.what_to_fix(checks, parts)
    assert (item.title, item.points, item.message) == ("causal", 5, "the causal process timed out")
