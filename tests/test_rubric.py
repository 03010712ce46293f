"""grading.yml and the reports.

- every way of getting grading.yml wrong gives an error naming the file and the line, from the
  loader and from `python -m autograder grade X --rubric bad.yml` (exit status 2);
- the real grading.yml matches the suites, check for check;
- the JSON (Gradescope's results.json schema, plus parts keyed by module stem), JUnit and Markdown
  reports of one grade carry the same results.

`grade` runs here as a subprocess where the property is the process's exit status; the reports are
written by the same command run in this process, in the session's fork server (tests/in_process.py).
"""
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from in_process import run_command
from rubric_points import TOTAL

from autograder import PARTS, cli, grading, runner, selftest
from autograder.rubric import RubricError, load

ROOT = Path(__file__).resolve().parents[1]
RUBRIC = ROOT / "grading.yml"
VISIBILITIES = {"visible", "hidden", "after_due_date", "after_published"}


@pytest.fixture(scope="module")
def suites():
    return {part: [name for name, _ in checks] for part, checks in runner.discover().items()}


def lines():
    return RUBRIC.read_text().splitlines()


def line_of(text):
    found = [i for i, line in enumerate(lines()) if line.strip().startswith(text)]
    assert len(found) == 1, text
    return found[0]


def edited(tmp_path, index, new_lines):
    """grading.yml with line `index` replaced by new_lines -> (path, the 1-based line of the first new line)."""
    text = lines()
    text[index:index + 1] = new_lines
    path = tmp_path / "bad.yml"
    path.write_text("\n".join(text) + "\n")
    return path, index + 1


def malformed(tmp_path, case):
    """(bad rubric, line the error must name, words it must say)"""
    if case == "unknown key":
        i = line_of("softmax_naive_book_example:")
        path, line = edited(tmp_path, i, ["      softmax_naive_book_example: {points: 1, visibilty: visible}"])
        return path, line, "unknown key 'visibilty'"
    if case == "missing check":
        i = line_of("softmax_naive_on_unseen_scores:")
        path, _ = edited(tmp_path, i, [])
        return path, line_of("softmax_naive_book_example:") + 1, "no entry here: softmax_naive_on_unseen_scores"
    if case == "check not in the suite":
        i = line_of("softmax_naive_on_unseen_scores:")
        path, line = edited(tmp_path, i, ["      no_such_check: 1", lines()[i]])
        return path, line, "check 'no_such_check' is not in the hidden suite"
    if case == "bad visibility":
        i = line_of("v1_book_example:")
        path, line = edited(tmp_path, i, ["      v1_book_example: {points: 2, visibility: secret}"])
        return path, line, "must be one of visible, hidden"
    if case == "bad YAML":
        i = line_of("causal_mask_marks_the_future:")
        path, line = edited(tmp_path, i, ["      causal_mask_marks_the_future: {points: 1, visibility: visible",
                                          "      : ]"])
        return path, line + 1, "not valid YAML"
    if case == "negative points":
        i = line_of("transfer_on_unseen_sizes:")
        path, line = edited(tmp_path, i, ["      transfer_on_unseen_sizes: -4"])
        return path, line, "must not be negative"
    if case == "bad requires":  # a gate must be another check of the same part
        i = line_of("transfer_book_example:")
        path, line = edited(tmp_path, i, ["      transfer_book_example: {points: 2, visibility: visible,",
                                          "                              requires: [v1_book_example]}"])
        return path, line + 1, "requires names 'v1_book_example', which is not another check of weight_transfer"
    if case == "unknown part":
        i = line_of("numpy_attention:")
        path, line = edited(tmp_path, i, ["  numpy_attentoin:"])
        return path, line, "part 'numpy_attentoin' has no hidden suite"
    raise ValueError(case)


CASES = ["unknown key", "missing check", "check not in the suite", "bad visibility", "bad YAML", "negative points",
         "bad requires", "unknown part"]


@pytest.mark.quick
@pytest.mark.parametrize("case", CASES)
def test_a_malformed_rubric_names_the_file_and_the_line(tmp_path, suites, case):
    path, line, words = malformed(tmp_path, case)
    with pytest.raises(RubricError) as error:
        load(path, suites)
    message = str(error.value)
    assert message.startswith(f"{path}:{line}:"), message
    assert words in message


@pytest.mark.parametrize("case", CASES)
def test_grade_with_a_malformed_rubric_exits_2_with_that_message(tmp_path, suites, capsys, case):
    path, line, words = malformed(tmp_path, case)
    status = cli.main(["grade", str(ROOT / "solutions" / "ch03"), "--rubric", str(path)])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith(f"error: {path}:{line}:") and words in err


@pytest.mark.parametrize("case", ["unknown key", "missing check", "bad visibility", "bad YAML", "negative points",
                                  "bad requires"])
