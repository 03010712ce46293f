"""Issue 24 item 5: scripts/gpu-check.sh, tested where no GPU is: it says that nothing was checked
(exit 2), reads the grader's real output correctly, and its one summary line holds only when
every check does. The checks themselves need a GPU (see the script)."""
import re
import subprocess
import sys

import pytest

from autograder import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "scripts"))
import gpu_check

SCRIPT = PROJECT_ROOT / "scripts" / "gpu-check.sh"


def _all_hold():
    verdicts = {"m1": "killed", "mha-mask-plain-attribute": "killed", "v1": "full"}
    return {"reference": (100.0, 100.0), "nonroot": (100.0, 100.0), "stubs": (0.0, 100.0), "batch": (8, 8),
            "selftest_cuda": {"verdicts": dict(verdicts), "killed": 2, "mutants": 2, "full": 1, "variants": 1},
            "selftest_cpu": {"verdicts": dict(verdicts), "killed": 2, "mutants": 2, "full": 1, "variants": 1},
            "device_mutants": ["mha-mask-plain-attribute"], "fork": True, "memory_bound": True, "no_leak": True,
            "cuda_cost": (0.41, 520), "efficient_ratio": 1.76, "seconds": 140.0}


@pytest.mark.quick
def test_the_summary_line_when_everything_holds():
    line, ok = gpu_check.summary(_all_hold())
    assert ok
    assert line == ("gpu: reference 100/100 sandboxed, 100/100 non-root; stubs 0/100; "
                    "batch 8/8 reference copies at full marks; selftest 2/2 mutants, "
                    "1/1 variants (CPU 2/2, 1/1); CPU/GPU parity ok; device bugs 1/1 caught on the GPU; "
                    "no CUDA before the fork ok; GPU memory bound ok; no GPU memory leak ok; "
                    "CUDA per submission +0.41 s, 520 MiB; efficient MHA 1.76x SDPA; 140 s")


@pytest.mark.parametrize("change, words", [
    ({"reference": (19.0, 100.0)}, "reference 19/100 sandboxed"),
    ({"reference": None}, "reference not run sandboxed"),
    ({"stubs": (5.0, 100.0)}, "stubs 5/100"),
    ({"batch": (7, 8)}, "batch 7/8 reference copies at full marks"),
    ({"batch": None}, "batch not run"),
    ({"nonroot": (90.0, 100.0)}, "90/100 non-root"),
    ({"no_leak": False}, "no GPU memory leak FAILED"),
    ({"fork": None}, "no CUDA before the fork not run"),
    ({"efficient_ratio": None}, "speed lab not run"),
    ({"selftest_cuda": {"verdicts": {}, "killed": None, "mutants": None, "full": None, "variants": None,
                        "timed_out": True}},
     "selftest not finished on the GPU (timed out) (CPU 2/2, 1/1); CPU/GPU parity FAILED"),
    ({"seconds": 301.0}, "301 s"),
    ({"memory_bound": False, "cuda_cost": (0.5, None)}, "GPU memory bound FAILED; no GPU memory leak ok; "
                                                         "CUDA per submission +0.50 s, MiB unknown"),
])
def test_one_check_that_does_not_hold_fails_the_line(change, words):
    line, ok = gpu_check.summary({**_all_hold(), **change})
    assert not ok and words in line and line.endswith("-- NOT ALL HOLD")


def test_a_verdict_that_differs_between_the_devices_is_named():
    results = _all_hold()
    results["selftest_cuda"]["verdicts"]["mha-mask-plain-attribute"] = "SURVIVED"
    results["selftest_cuda"]["killed"] = 1
    line, ok = gpu_check.summary(results)
    assert not ok and "CPU/GPU parity FAILED (mha-mask-plain-attribute)" in line
    assert "device bugs 0/1 caught on the GPU" in line
    for name in ("a-variant", "b-variant", "c-variant", "d-variant"):
        results["selftest_cuda"]["verdicts"][name] = "LOST"
    line, _ = gpu_check.summary(results)
    assert "CPU/GPU parity FAILED (a-variant, b-variant, c-variant, d-variant and 1 more)" in line


def test_non_root_that_cannot_run_here_is_said_and_not_failed():
    results = {**_all_hold(), "nonroot": None, "nonroot_skipped": "non-root not run (no setpriv)"}
    line, ok = gpu_check.summary(results)
    assert ok and "reference 100/100 sandboxed, non-root not run (no setpriv);" in line


