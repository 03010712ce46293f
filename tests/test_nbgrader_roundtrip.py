"""The whole nbgrader course cycle with the real nbgrader 0.9.6 commands, in a temporary course.

generate_assignment (once per session, as the README writes it, shared with test_nbgrader_validate and
test_nbgrader_commands: tests/nbgrader_release.py)
-> release_assignment -> a student ("alice") fetches, solves and submits with the commands docs/notebooks.md
gives (made once per session, shared with test_nbgrader_commands: tests/nbgrader_release.py's
documented_exchange; her student id is the account's that ran them) -> collect from a copy of that exchange;
a second student's untouched notebooks arrive as an LMS zip -> zip_collect; three more
submissions are put straight into submitted/ (one with two bugs, one that attacks the grader,
one with deleted and tampered cells); autograde (our GradeInSandbox: nothing runs in a kernel),
generate_feedback, export. Every command from collect on runs as `python -m nbgrader` in a subprocess,
from the project root so that the project's nbgrader_config.py is the configuration under test, with the
course root and the exchange moved into a temporary folder and Jupyter's own folders too (the commands
before it ran as the README writes them, in a fresh copy of the project: tests/nbgrader_release.py).

The scores nbgrader records (gradebook.db, per graded cell) are compared part by part with what
the engine gives the same code handed in as modules. nbgrader's four holes documented in
docs/notebooks.md each have a test here: hidden tests in the feedback, input transformers,
a detached process rewriting the gradebook, deleted or tampered cells.

About 60 to 90 s on 2 cores: mostly nbgrader's start-up (about 4 s a command; five commands here, the
release and the exchange being the session's) and the hidden suites (5 students); autograde itself no
longer starts a kernel. Run only these with `-m nbgrader`, skip
them with `-m "not nbgrader"`.
"""
import csv
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import yaml
from nbgrader_release import copy_course
from notebook_cases import fill_notebooks, module_texts, write_modules
from optional import require
from rubric_points import CHECK, TOTAL

from autograder.reports.common import diagnosis_and_place, printable, what_to_fix

require("nbgrader", reason="nbgrader is not installed (pip install '.[notebooks]', nbgrader==0.9.6)")

pytestmark = pytest.mark.nbgrader

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "source" / "ch03"
STUBS = ROOT / "assignments" / "ch03"
COURSE_ID = "ch03-attention"
NOTEBOOKS = sorted(p.name for p in SOURCE.glob("*.ipynb"))
OTHERS = ("bob", "carol", "dave", "mallory")  # and alice, the documented student: course.students
CAROL_BUGS = ("causal_diagonal", "numpy_softmax_unstable")


def cells_of(path):
    return json.loads(Path(path).read_text())["cells"]


def text(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def nbgrader_meta(cell):
    return cell["metadata"].get("nbgrader", {})


def region_lines(begin, end):
    """{stripped line: notebook} for the lines inside begin/end regions of the source notebooks that
    appear nowhere outside such a region (`import causal` opens visible and hidden tests alike)."""
    inside, outside = {}, set()
    for name in NOTEBOOKS:
        for cell in cells_of(SOURCE / name):
            in_region = False
            for line in text(cell).splitlines():
                stripped = line.strip()
                if stripped == begin:
                    in_region = True
                elif stripped == end:
                    in_region = False
                elif stripped and in_region:
                    inside[stripped] = name
                elif stripped:
                    outside.add(stripped)
    return {line: name for line, name in inside.items() if line not in outside}


def part_max():
    from autograder.authoring.notebooks import part_points

    return part_points()


class Course:
    """A temporary course, exchange and student home; nbgrader runs against them."""

    def __init__(self, base, release, exchange):
        """release: the session's course after `nbgrader generate_assignment ch03` (tests/nbgrader_release.py),
        copied here as this course's own; exchange: the session's exchange after alice's documented commands
        (nbgrader_release.documented_exchange), copied here as this course's own."""
        self.base = base
        self.root = copy_course(release, base / "course")
        self.exchange = base / "exchange"
        self.timings = {}
        shutil.copytree(exchange.root, self.exchange)
        self.alice = exchange.student  # the student id nbgrader submit recorded: the account that ran it
        assert self.alice and self.alice not in OTHERS, self.alice
        self.students = (self.alice, *OTHERS)
        self.env = dict(os.environ)
        # nbgrader runs `alembic` (the gradebook's migrations) from PATH
        self.env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), self.env.get("PATH", "")])
        for name in ("CONFIG", "DATA", "RUNTIME"):  # no user-level Jupyter or nbgrader config leaks in
            folder = base / f"jupyter-{name.lower()}"
            folder.mkdir()
            self.env[f"JUPYTER_{name}_DIR"] = str(folder)

    def run(self, *args):
        command = [sys.executable, "-m", "nbgrader", *args, f"--Exchange.root={self.exchange}",
                   f"--CourseDirectory.root={self.root}"]
        started = time.monotonic()
        done = subprocess.run(command, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=600)
        self.timings[args[0]] = self.timings.get(args[0], 0) + time.monotonic() - started
        assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout}\n{done.stderr[-6000:]}"
        return done

    def submitted(self, student):
        return self.root / "submitted" / student / "ch03"

    def gradebook_scores(self, student):
        """{part: (auto_score, max_score, needs_manual_grade)} of the graded cells score_<part>."""
        from nbgrader.api import Gradebook

        found = {}
        with Gradebook(f"sqlite:///{self.root / 'gradebook.db'}", COURSE_ID) as gb:
            for name in NOTEBOOKS:
                notebook = gb.find_submission_notebook(name[:-len(".ipynb")], "ch03", student)
                for grade in notebook.grades:
                    found[grade.name.removeprefix("score_")] = (grade.auto_score, grade.max_score,
                                                                grade.needs_manual_grade)
        return found


