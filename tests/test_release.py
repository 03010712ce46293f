"""`python -m autograder release`: what students get, and proof that nothing hidden is in it.

The leak test searches the release for
- every significant line inside a `### BEGIN SOLUTION` / `### END SOLUTION` region of solutions/ch03,
- every significant line of every file under autograder/suites (checks, helpers, snapshots) and of
  autograder/stand_ins.py and autograder/source_reading.py (the suites' helpers beside them),
- every significant line inside a `### BEGIN HIDDEN TESTS` region of the notebook templates
  (autograder/notebook_templates: the notebooks' hidden test cells) that the course does not
  also publish in a visible cell or a public test (see hidden_test_lines),
- every number with 5 or more decimals in the suites' JSON snapshots (the hidden expected values;
  the public tests carry the book's values to 4 decimals),
- the name of every check that grading.yml does not make visible,
and fails on any hit. Notebooks are searched by their decoded cell text, not only their JSON.

A line is NOT significant (and so not searched for) when, after stripping:
- it has fewer than 12 non-whitespace characters (blank, `return out`, `)`, `else:`, ...);
- it has at most 2 words and numbers (`return module`, `raise AssertionError(`): no content;
- it is an import statement (`import x`, `from x import y`): it names public modules only;
- it matches one of PUBLIC_LINES below, each with its reason;
- it is nothing but a string naming a book example exactly as the public book_examples.json
  describes it (its "how"), e.g. "torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0)(batch)".
When a new suite line coincides with public text, either reword it or add it to PUBLIC_LINES
with the reason it is public, rather than widening the rules above.
"""
import ast
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from in_process import run_plain
from toml_reader import tomllib

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "ch03"
SUITES = ROOT / "autograder" / "suites"
SUITES_BESIDE = ("stand_ins.py", "source_reading.py")  # the suites' grader-side helpers beside them (issue 38.5)
NOTEBOOK_TEMPLATES = ROOT / "autograder" / "notebook_templates"
TRIVIAL_BELOW = 12  # non-whitespace characters
WORDS = re.compile(r"[A-Za-z_]\w*|\d+")
IMPORT = re.compile(r"^(import\s+[\w.]+(\s+as\s+\w+)?(\s*,\s*[\w.]+(\s+as\s+\w+)?)*|from\s+[\w.]+\s+import\s+.+)$")
PUBLIC_LINES = [
    # pytest boilerplate: one marker per module, the same in public and hidden tests
    (re.compile(r"^pytestmark = pytest\.mark\.\w+$"), "a pytest marker named after a module"),
    # the list of the chapter's module names (the public contract)
    (re.compile(r'^(\[?\s*"\w+",?\s*)+\]?,?$'), "a list of module names"),
    # code printed in the book itself (section 3.6.1), used by both the public and the hidden tests
    (re.compile(r"^batch = torch\.stack\(\(inputs, inputs\)\)$"), "the book's own example code"),
    # the per-head width, stated in the MultiHeadAttention stub's docstring (book 3.6.2)
    (re.compile(r"^head_dim = d_out // num_heads$"), "stated in the public docstring of mha.py"),
    # a copy of an input before perturbing it: generic, also in the public causal tests
    (re.compile(r"^changed = x\.clone\(\)$"), "generic input copy, also in a public test"),
    # Python boilerplate in the speed lab's released bench_mha.py (also in the suites and solutions)
    (re.compile(r'^if __name__ == "__main__":$'), "the script guard of any Python file"),
    (re.compile(r"^sys\.path\.insert\(0, str\(folder\)\)$"), "an import path set up for a folder"),
    # named in the Exercise 3.1 text of notebook 01 ("without recording the copy in autograd")
    (re.compile(r"^with torch\.no_grad\(\):$"), "told to students in Exercise 3.1, used by bench_mha.py"),
    # the book's example sentence as tokens (figures label their heatmaps with it, as the notebooks do)
    (re.compile(r'^TOKENS = \("Your", "journey", "starts", "with", "one", "step"\)$'), "the book's own sentence"),
]
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def significant(line):
    text = line.strip()
    if len("".join(text.split())) < TRIVIAL_BELOW or len(WORDS.findall(text)) <= 2:
        return False
    if IMPORT.match(text) or _public_book_description(text):
        return False
    return not any(pattern.match(text) for pattern, _ in PUBLIC_LINES)