def _selftest_output(capsys):
    """What `selftest` prints, written by its own printing code."""
    from types import SimpleNamespace

    from autograder.commands import selftest

    capsys.readouterr()
    selftest._print(SimpleNamespace(kind="mutant", ok=True, id="mha-mask-plain-attribute", seconds=1.0, detail="x"))
    selftest._print(SimpleNamespace(kind="variant", ok=False, id="v-one", seconds=1.0, detail="lost 2 points"))
    return capsys.readouterr().out + "\nkill rate: 1/1 mutants caught (100%)\nvariants: 0/1 kept full marks\n"


def test_the_grader_s_real_output_is_read(capsys, tmp_path):
    grade = gpu_check.run(gpu_check.grader("grade", "solutions/ch03", "--seed", "24"), 300)
    assert grade[0] == 0 and gpu_check.grade_total(grade[1]) == (100.0, 100.0)
    listing = gpu_check.run(gpu_check.grader("selftest", "--list"), 120)[1]
    device = gpu_check.device_mutants(listing)
    assert "mha-mask-plain-attribute" in device and "causal-mask-made-in-forward-on-cpu" in device
    assert not any(m.startswith("simple-") for m in device)
    assert gpu_check.selftest_result(_selftest_output(capsys)) == {
        "verdicts": {"mha-mask-plain-attribute": "killed", "v-one": "LOST"},
        "killed": 1, "mutants": 1, "full": 0, "variants": 1}
    wire = '{"grader": [], "fork_server": [], "child": ["torch.cuda.init"], "ok": true}\nWARNING: --unsafe-no-sandbox\n'
    assert gpu_check.tripwire_ok(wire)  # its JSON line, among the warnings (the real one: tests/test_cuda_fork.py)
    assert not gpu_check.tripwire_ok(wire.replace('"ok": true', '"ok": false')) and not gpu_check.tripwire_ok("")
    batch_csv = tmp_path / "grades.csv"
    batch_csv.write_text("student,score,max_score,causal,problem\na,100,100,10,\nb,0,0,0,could not be graded\n")
    assert gpu_check.batch_scores(batch_csv) == [(100.0, 100.0), (0.0, 0.0)]
    table = "implementation  forward ms  x sdpa\nefficient             2.50   1.76x        6.35   1.63x\n"
    assert gpu_check.bench_ratio(table) == 1.76 and gpu_check.bench_ratio("") is None


