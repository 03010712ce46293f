"""Issue 38 item 7 (in part): the grader reads a submission's source once per module, walks each
tree once, and the in-process floor of benchmarks/bench_cpu.py runs again.

The source reading (autograder/source_reading.py) keeps the trees it parsed while one
submission is graded, by their text, with the list of each tree's nodes every question reads
(source_reading.nodes), and drops them when that grading ends: a second submission never gets a
tree of the first. The floor grades the solutions in this process (no sandbox), so these tests
start no fork server.
"""
import ast
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


@pytest.mark.quick
def test_a_tree_is_walked_once_per_submission_and_its_node_list_dropped_after():
    """Every question reads one list of a tree's nodes (ast.walk's order), made once per grading."""
    with source_reading.per_submission():
        tree = source_reading.parse(SOURCE)
        every = source_reading.nodes(tree)
        assert source_reading.nodes(tree) is every and every == list(ast.walk(tree))
        function = tree.body[0].body[0]
        assert source_reading.nodes(function) is source_reading.nodes(function)
    assert source_reading.nodes(tree) is not source_reading.nodes(tree)  # outside a grading, nothing kept


CYCLE = {  # a and b import * from each other: b's B is a.A when b is read first, nothing when a is
    "a": "import torch\nfrom b import *\nclass A(torch.nn.Module):\n    def forward(self, x):\n"
         "        return torch.ones(3)\n",
    "b": "from a import *\nB = A\n",
}


@pytest.mark.quick
def test_questions_asked_in_one_grading_get_the_answers_each_would_get_alone():
    """One grading shares the reading of the modules between its questions only where the answers
    cannot depend on which question came first: with a cycle of `import *` they do, and every
    question is answered as if it were the only one (the same answers as outside a grading)."""
    def ask():
        return [source_reading.cpu_tensors(CYCLE, "B", "a"), source_reading.cpu_tensors(CYCLE, "B", "b"),
                source_reading.cpu_tensors(CYCLE, "A", "b"), source_reading.cpu_tensors(CYCLE, "B", "a")]

    alone = ask()
    assert alone == [None, [("a", 5, "torch.ones")], [("a", 5, "torch.ones")], None]
    with source_reading.per_submission():
        assert ask() == alone
    acyclic = {**CYCLE, "a": CYCLE["a"].replace("from b import *\n", "")}
    with source_reading.per_submission():
        assert source_reading.reading_of(acyclic, "b") is source_reading.reading_of(acyclic, "a")  # shared
        assert source_reading.cpu_tensors(acyclic, "B", "b") == [("a", 4, "torch.ones")]
        assert source_reading.cpu_tensors(acyclic, "B", "a") is None


FLOOR = """
import ast, contextlib, json, sys
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

walk, roots, walked, gradings = ast.walk, [], [0], []
def counting_walk(node):  # every ast.walk in this process: its root, and each node it gives
    roots.append(id(node))
    for sub in walk(node):
        walked[0] += 1
        yield sub
ast.walk = counting_walk
per_submission = source_reading.per_submission
@contextlib.contextmanager
def grading():  # one grading (grading.grade_submission): its walks, and the trees it parsed
    with per_submission():
        roots.clear()
        walked[0] = 0
        yield
        trees = [tree for tree in source_reading._TREES.values() if tree is not None]
        gradings.append({"walked": walked[0], "tree_nodes": sum(1 for tree in trees for _ in walk(tree)),
                         "walks_of_each_tree": [roots.count(id(tree)) for tree in trees]})
source_reading.per_submission = grading
cpu = bench_cpu.floor(repeats=1)  # two gradings: a warm one, then the one measured
print(json.dumps({"cpu": cpu, "texts": texts, "parsed": parsed, "gradings": gradings}))
"""


@pytest.fixture(scope="module")
def floor():
    """bench_cpu.floor's two gradings of the solutions, in a process of its own (it imports the
    solutions' modules), counting parses and ast.walk's nodes."""
    run = subprocess.run([sys.executable, "-c", FLOOR, str(ROOT / "benchmarks")], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_the_in_process_floor_grades_the_reference_in_full_parsing_each_module_once(floor):
    """bench_cpu.floor grades the solutions in its process (asserting full marks itself); during each
    grading every distinct module text the source reading is given is parsed once, though it is read
    several times."""
    found = floor
    texts, parsed = found["texts"], found["parsed"]
    assert found["cpu"] > 0
    assert len(texts) > len(parsed) >= 2
    assert sorted(parsed) == sorted(2 * sorted(set(texts)))  # each text once per grading, in both gradings


def test_a_grading_walks_each_module_tree_once(floor):
    """During each of the floor's gradings of the reference, every module tree parsed is walked once
    (ast.walk from its root), and all ast.walk calls together give at most 1.5 times the nodes of
    those trees (each tree once, plus the functions the class checks read, each once: 1.19 times at
    89f0717's solutions; before the node lists were kept, 6.6 times, the largest tree walked 9 times)."""
    assert len(floor["gradings"]) == 2
    for grading in floor["gradings"]:
        assert grading["walks_of_each_tree"] and all(n == 1 for n in grading["walks_of_each_tree"]), grading
        assert grading["tree_nodes"] < grading["walked"] <= 1.5 * grading["tree_nodes"], grading