@functools.lru_cache(maxsize=1)
def _book_descriptions():
    examples = json.loads((ROOT / "assignments" / "ch03" / "tests" / "book_examples.json").read_text())
    return frozenset(v["how"] for v in examples.get("values", {}).values() if isinstance(v, dict) and "how" in v)


def _public_book_description(text):
    try:
        value = ast.literal_eval(text.rstrip(",)").strip())
    except (ValueError, SyntaxError):
        return False
    return isinstance(value, str) and value in _book_descriptions()


def region_lines(paths, begin, end):
    """(where, line) for each significant line between a `begin` and an `end` marker line."""
    found = []
    for path in paths:
        inside = False
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            marker = line.strip()
            if marker == begin:
                inside = True
            elif marker == end:
                inside = False
            elif inside and significant(line):
                found.append((f"{path.relative_to(ROOT)}:{number}", line.strip()))
    return found


def solution_lines():
    return region_lines(sorted(SOLUTIONS.glob("*.py")), BEGIN, END)


def hidden_test_lines():
    """The hidden test regions of the notebook templates (none if there are no templates).

    A hidden test often repeats a set-up line of a visible test (`torch.manual_seed(123)`, the
    layer it builds). A line that the templates also write outside any hidden region, or that the
    public tests contain, is published by the course on purpose and is not searched for: this
    search is for hidden regions that the release failed to strip.
    """
    templates = sorted(NOTEBOOK_TEMPLATES.rglob("*.txt"))
    published = set()
    for path in templates:
        inside = False
        for line in path.read_text(encoding="utf-8").splitlines():
            inside = (inside or line.strip() == HIDDEN_BEGIN) and line.strip() != HIDDEN_END
            if not inside:
                published.add(line.strip())
    for path in sorted((ROOT / "assignments" / "ch03" / "tests").glob("*.py")):
        published.update(line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [(where, line) for where, line in region_lines(templates, HIDDEN_BEGIN, HIDDEN_END)
            if line not in published]


def suite_files():
    return sorted([p for p in SUITES.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]
                  + [ROOT / "autograder" / name for name in SUITES_BESIDE])


def suite_lines():
    found = []
    for path in suite_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if significant(line):
                found.append((f"{path.relative_to(ROOT)}:{number}", line.strip()))
    return found


def hidden_values():
    found = []
    for path in suite_files():
        if path.suffix == ".json":
            for value in sorted(set(re.findall(r"-?\d+\.\d{5,}", path.read_text(encoding="utf-8")))):
                found.append((str(path.relative_to(ROOT)), value))
    return found


def hidden_check_names():
    """Names of checks grading.yml does not make visible (own reading: independent of rubric.py)."""
    rubric = yaml.safe_load((ROOT / "grading.yml").read_text(encoding="utf-8"))
    default = (rubric.get("defaults") or {}).get("visibility", "visible")
    names = []
    for part, spec in rubric["parts"].items():
        part_default = spec.get("visibility", default)
        for check, value in (spec.get("checks") or {}).items():
            visibility = value.get("visibility", part_default) if isinstance(value, dict) else part_default
            if visibility != "visible":
                names.append((f"grading.yml {part}", check))
    return names


def release_text(folder):
    """All text of the release: every file as text, plus the decoded cells of every notebook."""
    chunks = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        raw = path.read_bytes().decode("utf-8", "replace")
        chunks.append(raw)
        if path.suffix == ".ipynb":
            notebook = json.loads(raw)
            for cell in notebook.get("cells", []):
                chunks.append(_joined(cell.get("source", "")))
                for output in cell.get("outputs", []):
                    chunks.append(_joined(output.get("text", "")))
                    for value in (output.get("data") or {}).values():
                        chunks.append(_joined(value))
    return "\n".join(chunks)


def _joined(value):
    return "".join(value) if isinstance(value, list) else str(value)


def leaks(folder):
    text = release_text(folder)
    hits = [f"solution line {where}: {line}" for where, line in solution_lines() if line in text]
    hits += [f"suite line {where}: {line}" for where, line in suite_lines() if line in text]
    hits += [f"hidden notebook test {where}: {line}" for where, line in hidden_test_lines() if line in text]
    hits += [f"hidden value {value} from {where}" for where, value in hidden_values() if value in text]
    hits += [f"hidden check name {name} ({where})" for where, name in hidden_check_names() if name in text]
    return hits


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "ch03-student"
    status, _, stderr = run_plain(["release", "--out", out])  # cli.main here (tests/in_process.py)
    assert status == 0, stderr
    return out


@pytest.mark.quick
def test_the_release_has_what_students_need(release):
    for name in ("README.md", "pyproject.toml", ".gitignore", ".github/workflows/grade.yml",
                 "assignments/ch03/README.md", "assignments/ch03/tests/conftest.py"):
        assert (release / name).is_file(), name
    for module in sorted(SOLUTIONS.glob("*.py")):
        stub = release / "assignments" / "ch03" / module.name
        assert stub.read_bytes() == (ROOT / "assignments" / "ch03" / module.name).read_bytes()
    assert "assignments/ch03/README.md" in (release / "README.md").read_text()
    notebooks = pytest.importorskip("autograder.authoring.notebooks")
    if hasattr(notebooks, "release_notebooks"):  # the notebooks tooling is there: the release has notebooks
        assert sorted((release / "notebooks" / "ch03").glob("*.ipynb"))
        assert "notebooks/ch03/" in (release / "README.md").read_text()
        # what the notebooks need beyond the modules' packages (issue 22)
        assert "pip install jupyterlab matplotlib" in (release / "README.md").read_text()


def test_the_release_holds_no_grader_solution_or_rubric(release):
    names = {p.relative_to(release).as_posix() for p in release.rglob("*")}
    assert not any(n.split("/")[0] in ("autograder", "solutions", "source") for n in names), sorted(names)
    assert "grading.yml" not in {Path(n).name for n in names}
    solutions = {p.read_bytes() for p in SOLUTIONS.glob("*.py")}
    assert not any(p.is_file() and p.read_bytes() in solutions for p in release.rglob("*.py"))


def test_student_pyproject(release):
    project = tomllib.loads((release / "pyproject.toml").read_text())
    deps = project["project"]["dependencies"]
    assert "torch>=2.2,<3" in deps
    assert any(d.startswith("numpy") for d in deps) and any(d.startswith("pytest") for d in deps)
    assert project["tool"]["pytest"]["ini_options"]["testpaths"] == ["assignments/ch03/tests"]


def test_nothing_hidden_is_in_the_release(release):
    # the searches must have something to search for, or the test proves nothing
    assert len(solution_lines()) > 20 and len(suite_lines()) > 20 and hidden_values()
    if NOTEBOOK_TEMPLATES.is_dir():
        assert hidden_test_lines(), "notebook templates without hidden test regions: the search is empty"
    assert hidden_check_names(), "grading.yml has no hidden check: the name search is empty"
    assert leaks(release) == []


def test_the_leak_search_finds_a_planted_leak(release, tmp_path):
    """The search is not vacuous: one solution line, one suite line, one hidden value are each found."""
    import shutil

    planted = tmp_path / "planted"
    shutil.copytree(release, planted)
    (_, solution), (_, suite), (_, value) = solution_lines()[0], suite_lines()[-1], hidden_values()[0]
    hidden_test = hidden_test_lines()[-1][1] if hidden_test_lines() else suite
    notebook = {"cells": [{"cell_type": "code", "source": [f"    {solution}\n"], "outputs": []}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (planted / "leak.ipynb").write_text(json.dumps(notebook))  # JSON-escaped: found only by decoding
    with open(planted / "assignments" / "ch03" / "causal.py", "a") as f:
        f.write(f"\n# {suite}\nX = {value}12\n# {hidden_test}\n")
    found = "\n".join(leaks(planted))
    assert solution in found and suite in found and value in found and hidden_test in found


def test_release_refuses_a_folder_that_is_not_empty(release):
    status, _, stderr = run_plain(["release", "--out", release])
    assert status == 2 and "not an empty folder" in stderr


def test_public_tests_run_from_the_release(release):
    """The release stands on its own: its public tests pass on the reference modules. Made here, with
    the grader's own versions, its grader_versions.json gives no warning (tests/test_grader_versions.py
    changes the file and reads the warning; issue 38 item 6: it ran the public tests again for this)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--submission={SOLUTIONS}"],
                          cwd=release, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "warning" not in done.stdout.lower(), done.stdout[:2000]