def test_without_a_gpu_the_script_checks_nothing_and_says_why():
    done = subprocess.run(["bash", str(SCRIPT), "--python", sys.executable], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stdout.strip().splitlines()[-1].startswith("gpu: nothing checked (torch ")
    done = subprocess.run(["bash", str(SCRIPT), "--python", "/nonexistent/python3"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "cannot import torch" in done.stdout


FAKE_PYTHON = r"""#!/bin/sh
# stands in for the GPU machine's python3: torch imports, pyyaml is missing until pip installs it
case "$*" in
  "-c import torch") exit 0 ;;
  "scripts/gpu_check.py --missing") [ -f "$LOG.installed" ] || echo pyyaml; exit 0 ;;
  "scripts/gpu_check.py --missing --optional") [ -f "$LOG.installed" ] || echo pyyaml matplotlib; exit 0 ;;
  "-m pip install"*) echo "pip $*" >> "$LOG"; touch "$LOG.installed"; exit 0 ;;
  *) echo "gpu: checks ran with PYTHONPATH=$PYTHONPATH"; exit 0 ;;
esac
"""


def test_what_is_missing_is_installed_offline_from_the_wheels_into_a_folder_of_its_own(tmp_path):
    fake = tmp_path / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    wheels, site, log = tmp_path / "wheels", tmp_path / "site", tmp_path / "pip.log"
    wheels.mkdir()
    (wheels / "matplotlib-3.11.2-cp311-cp311-manylinux2014_x86_64.whl").write_text("")
    env = {"PATH": "/usr/bin:/bin", "LOG": str(log)}
    missing = subprocess.run(["bash", str(SCRIPT), "--python", str(fake), "--site", str(site)], capture_output=True,
                             text=True, timeout=60, env=env)
    assert missing.returncode == 2 and "missing pyyaml: give --wheels DIR" in missing.stdout and not log.exists()
    done = subprocess.run(["bash", str(SCRIPT), "--python", str(fake), "--site", str(site), "--wheels", str(wheels)],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert log.read_text().split() == ["pip", "-m", "pip", "install", "--disable-pip-version-check", "--quiet",
                                       "--no-index", "--find-links", str(wheels), "--target", str(site),
                                       "pyyaml", "matplotlib"]
    assert done.stdout.strip() == f"gpu: checks ran with PYTHONPATH={site}"


def test_the_readme_says_once_and_plainly_how_the_last_gpu_check_ended():
    """Issue 30 item 5 and issue 35 item 4: the README states in one place the last real run's outcome
    (its summary line, verbatim, as gpu_check.summary then worded it) and that it has not run since;
    its example of the summary line holds no figure that could be read as an outcome."""
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    status = "**GPU check status: the last run of `scripts/gpu-check.sh` on a GPU did not hold.**"
    assert readme.count(status) == 1 and readme.count("GPU check status") == 1
    after = readme[readme.index(status):]
    recorded = after[after.index("```\n") + 4:after.index("\n```", after.index("```\n") + 4)]
    assert recorded.startswith("gpu: reference 100/100 sandboxed") and recorded.endswith("-- NOT ALL HOLD")
    assert "H200" in after[:after.index("```")] and "2026-11-28" in after[:after.index("```")]
    assert "The check has\nnot run since those changes" in after
    form = readme[readme.index("Its last line is the summary"):readme.index(status)]
    # the form of a line that holds (100/100 is what the check requires, test_doc_figures), no measured figure
    assert "<ratio>x SDPA;\n<seconds> s`" in form or "<ratio>x SDPA; <seconds> s`" in form
    assert not re.search(r"\d+(?:\.\d+)?x SDPA|\d+ s`", form), form


def _main_with(monkeypatch, tmp_path, grades, batch=None):
    """gpu_check.main as on a GPU machine, each check replaced by a stand-in that records its call and
    sets what the real one would -> (exit status, the steps called, the log file's last contents)."""
    import json

    import gpu_probes

    called = []

    def step(name, effect=None):
        def run(r, *args):
            called.append(name)
            if effect:
                effect(r)
        return run

    monkeypatch.setattr(gpu_check, "gpu_here", lambda: (1, "a stand-in GPU"))
    monkeypatch.setattr(gpu_check, "check_grades", step("grades", grades))
    monkeypatch.setattr(gpu_check, "check_batch", step("batch", batch))
    for name in ("selftest", "fork", "speed"):
        monkeypatch.setattr(gpu_check, f"check_{name}", step(name))
    monkeypatch.setattr(gpu_probes, "check_memory", step("memory"))
    log = tmp_path / "log.json"
    status = gpu_check.main(["--log", str(log)])
    return status, called, json.loads(log.read_text())


def test_a_reference_not_graded_on_the_gpu_skips_what_needs_it_and_says_why(monkeypatch, tmp_path, capsys):
    """2026-11-28's H200 run: the reference came back not graded, then two selftests ran out the session's
    time with nothing to learn. Now the grades step says why the reference lost its points (the grader's
    last line), batch, selftest and the memory cases are skipped, the rest runs, and the line says so."""
    def not_graded(r):
        r["reference"], r["stubs"] = (0.0, 100.0), (0.0, 100.0)
        r["log"]["reference"] = (2, "scores...\nerror: the sandbox's fork server fails at its start here\n\n")

    status, called, log = _main_with(monkeypatch, tmp_path, not_graded)
    out = capsys.readouterr().out
    assert status == 1 and called == ["grades", "fork", "speed"]
    assert re.search(r"grades done at \d+ s: reference \(0.0, 100.0\), stubs \(0.0, 100.0\), non-root None; the "
                     r"reference's grade ended: error: the sandbox's fork server fails at its start here\n", out), out
    line = out.strip().splitlines()[-1]
    assert "skipped batch, selftest, memory: the reference was not at full marks on the GPU" in line
    assert line.endswith("-- NOT ALL HOLD") and log["skipped"].startswith("batch, selftest, memory")


def test_a_check_stopped_by_sigterm_still_prints_its_summary(monkeypatch, tmp_path, capsys):
    """`timeout` (the session's limit) sends SIGTERM during the batch: the steps after it do not run,
    the log holds what the earlier steps found, and the last line says where it stopped."""
    import os
    import signal

    before = signal.getsignal(signal.SIGTERM)

    def full(r):
        r["reference"], r["stubs"], r["nonroot"] = (100.0, 100.0), (0.0, 100.0), (100.0, 100.0)

    status, called, log = _main_with(monkeypatch, tmp_path, full, lambda r: os.kill(os.getpid(), signal.SIGTERM))
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert status == 1 and called == ["grades", "batch"]
    assert line.startswith("gpu: reference 100/100 sandboxed, 100/100 non-root; stubs 0/100; batch not run")
    assert re.search(r"; STOPPED \(SIGTERM\) during batch at \d+ s; \d+ s -- NOT ALL HOLD$", line), line
    assert log["reference"] == [100.0, 100.0] and log["stopped"].startswith("STOPPED (SIGTERM) during batch")
    assert signal.getsignal(signal.SIGTERM) is before  # main's own handler is gone again