# --- what mallory hands in: input transformers, and a detached process that rewrites the gradebook ---

TRANSFORMER = "get_ipython().input_transformers_post.append(lambda lines: [])  # blank every later cell\n"
GUARDED_TRANSFORMER = (
    "try:\n"
    "    get_ipython().input_transformers_post.append(lambda lines: [])\n"
    "    get_ipython().input_transformers_cleanup.append(lambda lines: [])\n"
    "except NameError:\n"
    "    pass\n"
)
ATTACK = '''import os as _os, subprocess as _subprocess, sys as _sys
_TARGETS = {targets!r}
_LOOP = (
    "import os, time\\n"
    "end = time.time() + {seconds}\\n"
    "while True:  # each target tried at least once, however late the machine runs this\\n"
    "    for target in %r:\\n"
    "        try:\\n"
    "            with open(target, 'ab') as f:\\n"
    "                f.write(b'MALLORY ' + b'WAS HERE')\\n"
    "        except OSError:\\n"
    "            pass\\n"
    "    if time.time() >= end:\\n"
    "        break\\n"
    "    time.sleep(0.1)\\n" % (_TARGETS,)
)
try:  # a process in a session of its own, outliving whoever started it
    _subprocess.Popen([_sys.executable, "-c", _LOOP], start_new_session=True,
                      stdin=_subprocess.DEVNULL, stdout=_subprocess.DEVNULL, stderr=_subprocess.DEVNULL)
except OSError:
    pass
if _os.fork() == 0:  # and a double fork, for good measure
    _os.setsid()
    if _os.fork() == 0:
        try:
            exec(_LOOP)
        finally:
            _os._exit(0)
    _os._exit(0)
'''
ATTACK_SECONDS = 2.5


def attack_targets(root, student="mallory"):
    """Every path the attack can guess: relative to the kernel's folder under nbgrader's Execute
    (autograded/<student>/ch03), relative to wherever it runs, and absolute."""
    return ["../../../gradebook.db", "../../gradebook.db", "../gradebook.db", "gradebook.db",
            str(root / "gradebook.db"), str(root / f"MALLORY-{student}"),
            str(root / "autograded" / student / "ch03" / "02_causal_and_multi_head.ipynb")]


def mallory_texts(root):
    attack = ATTACK.format(targets=attack_targets(root), seconds=ATTACK_SECONDS)
    return module_texts(bugs=("numpy_softmax_unstable",), edits={
        "simple_attention": lambda _: TRANSFORMER + (STUBS / "simple_attention.py").read_text(),
        "causal": lambda code: attack + code,
        "numpy_attention": lambda code: GUARDED_TRANSFORMER + code,
    })


