"""Issue 38 item 5: the chapter is a parameter end to end. The entry points resolve the manifest once
(cli.chapter_of: --chapter, else this repository's chapter.yml) and pass it down: Engine -> the
rubric and the suites it discovers -> staging -> the grade -> junit's suite name. No grader module
reads the chapter when it is imported."""
import argparse
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from autograder import chapter, grading, reports, settings, submission
from autograder.engine import Engine
from autograder.reports import notebook_cells

ROOT = Path(__file__).resolve().parents[1]
OTHER_PARTS = ("simple_attention", "causal")  # a chapter of two parts, in grading.yml's order

IMPORT_EVERY_MODULE = r"""
import importlib, pkgutil, sys
import autograder.chapter as chapter
NOTEBOOKS_EXTRA = ("nbgrader", "nbconvert")  # pyproject's notebooks extra: the deploy modules that use it

def refuse(*args, **kwargs):
    raise RuntimeError("the chapter was read at import")

chapter.current, chapter.load = refuse, refuse
chapter.PROJECT_ROOT = chapter.PROJECT_ROOT / "no-such-chapter"  # a manifest read any other way fails too
import autograder
found = []
for info in pkgutil.walk_packages(autograder.__path__, "autograder."):
    if ".notebook_templates" in info.name or info.name.endswith("__main__"):
        continue
    try:
        importlib.import_module(info.name)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in NOTEBOOKS_EXTRA:  # not installed: nbgrader needs Python 3.11+
            found.append(f"{info.name}: {type(e).__name__}: {e}")
    except Exception as e:
        found.append(f"{info.name}: {type(e).__name__}: {e}")
print("\n".join(found) or "none")
print(len(sys.modules))
"""


