"""Every figure the docs state holds (issue 31 item 4): README.md, docs/*.md, the students' README and
the two templates' READMEs.

A figure (a duration, a size, a ratio, a percentage, a count of tests) either stands in a section that
gives the command that produced it, with the machine and the date, or is listed in CHECKED with the
check that compares it with what the project defines or measures. A new figure that is in neither
fails `test_every_figure_is_measured_or_checked`, naming it. The test suite's own size and duration are
kept in one marked place of the README (`<!-- suite-figures -->`), refreshed at integration: a count
of tests anywhere else would be stale as soon as someone adds a test.
"""
import ast
import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick  # the whole file is in the quick subset

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
        "assignments/ch03/README.md", "autograder/templates/release/README.md",
        "autograder/templates/gradescope/README.md"]
MEASURE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?:-\d+(?:\.\d+)?)?\s?(?:ms|s|seconds?|minutes?|min|hours?|MB|GB|GiB|"
                     r"MiB|KiB|KB|%|x)(?!\w)|\b\d+:\d\d\b|\b\d+ (?:passed|skipped|collected)\b"
                     # counts and scores: "21/21 match", "80 characters", "400 training runs", "4 times"
                     r"|(?<![\w./-])\d+/\d+(?![\w/])|\b\d+ (?:characters|training runs|times)\b")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
COMMAND = re.compile(r"`(?:time |\.venv/bin/python |python |\.ci/run|scripts/)[^`]*`")
MACHINE = re.compile(r"machine|\bH[12]00\b|\bcores?\b")
SUITE = re.compile(r"<!-- suite-figures\b.*?<!-- /suite-figures -->", re.S)
TESTS_COUNT = re.compile(r"\b\d+ (?:passed|skipped|collected|tests? (?:pass|run))\b|\bthe whole (?:test )?suite\b[^.]*"
                         r"\b\d+(?:\.\d+)? (?:minutes|min|s)\b")


