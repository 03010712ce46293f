"""What the public tests (assignments/ch03/tests) say about each selftest mutant, in one process:

    python tests/public_verdicts.py OUT.json ID [ID ...]

writes {mutant id: {public test: its failure message}} for the named mutants of
autograder/selftest/mutants.yml, each applied to a fresh copy of the solutions and tested with the
public tests of its part (pytest.main once per mutant, in this process: torch is imported once).
test_suites.test_public_tests_and_grader_agree compares these with the grader's diagnoses.
"""
import contextlib
import io
import json
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from autograder import selftest

PUBLIC_TESTS = Path(__file__).resolve().parents[1] / "assignments" / "ch03" / "tests"


def verdicts(entry):
    with tempfile.TemporaryDirectory() as tmp:
        folder = selftest.apply(entry, Path(tmp) / "submission")
        junit = Path(tmp) / "junit.xml"
        with contextlib.redirect_stdout(io.StringIO()):
            pytest.main([str(PUBLIC_TESTS), "-p", "no:cacheprovider", "-q", "-m", entry.part,
                         f"--submission={folder}", f"--junitxml={junit}"])
        found = {}
        for case in ET.parse(junit).iter("testcase"):
            failures = [child.get("message", "") for child in case if child.tag in ("failure", "error")]
            if failures:
                found[case.get("name")] = failures[0].removeprefix("Failed: ")
        return found


def main(out, ids):
    entries = {entry.id: entry for entry in selftest.corpus() if entry.kind == "mutant"}
    Path(out).write_text(json.dumps({i: verdicts(entries[i]) for i in ids}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
