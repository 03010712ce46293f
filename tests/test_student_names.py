"""Issue 21 item 4: students' names in a batch. Two entries never map to one student (an ambiguous
pair is a problem for both, neither takes the other's row), names of any length or bytes are stored
under bounded file names, and an error while storing one student is that student's problem: the
batch goes on and leaves no temporary file."""
import csv
import os
import shutil

import pytest
from rubric_points import TOTAL

from autograder import batch, selftest
from autograder.course.gradebook import Gradebook


def make(folder, *names):
    for name in names:
        if isinstance(name, bytes):
            name = os.fsdecode(name)
        if name.endswith(".zip"):
            (folder / name).write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip
        else:
            (folder / name).mkdir()


@pytest.mark.quick
def test_ambiguous_names_are_a_problem_for_both(tmp_path):
    make(tmp_path, "a b", "a_b", "c", "c.zip", b"caf\xe9", "caf_", "dora")
    found = batch.find_submissions(tmp_path)
    names = [name for name, _, _ in found]
    problems = {name: problem for name, _, problem in found}
    assert len(set(names)) == len(names) == 7
    assert problems["dora"] == ""
    for plain in ("a_b", "c", "caf_"):  # nobody takes the name both would get
        assert plain not in problems
        pair = [n for n in names if n.startswith(plain + "~")]
        assert len(pair) == 2 and all("ambiguous name" in problems[n] and repr(plain) in problems[n] for n in pair)
    assert "'a b'" in problems[next(n for n in names if n.startswith("a_b~"))]


@pytest.mark.quick
def test_long_names_are_bounded_and_stay_distinct(tmp_path):
    long_a, long_b = "x" * 251, "x" * 250 + "y"
    make(tmp_path, long_a, long_b)
    names = [name for name, _, problem in batch.find_submissions(tmp_path) if not problem]
    assert len(names) == 2 and names[0] != names[1]
    assert all(len(n) <= batch.NAME_LIMIT + 11 and n.startswith("x" * batch.NAME_LIMIT + "~") for n in names)
    # the same entry always gets the same name (a rerun finds its row)
    assert names == [name for name, _, _ in batch.find_submissions(tmp_path)]


def test_a_batch_with_odd_names_records_everyone_and_leaves_no_temp_file(tmp_path):
    folder, out = tmp_path / "class", tmp_path / "out"
    folder.mkdir()
    shutil.copytree(selftest.SOLUTIONS, folder / ("s" * 251))
    make(folder, "a b", "a_b", "blocked")
    (out / "feedback" / "blocked.html").mkdir(parents=True)  # storing this student's page fails
    count = batch.run_batch(folder, out, jobs=2, progress=None)
    book = Gradebook(out / "gradebook.db")
    rows = {student: (score, problem) for student, score, _, _ in book.rows() for problem in
            [book.problems().get(student, "")]}
    book.close()
    assert count == 4 and len(rows) == 4
    long_name = next(n for n in rows if n.startswith("s"))
    assert rows[long_name] == (TOTAL, "")
    assert "could not be stored" in rows["blocked"][1]
    assert sorted(problem.split(":")[0] for n, (_, problem) in rows.items() if n.startswith("a_b~")) == \
        ["ambiguous name"] * 2
    with open(out / "grades.csv", newline="") as f:
        assert sorted(r["student"] for r in csv.DictReader(f)) == sorted(rows)
    left = [p.name for sub in ("results", "feedback") for p in (out / sub).iterdir() if p.name.startswith(".tmp")]
    assert left == []


def test_a_rerun_keeps_an_ambiguous_name_its_problem_and_adds_no_history(tmp_path):
    """A second batch over the same class: nothing new to grade, so nothing new for the history
    (batch.store passes no reason); the ambiguous pair still reads "ambiguous name" in grades.csv,
    never a storage error (history.reason is NOT NULL), and no row is added."""
    folder, out = tmp_path / "class", tmp_path / "out"
    folder.mkdir()
    make(folder, "a b", "a_b")

    def state():
        book = Gradebook(out / "gradebook.db")
        problems, history = book.problems(), book.history()
        book.close()
        with open(out / "grades.csv", newline="") as f:
            csv_problems = sorted(r["problem"].split(":")[0] for r in csv.DictReader(f))
        return problems, len(history), csv_problems

    batch.run_batch(folder, out, jobs=1, progress=None)
    first, rows, csv_first = state()
    batch.run_batch(folder, out, jobs=1, progress=None)
    second, rows_again, csv_second = state()
    assert sorted(p.split(":")[0] for p in second.values()) == ["ambiguous name"] * 2, second
    assert second == first and csv_second == csv_first == ["ambiguous name"] * 2
    assert rows_again == rows