def test_no_grader_module_reads_the_chapter_when_imported():
    done = subprocess.run([sys.executable, "-c", IMPORT_EVERY_MODULE], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    said, imported = done.stdout.rsplit("\n", 2)[:2]
    assert said == "none", said
    assert int(imported) > 100  # every module of the package was imported, not an empty walk


@pytest.fixture
def other_chapter(tmp_path):
    """A second chapter: another id, two of chapter 3's parts, a rubric of those parts only, its
    folders the repository's (absolute paths: the manifest's folders are relative to it)."""
    here = chapter.current()
    rubric = yaml.safe_load(here.rubric.read_text())
    rubric["parts"] = {part: rubric["parts"][part] for part in OTHER_PARTS}
    (tmp_path / "rubric.yml").write_text(yaml.safe_dump(rubric, sort_keys=False))
    manifest = {"id": "ch99", "title": "another chapter", "parts": list(OTHER_PARTS), "rubric": "rubric.yml",
                "folders": {name: str(here.folder(name)) for name in chapter.FOLDERS}}
    (tmp_path / "chapter.yml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return chapter.load(tmp_path / "chapter.yml")


@pytest.mark.quick
def test_an_engine_given_another_chapter_discovers_its_parts_and_grades_them(other_chapter, monkeypatch, tmp_path):
    engine = Engine(settings.Settings(seed=1), chapter=other_chapter)
    assert engine.rubric_path == other_chapter.rubric
    engine.load_rubric()
    assert tuple(engine.suites) == OTHER_PARTS == tuple(engine.rubric.parts)
    assert all(engine.suites[part] for part in OTHER_PARTS)  # each part's checks found, named in its rubric
    seen = {}

    def grade_submission(path, rubric, suites, sandbox, **kwargs):
        seen.update(kwargs)
        return "graded"

    monkeypatch.setattr(grading, "grade_submission", grade_submission)
    engine.start_sandbox(sandbox=object())
    assert engine.grade(tmp_path) == "graded" and seen["chapter"] is other_chapter
    worker = engine.for_worker(object(), 1)  # a batch's worker grades the same chapter
    assert worker.chapter is other_chapter and tuple(worker.suites) == OTHER_PARTS


def test_staging_looks_for_the_chapters_parts(other_chapter, tmp_path):
    staged = submission.stage(other_chapter.solutions, tmp_path / "staged", other_chapter.parts)
    assert staged.found == sorted(OTHER_PARTS)
    assert sorted(p.stem for p in staged.folder.glob("*.py")) == sorted(chapter.current().parts)  # copied whole
    empty = tmp_path / "empty"
    (empty / "x").mkdir(parents=True)
    (empty / "x" / "notes.txt").write_text("x")
    with pytest.raises(submission.SubmissionError, match=r"none of the chapter's modules \(simple_attention.py, "
                                                         r"causal.py\)"):
        submission.stage(empty, tmp_path / "staged2", other_chapter.parts)


def test_junit_names_the_graded_chapter():
    grade = grading.Grade("eve", chapter="ch99")
    grade.parts["causal"] = {"score": 0.0, "max_score": 0.0, "problem": "", "seconds": 0.0, "diagnosis": ""}
    root = ET.fromstring(reports.junit_xml(grade).encode("utf-8"))
    assert root.get("name") == "ch99"


@pytest.mark.quick
def test_the_command_line_resolves_the_chapter_once(other_chapter, tmp_path):
    from autograder import cli

    assert cli.chapter_of(argparse.Namespace()) == chapter.current()
    assert cli.chapter_of(argparse.Namespace(chapter=str(other_chapter.root / "chapter.yml"))) == other_chapter
    assert cli.chapter_of(argparse.Namespace(chapter=other_chapter)) is other_chapter
    assert cli.rubric_of(argparse.Namespace(chapter=other_chapter)) == str(other_chapter.rubric)
    (tmp_path / "bad.yml").write_text("id: x\n")
    with pytest.raises(cli.UsageError, match="needs 'id', 'parts' and 'folders'"):
        cli.chapter_of(argparse.Namespace(chapter=str(tmp_path / "bad.yml")))


def test_the_stubs_command_works_on_the_chapter_it_is_given(other_chapter, tmp_path, capsys):
    """`stubs --check --chapter FILE`: the other chapter's two modules and its released copy (whose id,
    ch99, differs from the committed ch03 copy: the one file out of date)."""
    from autograder import cli
    from autograder.authoring import stubs

    out = tmp_path / "assignment"
    stubs.generate(other_chapter.solutions, out, other_chapter)
    assert sorted(p.name for p in out.glob("*.py")) == sorted(f"{p}.py" for p in OTHER_PARTS)
    assert json.loads((out / chapter.RELEASED_COPY).read_text())["id"] == "ch99"
    assert cli.main(["stubs", "--check", "--chapter", str(other_chapter.root / "chapter.yml")]) == 1
    said = capsys.readouterr().out.splitlines()
    assert said[0] == f"out of date: {other_chapter.assignments / chapter.RELEASED_COPY}" and len(said) == 2


# --- what still followed this repository's chapter (issue 38.5): the stand-ins' reference, the book's
# snapshot, the selftest corpus and the nbgrader plugins take the chapter they are given -------------

@pytest.fixture
def copied_chapter(tmp_path):
    """A chapter with every part of chapter 3 whose reference solutions are a copy in a temporary folder,
    its causal.py marked (CH99 = True) and its simple_attention.attention_scores doubled, so whatever
    reads that chapter's reference can be told from what reads this repository's."""
    here = chapter.current()
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    for module in here.solutions.glob("*.py"):
        (solutions / module.name).write_text(module.read_text())
    with open(solutions / "causal.py", "a") as f:
        f.write("\nCH99 = True\n")
    with open(solutions / "simple_attention.py", "a") as f:
        f.write("\n_scores = attention_scores\n\n\ndef attention_scores(inputs):\n    return 2 * _scores(inputs)\n")
    folders = {name: str(here.folder(name)) for name in chapter.FOLDERS} | {"solutions": str(solutions)}
    manifest = {"id": "ch99", "title": "another chapter", "parts": list(here.parts), "rubric": str(here.rubric),
                "folders": folders}
    (tmp_path / "chapter.yml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return chapter.load(tmp_path / "chapter.yml")


def refuse_the_repositorys_chapter():
    raise AssertionError("read this repository's chapter instead of the one given")


@pytest.fixture
def no_default_chapter(monkeypatch):
    """chapter.current() refused: whatever still reads this repository's chapter fails."""
    monkeypatch.setattr(chapter, "current", refuse_the_repositorys_chapter)


def test_the_stand_ins_answer_with_the_reference_of_the_chapter_graded(copied_chapter, monkeypatch):
    """grading.grade_submission, given a chapter, has the stand-ins (and the suites' own reference,
    stand_ins.solutions()) load that chapter's solutions while it grades, and only then."""
    from autograder import runner, stand_ins

    seen = {}

    def run_submission(sandbox, staged, rubric, suites, fixtures, parts=None, key=None, figures=True):
        seen["mark"] = getattr(stand_ins.solutions()["causal"], "CH99", False)
        seen["given"] = stand_ins.allowed(["mha"])
        return {}

    monkeypatch.setattr(runner, "run_submission", run_submission)
    repositorys = chapter.current
    with monkeypatch.context() as refused:
        refused.setattr(chapter, "current", refuse_the_repositorys_chapter)
        grade = grading.grade_submission(copied_chapter.solutions, rubric=None, suites={}, sandbox=None, seed=1,
                                         chapter=copied_chapter)
    assert grade.chapter == "ch99" and seen["mark"] is True
    assert ("causal", "CausalAttention") in seen["given"]
    assert chapter.current is repositorys and not hasattr(stand_ins.solutions()["causal"], "CH99")  # after: ours


def test_the_book_snapshot_is_computed_from_the_chapter_given(copied_chapter, no_default_chapter, monkeypatch,
                                                              tmp_path):
    from autograder.suites import book

    monkeypatch.setattr(book, "SNAPSHOT", tmp_path / "book.json")
    assert book.main(["--refresh", "--chapter", str(copied_chapter.root / "chapter.yml")]) == 0
    written = json.loads((tmp_path / "book.json").read_text())
    ours = book.compute_from_solutions(ROOT / "solutions" / "ch03", copied_chapter.parts)
    doubled = [2 * x for row in ours["attn_scores"] for x in row]
    assert [x for row in written["attn_scores"] for x in row] == pytest.approx(doubled, abs=1e-5)
    assert written["mha_seed123"] == ours["mha_seed123"]  # the rest as the book prints it


def test_the_selftest_corpus_is_checked_and_applied_on_the_chapter_given(other_chapter, copied_chapter,
                                                                        no_default_chapter, tmp_path):
    from autograder import rubric as rubric_mod
    from autograder import selftest

    corpus = tmp_path / "mutants.yml"
    corpus.write_text("- id: doubled-mask\n  module: causal\n  find: 'CH99 = True'\n  replace: 'CH99 = 2'\n"
                      "  message: mask\n")
    with pytest.raises(selftest.CorpusError, match="unknown module 'causal'"):
        selftest.load(corpus, "mutant", ("simple_attention",))
    entry, = selftest.load(corpus, "mutant", other_chapter.parts)
    assert selftest.affected_parts(entry, copied_chapter.solutions, other_chapter.parts) == ["causal"]

    class Engine:  # what run_entry uses of an engine: its chapter, rubric and grade
        chapter = copied_chapter
        rubric = rubric_mod.load(other_chapter.rubric)

        def grade(self, folder, rubric, figures):
            self.graded = (sorted(rubric.parts), (Path(folder) / "causal.py").read_text())
            return grading.Grade("x", chapter="ch99")

    engine = Engine()
    selftest.run_entry(entry, engine)
    parts, causal = engine.graded
    assert parts == ["causal"] and causal.endswith("\nCH99 = 2\n")  # the copy's text, edited


def test_the_nbgrader_plugins_grade_the_chapter_of_their_setting(other_chapter, no_default_chapter, monkeypatch):
    pytest.importorskip("nbgrader", reason="nbgrader is not installed (pip install '.[notebooks]')")
    from autograder.deploy import nbgrader_plugins

    manifest = str(other_chapter.root / "chapter.yml")
    assert nbgrader_plugins.chapter_parts(manifest) == OTHER_PARTS
    said = "mha.py, line 3 calls causal.py, line 5"
    assert notebook_cells.in_notebook_words(said, other_chapter.parts) == \
        "mha.py, line 3 calls your solution cell 'causal', line 5"
    seen = {}

    class Engine:
        class rubric:  # stands for the engine's Rubric
            parts = {"causal": None}

        def grade(self, folder, parts, cells=None):
            return grading.Grade("x", chapter="ch99")

    def shared_engine(rubric_path=None, settings=None, chapter=None):
        seen["chapter"] = chapter
        return Engine()

    monkeypatch.setattr(nbgrader_plugins, "shared_engine", shared_engine)
    plugin = nbgrader_plugins.GradeInSandbox(chapter=manifest, require_isolation=False)
    plugin.where = "a notebook"
    _, graded = plugin._grade({}, ["causal"], {})
    assert graded == ["causal"] and seen["chapter"] == other_chapter


def test_an_error_names_a_file_of_the_chapter_graded(no_default_chapter):
    """A student's error names its file ("(in causal.py)") when the file is one of the graded chapter's
    modules: the runner gives the rubric's parts as files (SubmissionContext.files -> Student ->
    StudentError), and nothing reads this repository's chapter for it."""
    from autograder import runner
    from autograder.student import Student, StudentError

    files = frozenset(f"{part}.py" for part in OTHER_PARTS)
    assert StudentError("ValueError", "no", "causal.py, line 3", files=files).explain() == \
        "your code raised ValueError (in causal.py)"
    assert StudentError("ValueError", "no", "mha.py, line 3", files=files).explain() == "your code raised ValueError"
    student = Student(object(), files=files)
    error = student._error({"type": "KeyError", "message": "k", "where": "simple_attention.py, line 9"}, {})
    assert error.explain() == "your code raised KeyError (in simple_attention.py)"
    assert runner.SubmissionContext("folder", None, frozenset(), files=files).files == files