def dave_tampers(folder):
    """Hole 4: deleted, edited, stripped and re-flagged cells; a deleted and a renamed solution cell."""
    def edit(name, change):
        path = folder / name
        notebook = json.loads(path.read_text())
        notebook["cells"] = change(notebook["cells"])
        path.write_text(json.dumps(notebook, indent=1))

    def first(cells):
        out = []
        for cell in cells:
            grade_id = nbgrader_meta(cell).get("grade_id")
            if grade_id == "score_simple_attention":
                continue  # deleted
            if grade_id == "self_attention_v1":  # math imported by a cell of dave's own above it: as in the kernel
                out.append({"cell_type": "code", "execution_count": None, "id": "dave-imports", "metadata": {},
                            "outputs": [], "source": "import math"})
                cell["source"] = text(cell).replace("attn_scores / keys.shape[-1] ** 0.5",
                                                    "attn_scores / math.sqrt(keys.shape[-1])")
                assert "math.sqrt" in cell["source"]
            if grade_id in ("test_softmax_naive", "score_self_attention_v1"):
                cell["source"] = "pass  # edited by the student"
            if grade_id == "score_self_attention_v2":
                del cell["metadata"]["nbgrader"]  # stripped: nbgrader no longer knows the cell
            if grade_id == "score_weight_transfer":
                cell["metadata"]["nbgrader"]["grade"] = False  # 0.9.6 stops on the checksum
            out.append(cell)
        return out

    def second(cells):
        for cell in cells:
            if nbgrader_meta(cell).get("grade_id") == "exercises":
                cell["metadata"]["nbgrader"]["grade_id"] = "my_exercises"  # renamed
        return cells

    edit(NOTEBOOKS[0], first)
    edit(NOTEBOOKS[1], second)
    edit(NOTEBOOKS[2], lambda cells: [c for c in cells if nbgrader_meta(c).get("grade_id") != "numpy_attention"])


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def course(tmp_path_factory, nbgrader_release, nbgrader_exchange):
    # generate_assignment ch03, then release_assignment, and alice's list, fetch_assignment, reference code
    # in the solution cells, submit, as the README and docs/notebooks.md give them: made once per session
    # and copied (tests/nbgrader_release.py, tests/conftest.py's nbgrader_exchange)
    course = Course(tmp_path_factory.mktemp("nbgrader"), nbgrader_release, nbgrader_exchange)
    release = course.root / "release" / "ch03"
    course.run("collect", "ch03", "--CollectApp.check_owner=False")

    # bob hands in the released notebooks untouched, through an LMS: a zip of files named like a
    # Canvas download, <name>_[LATE_]<user id>_<submission id>_<file>, in downloaded/ch03/archive
    archive = course.root / "downloaded" / "ch03" / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / "submissions.zip", "w") as bundle:
        for number, name in enumerate(NOTEBOOKS):
            late = "LATE_" if number == 0 else ""
            bundle.write(release / name, f"bob_{late}4017_{88120 + number}_{name}")
    course.run("zip_collect", "ch03")

    # carol: two bugs; mallory: the tricks; dave: tampered cells (straight into submitted/)
    fill_notebooks(module_texts(bugs=CAROL_BUGS), course.submitted("carol"), notebooks=release)
    fill_notebooks(mallory_texts(course.root), course.submitted("mallory"), notebooks=release)
    fill_notebooks(module_texts(), course.submitted("dave"), notebooks=release)
    dave_tampers(course.submitted("dave"))

    course.autograde = course.run("autograde", "ch03")
    autograded_at = time.monotonic()
    course.gradebook_after_autograde = sha256(course.root / "gradebook.db")
    course.control = attack_control(course.base / "control")
    course.scores = {student: course.gradebook_scores(student) for student in course.students}

    course.run("generate_feedback", "ch03")
    course.grades = course.base / "grades.csv"
    course.run("export", f"--CsvExportPlugin.to={course.grades}")
    # mallory's loops had their ATTACK_SECONDS (and more) before the gradebook is read again: the wait
    # overlaps generate_feedback and export, which only read the gradebook (issue 38 item 6); whatever
    # is left of it is slept here, so the proof never depends on how fast those commands ran
    time.sleep(max(0.0, ATTACK_SECONDS + 0.5 - (time.monotonic() - autograded_at)))
    course.gradebook_later = sha256(course.root / "gradebook.db")
    print("nbgrader timings (s):", {step: round(seconds, 1) for step, seconds in course.timings.items()})
    return course