def test_a_malformed_rubric_is_refused_before_the_sandbox_starts(tmp_path, monkeypatch, case):
    """A rubric whose form or values are wrong (what needs no suite to tell) is refused by Engine.open before it
    starts a fork server: every entry point said the same error, after starting one and stopping it again. Where
    that reading fails, the rubric is read again with the suites (this process's import of the grader, not a fork
    server), whose error is the one told ("missing check": the check left out, not the gate that names it). A
    name the suites do not know is told once they are loaded, as before (the other CASES)."""
    from autograder.engine import Engine

    path, line, words = malformed(tmp_path, case)
    started = []
    monkeypatch.setattr(Engine, "start_sandbox", lambda self, *args, **kwargs: started.append(args))
    with pytest.raises(RubricError) as error:
        Engine.open(rubric_path=path)
    assert str(error.value).startswith(f"{path}:{line}:") and words in str(error.value)
    assert started == []


def test_the_cli_process_exits_2_on_a_malformed_rubric(tmp_path):
    path, line, words = malformed(tmp_path, "negative points")
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", "solutions/ch03", "--rubric", str(path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert f"{path}:{line}:" in done.stderr and words in done.stderr


@pytest.mark.quick
def test_the_rubric_matches_the_suites(suites):
    rubric = load(RUBRIC, suites)
    assert list(rubric.parts) == list(PARTS)
    for part, names in suites.items():
        assert list(rubric.parts[part].checks) == names, part  # the suite's order
    raw = yaml.safe_load(RUBRIC.read_text())
    # the loader's total is the sum of grading.yml's own points (issue 36 item 2: never a number written here)
    assert rubric.max_score == sum(v["points"] if isinstance(v, dict) else v for spec in raw["parts"].values()
                                   for v in spec["checks"].values()) > 0
    visible = [(p, c) for p, spec in raw["parts"].items() for c, v in spec["checks"].items()
               if isinstance(v, dict) and v.get("visibility") == "visible"]
    hidden = [(p, c) for p, part in rubric.parts.items() for c in part.checks.values() if c.visibility == "hidden"]
    assert visible and hidden
    for part in rubric.parts.values():  # every part has points a student can see how to earn, and hidden ones
        assert {c.visibility for c in part.checks.values()} == {"visible", "hidden"}, part.name


# ---------------------------------------------------------------- the reports


@pytest.fixture(scope="module")
def reports(engine, tmp_path_factory):
    """One submission with failures in every part (visible and hidden), graded by the CLI with all reports."""
    tmp = tmp_path_factory.mktemp("reports")
    firsts = {}
    for entry in selftest.corpus():
        if entry.kind == "mutant":
            firsts.setdefault(entry.part, entry)
    folder = selftest.apply(selftest.Entry("combined", "mutant", [e for m in firsts.values() for e in m.edits]),
                            tmp / "submission")
    out = {kind: tmp / f"report.{kind}" for kind in ("json", "junit", "markdown")}
    status, stdout, stderr = run_command(engine, ["grade", folder, "--json", out["json"], "--junit", out["junit"],
                                                  "--markdown", out["markdown"]])
    assert status == 0, stderr
    return {"stdout": stdout, **{kind: path.read_text() for kind, path in out.items()}}


def check_gradescope_schema(results):
    """Gradescope's results.json: https://gradescope-autograders.readthedocs.io/en/latest/specs/"""
    top = {"score", "max_score", "execution_time", "output", "output_format", "test_output_format",
           "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
    assert set(results) - {"parts", "environment_check"} <= top, set(results) - top  # the project's two additions
    assert isinstance(results["score"], (int, float)) and isinstance(results["max_score"], (int, float))
    assert results.get("visibility", "visible") in VISIBILITIES
    assert results.get("stdout_visibility", "visible") in VISIBILITIES
    assert isinstance(results.get("output", ""), str) and isinstance(results.get("extra_data", {}), dict)
    test_keys = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format", "tags",
                 "visibility", "extra_data"}
    for test in results["tests"]:
        assert set(test) <= test_keys, set(test) - test_keys
        assert isinstance(test["name"], str) and isinstance(test["output"], str)
        assert test["status"] in ("passed", "failed") and test["visibility"] in VISIBILITIES
        assert 0 <= test["score"] <= test["max_score"]
        assert (test["status"] == "passed") == (test["score"] == test["max_score"])
    assert abs(sum(t["score"] for t in results["tests"]) - results["score"]) < 1e-6
    assert abs(sum(t["max_score"] for t in results["tests"]) - results["max_score"]) < 1e-6


def test_json_report_follows_gradescope_with_parts_by_module(reports):
    results = json.loads(reports["json"])
    check_gradescope_schema(results)
    assert list(results["parts"]) == list(PARTS)
    for part, scores in results["parts"].items():
        own = [t for t in results["tests"] if t["name"].startswith(f"{part}: ")]
        assert own and abs(sum(t["score"] for t in own) - scores["score"]) < 1e-6
        assert abs(sum(t["max_score"] for t in own) - scores["max_score"]) < 1e-6
        assert scores["score"] < scores["max_score"], part  # the submission has a bug in every part


