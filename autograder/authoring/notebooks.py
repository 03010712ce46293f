"""The chapter as nbgrader notebooks, written: the source notebooks and the student release.
(Reading submitted notebooks, the solution cells back into modules: autograder.submitted_notebooks.)

Source notebooks (source/ch03/*.ipynb, nbgrader assignment id `ch03`) are made from two inputs:

* the templates in autograder/notebook_templates/ch03/*.txt: the story (markdown) and the test cells,
  in the small format described in `parse_template`;
* grading.yml: each module's graded cell is worth the points of its part there;
* the reference solutions solutions/ch03/<module>.py: each module's whole text becomes one solution
  cell whose nbgrader grade_id is the module name, markers included, so `nbgrader generate_assignment`
  (with `autograder.deploy.nbgrader_plugins.ClearSolutionsWithHints`, see nbgrader_config.py) turns it into
  the same stub as assignments/ch03/<module>.py.

Below each solution cell the generator puts a read-only cell `publish("<module>", [names])`; the
read-only setup cell defines `publish`, which registers the names the cell defined as a module in
sys.modules, so `from causal import CausalAttention` in the mha cell works inside the notebook as it
does between files. Outside a notebook nothing of that is needed: `extract_modules` reads the solution
cells by grade_id, without running anything, and writes <module>.py files that import each other by
plain name like the files in solutions/ch03.

Each module has read-only check cells (the public tests, for the student to run) and one graded
cell, `score_<module>`, worth the part's points in grading.yml. When a notebook is autograded
(autograder.deploy.nbgrader_plugins.GradeInSandbox) no cell runs: the module's code is graded by the hidden
suites in the sandbox and the score is written as that cell's output.

A template without solution cells makes a notebook with nothing graded: the speed lab (04_speed_lab),
whose editable cells the grader never reads. The read-only support files (support_files()) are written
beside the notebooks: ch03_tools.py, and a copy of benchmarks/bench_mha.py for the speed lab.
"""
import ast
import json
import re
from pathlib import Path

from autograder import chapter as chapter_mod
from autograder.authoring.stubs import solution_regions
from autograder.chapter import Chapter


def _chapter(chapter: Chapter | None) -> Chapter:
    """chapter, or this repository's (chapter.current(), read on call: nothing here reads it at import)."""
    return chapter or chapter_mod.current()


def support_name(chapter: Chapter | None = None) -> str:
    """The read-only module released beside the notebooks (their first cell imports it): ch03_tools.py."""
    return f"{_chapter(chapter).id}_tools.py"


def bench_path(chapter: Chapter | None = None) -> Path:
    """The speed lab's timing code, released as a copy beside the notebooks."""
    return _chapter(chapter).root / "benchmarks" / "bench_mha.py"


def support_files(chapter: Chapter | None = None) -> tuple[str, str]:
    """The file names of the read-only modules written beside the notebooks."""
    return (support_name(chapter), bench_path(chapter).name)


def speed_figures_path(chapter: Chapter | None = None) -> Path:
    """The one dated set of speed-lab figures."""
    return _chapter(chapter).root / "benchmarks" / "speed_lab_figures.json"


def diagnose_path(chapter: Chapter | None = None) -> Path:
    """The public tests' diagnoses (assignments/<id>/tests/_diagnose.py)."""
    return _chapter(chapter).assignments / "tests" / "_diagnose.py"


def _diagnose_name(chapter: Chapter) -> str:  # as the template and the comments name it
    return f"{chapter.folders['assignments']}/tests/_diagnose.py"


def _diagnose_placeholder(chapter: Chapter) -> str:
    return f'DIAGNOSES = "the public tests\' diagnoses ({_diagnose_name(chapter)}) are written here"'


SPEED_PLACEHOLDER = "@SPEED_LAB_FIGURES@"  # a markdown cell's line the generator replaces with them
SPEED_LABELS = {"wrapper": "wrapper (3.6.1, a loop over heads)", "efficient": "efficient MultiHeadAttention (3.6.2)",
                "combined_qkv": "combined QKV", "sdpa": "`scaled_dot_product_attention`",
                "nn_mha": "`nn.MultiheadAttention`"}