def attack_control(base):
    """The same attack, not sandboxed, from the folder where nbgrader's Execute would run it, against a
    copy: it does reach ../../../gradebook.db, and after the process that started it has exited."""
    folder = base / "autograded" / "mallory" / "ch03"
    folder.mkdir(parents=True)
    copy = base / "gradebook.db"
    copy.write_bytes(b"a gradebook")
    attack = ATTACK.format(targets=["../../../gradebook.db"], seconds=1.0)
    done = subprocess.run([sys.executable, "-c", attack], cwd=folder, capture_output=True, timeout=60)
    # its loops write at least once whenever the machine runs them: waited for (CONTROL_BOUND is a bound on a
    # hang only; 10 s after the start was a wall clock a loaded machine could outlast before their first write)
    started = time.monotonic()
    while b"MALLORY WAS HERE" not in copy.read_bytes() and time.monotonic() - started < CONTROL_BOUND:
        time.sleep(0.05)
    return {"exit": done.returncode, "written": b"MALLORY WAS HERE" in copy.read_bytes()}


CONTROL_BOUND = 300


@pytest.fixture(scope="module")
def module_form(course, engine, tmp_path_factory):
    """The engine's grades of carol's and mallory's code handed in as modules (the session's engine)."""
    from autograder import submitted_notebooks

    base = tmp_path_factory.mktemp("modules")
    folders = {"carol": write_modules(module_texts(bugs=CAROL_BUGS), base / "carol"),
               "mallory": base / "mallory"}
    submitted_notebooks.extract_modules(course.submitted("mallory"), folders["mallory"])
    return {student: engine.grade(folder) for student, folder in folders.items()}


def released(course):
    return {name: cells_of(course.root / "release" / "ch03" / name) for name in NOTEBOOKS}


def test_release_holds_no_line_of_any_solution_region(course):
    secret = region_lines("### BEGIN SOLUTION", "### END SOLUTION")
    assert len(secret) > 50
    for name, cells in released(course).items():
        raw = (course.root / "release" / "ch03" / name).read_text()
        assert "BEGIN SOLUTION" not in raw and "END SOLUTION" not in raw
        lines = {line.strip() for cell in cells for line in text(cell).splitlines()}
        leaked = sorted(line for line in secret if line in lines)
        assert not leaked, f"release/ch03/{name} holds solution lines:\n" + "\n".join(leaked)