def test_json_junit_and_markdown_carry_the_same_results(reports):
    results = json.loads(reports["json"])
    by_json = {t["name"]: (t["status"] == "passed", t["score"], t["max_score"], t["visibility"],
                           t["output"] if t["status"] == "failed" else "") for t in results["tests"]}
    root = ET.fromstring(reports["junit"])
    by_junit = {}
    for suite in root.iter("testsuite"):
        for case in suite.iter("testcase"):
            assert case.get("classname") == f"ch03.{suite.get('name')}"
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            failure = case.find("failure")
            by_junit[f"{suite.get('name')}: {case.get('name')}"] = (
                failure is None, float(props["score"]), float(props["max_score"]), props["visibility"],
                "" if failure is None else failure.text)
    assert by_junit == by_json
    assert int(root.get("failures")) == sum(not passed for passed, *_ in by_json.values())
    markdown = reports["markdown"]
    assert f"## Chapter 3 score: {results['score']:g} / {results['max_score']:g}" in markdown
    for part, scores in results["parts"].items():
        assert f"| {part} | {scores['score']:g} / {scores['max_score']:g} |" in markdown
    # the student's Markdown: each failed visible check by name, each part's failed hidden checks
    # counted under their diagnosis, never by name
    listed = [line for line in markdown.splitlines() if line.startswith("- **")]
    failed = [(name, vis) for name, (passed, _, _, vis, _) in by_json.items() if not passed]
    visible_failed = [name for name, vis in failed if vis == "visible"]
    assert visible_failed and len(failed) > len(visible_failed)
    # (checks that one cause explains are one item: "part: check, other and 2 hidden checks")
    for name in visible_failed:
        part, check = name.split(": ", 1)
        assert sum(line.startswith(f"- **{part} / {check}** (-") or bool(re.match(
            rf"- \*\*{part}: (\w+, )*(\w+ and )?{check}(, \w+)*( and \w+)?( and \d+ hidden checks?)?\*\*", line))
            for line in listed) == 1, name
    hidden_counted = sum(int(m[1]) for line in listed
                         if (m := re.match(r"- \*\*\w+: (?:[\w, ]+ and )?(\d+) hidden checks?\*\*", line)))
    # a hidden check voided by requires is counted on the line of the mistake that voids it
    voided_counted = sum(int(m[1]) for m in re.finditer(r"this also costs the points of (?:[\w, ]+ and )?(\d+) "
                                                       r"hidden checks?", markdown))
    voided = {t["name"] for t in results["tests"] if t["status"] == "failed" and t["extra_data"].get("voided_by")}
    assert hidden_counted + voided_counted == len(failed) - len(visible_failed)
    assert voided_counted == sum(name in voided for name, vis in failed if vis != "visible")
    for name, vis in failed:
        if vis != "visible":
            assert name.split(": ", 1)[1] not in markdown, name
    # and the terminal table has the same totals
    assert f"{results['score']:g} / {results['max_score']:g}" in reports["stdout"]


def test_the_instructor_json_and_table_keep_everything(reports):
    """`grade --json` and the table are the instructor's: every failed check by name with the
    grader's diagnosis first, and the run's secret to regrade with --seed."""
    results = json.loads(reports["json"])
    seed = results["extra_data"]["seed"]
    assert isinstance(seed, int) and f"regrade with --seed {seed}" in reports["stdout"]
    failed = [t for t in results["tests"] if t["status"] == "failed"]
    assert all(t["output"].split("\n")[0] == t["extra_data"]["message"] for t in failed)
    assert all(f"    - {t['name'].split(': ', 1)[1]}" in reports["stdout"] for t in failed)


def test_grade_json_for_the_solutions(engine, tmp_path):
    out = tmp_path / "results.json"
    status, _, stderr = run_command(engine, ["grade", ROOT / "solutions" / "ch03", "--json", out])
    assert status == 0, stderr
    results = json.loads(out.read_text())
    check_gradescope_schema(results)
    assert (results["score"], results["max_score"]) == (TOTAL, TOTAL)
    assert results["parts"] == {part: {"score": grading.load_rubric()[0].parts[part].max_score,
                                       "max_score": grading.load_rubric()[0].parts[part].max_score} for part in PARTS}
    assert all(t["status"] == "passed" for t in results["tests"])


def test_a_gated_check_earns_its_points_only_with_the_checks_it_requires(suites):
    """grading.yml `requires`: the book's example of context_vector passes, its check on unseen
    inputs fails -> the example counts as failed, 0 points, with the grader's fixed message (and the
    failed gate named for the instructor); with the gate passing it earns its point."""
    from autograder import grading, runner

    rubric = load(grading.RUBRIC_PATH, suites)
    part = rubric.parts["simple_attention"]
    assert part.checks["context_vector_book_example"].requires == ("context_vector_on_unseen_inputs",)
    for unseen_passes, want in ((False, 0.0), (True, 1.0)):
        run = runner.PartRun("simple_attention", [runner.CheckResult("simple_attention", name, True)
                                                  for name in part.checks])
        run.results[[r.name for r in run.results].index("context_vector_on_unseen_inputs")].passed = unseen_passes
        grade = grading.Grade("s")
        grading.score_part(grade, part, run)
        book = next(c for c in grade.checks if c.name == "context_vector_book_example")
        assert (book.passed, book.score) == (unseen_passes, want)
        if not unseen_passes:
            assert book.message == grading.GATED and "context_vector_on_unseen_inputs" in book.detail
