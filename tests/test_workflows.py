"""The GitHub workflows: this repository's .github/workflows/*.yml and the release's grade.yml.

Each is validated against GitHub's workflow schema (check-jsonschema's vendored copy) and
audited by zizmor offline, which must report nothing of medium severity or above (ignore
comments are not honoured: --no-ignores). Then the properties the design rests on are checked
directly: pinned actions, minimal permissions, the one step that sees the secret, no ${{ }}
inside shell scripts, the comment marker shared with the `ci` command.
"""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from in_process import run_plain

from autograder.deploy import ghactions

ROOT = Path(__file__).resolve().parents[1]
GRADE_TEMPLATE = ROOT / "autograder" / "templates" / "release" / "grade.yml"
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
VERSION_COMMENT = re.compile(r"@[0-9a-f]{40} # v\d+\.\d+\.\d+$")
BLOCKING = {"medium", "high"}


def tool(name):
    found = Path(sys.executable).with_name(name)
    path = str(found) if found.exists() else shutil.which(name)
    if not path:
        pytest.skip(f"{name} is not installed (pip install {name}; scripts/setup.sh installs it with the dev extra)")
    return path


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "student"
    status, _, stderr = run_plain(["release", "--out", out])  # cli.main here (tests/in_process.py)
    assert status == 0, stderr
    return out


@pytest.fixture(scope="module")
def workflow_files(release):
    files = sorted((ROOT / ".github" / "workflows").glob("*.yml")) + [release / ".github" / "workflows" / "grade.yml"]
    assert any(f.name == "ci.yml" for f in files)
    return files


def load(path):
    # PyYAML reads the key `on` as True (YAML 1.1); put it back
    data = yaml.safe_load(path.read_text())
    if True in data:
        data["on"] = data.pop(True)
    return data


def steps(workflow):
    for job_name, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            yield job_name, step


def test_the_release_workflow_is_the_template(release):
    assert (release / ".github" / "workflows" / "grade.yml").read_bytes() == GRADE_TEMPLATE.read_bytes()


def test_schema(workflow_files):
    done = subprocess.run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                           *map(str, workflow_files)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_zizmor_finds_nothing_medium_or_worse(workflow_files):
    done = subprocess.run([tool("zizmor"), "--offline", "--no-ignores", "--format", "json",
                           *map(str, workflow_files)], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip(), done.stderr
    findings = json.loads(done.stdout)
    blocking = [f"{f['ident']} ({f['determinations']['severity']}): {f['desc']}" for f in findings
                if f["determinations"]["severity"].lower() in BLOCKING]
    assert blocking == [], "\n".join(blocking)
    assert done.returncode in (0, 11, 12), done.stderr  # 11/12: only informational/low findings


@pytest.mark.quick
def test_every_action_is_pinned_by_full_hash_with_a_version_comment(workflow_files):
    pins = {}
    for path in workflow_files:
        text = path.read_text()
        for _, step in steps(load(path)):
            if "uses" not in step:
                continue
            uses = step["uses"]
            assert PINNED.match(uses), f"{path.name}: {uses} is not pinned to a full commit hash"
            line = next(ln for ln in text.splitlines() if uses in ln)
            assert VERSION_COMMENT.search(line), f"{path.name}: `{line.strip()}` lacks a '# vX.Y.Z' comment"
            action, sha = uses.split("@")
            pins.setdefault(action, set()).add(sha)
    assert all(len(shas) == 1 for shas in pins.values()), f"one pin per action across workflows: {pins}"


@pytest.mark.quick
def test_permissions_are_empty_by_default_and_minimal_per_job(workflow_files):
    for path in workflow_files:
        workflow = load(path)
        assert workflow.get("permissions") == {}, f"{path.name}: top-level permissions must be {{}}"
        for name, job in workflow["jobs"].items():
            granted = job.get("permissions")
            assert isinstance(granted, dict) and granted, f"{path.name}:{name} must list its permissions"
            writes = {k for k, v in granted.items() if v == "write"}
            assert writes <= {"pull-requests"}, f"{path.name}:{name} writes {writes}"


def test_checkouts_keep_no_credentials_and_scripts_expand_nothing(workflow_files):
    for path in workflow_files:
        for job, step in steps(load(path)):
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step.get("with", {}).get("persist-credentials") is False, f"{path.name}:{job}"
            if "run" in step:
                # untrusted values reach scripts through env: only, never by substitution
                assert "${{" not in step["run"], f"{path.name}:{job}: ${{{{ }}}} inside run: {step['run'][:80]}"


def test_grade_workflow_triggers_and_the_single_secret_step():
    workflow = load(GRADE_TEMPLATE)
    assert set(workflow["on"]) == {"pull_request", "push"}
    text = GRADE_TEMPLATE.read_text()
    assert "pull_request_target" not in yaml.safe_dump(workflow["on"]) and "workflow_run" not in workflow["on"]
    # secrets: referenced by exactly one step, a checkout of the autograder repository, and nowhere else
    users = [(job, step) for job, step in steps(workflow) if "secrets." in json.dumps(step)]
    assert len(users) == 1 and text.count("secrets.") == 1
    job, fetch = users[0]
    assert fetch["uses"].startswith("actions/checkout@") and "run" not in fetch and "env" not in fetch
    assert fetch["with"]["persist-credentials"] is False and fetch["with"]["path"] == "grader"
    assert "secrets" not in json.dumps({k: v for k, v in workflow.items() if k != "jobs"})
    assert all("secrets" not in json.dumps({k: v for k, v in j.items() if k != "steps"})
               for j in workflow["jobs"].values())


def test_grade_step_is_one_ci_command_and_the_outcome_follows_the_score():
    workflow = load(GRADE_TEMPLATE)
    grade = [s for _, s in steps(workflow) if s.get("id") == "grade"][0]
    command = " ".join(grade["run"].split())
    assert "\n" not in grade["run"].strip() and ";" not in command and "&&" not in command
    assert re.search(r'-m autograder ci "\$GITHUB_WORKSPACE/submission/\$SUBMISSION" --json \S+ --comment \S+$', command)
    names = [s.get("name", "") for _, s in steps(workflow)]
    assert names.index("Grade in the sandbox") < names.index("Set the outcome from the score")
    upload = [s for _, s in steps(workflow) if s.get("uses", "").startswith("actions/upload-artifact@")][0]
    assert "results.json" in upload["with"]["path"]


def test_comment_job_runs_no_student_code_and_shares_the_marker():
    workflow = load(GRADE_TEMPLATE)
    job = workflow["jobs"]["comment"]
    assert job["permissions"] == {"pull-requests": "write"}
    assert all("run" not in s and not s.get("uses", "").startswith("actions/checkout@") for s in job["steps"])
    script = [s for s in job["steps"] if s.get("uses", "").startswith("actions/github-script@")][0]
    assert script["env"]["MARKER"] == ghactions.COMMENT_MARKER
    body = script["with"]["script"]
    assert "updateComment" in body and "createComment" in body and "403" in body
    assert "${{" not in body  # the script reads the PR number from context, the body from a file


def test_instructor_ci_runs_the_project_suite():
    workflow = load(ROOT / ".github" / "workflows" / "ci.yml")
    runs = " ".join(s["run"] for _, s in steps(workflow) if "run" in s)
    assert "bash .ci/run" in runs
