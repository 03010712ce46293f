"""Results in Gradescope's results.json schema (plus `parts` and `environment_check`), for each of their readers.

    results_json(grade)        the instructor's record (`grade --json`, what `batch` stores): each
                               test's output says everything (diagnosis, the student's own text,
                               detail), its extra_data keeps them apart for the student's feedback;
                               extra_data: protections, notes, part problems and diagnoses
                               (runner.part_diagnosis) and the run's secret
    student_results(grade)     `ci --json` (CI artifacts are readable by the student): hidden checks
                               renamed "part: hidden check k", their diagnosis only; no detail, no secret
    gradescope_results(grade)  Gradescope's results.json: the top-level output is the score and what
                               to fix; tests keep their names (Gradescope shows each by its
                               visibility) and say what a student may see; the sandbox's protections,
                               the parts and the environment check go to extra_data; no secret
    broken_results(rubric, problem)  a submission that could not be staged: every check failed with
                               the problem, with the same keys as any other record (broken_grade:
                               the same as a Grade, for the other channels)
    dumps(results)             the JSON text: every string valid UTF-8, whatever it held

Every student-facing text follows reports.common's rule.
"""
import json
from typing import Any

from autograder import text
from autograder.reports.common import OWN_TEXT, anonymous_names, fmt, instructor_lines, printable, student_output, what_to_fix
from autograder.reports.html_feedback import gradescope_test
from autograder.reports.records import checks_of, parts_of  # noqa: F401  (read back here too)

OUTPUT = 60_000  # the most the top-level output holds


def results_json(grade: Any) -> dict[str, Any]:
    """The instructor's record: Gradescope's schema, plus parts: {part: {score, max_score}}."""
    tests = []
    for c in grade.checks:
        test = _test(c, f"{c.part}: {c.name}")
        test["output"] = printable(c.message) if c.passed else "\n".join(instructor_lines(c))
        test["extra_data"] = {key: value for key, value in (
            ("part", c.part), ("check", c.name), ("message", printable(c.message)),
            ("student_text", printable(c.student_text)), ("detail", printable(c.detail)),
            ("diagnosis", c.diagnosis), ("figure", c.figure), ("voided_by", list(c.voided_by)),
            ("cause", printable(c.cause)),  # what the feedback folds by (common.what_to_fix)
            ("unexplained", c.unexplained)) if value}  # figure: numbers on public inputs (figure_data.py)
        tests.append(test)
    results = _top(grade, tests)
    results["extra_data"] = {"protections": [printable(p, 200) for p in grade.protections],
                             "notes": [printable(n) for n in grade.notes],
                             "problems": {part: printable(p.problem) for part, p in grade.parts.items()
                                          if p.problem},
                             "seconds": {part: p.seconds for part, p in grade.parts.items()},
                             # the cause most of a part's failed checks name (runner.part_diagnosis): one row
                             # per student and misconception in the class report
                             "diagnoses": {part: printable(p.diagnosis) for part, p in grade.parts.items()
                                           if p.diagnosis},
                             "seed": grade.seed,
                             "tampering": [printable(t, 200) for t in grade.tampering]}
    if _not_graded(grade):  # the machine kept these parts from running: no score stands (runner.NOT_GRADED)
        results["extra_data"]["not_graded"] = {part: printable(why) for part, why in _not_graded(grade).items()}
    return results


def _not_graded(grade):
    return grade.not_graded


def _machine_results(grade, gradescope=False):
    """A grade some part of which the machine kept from running: like a run whose environment failed
    its check, no score at all (never a lower one); the student reads why it is not their doing."""
    from autograder.grading import NOT_GRADED_MESSAGE

    return not_graded_results(NOT_GRADED_MESSAGE, grade.environment_check, gradescope=gradescope)


def student_results(grade):
    """What `ci` writes to results.json: no hidden check named, no student text of a hidden check."""
    if _not_graded(grade):
        return _machine_results(grade)
    names = anonymous_names(grade.checks)
    tests = [{**_test(c, names.get(id(c), f"{c.part}: {c.name}")), "output": student_output(c)}
             for c in grade.checks]
    results = _top(grade, tests)
    results["extra_data"] = {"protections": [printable(p, 200) for p in grade.protections],
                             "notes": [printable(n) for n in grade.notes]}
    return results


