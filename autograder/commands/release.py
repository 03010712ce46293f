"""python -m autograder release --out DIR [--notebooks FOLDER]

Builds the repository students get, in the new (or empty) folder DIR:

    README.md                      how to set up, test and get graded; links assignments/ch03/README.md
    pyproject.toml                 torch>=2.2,<3, numpy, pytest; pytest runs the public tests
    .gitignore
    .github/workflows/grade.yml    grades every pull request and push to main (see docs/ci-and-gradescope.md)
    assignments/ch03/              the stubs, the public tests and the student README, copied
    assignments/ch03/tests/grader_versions.json
                                   the versions the grader uses (Python, torch, NumPy: those of the
                                   environment this command runs in, the grader's); the public tests
                                   warn at the start when the student's differ
    notebooks/ch03/                the released notebooks, when there are any (optional, see below)

Notebooks are optional. They come from --notebooks FOLDER, else from release/ch03 (where
`nbgrader generate_assignment` / `release_assignment` put them), else from the notebooks tooling
(autograder.authoring.notebooks.release_notebooks(DEST)) when it exists; otherwise the release has none
and says so.

When grading.yml (--rubric) sets a Gradescope submission limit (`submissions`), the README says
what it is (gradescope_limits.student_text); the notebooks say it too (autograder.authoring.notebooks), and
each graded cell is worth its part's points. Notebooks generated here are made from that rubric;
notebooks built earlier (nbgrader's release folder, --notebooks) that state other points or another
limit are refused, naming each file and what differs (stale_notebooks): a rubric change never ships
old notebooks silently.

What never goes in: solutions, the grading package and its hidden suites, grading.yml. The
project's tests search the release for every line of the solution regions and of the suites.
"""
import importlib
import json
import platform
import shutil
from pathlib import Path

from autograder import PACKAGE_DIR, PROJECT_ROOT
from autograder.chapter import Chapter
from autograder.cli import UsageError, chapter_of

HELP = "build the student repository (stubs, public tests, notebooks, README, pyproject, grading workflow) in DIR"
TEMPLATES = PACKAGE_DIR / "templates" / "release"
SKIP = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints"}


class Places:
    """Where the release puts the chapter's files (its manifest's folders), relative to the release."""

    def __init__(self, chapter: Chapter) -> None:
        self.chapter = chapter
        self.assignment = Path(chapter.folders["assignments"])
        self.notebook_dest = Path("notebooks") / chapter.id
        self.released = chapter.folders["release"]  # nbgrader's released notebooks, when built
        self.versions_file = self.assignment / "tests" / "grader_versions.json"


def add_arguments(parser):
    parser.add_argument("--out", metavar="DIR", required=True, help="a new or empty folder")
    parser.add_argument("--notebooks", metavar="FOLDER", default=None,
                        help="student notebooks to include (default: the chapter's nbgrader release folder if it exists)")
    parser.add_argument("--rubric", metavar="FILE", default=None,
                        help="the grading.yml whose submission limit the README states (default: the chapter's)")


def run(args):
    at = Places(chapter_of(args))
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out}: exists and is not an empty folder (remove it or choose another --out)")
    source = PROJECT_ROOT / at.assignment
    if not (source / "README.md").is_file():
        raise UsageError(f"{source}: no student README.md (run `python -m autograder stubs` first?)")
    rubric_path = Path(args.rubric or at.chapter.rubric)
    _check_rubric(rubric_path)
    notebooks_from = _notebook_source(args.notebooks, at)
    if notebooks_from is not None:  # built earlier (nbgrader's release folder, --notebooks): refused when stale
        stale = stale_notebooks(notebooks_from, rubric_path)
        if stale:
            raise UsageError(f"{notebooks_from}: these notebooks do not state what {rubric_path} says, so they were "
                             "not released:\n  " + "\n  ".join(stale) + "\nregenerate them (`python -m autograder "
                             "notebooks`, then `nbgrader generate_assignment ch03 --force` for nbgrader's release "
                             "folder), or pass the rubric they were made with (--rubric)")
    out.mkdir(parents=True, exist_ok=True)

    _copy_tree(source, out / at.assignment)
    notebooks_note = _notebooks(args.notebooks, out / at.notebook_dest, at, rubric_path)
    readme = (TEMPLATES / "README.md").read_text(encoding="utf-8")
    readme = readme.replace("@NOTEBOOKS@\n", _notebooks_section(out / at.notebook_dest, at))
    readme = readme.replace("@SUBMISSIONS@\n", _submissions_section(rubric_path))
    (out / at.versions_file).write_text(json.dumps(grader_versions(), indent=1) + "\n", encoding="utf-8")
    (out / "README.md").write_text(readme, encoding="utf-8")
    shutil.copyfile(TEMPLATES / "pyproject.toml", out / "pyproject.toml")
    shutil.copyfile(TEMPLATES / "gitignore", out / ".gitignore")
    workflows = out / ".github" / "workflows"
    workflows.mkdir(parents=True)
    shutil.copyfile(TEMPLATES / "grade.yml", workflows / "grade.yml")

    count = sum(1 for p in out.rglob("*") if p.is_file())
    print(f"{out}: {count} files; {notebooks_note}")
    print("next: push it as the course's template repository; set AUTOGRADER_REPOSITORY and "
          "AUTOGRADER_DEPLOY_KEY (docs/ci-and-gradescope.md)")
    return 0


def grader_versions():
    """The versions the grader runs with (this environment's): Python, torch, NumPy."""
    import numpy
    import torch

    return {"python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__,
            "written_by": "python -m autograder release: the versions the course's autograder uses"}


