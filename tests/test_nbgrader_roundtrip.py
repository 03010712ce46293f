"""The whole nbgrader course cycle with the real nbgrader 0.9.6 commands, in a temporary course.

generate_assignment -> release_assignment -> a student fetches, solves and submits -> collect;
a second student's untouched notebooks arrive as an LMS zip -> zip_collect; autograde,
generate_feedback, export. Every command runs as `python -m nbgrader` in a subprocess, from the
project root so that the project's nbgrader_config.py is the configuration under test, with the
course root and the exchange moved into a temporary folder and Jupyter's own folders too.

About 90 s on 2 cores: most of it is nbgrader's start-up (about 4 s a command) and autograde
running 3 notebooks for each of the 2 students. Run only these with `-m nbgrader`, skip them with
`-m "not nbgrader"`.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("nbgrader", reason="nbgrader is not installed (pip install '.[notebooks]', nbgrader==0.9.6)")

pytestmark = pytest.mark.nbgrader

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "source" / "ch03"
STUBS = ROOT / "assignments" / "ch03"
COURSE_ID = "ch03-attention"
NOTEBOOKS = sorted(p.name for p in SOURCE.glob("*.ipynb"))


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


class Course:
    """A temporary course, exchange and student home; nbgrader runs against them."""

    def __init__(self, base):
        self.base = base
        self.root = base / "course"
        self.exchange = base / "exchange"
        self.timings = {}
        shutil.copytree(SOURCE, self.root / "source" / "ch03")
        self.exchange.mkdir()
        self.env = dict(os.environ)
        # nbgrader runs `alembic` (the gradebook's migrations) from PATH
        self.env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), self.env.get("PATH", "")])
        for name in ("CONFIG", "DATA", "RUNTIME"):  # no user-level Jupyter or nbgrader config leaks in
            folder = base / f"jupyter-{name.lower()}"
            folder.mkdir()
            self.env[f"JUPYTER_{name}_DIR"] = str(folder)

    def run(self, *args, cwd=ROOT, instructor=True):
        command = [sys.executable, "-m", "nbgrader", *args, f"--Exchange.root={self.exchange}"]
        if instructor:
            command.append(f"--CourseDirectory.root={self.root}")
        else:
            command += [f"--course={COURSE_ID}", f"--Exchange.cache={self.base / 'cache'}"]
        started = time.monotonic()
        done = subprocess.run(command, cwd=cwd, env=self.env, capture_output=True, text=True, timeout=600)
        self.timings[args[0]] = self.timings.get(args[0], 0) + time.monotonic() - started
        assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout}\n{done.stderr[-6000:]}"
        return done


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = Course(tmp_path_factory.mktemp("nbgrader"))

    course.run("generate_assignment", "ch03")
    course.run("release_assignment", "ch03")

    # alice fetches the notebooks, writes the reference code into the solution cells, submits
    home = course.base / "alice"
    home.mkdir()
    course.run("fetch_assignment", "ch03", cwd=home, instructor=False)
    solutions = {nbgrader_meta(cell)["grade_id"]: text(cell)
                 for name in NOTEBOOKS for cell in cells_of(SOURCE / name) if nbgrader_meta(cell).get("solution")}
    for name in NOTEBOOKS:
        path = home / "ch03" / name
        notebook = json.loads(path.read_text())
        for cell in notebook["cells"]:
            if nbgrader_meta(cell).get("solution"):
                cell["source"] = solutions[nbgrader_meta(cell)["grade_id"]]
        path.chmod(0o644)
        path.write_text(json.dumps(notebook, indent=1))
    course.run("submit", "ch03", "--student=alice", cwd=home, instructor=False)
    course.run("collect", "ch03", "--CollectApp.check_owner=False")

    # bob hands in the released notebooks untouched, through an LMS: a zip of files named like a
    # Canvas download, <name>_[LATE_]<user id>_<submission id>_<file>, in downloaded/ch03/archive
    archive = course.root / "downloaded" / "ch03" / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / "submissions.zip", "w") as bundle:
        for number, name in enumerate(NOTEBOOKS):
            late = "LATE_" if number == 0 else ""
            bundle.write(course.root / "release" / "ch03" / name, f"bob_{late}4017_{88120 + number}_{name}")
    course.run("zip_collect", "ch03")

    course.run("autograde", "ch03")
    course.run("generate_feedback", "ch03")
    course.grades = course.base / "grades.csv"
    course.run("export", f"--CsvExportPlugin.to={course.grades}")
    print("nbgrader timings (s):", {step: round(seconds, 1) for step, seconds in course.timings.items()})
    return course


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
    for student in ("alice", "bob"):
        folder = course.root / "submitted" / student / "ch03"
        assert sorted(p.name for p in folder.glob("*.ipynb")) == NOTEBOOKS, student
    assert (course.root / "submitted" / "alice" / "ch03" / "timestamp.txt").is_file()


def test_solutions_get_full_marks_and_stubs_get_zero(course):
    points = sum(nbgrader_meta(cell)["points"] for name in NOTEBOOKS for cell in cells_of(SOURCE / name)
                 if nbgrader_meta(cell).get("grade"))
    with open(course.grades, newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert sorted(rows) == ["alice", "bob"]
    for student, expected in (("alice", points), ("bob", 0)):
        row = rows[student]
        assert (row["assignment"], float(row["max_score"])) == ("ch03", points)
        assert float(row["score"]) == expected, f"{student}: {row}"


def test_every_failing_cell_of_the_stubs_names_what_to_write(course):
    for name in NOTEBOOKS:
        for cell in cells_of(course.root / "autograded" / "bob" / "ch03" / name):
            if nbgrader_meta(cell).get("grade"):
                errors = [out for out in cell["outputs"] if out["output_type"] == "error"]
                assert [e["ename"] for e in errors] == ["NotImplementedError"], (name, nbgrader_meta(cell)["grade_id"])
                module = errors[0]["evalue"].split(".")[0]
                assert module in {"simple_attention", "self_attention_v1", "self_attention_v2", "weight_transfer",
                                  "causal", "mha", "exercises", "numpy_attention"}, errors[0]["evalue"]


def test_feedback_for_every_notebook_of_both_students(course):
    for student in ("alice", "bob"):
        for name in NOTEBOOKS:
            page = course.root / "feedback" / student / "ch03" / name.replace(".ipynb", ".html")
            assert page.is_file(), page
    first = (course.root / "feedback" / "alice" / "ch03" / NOTEBOOKS[0].replace(".ipynb", ".html")).read_text()
    total = sum(nbgrader_meta(cell).get("points", 0) for cell in cells_of(SOURCE / NOTEBOOKS[0]))
    assert f"Score: {float(total)} / {float(total)}" in first


@pytest.mark.xfail(strict=True, reason="nbgrader 0.9.6 generate_feedback renders the autograded notebook, "
                                       "hidden tests included; to be closed in phase 2")
def test_feedback_holds_no_hidden_test(course):
    for student in ("alice", "bob"):
        for name in NOTEBOOKS:
            page = (course.root / "feedback" / student / "ch03" / name.replace(".ipynb", ".html")).read_text()
            assert "hidden_checks_" not in page and "BEGIN HIDDEN TESTS" not in page