def gradescope_results(grade):
    """Gradescope's results.json (see the module's docstring)."""
    if _not_graded(grade):
        return _machine_results(grade, gradescope=True)
    # a check with a figure: its output in HTML, with the student's and the expected weights drawn
    tests = [gradescope_test({**_test(c, f"{c.part}: {c.name}"), "output": student_output(c)},
                             c.figure) for c in grade.checks]
    results = _top(grade, tests)
    results["output_format"] = results["test_output_format"] = "text"
    results["extra_data"] = {"parts": results.pop("parts"), "environment_check": results.pop("environment_check"),
                             "protections": [printable(p, 200) for p in grade.protections]}
    return results


def broken_results(rubric: Any, problem: str) -> dict[str, Any]:
    """The record of a submission that could not be staged at all: every check failed with the
    reason, with the same keys as any other record (the batch stores it and writes feedback from it)."""
    return results_json(broken_grade(rubric, problem))


def broken_grade(rubric, problem):
    """A Grade in which every check of the rubric failed with `problem` (said once per channel)."""
    from autograder.grading import Grade, score_part
    from autograder.runner import CheckResult, PartRun

    problem = text.clean(problem)
    grade = Grade("")
    for part in rubric.parts.values():
        run = PartRun(part.name, [CheckResult(part.name, name, False, problem) for name in part.checks],
                      problem=problem)
        score_part(grade, part, run)
    return grade


def not_graded_results(message, record, gradescope=False):
    """The results.json of a run that graded nobody: its environment failed its own check (envcheck).
    No score at all (not even 0): the submission is to be graded again once the grader is fixed.
    Gradescope's keeps environment_check in extra_data (its schema has no such key)."""
    check = environment_check(record)
    results = {"output": message, "visibility": "visible", "stdout_visibility": "hidden", "tests": [],
               "extra_data": {"environment_check": check} if gradescope else {}}
    return results if gradescope else {**results, "environment_check": check}


def dumps(results):
    """results as JSON text that any reader takes: a lone surrogate left in a string becomes '?'."""
    return json.dumps(_valid(results), indent=1)


def summary(grade):
    """The top-level output: the score, then what to fix as a student may see it, then the notes. (The
    instructor's record of a grade the machine kept from running says so instead of a score: its numbers
    stay for the instructor, flagged in extra_data.not_graded, and stand as nobody's grade.)"""
    if _not_graded(grade):
        return f"Not graded: the machine was overloaded ({', '.join(_not_graded(grade))}): no score stands"
    lines = [f"Score: {fmt(grade.score)} / {fmt(grade.max_score)}"]
    items = what_to_fix(grade.checks, grade.parts)
    if items:
        lines += ["", "What to fix:"]
        for item in items:
            lines.append(f"- {item.title} (-{fmt(item.points)}): {item.message}")
            lines += [f"  {note}" for note in item.notes]
            if item.own_text:
                lines.append(f"  {OWN_TEXT}: {item.own_text}")
    if grade.notes:
        lines += ["", "Notes:"] + [f"- {printable(note)}" for note in grade.notes]
    said = "\n".join(lines)
    return said if len(said) <= OUTPUT else said[:OUTPUT] + "\n...[cut short]"


def _test(check, name):
    return {"name": name, "score": check.score, "max_score": check.max_score,
            "status": "passed" if check.passed else "failed", "visibility": check.visibility}


def _top(grade, tests):
    return {"score": grade.score, "max_score": grade.max_score, "output": summary(grade), "visibility": "visible",
            "stdout_visibility": "hidden", "tests": tests,
            "parts": {part: {"score": p.score, "max_score": p.max_score} for part, p in grade.parts.items()},
            "environment_check": environment_check(grade.environment_check)}


def environment_check(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """results.json's `environment_check`: the reference's score here, the device, the walls that
    stood, torch's version (None: this run did not check its environment)."""
    if not record:
        return None
    return {"passed": record.get("passed") is True, "reference_score": record.get("score"),
            "max_score": record.get("max_score"), "device": record.get("device"),
            "walls": [printable(w, 200) for w in record.get("walls", [])], "torch": record.get("torch"),
            "cached": record.get("cached", False)}


def _valid(value):
    """value with every string encodable as UTF-8 (json.dumps would write a lone surrogate as an
    escape that strict readers refuse)."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_valid(k): _valid(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_valid(v) for v in value]
    return value