def _source_constant(path, name):
    """A module-level constant of a Python file, read without importing it."""
    for node in ast.parse((ROOT / path).read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
        if isinstance(node, ast.ClassDef):
            for inner in node.body:
                if isinstance(inner, ast.Assign) and isinstance(inner.targets[0], ast.Tuple) and \
                        name in [t.id for t in inner.targets[0].elts]:
                    names = [t.id for t in inner.targets[0].elts]
                    return ast.literal_eval(inner.value)[names.index(name)]
    raise AssertionError(f"{path}: no constant {name}")


def _speed_lab_cpu_within(share):
    """On the CPU every implementation of the speed lab is within `share` of SDPA, forward and backward
    (the measured figures, benchmarks/speed_lab_figures.json)."""
    ms = json.loads((ROOT / "benchmarks" / "speed_lab_figures.json").read_text())["cpu"]["ms"]
    ratios = [times[k] / ms["sdpa"][k] for times in ms.values() for k in (0, 1)]
    return len(ratios) == 10 and max(ratios) < 1 + share


# (document, figure as written) -> the check that holds it
CHECKED = {
    ("README.md", "1.3x"): lambda: "1.3" in (ROOT / "autograder/notebook_templates/ch03/04_speed_lab.txt").read_text(),
    ("README.md", "25%"): lambda: _speed_lab_cpu_within(0.25),
    ("docs/ci-and-gradescope.md", "3.9 MB"):
        lambda: '"Huge" * 975_000' in (ROOT / "tests/adversarial/cases/report_huge_class_name/simple_attention.py")
        .read_text() and len("Huge" * 975_000) == 3_900_000,
    ("docs/notebooks.md", "2.5 s"): lambda: _source_constant("tests/test_nbgrader_roundtrip.py", "ATTACK_SECONDS") == 2.5,
    ("docs/notebooks.md", "0 s"):  # stock collect took the student's "2000-01-01": 0 s late; the test plants it
        lambda: '"2000-01-01 00:00:00.000000 UTC"' in (ROOT / "tests/test_nbgrader_exchange.py").read_text(),
    ("docs/sandbox.md", "10 s"): lambda: (_source_constant("autograder/sandbox/part_child.py", "WALL_FACTOR"),
                                          _source_constant("autograder/sandbox/part_child.py", "WALL_SLACK")) == (4, 10),
    ("docs/sandbox.md", "2 s"): lambda: _source_constant("autograder/suites/dependencies.py", "PROBE_SECONDS") == 2
        and "IDLE_AFTER_HIDDEN = 2.0" in (ROOT / "autograder/sandbox/part_child.py").read_text(),  # and idle after hidden
    ("docs/sandbox.md", "0.5 s"): lambda: _source_constant("autograder/runner/attempts.py", "IMPORT_IDLE") == 0.5,
    # the sleep at import and in forward that test_side_effects grades
    ("docs/sandbox.md", "3 s"): lambda: "with_line(tmp_path / where, \"import time\\ntime.sleep(3)\", where)"
        in (ROOT / "tests/test_side_effects.py").read_text(),
    ("docs/sandbox.md", "512 MiB"): lambda: "512 << 20" in (ROOT / "tests/test_staging.py").read_text(),
    ("docs/sandbox.md", "0.25 s"): lambda: _source_constant("autograder/sandbox/gpu_watch.py", "PERIOD") == 0.25,
    ("docs/sandbox.md", "1 GiB"): lambda: _source_constant("autograder/inside/gpu.py", "CONTEXT_MB") == 1024,
    ("docs/sandbox.md", "4 times"): lambda: _source_constant("autograder/sandbox/part_child.py", "WALL_FACTOR") == 4,
    ("docs/sandbox.md", "10 times"): lambda: "    FAR_WALL = 10  #" in (ROOT / "autograder/sandbox/part_child.py").read_text(),
    ("docs/sandbox.md", "5 s"): lambda: _source_constant("autograder/inside/isolation.py", "CPU_HARD_ABOVE") == 5,
    ("docs/sandbox.md", "60 s"): lambda: _source_constant("autograder/sandbox/session.py", "START_SECONDS") == 60,
    ("docs/sandbox.md", "30 s"): lambda: _source_constant("autograder/sandbox/session.py", "PART_SECONDS") == 30,
    ("docs/sandbox.md", "120 s"): lambda: "    READY_SECONDS = 120\n" in (ROOT / "autograder/sandbox/client.py").read_text(),
    ("docs/sandbox.md", "0.05 s"):
        lambda: '"READY_SECONDS", 0.05)' in (ROOT / "tests/test_machine_deaths.py").read_text(),
    ("README.md", "21/21"):  # what `book-check` prints, asserted by its test
        lambda: '"book values: 21/21 match\\n"' in (ROOT / "tests/test_book_check.py").read_text(),
    ("README.md", "400 training runs"):
        lambda: "def dropout_statistics(module, x, runs=400)" in (ROOT / "source/ch03/ch03_tools.py").read_text(),
    ("README.md", "80 characters"): lambda: _source_constant("autograder/batch/plan.py", "NAME_LIMIT") == 80,
    # the form of gpu-check's summary line: the reference's and the stubs' scores out of the rubric's 100
    ("README.md", "100/100"): lambda: _rubric_total() == 100 and "reference 100/100 sandboxed, 100/100 non-root; "
                                      "stubs 0/100" in (ROOT / "scripts/gpu_check.py").read_text(),
    ("README.md", "0/100"): lambda: _rubric_total() == 100,
    # "Due dates and late work": the example due date, in two offsets that are one instant
    **{("README.md", clock): lambda: _one_instant("2026-12-01T23:59:00+01:00", "2026-12-01T22:59:00Z")
       for clock in ("59:00", "01:00", "23:59", "22:59")},
    ("README.md", "24 hours"): lambda: _late_days_of(hours=24) == 1 and _late_days_of(hours=24, microseconds=1) == 2,
    ("README.md", "100 %"): lambda: _late_penalty(percent=40, days=3) == 100.0,
}


def _one_instant(first, second):
    from autograder.course.lateness import parse_time

    return parse_time(first, "x") == parse_time(second, "x")


def _late_days_of(**after):
    """lateness.late_days of a submission `after` the due date: "a day is 24 hours", per started day."""
    from datetime import timedelta

    from autograder.course.lateness import late_days, parse_time

    due = parse_time("2026-12-01T23:59:00Z", "x")
    return late_days(due + timedelta(**after), due)


def _late_penalty(percent, days):
    """The penalty of a submission `days` days late at `percent` a day: it stops at 100 %."""
    from datetime import timedelta

    from autograder.course.lateness import LatePolicy, parse_time

    due = parse_time("2026-12-01T23:59:00Z", "x")
    return LatePolicy(due, percent, times={"s": due + timedelta(days=days)}).judge("s", 50.0).penalty


def _rubric_total():
    import yaml

    rubric = yaml.safe_load((ROOT / "grading.yml").read_text())
    default = rubric.get("defaults", {}).get("points", 1)
    return sum(spec if isinstance(spec, (int, float)) else (spec.get("points", default) if isinstance(spec, dict)
                                                             else default)
               for part in rubric["parts"].values() for spec in part["checks"].values()) + sum(
        group.get("points", 0) for part in rubric["parts"].values() for group in (part.get("groups") or {}).values())


def sections(text):
    return re.split(r"\n(?=#{1,4} )", text)


def unmeasured(doc, text):
    """The figures of `text` (one document) in sections that give no command, machine and date."""
    found = []
    for section in sections(SUITE.sub("", text)):
        if DATE.search(section) and COMMAND.search(section) and MACHINE.search(section):
            continue
        found += [(doc, figure) for figure in MEASURE.findall(section)]
    return found


def test_every_figure_is_measured_or_checked():
    loose = [found for doc in DOCS for found in unmeasured(doc, (ROOT / doc).read_text()) if found not in CHECKED]
    assert loose == [], "figures with neither a command, machine and date nor a check in CHECKED"


@pytest.mark.parametrize("doc, figure", sorted(CHECKED))
def test_each_checked_figure_holds(doc, figure):
    assert figure in (ROOT / doc).read_text(), f"{doc} no longer says {figure}: remove it from CHECKED"
    assert CHECKED[doc, figure](), f"{doc}: {figure} is not what the project has"


def test_the_rule_finds_a_figure_without_its_command():
    assert unmeasured("x.md", "## Speed\n\nGrading takes 3.5 s per submission.\n") == [("x.md", "3.5 s")]
    assert unmeasured("x.md", "## Speed\n\nOn the course's 2-core machine, 2026-11-26: `time .ci/run`: 7.5 "
                              "minutes.\n") == []


def test_the_suites_size_and_duration_are_in_one_marked_place():
    readme = (ROOT / "README.md").read_text()
    [block] = SUITE.findall(readme)
    assert DATE.search(block) and "`time .ci/run`" in block and "`time .venv/bin/python -m pytest -n 2 --dist loadgroup -m quick`" in block
    assert "2-core machine" in block and "idle" in block  # what the figures assume
    for doc in DOCS:
        text = SUITE.sub("", (ROOT / doc).read_text())
        assert TESTS_COUNT.findall(text) == [], doc


def test_the_release_readme_says_what_a_student_sees_of_hidden_checks():
    """Issue 31 item 4: it said "only their number"; the comment shows each hidden failure's diagnosis
    (tests/test_one_mistake.py checks that its example is what the student's table says)."""
    text = " ".join((ROOT / "autograder/templates/release/README.md").read_text().split())
    assert "only their number" not in text and "says what they found wrong" in text


def test_the_docs_say_what_happens_without_root():
    """Issue 31 item 4: docs/ci-and-gradescope.md said the sandbox falls back to a process group and
    rlimits without root; container mode refuses there (sandbox/container.py)."""
    text = " ".join((ROOT / "docs/ci-and-gradescope.md").read_text().split())
    assert "falls back to a process group" not in text
    assert "it refuses to grade" in text and "container mode needs root" in text
    assert "container mode needs root" in (ROOT / "autograder/sandbox/container.py").read_text()


def _quick_tests_needing_the_shared_folder():
    """[file::test] of the quick subset that skip where the course's shared folder (a path outside the
    project, test_quick_subset._outside_names) is absent: what a clone skips of `-m quick`."""
    from quick_subset import chosen
    from test_quick_subset import _outside_names

    found = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        outside = _outside_names(tree)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_") and chosen(path.name, node.name):
                used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                if used & outside:
                    found.append(f"{path.name}::{node.name}")
    return found


def test_the_quick_subset_count_says_what_a_clone_gets():
    """Issue 36 item 4: the README said 380 passed where a clone got 379 and 1 skipped (a test needs the
    course's ../shared folder). It states both, and the skipped count is the number of quick tests that
    need that folder."""
    [block] = SUITE.findall((ROOT / "README.md").read_text())
    row = next(line for line in block.splitlines() if "-m quick`" in line)
    workspace = re.search(r"\((\d+) passed in the course's workspace", row)
    clone = re.search(r"a clone, which has no `\.\./shared` folder beside it, gets (\d+) passed and (\d+) skipped", row)
    assert workspace and clone, row
    needing = _quick_tests_needing_the_shared_folder()
    assert int(clone[2]) == len(needing), needing
    assert int(clone[1]) + int(clone[2]) == int(workspace[1])


def test_no_markdown_file_starts_with_python():
    """Issue 36 item 4: README.md's first line was `from __future__ import annotations`, put there by the
    pass that added that line to the typed core's modules (commit be1f79f, then e0b5397). A document
    starts with its text."""
    docs = [ROOT / doc for doc in DOCS] + sorted((ROOT / "docs").glob("*.md"))
    starts = {doc.relative_to(ROOT).as_posix(): doc.read_text().split("\n", 1)[0] for doc in docs}
    assert {name: line for name, line in starts.items() if re.match(r"(from \S+ )?import ", line)} == {}
