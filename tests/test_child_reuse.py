"""The parts of one visibility group take turns in one child (runner.run_submission), and a child
that keeps anything of a part is replaced before the next (sandbox/part_reset.py).

Each leftover below would break every later part of its group if the child were reused as it is:
the test proves the child is replaced (more children than groups) and that every other part keeps
full marks. Without leftovers a submission costs one child per visibility group.
"""
import shutil
from pathlib import Path

import pytest

from autograder import grading
from autograder.sandbox import client

ROOT = Path(__file__).resolve().parents[1]

LEFTOVERS = {
    # a function of torch replaced at import: every later softmax would be zeros
    "patched_function": "torch.softmax = lambda x, dim=-1, **kw: torch.zeros_like(x)\n",
    # a global forward hook: every later module's output would be zeros
    "global_hook": ("torch.nn.modules.module.register_module_forward_hook(\n"
                    "    lambda module, args, out: out * 0 if isinstance(out, torch.Tensor) else out)\n"),
    # a thread that keeps replacing torch.matmul while the later parts run
    "thread": ("import threading, time\n"
               "def _spoil():\n"
               "    while True:\n"
               "        torch.matmul = lambda a, b: torch.zeros(())\n"
               "        time.sleep(0.001)\n"
               "threading.Thread(target=_spoil, daemon=True).start()\n"),
    # a process left running, a file in /tmp, a global switch: harmless to the numbers, still replaced
    "process": "import os\nif os.fork() == 0:\n    import time\n    time.sleep(60)\n    os._exit(0)\n",
    "temporary_file": "open('/tmp/left-behind', 'w').write('x')\n",
    "numpy_errors": "import numpy\nnumpy.seterr(all='raise')\n",
}


# forgotten by the reset itself: the child takes the next part
FORGOTTEN = {
    # a fake module where a later part looks for its class
    "fake_module": "import sys, types\nsys.modules['causal'] = types.ModuleType('causal')\n",
    # another module of the submission, changed once imported: a later part imports it afresh
    "changed_module": "import causal\ncausal.CausalAttention = None\n",
}


@pytest.fixture
def children(monkeypatch):
    """Counts the children the grader opens."""
    opened = []
    part = client.Session.part

    def counting(self, *args, **kwargs):
        opened.append(args)
        return part(self, *args, **kwargs)

    monkeypatch.setattr(client.Session, "part", counting)
    return opened


def groups(rubric):
    return {check.visibility for part in rubric.parts.values() for check in part.checks.values()}


def submission(tmp_path, leftover=""):
    folder = tmp_path / "student"
    shutil.copytree(ROOT / "solutions" / "ch03", folder, ignore=shutil.ignore_patterns("__pycache__"))
    if leftover:
        with open(folder / "simple_attention.py", "a") as f:
            f.write("\n" + leftover)
    return folder


def test_one_child_per_visibility_group(engine, tmp_path, children):
    rubric, suites, sandbox = engine
    grade = grading.grade_submission(submission(tmp_path), rubric, suites, sandbox, seed=1)
    assert grade.score == grade.max_score, [(c.part, c.name, c.message) for c in grade.checks if not c.passed]
    assert len(children) == len(groups(rubric)), children


@pytest.mark.parametrize("leftover", sorted(LEFTOVERS))
def test_a_child_that_keeps_a_part_is_replaced(engine, tmp_path, children, leftover):
    rubric, suites, sandbox = engine
    grade = grading.grade_submission(submission(tmp_path, LEFTOVERS[leftover]), rubric, suites, sandbox, seed=1)
    lost = [(c.part, c.name, c.message) for c in grade.checks if not c.passed and c.part != "simple_attention"]
    assert lost == [], f"{leftover}: a later part lost points to simple_attention.py's leftover"
    assert len(children) > len(groups(rubric)), f"{leftover}: the child was reused after simple_attention"


@pytest.mark.parametrize("leftover", sorted(FORGOTTEN))
def test_a_reset_child_forgets_the_submission_modules(engine, tmp_path, children, leftover):
    rubric, suites, sandbox = engine
    grade = grading.grade_submission(submission(tmp_path, FORGOTTEN[leftover]), rubric, suites, sandbox, seed=1)
    lost = [(c.part, c.name, c.message) for c in grade.checks if not c.passed and c.part != "simple_attention"]
    assert lost == [], f"{leftover}: a later part lost points to simple_attention.py's leftover"
    assert len(children) == len(groups(rubric)), f"{leftover}: the reset should have been enough"