def test_release_holds_no_hidden_test(course):
    hidden = region_lines("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
    assert len(hidden) > 50
    for name, cells in released(course).items():
        raw = (course.root / "release" / "ch03" / name).read_text()
        assert "HIDDEN TESTS" not in raw
        lines = {line.strip() for cell in cells for line in text(cell).splitlines()}
        leaked = sorted(line for line in hidden if line in lines)
        assert not leaked, f"release/ch03/{name} holds hidden test lines:\n" + "\n".join(leaked)
        assert "hidden_checks_" not in raw


def test_released_solution_cells_are_the_module_stubs_with_their_hints(course):
    stubs = {nbgrader_meta(cell)["grade_id"]: text(cell) + "\n"
             for cells in released(course).values() for cell in cells if nbgrader_meta(cell).get("solution")}
    assert stubs == {module: (STUBS / f"{module}.py").read_text() for module in stubs}
    assert len(stubs) == 8


def test_both_submissions_arrive(course):
    for student in (course.alice, "bob"):
        folder = course.submitted(student)
        assert sorted(p.name for p in folder.glob("*.ipynb")) == NOTEBOOKS, student
    assert (course.submitted(course.alice) / "timestamp.txt").is_file()


def test_autograde_runs_no_kernel(course):
    log = course.autograde.stdout + course.autograde.stderr
    assert "Executing notebook" not in log and "kernel" not in log.lower(), log[-3000:]
    assert "Traceback" not in log and "ERROR" not in log, log[-3000:]


def test_autograde_warns_only_about_cells_a_student_changed(course):
    """Issue 22: every untouched graded cell was reported as "checksum ... has changed!" (the gradebook
    keeps it with its hidden tests, the release without them). Only dave's two edited cells are now."""
    log = course.autograde.stdout + course.autograde.stderr
    changed = re.findall(r"Attribute 'checksum' for cell (\S+) has changed", log)
    assert sorted(changed) == ["score_self_attention_v1", "test_softmax_naive"], log[-4000:]
    # every other warning is about a cell dave tampered with (dave_tampers); issue 31: none about the
    # speed lab's editable cells, plain cells the gradebook never knew and the student may change
    tampered = ("score_simple_attention", "score_self_attention_v2", "score_weight_transfer", "my_exercises",
                "numpy_attention")
    warnings = [line for line in log.splitlines() if "warning" in line.lower() and "checksum" not in line]
    assert warnings and all(any(cell in line for cell in tampered) for line in warnings), warnings[:10]
    assert "'settings'" not in log and "'stretch_exercise'" not in log


def test_solutions_get_full_marks_and_stubs_get_zero(course):
    points = sum(nbgrader_meta(cell)["points"] for name in NOTEBOOKS for cell in cells_of(SOURCE / name)
                 if nbgrader_meta(cell).get("grade"))
    assert points == sum(part_max().values()) == TOTAL
    with open(course.grades, newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert sorted(rows) == sorted(course.students)
    for student, expected in ((course.alice, points), ("bob", 0)):
        row = rows[student]
        assert (row["assignment"], float(row["max_score"])) == ("ch03", points)
        assert float(row["score"]) == expected, f"{student}: {row}"
    maxima = part_max()
    assert course.scores[course.alice] == {part: (top, top, False) for part, top in maxima.items()}
    assert course.scores["bob"] == {part: (0, top, False) for part, top in maxima.items()}


def test_a_notebook_with_bugs_scores_what_the_modules_score_part_by_part(course, module_form):
    recorded = {part: score for part, (score, _, manual) in course.scores["carol"].items()}
    expected = {part: p.score for part, p in module_form["carol"].parts.items()}
    assert recorded == expected
    assert recorded["causal"] < part_max()["causal"] and recorded["numpy_attention"] < part_max()["numpy_attention"]
    assert recorded["simple_attention"] == part_max()["simple_attention"]


def score_cell(course, student, notebook, part):
    for cell in cells_of(course.root / "autograded" / student / "ch03" / notebook):
        if nbgrader_meta(cell).get("grade_id") == f"score_{part}":
            return cell
    raise AssertionError(f"no score_{part} cell in {student}'s {notebook}")


def plain(output):
    value = output["data"]["text/plain"]
    return "".join(value) if isinstance(value, list) else value


def report(cell):
    return "".join(plain(out) for out in cell["outputs"] if out["output_type"] == "display_data")


def test_each_graded_cell_holds_the_report_and_the_score(course, module_form):
    cell = score_cell(course, "carol", NOTEBOOKS[1], "causal")
    kinds = [out["output_type"] for out in cell["outputs"]]
    # the report, the picture of carol's masked weights beside the expected ones (one image), the score
    assert kinds == ["display_data"] * 2 + ["execute_result"]
    assert cell["outputs"][1]["data"]["image/png"] and "beside the expected" in plain(cell["outputs"][1])
    recorded = course.scores["carol"]["causal"][0]
    assert float(plain(cell["outputs"][-1])) == recorded
    visible = [c for c in module_form["carol"].checks if c.part == "causal" and not c.passed and c.visibility == "visible"]
    hidden = [c for c in module_form["carol"].checks if c.part == "causal" and not c.passed and c.visibility != "visible"]
    assert visible and hidden
    shown = report(cell)
    assert shown.startswith(f"causal: {recorded:g} / {part_max()['causal']:g} points")
    # one item per diagnosis (issue 22), as every other channel: the checks it failed in listed under it
    items = what_to_fix([c for c in module_form["carol"].checks if c.part == "causal"],
                        {"causal": module_form["carol"].parts["causal"]})
    for item in items:
        assert f"  - {item.label} (-{item.points:g}): {item.message}" in shown
        assert not item.failed_in or f"\n    {item.failed_in}" in shown
        assert not item.own_text or f"\n    your error: {item.own_text}" in shown
    for check in visible:  # named, under the item of the cause that explains it (one item per cause)
        holder = next(item for item in items if check.name in item.checks)
        assert check.name in shown and holder.message in shown
    # hidden checks: unnamed, counted under the diagnosis they gave, without the student's own text
    for check in hidden:
        assert check.name not in shown and diagnosis_and_place(printable(check.message))[0] in shown
        assert not check.student_text or check.student_text not in shown
    # counted once each: on an item's line or its "failed in" line, not again on a folded item's
    # "this one mistake fails ..." line (the same checks, with their points)
    counted = sum(int(n) for line in shown.splitlines() if "this one mistake fails" not in line
                  for n in re.findall(r"(?:  - | and )(\d+) hidden checks? \(", line))
    assert counted == len(hidden)


def test_every_graded_cell_of_the_stubs_names_what_to_write(course):
    for name in NOTEBOOKS:
        for cell in cells_of(course.root / "autograded" / "bob" / "ch03" / name):
            if nbgrader_meta(cell).get("grade"):
                part = nbgrader_meta(cell)["grade_id"].removeprefix("score_")
                shown = report(cell)
                assert re.search(r"not implemented yet: \w+\.\w+", shown), (name, part, shown)
                assert "\n    your error: NotImplementedError: " in shown, (name, part, shown)
                assert shown.startswith(f"{part}: 0 / "), shown
                assert plain(cell["outputs"][-1]) == "0.0"


def page_text(course, student, name):
    """The feedback page as a reader sees it: tags (syntax highlighting spans) removed, entities decoded."""
    page = (course.root / "feedback" / student / "ch03" / name.replace(".ipynb", ".html")).read_text()
    return html.unescape(re.sub(r"<[^>]*>", "", page))


def hidden_check_names():
    rubric = yaml.safe_load((ROOT / "grading.yml").read_text())
    default = (rubric.get("defaults") or {}).get("visibility", "visible")
    return [check for part in rubric["parts"].values() for check, value in part["checks"].items()
            if (value.get("visibility", default) if isinstance(value, dict) else default) != "visible"]


def test_feedback_for_every_notebook_of_every_student(course):
    for student in course.students:
        for name in NOTEBOOKS:
            page = course.root / "feedback" / student / "ch03" / name.replace(".ipynb", ".html")
            assert page.is_file(), page
    first = page_text(course, course.alice, NOTEBOOKS[0])
    total = sum(nbgrader_meta(cell).get("points", 0) for cell in cells_of(SOURCE / NOTEBOOKS[0]))
    assert f"Score: {float(total)} / {float(total)}" in first
    # carol's causal cell shows her masked weights next to the expected ones; alice's shows no picture
    raw = (course.root / "feedback" / "carol" / "ch03" / NOTEBOOKS[1].replace(".ipynb", ".html")).read_text()
    assert len(re.findall(r'<img[^>]* src="data:image/png;base64,', raw)) == 1  # both heatmaps, side by side
    raw = (course.root / "feedback" / course.alice / "ch03" / NOTEBOOKS[1].replace(".ipynb", ".html")).read_text()
    assert "data:image/png;base64," not in raw
    # issue 22: the graded cells' report lines wrap on the page (the fix itself was cut off)
    from autograder.deploy import nbgrader_plugins

    assert nbgrader_plugins.WRAP_CSS in raw
    # the page declares its language (nbgrader's own template does not; ours, configure_feedback_page, does)
    assert re.match(r"\s*<!DOCTYPE html>\s*<html lang=\"en\">", raw), raw[:200]


def test_feedback_holds_no_hidden_test(course, module_form):
    """Hole 1: every line of every hidden test region, the hidden checks' names and their instructor
    detail; their diagnoses (the grader's words) are shown."""
    hidden_lines = region_lines("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
    names = hidden_check_names()
    # what only the instructor sees of a hidden check: the detail (values on hidden inputs)
    # (a stub's "not implemented yet: simple_attention.softmax_naive", the public name of a stub's function, is no
    # secret: mallory's stubs give it since her transformer line is commented out as magics are)
    secrets = [c.detail for grade in module_form.values() for c in grade.checks
               if c.visibility != "visible" and not c.passed and len(c.detail) > 30
               and not c.detail.startswith("not implemented yet: ")]
    assert len(hidden_lines) > 50 and names and secrets
    visible_lines = {line.strip() for cell in cells_of(SOURCE / NOTEBOOKS[1])
                     if nbgrader_meta(cell).get("grade_id", "").startswith("test_") for line in text(cell).splitlines()}
    for student in course.students:
        for name in NOTEBOOKS:
            page = page_text(course, student, name)
            assert "HIDDEN TESTS" not in page and "hidden_checks_" not in page, (student, name)
            leaked = [line for line in hidden_lines if line in page]
            leaked += [check for check in names if check in page]
            leaked += [message for message in secrets if message in page]
            assert not leaked, f"{student}'s feedback for {name} leaks:\n" + "\n".join(leaked)
    # the search does find what is there: the visible tests and carol's visible failures
    page = page_text(course, "carol", NOTEBOOKS[1])
    assert all(line in page for line in visible_lines if line)
    visible = [c.name for c in module_form["carol"].checks if c.part == "causal" and c.visibility == "visible"
               and not c.passed]
    items = what_to_fix([c for c in module_form["carol"].checks if c.part == "causal"],
                        {"causal": module_form["carol"].parts["causal"]})
    holders = [next(item for item in items if name in item.checks) for name in visible]
    assert visible and all(name in page for name in visible) and all(item.message in page for item in holders)
    # issue 12 item 4: the diagnoses of carol's failed hidden checks reach her feedback
    diagnoses = [diagnosis_and_place(printable(c.message))[0] for c in module_form["carol"].checks
                 if c.part == "causal" and c.visibility != "visible" and not c.passed]
    assert diagnoses and all(diagnosis in page for diagnosis in diagnoses)


def test_input_transformers_in_solution_cells_change_nothing(course, module_form):
    """Hole 2: under Execute, a transformer that blanks every later cell made the stubs score full
    marks. Here nothing runs in a kernel: the wrong code scores what it scores as modules."""
    recorded = {part: score for part, (score, _, _) in course.scores["mallory"].items()}
    assert recorded == {part: p.score for part, p in module_form["mallory"].parts.items()}
    assert recorded["simple_attention"] == 0
    assert recorded["numpy_attention"] == module_form["carol"].parts["numpy_attention"].score < 10
    shown = report(score_cell(course, "mallory", NOTEBOOKS[0], "simple_attention"))
    # the transformer's line reads IPython's get_ipython, a name no solution cell gives, at the cell's top level:
    # commented out as magics are (submitted_notebooks.with_earlier_cells_names); the stubs under it score what
    # stubs score, and the report speaks of the cell's functions, never of simple_attention.py
    assert "not implemented yet" in shown, shown
    assert "simple_attention.py" not in shown, shown


def test_a_detached_process_cannot_touch_the_gradebook(course):
    """Hole 3: mallory's causal cell starts a process in a new session and a double-forked one, which
    keep writing to every gradebook path they can guess. Without the sandbox that works (the control);
    in the sandbox they die with the part's process and see none of the course's files."""
    assert course.control == {"exit": 0, "written": True}
    assert course.gradebook_later == course.gradebook_after_autograde
    for target in attack_targets(course.root):
        path = Path(target) if Path(target).is_absolute() else course.root / "autograded" / "mallory" / "ch03" / target
        assert not path.exists() or b"MALLORY WAS HERE" not in path.read_bytes(), path
    # the attack is in working code: the part scores full marks but for the check the child measures (its
    # exec() is listed as tampering, so the device check earns nothing: issue 34), and nobody else gained
    assert course.scores["mallory"]["causal"][0] == part_max()["causal"] - CHECK["causal", "causal_runs_on_the_inputs_device"]
    assert all(score == 0 for score, _, _ in course.scores["bob"].values())


def test_deleted_and_tampered_cells(course):
    """Hole 4: graded cells deleted, edited, stripped of their metadata or of their grade flag are
    back and scored; a deleted or renamed solution cell scores 0 for its part, with a message. (dave's
    SelfAttention_v1 reads math, which a cell of his own above it imports: full marks, as in the kernel;
    it lost its 10 points before GradeInSandbox gave a cell the imports of the cells above it.)"""
    maxima = part_max()
    expected = {part: (0 if part in ("exercises", "numpy_attention") else top, top, False)
                for part, top in maxima.items()}
    assert course.scores["dave"] == expected
    cells = cells_of(course.root / "autograded" / "dave" / "ch03" / NOTEBOOKS[0])
    ids = [nbgrader_meta(cell).get("grade_id") for cell in cells]
    for part in ("simple_attention", "self_attention_v2"):
        assert ids.count(f"score_{part}") == 1
        assert ids.index(f"score_{part}") == ids.index(part) + 1, "put back right after the solution cell"
        assert "put it back" in text(cells[ids.index(f"score_{part}")])
    source = {nbgrader_meta(cell)["grade_id"]: text(cell) for cell in cells_of(SOURCE / NOTEBOOKS[0])}
    for grade_id in ("test_softmax_naive", "score_self_attention_v1"):
        assert text(cells[ids.index(grade_id)]) == source[grade_id], f"{grade_id} was not restored"
    assert "No solution cell for numpy_attention" in report(score_cell(course, "dave", NOTEBOOKS[2], "numpy_attention"))
    assert "No solution cell for exercises" in report(score_cell(course, "dave", NOTEBOOKS[1], "exercises"))
