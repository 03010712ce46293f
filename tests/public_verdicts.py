"""What the public tests (assignments/ch03/tests) say about submissions, many in one process:

    python tests/public_verdicts.py OUT.json ID [ID ...]
    python tests/public_verdicts.py --folders RUNS.json OUT.json

The first writes {entry id: {public test: its failure message}} for the named mutants and variants of
autograder/selftest/ (mutants.yml, variants.yml), each applied to a fresh copy of the solutions and tested with the
public tests of its part and of the parts that build on it (dependents: a failure of theirs is named
"<their file>::<test>"); test_suites.test_public_tests_and_grader_agree compares these with the
grader's diagnoses. The second runs the public tests on the folders RUNS.json names ({key: {"folder":
DIR, "marker": a -m expression, "skipped": whether a skipped test's message counts}}) and writes {key:
{"output": what pytest printed, "outcomes": {public test: its failure message, "skipped: <message>",
or None}}} (tests/test_public_diagnoses.py). Either way pytest.main runs once per submission, in this
process: torch is imported once, not once per submission (issue 38 item 6).
"""
import contextlib
import io
import json
import os
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from autograder import selftest

PUBLIC_TESTS = Path(__file__).resolve().parents[1] / "assignments" / "ch03" / "tests"
# pytest plugins that judge nothing here and cost the most per run: unraisableexception collects
# garbage five times at every session's end (with torch loaded, about 0.2 s each: half of a run's CPU
# over 77 mutants, measured 2026-11-28), xdist and anyio load for nothing; outcomes are the same without
# them (test_suites.test_public_tests_and_grader_agree, test_public_diagnoses read them)
QUIET_PLUGINS = ("-p", "no:cacheprovider", "-p", "no:unraisableexception", "-p", "no:xdist", "-p", "no:anyio")
# pytest's own plugins that nothing here uses (no fixture of theirs is asked for, no option of theirs given): each
# is registered, and its fixtures parsed, at every run's start; the logging plugin alone attached its handler to
# each of torch's non-propagating loggers three times per test (about 8 % of a run's CPU, cProfile 2026-11-29).
# What pytest prints and the outcomes are the same without them (the outputs of both modes compared byte for byte,
# times aside, for every corpus entry and every run of test_public_diagnoses, 2026-11-29)
IDLE_PLUGINS = tuple(arg for name in ("logging", "doctest", "pastebin", "setuponly", "setupplan", "stepwise",
                                      "faulthandler", "threadexception", "subtests", "legacypath", "tmpdir",
                                      "monkeypatch", "recwarn")
                     for arg in ("-p", f"no:{name}"))


def no_seeds_for_absent_devices():
    """torch.manual_seed(s), which the public tests call as the book does (about 39 times a run), also queues s
    for every CUDA, XPU and MTIA device, to be set when one is first used; with none there, each queueing formats
    the whole Python stack, pytest's included (about 3 ms at a test's depth: 1000 calls 2.9 s against 0.01 s
    for the CPU generator's seed alone, measured 2026-11-29), for a seed no device will take. Here, where no such
    device exists, the queueing is skipped: the CPU generator is seeded as before, so no value and no outcome
    changes. Only this harness does it, never the grader or a student's run."""
    import torch

    for backend in (torch.cuda, torch.xpu, torch.mtia):
        if not backend.is_available():
            backend.manual_seed_all = lambda seed: None


def dependents(part):
    """The parts whose public tests build on `part`'s code (the grader's dependencies.DEPENDS and MAY_USE, read
    the other way): a mistake in `part` must fail none of their tests (they wait for it, or pass)."""
    from autograder.suites.dependencies import DEPENDS, MAY_USE

    return sorted({user for table in (DEPENDS, MAY_USE) for user, used in table.items() if part in used})


def public_run(folder, marker, skipped=False, own=None):
    """The public tests of `marker` on the modules of `folder` -> (what pytest printed, {test name:
    failure message or None}); skipped: a skipped test's message too, as "skipped: <message>"; own: a part,
    whose tests are named by their name, the others' as "<their file>::<name>" ("": every test so)."""
    # the notes a run prints at its end (conftest.NOTES) are its own, as in a student's one run: pytest keeps the
    # public tests' conftest imported from one run to the next in this process, and its list with it
    notes = getattr(sys.modules.get("conftest"), "NOTES", None)
    if isinstance(notes, list):
        notes.clear()
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            pytest.main([str(PUBLIC_TESTS), *QUIET_PLUGINS, *IDLE_PLUGINS, "-q", "-m", marker,
                         f"--submission={folder}", f"--junitxml={junit}"])
        outcomes = {}
        for case in ET.parse(junit).iter("testcase"):
            failures = [child.get("message", "") for child in case if child.tag in ("failure", "error")]
            failures += [f"skipped: {child.get('message', '')}" for child in case if skipped and child.tag == "skipped"]
            file = case.get("classname", "").rsplit(".", 1)[-1]
            name = case.get("name") if own is None or file == f"test_{own}" else f"{file}.py::{case.get('name')}"
            outcomes[name] = failures[0].removeprefix("Failed: ") if failures else None
        return printed.getvalue(), outcomes


def verdicts(entry):
    """{public test: its failure message} for a corpus entry: a mutant's part's tests and its dependents' (named
    "<their file>::<test>"); a variant's (correct code), the tests of every part it edits and of their dependents,
    every one named "<its file>::<test>" (none may fail)."""
    if entry.kind == "mutant":
        parts, own = [entry.part, *dependents(entry.part)], entry.part
    else:
        edited = sorted({edit.module for edit in entry.edits})
        parts, own = sorted({*edited, *(user for part in edited for user in dependents(part))}), ""
    with tempfile.TemporaryDirectory() as tmp:
        _, outcomes = public_run(selftest.apply(entry, Path(tmp) / "submission"), " or ".join(parts), own=own)
        return {name: message for name, message in outcomes.items() if message is not None}


def main(out, ids):
    entries = {entry.id: entry for entry in selftest.corpus()}
    Path(out).write_text(json.dumps({i: verdicts(entries[i]) for i in ids}, indent=1), encoding="utf-8")


def main_folders(runs, out):
    found = {}
    for key, run in json.loads(Path(runs).read_text(encoding="utf-8")).items():
        output, outcomes = public_run(run["folder"], run["marker"], run.get("skipped", False))
        found[key] = {"output": output, "outcomes": outcomes}
    Path(out).write_text(json.dumps(found, indent=1), encoding="utf-8")


if __name__ == "__main__":
    # no plugin loaded from the installed packages' entry points: pytest reads every package's metadata to
    # find them at each run's start (a fifth of a run's CPU here), and none of them judges anything here
    # (xdist and anyio are turned off above; the outcomes are the same, test_suites reads them)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    from autograder.engine import one_thread

    one_thread()  # tiny tensors: one thread is faster, the more so on a busy machine
    no_seeds_for_absent_devices()
    # pytest imports the public tests' conftest.py again at each run, rewriting its asserts each time unless it
    # can keep the rewritten code (PYTHONDONTWRITEBYTECODE, set in CI, forbids it): about 22 ms a run. Kept for
    # this process's runs in a folder of its own (pytest honours sys.pycache_prefix), never in assignments/.
    with tempfile.TemporaryDirectory() as bytecode:
        sys.pycache_prefix, sys.dont_write_bytecode = bytecode, False
        if sys.argv[1] == "--folders":
            main_folders(sys.argv[2], sys.argv[3])
        else:
            main(sys.argv[1], sys.argv[2:])