BOOK_PLACEHOLDER = "BOOK = {}  # the generator writes the book's values here"
PARTS_PLACEHOLDER = "CHAPTER_MODULES = ()  # the generator writes the chapter's parts (chapter.yml) here"

NBGRADER_SCHEMA = 3
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
HEADER = re.compile(r"^%% (?P<kind>\w+) (?P<id>[A-Za-z0-9_-]+)(?P<options>( \w+=\S+)*)\s*$")
KINDS = ("markdown", "setup", "solution", "check", "show", "editable", "score")
SCORE_PREFIX = "score_"  # the graded cell of module M has the grade_id score_M


# --- templates -> notebooks ---------------------------------------------------------------------

def parse_template(text, filename="<template>"):
    """The cells of a notebook template, as dicts with kind, id, options (dict), body and line.

    A template is a sequence of cells, each opened by a header line at column 0:

        %% markdown <id>                 read-only markdown, the body is the text
        %% setup <id>                    the read-only first code cell, `from ch03_tools import *` (the
                                         module beside the notebooks, see support_text); the body lists
                                         the book values the notebook uses, separated by white space
        %% solution <module>             the solution cell of solutions/ch03/<module>.py (empty body),
                                         followed by a read-only publish cell
        %% check <id>                    a read-only test cell the student runs (not graded); the body
                                         is its code
        %% show <id>                     a read-only cell that prints and draws what the student's code
                                         computes (not a test: the graded cell does not rerun it)
        %% editable <id>                 a plain code cell (no nbgrader metadata) the student may change,
                                         never graded nor read by the grader, unknown to nbgrader's
                                         gradebook (the speed lab's settings and its stretch exercise)
        %% score <module>                the graded cell of the module (grade_id score_<module>), locked,
                                         worth the part's points in grading.yml; the body may hold a
                                         ### BEGIN HIDDEN TESTS / ### END HIDDEN TESTS region

    Blank lines around a body are dropped. Any other line starting with '%%' is a ValueError naming
    filename and line, as are text before the first header, a repeated id or any option.
    """
    cells: list[dict] = []
    current: dict | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("%%"):
            match = HEADER.match(line)
            if not match or match["kind"] not in KINDS:
                raise ValueError(f"{filename}, line {number}: not a cell header: {line!r} "
                                 f"(expected '%% <{'|'.join(KINDS)}> <id> [key=value ...]')")
            options = dict(option.split("=", 1) for option in match["options"].split())
            allowed: set[str] = set()
            if set(options) != allowed:
                raise ValueError(f"{filename}, line {number}: a {match['kind']} cell takes "
                                 f"{sorted(allowed) or 'no options'}, got {sorted(options)}")
            if any(_cell_id(cell["kind"], cell["id"]) == _cell_id(match["kind"], match["id"]) for cell in cells):
                raise ValueError(f"{filename}, line {number}: cell id {_cell_id(match['kind'], match['id'])!r} used twice")
            current = {"kind": match["kind"], "id": match["id"], "options": options, "lines": [], "line": number}
            cells.append(current)
        elif current is None:
            if line.strip():
                raise ValueError(f"{filename}, line {number}: text before the first '%%' cell header")
        else:
            current["lines"].append(line)
    for cell in cells:
        cell["body"] = "\n".join(cell.pop("lines")).strip("\n")
    return cells


def _cell_id(kind, template_id):
    """The notebook cell id (and nbgrader grade_id) of a template cell."""
    return SCORE_PREFIX + template_id if kind == "score" else template_id