def _submissions_section(rubric_path):
    from autograder import rubric
    from autograder.course import gradescope_limits

    try:
        limit = rubric.load(rubric_path).submissions
    except rubric.RubricError as e:
        raise UsageError(str(e)) from None
    return "" if limit is None else f"**Submission limit.** {gradescope_limits.student_text(limit)}\n\n"


def _check_rubric(rubric_path):
    from autograder import rubric

    try:
        rubric.load(rubric_path)
    except rubric.RubricError as e:
        raise UsageError(str(e)) from None


def _notebook_source(explicit, at):
    """The folder of notebooks built earlier that the release would copy (--notebooks, else nbgrader's
    release folder), or None (the notebooks are generated now from the rubric)."""
    if explicit:
        return Path(explicit)
    released = at.chapter.release
    return released if released.is_dir() and list(released.glob("*.ipynb")) else None


def stale_notebooks(folder, rubric_path):
    """What the notebooks of folder state that rubric_path does not: each graded cell's points (nbgrader's
    metadata) against its part's points, and the submission-limit cell of each graded notebook against
    the rubric's limit (or its absence) -> ["FILE: ...", ...]; [] when they agree."""
    from autograder.authoring import notebooks

    points = notebooks.part_points(rubric_path)
    limit = notebooks.submission_limit_cell(rubric_path)
    want_limit = "".join(limit["source"]) if limit else None
    found = []
    for path in sorted(Path(folder).glob("*.ipynb")):
        try:
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            found.append(f"{path.name}: cannot be read as a notebook ({type(e).__name__})")
            continue
        graded = False
        for cell in cells:
            meta = (cell.get("metadata") or {}).get("nbgrader") or {}
            graded = graded or bool(meta.get("solution"))
            grade_id = str(meta.get("grade_id", ""))
            if meta.get("grade") and grade_id.startswith(notebooks.SCORE_PREFIX):
                part = grade_id[len(notebooks.SCORE_PREFIX):]
                if part in points and float(meta.get("points", -1)) != float(points[part]):
                    found.append(f"{path.name}: {grade_id} is worth {meta.get('points')} point(s); the rubric gives "
                                 f"{part} {points[part]:g}")
        if not graded:
            continue
        said = ["".join(c["source"]) if isinstance(c.get("source"), list) else str(c.get("source", ""))
                for c in cells if c.get("id") == "submission_limit"]
        if want_limit is None and said:
            found.append(f"{path.name}: states a submission limit; the rubric sets none")
        elif want_limit is not None and said != [want_limit]:
            found.append(f"{path.name}: " + ("states no submission limit" if not said else
                                             "states another submission limit")
                         + f"; the rubric's: {rubric_limit_text(rubric_path)}")
    return found


def rubric_limit_text(rubric_path):
    from autograder import rubric

    limit = rubric.load(rubric_path).submissions
    return limit.describe() if limit else "none"


def _copy_tree(source, dest):
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns(*SKIP, "*.pyc"), symlinks=False)


def _notebooks(explicit, dest, at, rubric_path=None):
    """Copy or generate the student notebooks into dest (generated from rubric_path's points and
    submission limit); return a sentence saying what happened."""
    if explicit:
        folder = Path(explicit)
        if not folder.is_dir() or not list(folder.glob("*.ipynb")):
            raise UsageError(f"--notebooks {folder}: no .ipynb files there")
        return _copy_notebooks(folder, dest, at)
    released = at.chapter.release
    if released.is_dir() and list(released.glob("*.ipynb")):
        return _copy_notebooks(released, dest, at)
    try:
        notebooks = importlib.import_module("autograder.authoring.notebooks")
    except ImportError:
        notebooks = None
    generate = getattr(notebooks, "release_notebooks", None)
    if callable(generate):
        dest.mkdir(parents=True, exist_ok=True)
        generate(dest, rubric_path=rubric_path or at.chapter.rubric, chapter=at.chapter)
        made = sorted(p.name for p in dest.glob("*.ipynb"))
        if made:
            return f"{len(made)} notebook(s) generated by autograder.authoring.notebooks into {at.notebook_dest}"
        dest.rmdir()
    return f"no notebooks (none in {at.released}, no --notebooks, no notebooks tooling): modules only"


def _copy_notebooks(folder, dest, at):
    dest.mkdir(parents=True, exist_ok=True)
    names = []
    for notebook in sorted(folder.glob("*.ipynb")):
        shutil.copyfile(notebook, dest / notebook.name)
        names.append(notebook.name)
    from autograder.authoring.notebooks import support_files  # ch03_tools.py and bench_mha.py: the notebooks import them

    SUPPORT_FILES = support_files(at.chapter)

    for extra in sorted(p for p in folder.iterdir() if p.is_file() and (p.suffix in (".json", ".md", ".txt")
                                                                        or p.name in SUPPORT_FILES)):
        shutil.copyfile(extra, dest / extra.name)
    return f"{len(names)} notebook(s) from {folder} into {at.notebook_dest}"


def _notebooks_section(dest, at):
    if not dest.is_dir():
        return ""
    return (f"If you prefer notebooks, `{at.notebook_dest.as_posix()}/` holds the same exercises as notebooks; the\n"
            f"pull-request grading reads the modules in `{at.assignment.as_posix()}`, so copy your finished code\n"
            "there (or ask your instructor how notebooks are collected in your course). The notebooks\n"
            "need a Jupyter kernel and matplotlib (their pictures) besides the above:\n\n"
            "```bash\n"
            "pip install jupyterlab matplotlib   # jupyterlab brings the Python kernel (ipykernel)\n"
            f"jupyter lab {at.notebook_dest.as_posix()}\n"
            "```\n\n")
