"""Issue 38 item 7 (in part): the grader reads a submission's source once per module, and the
in-process floor of benchmarks/bench_cpu.py runs again.

The source reading (autograder/source_reading.py) keeps the trees it parsed while one
submission is graded, by the text's digest, and drops them when that grading ends: a second
submission never gets a tree of the first. The floor grades the solutions in this process (no
sandbox), so these tests start no fork server.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import source_reading

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "class A:\n    def forward(self, x):\n        assert (x, 'never fires')\n        return x\n"


@pytest.mark.quick
def test_a_text_is_parsed_once_per_submission_and_never_shared_with_the_next():
    with source_reading.per_submission():
        first = source_reading.parse(SOURCE)
        assert source_reading.parse(SOURCE) is first
        other = source_reading.parse(SOURCE + "\n# another module\n")
        assert other is not first and other is not None
        assert source_reading.tuple_asserts(SOURCE, "A") == [3]
    with source_reading.per_submission():  # the next student's grading: a tree of its own
        assert source_reading.parse(SOURCE) is not first
    assert source_reading.parse(SOURCE) is not source_reading.parse(SOURCE)  # outside a grading, nothing is kept
    with source_reading.per_submission():
        assert source_reading.parse("def broken(:\n") is None and source_reading.parse("def broken(:\n") is None


@pytest.mark.quick
def test_a_tree_is_read_once_per_submission_for_what_every_check_asks():
    """What the checks read off a tree (its identifiers, the assignments onto classes, the tampering
    found) is read once per grading and kept no longer (a module that reaches sys.modules)."""
    hostile = "import sys\nclass A:\n    pass\nA.forward = lambda self, x: sys.modules\n"
    with source_reading.per_submission():
        tree = source_reading.parse(hostile)
        names = source_reading.identifiers(tree)
        assert source_reading.identifiers(tree) is names and ("sys.modules" in [t for _, _, t in names])
        assert source_reading._written_onto(tree) is source_reading._written_onto(tree)
        found = source_reading.tampering({"m": hostile})
        assert found == source_reading.tampering({"m": hostile}) and found and found[0].startswith("m.py, line 4: ")
    with source_reading.per_submission():  # the next grading reads its own tree
        assert source_reading.identifiers(source_reading.parse(hostile)) is not names
    assert source_reading.identifiers(tree) is not source_reading.identifiers(tree)  # outside a grading, nothing kept


FLOOR = """
import json, sys
sys.path.insert(0, sys.argv[1])
import bench_cpu
from autograder import source_reading

parse, real, texts, parsed = source_reading._parse, source_reading.parse, [], []
def counting(text):
    parsed.append(text)
    return parse(text)
def reading(source):
    texts.append(source[:source_reading.LIMIT])
    return real(source)
source_reading._parse, source_reading.parse = counting, reading
cpu = bench_cpu.floor(repeats=1)  # two gradings: a warm one, then the one measured
print(json.dumps({"cpu": cpu, "texts": texts, "parsed": parsed}))
"""


def test_the_in_process_floor_grades_the_reference_in_full_parsing_each_module_once():
    """bench_cpu.floor grades the solutions in its process (asserting full marks itself; here in a
    process of its own, since it imports the solutions' modules); during each grading every distinct
    module text the source reading is given is parsed once, though it is read several times."""
    run = subprocess.run([sys.executable, "-c", FLOOR, str(ROOT / "benchmarks")], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    texts, parsed = found["texts"], found["parsed"]
    assert found["cpu"] > 0
    assert len(texts) > len(parsed) >= 2
    assert sorted(parsed) == sorted(2 * sorted(set(texts)))  # each text once per grading, in both gradings