def _top_level_names(source, filename):
    """Names a module defines at top level (functions and classes), in order."""
    return [node.name for node in ast.parse(source, filename).body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def _nbgrader(grade_id, *, solution=False, grade=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked,
            "schema_version": NBGRADER_SCHEMA, "solution": solution, "task": False}
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


def _markdown(cell_id, text):
    return {"cell_type": "markdown", "id": cell_id, "metadata": _nbgrader(cell_id, locked=True), "source": text}


def _code(cell_id, text, metadata):
    return {"cell_type": "code", "execution_count": None, "id": cell_id, "metadata": metadata,
            "outputs": [], "source": text}


def _module_text(path):
    """A module file's text as a cell holds it: without its final newline (Jupyter's convention)."""
    text = path.read_text()
    return text[:-1] if text.endswith("\n") else text


SETUP_CODE = ("# Read-only: the book's values, the test helpers and the drawing helpers live in ch03_tools.py,\n"
              "# beside this notebook. Run this cell first (Kernel > Restart & Run All runs everything in order).\n"
              "import numpy as np\n"
              "import torch\n"
              "\n"
              "from ch03_tools import *  # noqa: F401,F403")


def book_values(book_path=None, chapter=None):
    """{name: value} of every book value of book_examples.json, 'inputs' first."""
    book_path = _chapter(chapter).book_examples if book_path is None else book_path
    raw = json.loads(Path(book_path).read_text())
    return {"inputs": raw["inputs"], **{name: entry["value"] for name, entry in raw["values"].items()}}


def setup_source(keys, book_path=None, chapter=None):
    """The first code cell: an import of the support module, after checking it holds the values in keys."""
    book_path = _chapter(chapter).book_examples if book_path is None else book_path
    missing = [key for key in keys if key not in book_values(book_path)]
    if missing:
        raise ValueError(f"{book_path}: no book value named {', '.join(missing)}")
    return SETUP_CODE


def support_text(book_path=None, template_path=None, chapter=None):
    """The text of ch03_tools.py: the template with BOOK holding every book value and the public diagnoses."""
    at = _chapter(chapter)
    book_path = at.book_examples if book_path is None else book_path
    template_path = at.notebook_templates / support_name(at) if template_path is None else template_path
    DIAGNOSE_PLACEHOLDER = _diagnose_placeholder(at)
    values = book_values(book_path)
    lines = [f"BOOK = {{  # what the book prints, to 4 decimals (from {at.folders['assignments']}/tests/book_examples.json)"]
    lines += [f"    {json.dumps(key)}: {json.dumps(value)}," for key, value in values.items()]
    lines.append("}")
    template = Path(template_path).read_text()
    if template.count(BOOK_PLACEHOLDER) != 1:
        raise ValueError(f"{template_path}: expected the line {BOOK_PLACEHOLDER!r} exactly once")
    if template.count(DIAGNOSE_PLACEHOLDER) != 1:
        raise ValueError(f"{template_path}: expected the line {DIAGNOSE_PLACEHOLDER!r} exactly once")
    if template.count(PARTS_PLACEHOLDER) != 1:
        raise ValueError(f"{template_path}: expected the line {PARTS_PLACEHOLDER!r} exactly once")
    template = template.replace(DIAGNOSE_PLACEHOLDER, diagnose_code(chapter=chapter)).replace(
        PARTS_PLACEHOLDER, parts_code(at.parts))
    header = (f"# Generated by `python -m autograder notebooks` from {at.folders['notebook_templates']}/{support_name(at)}:\n"
              f"# do not edit (read-only; grading never reads it).\n")
    return header + template.replace(BOOK_PLACEHOLDER, "\n".join(lines))


def parts_code(parts=None):
    """CHAPTER_MODULES of the support module: the chapter's parts (its manifest's copy), four a line."""
    parts = _chapter(None).parts if parts is None else parts
    rows = [", ".join(json.dumps(p) for p in parts[i:i + 4]) for i in range(0, len(parts), 4)]
    return "CHAPTER_MODULES = (" + ",\n                   ".join(rows) + ("," if len(parts) == 1 else "") + ")"


def bench_text(path=None):
    """The copy of benchmarks/bench_mha.py released beside the notebooks (the speed lab imports it)."""
    path = bench_path() if path is None else path
    return (f"# A copy of benchmarks/{Path(path).name}, made by `python -m autograder notebooks`: do not edit.\n"
            f"# The speed-lab notebook imports it; grading never reads it.\n" + Path(path).read_text())


def support_texts(book_path=None, chapter=None):
    """{file name: text} of the read-only modules written beside the notebooks (support_files())."""
    bench = bench_path(chapter)
    return {support_name(chapter): support_text(book_path, chapter=chapter), bench.name: bench_text(bench)}


def diagnose_code(path=None, chapter=None):
    """The code of the public tests' diagnoses, for the setup cell: _diagnose.py after its docstring and imports."""
    at = _chapter(chapter)
    path = diagnose_path(at) if path is None else path
    source = Path(path).read_text()
    body = [node for node in ast.parse(source, str(path)).body
            if not isinstance(node, (ast.Import, ast.ImportFrom))
            and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    start = min([body[0].lineno] + [d.lineno for d in getattr(body[0], "decorator_list", [])]) - 1
    header = f"# The diagnoses of the public tests ({_diagnose_name(at)}): which common mistake\n" \
             "# a wrong output matches.\n"
    return header + "".join(source.splitlines(keepends=True)[start:]).rstrip("\n")


def speed_lab_figures(path=None):
    """The measured speed-lab figures as Markdown (README and the speed-lab notebook show this text): per
    device, where, when and how they were measured, then forward / forward+backward in ms and x SDPA."""
    path = speed_figures_path() if path is None else path
    try:
        measured = json.loads(Path(path).read_text())
        blocks = []
        for device, run in measured.items():
            sdpa = run["ms"]["sdpa"]
            lines = [f"{device.upper()}, measured {run['date']} on {run['machine']} (`{run['command']}`: "
                     f"{run['shapes']}, {run['runs']}), in ms:", "",
                     "| implementation | forward | x SDPA | fwd+bwd | x SDPA |", "| --- | ---: | ---: | ---: | ---: |"]
            places = max(len(f"{ms:g}".partition(".")[2]) for pair in run["ms"].values() for ms in pair)
            lines += [f"| {SPEED_LABELS[name]} | {fwd:.{places}f} | {fwd / sdpa[0]:.2f} | {both:.{places}f} | "
                      f"{both / sdpa[1]:.2f} |" for name, (fwd, both) in run["ms"].items()]
            blocks.append("\n".join(lines))
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as e:
        raise ValueError(f"{path}: not a table of speed-lab figures ({type(e).__name__}: {e})") from None
    return "\n\n".join(blocks)


def part_points(rubric_path=None):
    """{part: max score} from grading.yml (points only: the suites are not needed to read them)."""
    from autograder import rubric

    rubric_path = _chapter(None).rubric if rubric_path is None else rubric_path

    loaded = rubric.load(rubric_path)
    return {name: part.max_score for name, part in loaded.parts.items()}


def submission_limit_cell(rubric_path=None):
    """A read-only Markdown cell telling students grading.yml's Gradescope submission limit, or None
    when it sets none (gradescope_limits.student_text: the release README says the same)."""
    from autograder import rubric
    from autograder.course import gradescope_limits

    limit = rubric.load(_chapter(None).rubric if rubric_path is None else rubric_path).submissions
    if limit is None:
        return None
    return _markdown("submission_limit", f"**Submissions.** {gradescope_limits.student_text(limit)}")


def with_limit(notebook, limit):
    """The notebook with the submission-limit cell (submission_limit_cell) right under its title when it
    is graded (has a solution cell) and there is a limit; otherwise the notebook as it is."""
    if limit and any(cell["metadata"].get("nbgrader", {}).get("solution") for cell in notebook["cells"]):
        return dict(notebook, cells=[notebook["cells"][0], limit, *notebook["cells"][1:]])
    return notebook


def _points_value(points):
    return int(points) if float(points).is_integer() else float(points)


def build_notebook(template_path, solutions_dir=None, book_path=None, rubric_path=None, points=None, chapter=None):
    """The source notebook (a JSON-ready dict) described by the template at template_path.

    points ({part: max score}) defaults to what grading.yml at rubric_path gives each part.
    chapter: whose folders the defaults are (None: this repository's).
    """
    at = _chapter(chapter)
    solutions_dir = at.solutions if solutions_dir is None else solutions_dir
    book_path = at.book_examples if book_path is None else book_path
    rubric_path = at.rubric if rubric_path is None else rubric_path
    MODULES = list(at.parts)
    template_path = Path(template_path)
    points = part_points(rubric_path) if points is None else points
    cells = []
    solved = []
    checks: list[tuple[str, str]] = []  # the bodies of the check cells since the last solution cell
    for spec in parse_template(template_path.read_text(), str(template_path)):
        kind, cell_id, body = spec["kind"], spec["id"], spec["body"]
        where = f"{template_path}, line {spec['line']}"
        if kind == "markdown":
            if SPEED_PLACEHOLDER in body:
                body = body.replace(SPEED_PLACEHOLDER, speed_lab_figures(speed_figures_path(at)))
            cells.append(_markdown(cell_id, body))
        elif kind == "setup":
            cells.append(_code(cell_id, setup_source(body.split(), book_path), _nbgrader(cell_id, locked=True)))
        elif kind == "solution":
            if cell_id not in MODULES:
                raise ValueError(f"{where}: {cell_id!r} is not one of the chapter's modules {MODULES}")
            if body:
                raise ValueError(f"{where}: a solution cell's code comes from {at.folders['solutions']}; "
                                 f"leave its body empty")
            path = Path(solutions_dir) / f"{cell_id}.py"
            source = _module_text(path)
            if not solution_regions(source, str(path)):
                raise ValueError(f"{path}: no ### BEGIN SOLUTION region; the whole module would be released")
            cells.append(_code(cell_id, source, _nbgrader(cell_id, solution=True)))
            solved.append(cell_id)
            checks = []
            names = ", ".join(json.dumps(name) for name in _top_level_names(source, str(path)))
            publish_id = f"publish_{cell_id}"
            cells.append(_code(publish_id, f"publish({json.dumps(cell_id)}, [{names}])",
                               _nbgrader(publish_id, locked=True)))
        elif kind in ("show", "editable"):
            if "BEGIN HIDDEN TESTS" in body or "SOLUTION" in body:
                raise ValueError(f"{where}: {kind} cells are visible and not graded: no hidden tests or solution region")
            # an editable cell is a plain cell: nbgrader neither records nor checks it (with nbgrader
            # metadata but neither locked nor graded, the gradebook would not know its grade_id and
            # autograde would warn about a cell the student may change at will)
            cells.append(_code(cell_id, body, _nbgrader(cell_id, locked=True) if kind == "show" else {}))
        elif kind == "check":
            if "BEGIN HIDDEN TESTS" in body or "SOLUTION" in body:
                raise ValueError(f"{where}: a check cell is read-only and visible: no hidden tests or solution region")
            cells.append(_code(cell_id, body, _nbgrader(cell_id, locked=True)))
            checks.append((body, where))
        elif kind == "score":
            if cell_id not in solved:
                raise ValueError(f"{where}: the score cell of {cell_id!r} must follow that module's solution cell")
            if cell_id not in points or not points[cell_id] > 0:
                raise ValueError(f"{where}: grading.yml gives part {cell_id!r} no points")
            if "BEGIN SOLUTION" in body or "END SOLUTION" in body:
                raise ValueError(f"{where}: a score cell must not hold a solution region")
            grade_id = SCORE_PREFIX + cell_id
            body = with_reruns(body, checks, where)
            cells.append(_code(grade_id, body, _nbgrader(grade_id, grade=True, locked=True,
                                                           points=_points_value(points[cell_id]))))
    ids = [cell["id"] for cell in cells]
    repeated = sorted({cell_id for cell_id in ids if ids.count(cell_id) > 1})
    if repeated:
        raise ValueError(f"{template_path}: cell ids used twice: {', '.join(repeated)}")
    unscored = [module for module in solved if SCORE_PREFIX + module not in ids]
    if unscored:
        raise ValueError(f"{template_path}: no '%% score' cell for {', '.join(unscored)}")
    return {
        "cells": cells,
        "metadata": {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def rerun_calls(checks):
    """The statements of check cells that run their tests (everything but the defs and imports), in order."""
    calls = []
    for body, where in checks:
        for node in ast.parse(body, where).body:
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
                calls.append(ast.get_source_segment(body, node))
    return calls


def with_reruns(body, checks, where):
    """A score cell's body with the module's test calls after its leading comment lines.

    The graded cell is what nbgrader's Validate judges: rerunning the test cells there makes it fail
    until they pass (on the stubs they raise NotImplementedError), and pass once they do.
    """
    calls = rerun_calls(checks)
    if not calls:
        raise ValueError(f"{where}: no check cell before this score cell runs a test; Validate would pass the stub")
    lines = body.split("\n")
    comments = 0
    while comments < len(lines) and lines[comments].startswith("#") and "HIDDEN TESTS" not in lines[comments]:
        comments += 1
    return "\n".join(lines[:comments] + calls + lines[comments:])


def dumps(notebook):
    """The notebook as nbformat writes it: sources split into lines, keys sorted, indent 1."""
    def split(cell):
        cell = dict(cell)
        cell["source"] = cell["source"].splitlines(keepends=True)
        return cell

    notebook = dict(notebook, cells=[split(cell) for cell in notebook["cells"]])
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def templates(templates_dir=None):
    templates_dir = _chapter(None).notebook_templates if templates_dir is None else templates_dir
    return sorted(Path(templates_dir).glob("*.txt"))


def notebook_texts(solutions_dir=None, templates_dir=None, book_path=None, rubric_path=None, chapter=None):
    """{notebook file name: JSON text} for every template, checking each module appears exactly once."""
    at = _chapter(chapter)
    solutions_dir = at.solutions if solutions_dir is None else solutions_dir
    templates_dir = at.notebook_templates if templates_dir is None else templates_dir
    book_path = at.book_examples if book_path is None else book_path
    rubric_path = at.rubric if rubric_path is None else rubric_path
    texts: dict = {}
    seen: dict = {}
    points = part_points(rubric_path)
    limit = submission_limit_cell(rubric_path)
    for template in templates(templates_dir):
        notebook = build_notebook(template, solutions_dir, book_path, points=points, chapter=chapter)
        notebook = with_limit(notebook, limit)
        for cell in notebook["cells"]:
            if cell["metadata"].get("nbgrader", {}).get("solution"):
                if cell["id"] in seen:
                    raise ValueError(f"{template}: module {cell['id']} already has a solution cell in {seen[cell['id']]}")
                seen[cell["id"]] = template.name
        texts[template.stem + ".ipynb"] = dumps(notebook)
    missing = [name for name in at.parts if name not in seen]
    if missing:
        raise ValueError(f"{templates_dir}: no template has a solution cell for {', '.join(missing)}")
    return texts


def generate(out_dir=None, **inputs):
    """Write the source notebooks into out_dir, remove stale .ipynb files there; return the paths written.
    inputs: notebook_texts's (chapter among them)."""
    out_dir = Path(_chapter(inputs.get("chapter")).source if out_dir is None else out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    texts = notebook_texts(**inputs)
    for stale in out_dir.glob("*.ipynb"):
        if stale.name not in texts:
            stale.unlink()
    texts.update(support_texts(inputs.get("book_path"), chapter=inputs.get("chapter")))
    written = []
    for filename, text in texts.items():
        path = out_dir / filename
        path.write_text(text)
        written.append(path)
    return written


def drifted(out_dir=None, **inputs):
    """Notebook file names in out_dir that are missing, differ from what the generator makes, or are extra."""
    out_dir = Path(_chapter(inputs.get("chapter")).source if out_dir is None else out_dir)
    texts = notebook_texts(**inputs)
    texts.update(support_texts(inputs.get("book_path"), chapter=inputs.get("chapter")))
    changed = [name for name, text in texts.items()
               if not (out_dir / name).is_file() or (out_dir / name).read_text() != text]
    extra = sorted(path.name for path in out_dir.glob("*.ipynb") if path.name not in texts)
    return changed + extra


# --- notebooks -> modules -----------------------------------------------------------------------

HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
HIDDEN_END = "### END HIDDEN TESTS"


def _without_hidden_tests(source, where):
    kept, hidden_from = [], None
    for number, line in enumerate(source.split("\n"), start=1):
        if line.strip() == HIDDEN_BEGIN:
            if hidden_from is not None:
                raise ValueError(f"{where}, line {number}: BEGIN HIDDEN TESTS inside a hidden region")
            hidden_from = number
        elif line.strip() == HIDDEN_END:
            if hidden_from is None:
                raise ValueError(f"{where}, line {number}: END HIDDEN TESTS without a BEGIN")
            hidden_from = None
        elif "HIDDEN TESTS" in line:
            raise ValueError(f"{where}, line {number}: looks like a hidden-tests marker but is not exactly one")
        elif hidden_from is None:
            kept.append(line)
    if hidden_from is not None:
        raise ValueError(f"{where}, line {hidden_from}: BEGIN HIDDEN TESTS is never closed")
    return "\n".join(kept)


def student_notebook(notebook):
    """The student version of a source notebook dict, made without nbgrader.

    Solution cells of the chapter's modules become the stubs of autograder.authoring.stubs (as
    ClearSolutionsWithHints makes them), hidden test regions are removed, and read-only and test
    cells are marked non-editable and non-deletable, as nbgrader's LockCells does. The nbgrader
    metadata stays, so extract_modules reads the student's work by grade_id; there are no nbgrader
    checksums, so for grading with `nbgrader autograde` release through `nbgrader generate_assignment`.
    """
    from autograder.authoring.stubs import make_stub

    cells = []
    for index, cell in enumerate(notebook["cells"]):
        cell = json.loads(json.dumps(cell))
        meta = cell["metadata"].get("nbgrader")
        if meta is None:  # a plain cell (the speed lab's editable ones): the student's to change
            cells.append(cell)
            continue
        where = f"cell {index} ({meta['grade_id']})"
        if meta["solution"]:
            source = cell["source"] + "\n"
            if not solution_regions(source, where):
                raise ValueError(f"{where}: solution cell without a ### BEGIN SOLUTION region")
            cell["source"] = make_stub(source, meta["grade_id"], where)[:-1]
            cell["metadata"]["deletable"] = False
        else:
            cell["source"] = _without_hidden_tests(cell["source"], where)
            if meta["locked"] or meta["grade"]:
                cell["metadata"].update(deletable=False, editable=False)
        cells.append(cell)
    return dict(notebook, cells=cells)


def release_notebooks(dest, solutions_dir=None, templates_dir=None, book_path=None, rubric_path=None, chapter=None):
    """Write the student notebooks into dest (no nbgrader needed); return the paths written.

    Used by `python -m autograder release` when there is no nbgrader release folder. The support
    modules (support_files(): ch03_tools.py, which the notebooks' first cell imports, and the speed lab's
    bench_mha.py) are written beside them (not listed).
    """
    at = _chapter(chapter)
    solutions_dir = at.solutions if solutions_dir is None else solutions_dir
    templates_dir = at.notebook_templates if templates_dir is None else templates_dir
    book_path = at.book_examples if book_path is None else book_path
    rubric_path = at.rubric if rubric_path is None else rubric_path
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    notebook_texts(solutions_dir, templates_dir, book_path, rubric_path, chapter=chapter)  # checks every module has exactly one cell
    points = part_points(rubric_path)
    limit = submission_limit_cell(rubric_path)  # as in the source notebooks: graded ones state the limit
    written = []
    for template in templates(templates_dir):
        path = dest / (template.stem + ".ipynb")
        notebook = with_limit(build_notebook(template, solutions_dir, book_path, points=points, chapter=chapter), limit)
        path.write_text(dumps(student_notebook(notebook)))
        written.append(path)
    for name, text in support_texts(book_path, chapter=chapter).items():
        (dest / name).write_text(text)
    return written
