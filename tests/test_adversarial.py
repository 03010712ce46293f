"""The adversarial corpus (issue 4): hostile submissions graded through the real engine.

Each case is a copy of solutions/ch03 with one module replaced (cases/<case>/<module>.py), or
with attack code appended to the correct module (<module>.append.py), or extra files added; a
few cases (zips, symlinks) are built here. Every test grades its case with the real rubric
(the attacked part's timeout cut to 3 s, so loops die fast; the other parts keep theirs, as
the heavier suites can take 3 s on a busy 2-core machine) in one shared fork server, and
states the expected outcome: the attacked part's score and messages, full marks for the parts
that do not use the attacked module, and where it matters that no process, file, connection
or secret got out.

To stay fast, a case is graded on the attacked part plus two unrelated "witness" parts graded
after it in the same fork server (full marks expected); the cases about state that could carry
over between parts (shadowing files, global state, signals, the control) grade every part.

Cases with a "baseline" are built twice: attack on and attack off (the same wrong math without
the tricks); the attack must not pass a single check the baseline fails.

The walls (namespaces, a uid of its own, hidden folders) need root on Linux; without it the
cases that depend on them are skipped, the others still run.
"""
import dataclasses
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from pathlib import Path

import process_ends
import pytest
from rubric_points import PART, TOTAL, g
from shared_engine import open_engine

from autograder import PARTS, PROJECT_ROOT, grading, reports
from autograder.engine import Engine
from autograder.rubric import Rubric
from autograder.sandbox.client import UIDS_PER_SLOT, Sandbox, _first_uid
from autograder.settings import UIDS_ENV

CASES = Path(__file__).resolve().parent / "adversarial" / "cases"
SOLUTIONS = PROJECT_ROOT / "solutions" / "ch03"
TIMEOUT = 3
# the cases that only burn CPU until they are killed (an endless loop, a fork storm): each second of the
# limit is a second of CPU burnt, on a machine the whole suite shares (issue 38 item 6)
LOOP_TIMEOUT = 1
MEMORY_TIMEOUT = 120  # the memory tests: the memory limit decides, never a loaded machine's clock
TOKEN = uuid.uuid4().hex[:12]
SECRET_NAME, SECRET = "GRADER_SECRET_TOKEN", f"s3cr3t-{TOKEN}"
SLOT = 300 + os.getpid() % 600  # a uid of this run's own, so parallel runs never share one
SANDBOX_UID_BASE = _first_uid()
# every uid this run's sandbox may give a submission (one per submission, from the slot's block)
SANDBOX_UID = set(range(SANDBOX_UID_BASE + SLOT * UIDS_PER_SLOT, SANDBOX_UID_BASE + (SLOT + 1) * UIDS_PER_SLOT))
FULL_WALLS = sys.platform == "linux" and os.geteuid() == 0
walls = pytest.mark.skipif(not FULL_WALLS, reason="the sandbox's walls (namespaces, own uid) need root on Linux")

# which parts use a module (the suites reach it): attacking it may cost these parts points, no others
IMPORTED_BY = {"causal": {"causal", "mha", "exercises"}, "mha": {"mha", "exercises"},
               "self_attention_v1": {"self_attention_v1", "weight_transfer"},
               "self_attention_v2": {"self_attention_v2", "weight_transfer"}}
# cheap parts that use nothing of the attacked module, graded after it: they must keep full marks
WITNESSES = {"simple_attention": ("exercises", "numpy_attention"), "numpy_attention": ("simple_attention", "exercises"),
             "causal": ("simple_attention", "numpy_attention"), "weight_transfer": ("simple_attention", "numpy_attention"),
             "exercises": ("simple_attention", "numpy_attention")}

# what only the grader may see: none of it may ever show up in a grade
HIDDEN_TEXT = ("### BEGIN SOLUTION", "def test_", "causal_attention_seed123", "memory_mb")


# ---------------------------------------------------------------- building and grading cases

def build(case, dest, attack="on", **values):
    """solutions/ch03 + the case's files (none for case None) -> a submission folder, with
    @@NAME@@ in the case's files filled from values."""
    values = {"ATTACK": attack, "TOKEN": TOKEN, "PROJECT": str(PROJECT_ROOT), **values}
    folder = Path(dest) / f"{case or 'solutions'}-{attack}"
    folder.mkdir(parents=True)
    for module in SOLUTIONS.glob("*.py"):
        shutil.copyfile(module, folder / module.name)
    for source in sorted((CASES / case).iterdir()) if case else ():
        text = source.read_text()
        for name, value in values.items():
            text = text.replace(f"@@{name}@@", str(value))
        if source.name.endswith(".append.py"):
            target = folder / source.name.replace(".append.py", ".py")
            target.write_text(target.read_text() + "\n\n" + text)
        else:
            (folder / source.name).write_text(text)
    return folder


class AttackEngine(Engine):
    """The production Engine (autograder.engine), grading with the real rubric cut to the attacked
    part and its witnesses, the attacked part under this module's limits."""

    def grade(self, path, parts=None, attacked=None, **limits):
        """Grade with the real rubric, on the given parts only (in rubric order) when parts is set;
        the attacked part gets TIMEOUT seconds (and limits, e.g. memory_mb, when given)."""
        chosen = {p: part for p, part in self.rubric.parts.items() if parts is None or p in parts}
        if attacked in chosen:
            chosen[attacked] = dataclasses.replace(chosen[attacked], **{"timeout": TIMEOUT, **limits})
        return super().grade(path, rubric=Rubric(self.rubric.path, chosen))


def grade_case(engine, tmp_path, case, attacked, every_part=False, attack="on", limits=None, **values):
    """Build a case and grade its attacked part and the witnesses (or every part)."""
    parts = None if every_part else (attacked, *WITNESSES[attacked])
    grade = engine.grade(build(case, tmp_path, attack, **values), parts, attacked, **(limits or {}))
    assert set(grade.parts) == set(parts or PARTS)
    return grade


@pytest.fixture(scope="module")
def outside():
    """A folder outside /tmp, the project and $HOME (which every child has hidden anyway), holding
    another student's submission (class/) and a batch OUT folder (out/), each with a sentinel."""
    bases = [b for b in ("/srv", "/var/lib", "/opt", "/mnt") if os.path.isdir(b) and os.access(b, os.W_OK)]
    base = Path(tempfile.mkdtemp(prefix=f"ch03-adversarial-{TOKEN}-", dir=bases[0] if bases else None))
    (base / "class" / "bob").mkdir(parents=True)
    (base / "class" / "bob" / "simple_attention.py").write_text(f"# BOB-SENTINEL-{TOKEN}\n")
    (base / "class" / "bob" / "notes.txt").write_text(f"BOB-SENTINEL-{TOKEN}\n")
    (base / "out" / "results").mkdir(parents=True)
    (base / "out" / "results" / "bob.json").write_text(json.dumps({"note": f"OUT-SENTINEL-{TOKEN}"}))
    (base / "out" / "grades.csv").write_text(f"student,score\nbob,OUT-SENTINEL-{TOKEN}\n")
    os.chmod(base, 0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def engine(outside, session_engines):
    """The real rubric and one fork server for the whole corpus, started with a secret in the
    grader's environment, which holds it while the module's cases run; the class/out folders are
    outside the room (nothing names them to it). One engine for this module and
    test_adversarial_reports (tests/conftest.py's session_engines, issue 38 item 6: its fork server
    was started twice), opened by the first of them, under the secret."""
    previous = os.environ.get(SECRET_NAME)
    os.environ[SECRET_NAME] = SECRET
    try:
        if "adversarial" not in session_engines:
            session_engines["adversarial"] = open_engine(AttackEngine, slot=SLOT)
        yield session_engines["adversarial"]
    finally:
        if previous is None:
            os.environ.pop(SECRET_NAME, None)
        else:
            os.environ[SECRET_NAME] = previous


@pytest.fixture(autouse=True)
def nothing_left_behind(request):
    """After every case: the fork server is alive and no process of the sandbox's uid is left."""
    yield
    if "engine" in request.fixturenames and FULL_WALLS:
        engine = request.getfixturevalue("engine")
        assert engine.sandbox.process.poll() is None, "the fork server died"
        assert wait_no_processes(SANDBOX_UID) == [], "processes of the sandbox's uid outlived the grading"


# ---------------------------------------------------------------- what a grade must show

def processes_of(uids):
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) in uids:
                            found.append(int(entry))
                        break
        except OSError:
            pass
    return found


def wait_no_processes(uids):
    """[] once no process of the uids is left; the survivors as soon as one is (tests/process_ends.py: read
    from /proc, never a wall clock a busy machine outlasts)."""
    return process_ends.wait_ended(lambda: processes_of(uids))


def run_watching(command, env, timeout=600):
    """Run command, sampling its process tree every 20 ms -> (returncode, stdout, stderr, every process seen)."""
    seen = set()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=out, stderr=err)
        deadline = time.monotonic() + timeout
        while process.poll() is None:
            seen |= process_ends.descendants(process.pid, uids=True)
            if time.monotonic() > deadline:
                process.kill()
            time.sleep(0.02)
        out.seek(0)
        err.seek(0)
        return process.returncode, out.read().decode(), err.read().decode(), seen


def part_checks(grade, part):
    return [c for c in grade.checks if c.part == part]


def passed(grade, part):
    return {c.name for c in part_checks(grade, part) if c.passed}


def messages(grade, part):
    """What the grader says of each failed check: its diagnosis and the student's own error text."""
    return [f"{c.message} {c.student_text}".strip() for c in part_checks(grade, part) if not c.passed]


def everything(grade):
    """All a grade says, in every form it is written out."""
    return "\n".join([json.dumps(reports.results_json(grade)), reports.table(grade), reports.markdown(grade),
                      reports.junit_xml(grade), json.dumps(grade.output),
                      json.dumps({part: dataclasses.asdict(p) for part, p in grade.parts.items()})])


def assert_full_marks(grade, parts):
    for part in parts:
        p = grade.parts[part]
        failing = [f"{c.name}: {c.message}" for c in part_checks(grade, part) if not c.passed]
        assert p.score == p.max_score > 0, f"{part} lost points: {failing} {p.problem}"


def assert_others_keep_full_marks(grade, attacked):
    affected = IMPORTED_BY.get(attacked, {attacked})
    assert_full_marks(grade, [p for p in grade.parts if p not in affected])


def assert_part_zero(grade, part, *substrings):
    """Every check of the part failed, each message saying all of substrings."""
    assert grade.parts[part].score == 0, f"{part} kept points: {passed(grade, part)}"
    for message in messages(grade, part):
        for s in substrings:
            assert s in message, f"{s!r} not in {part} message {message!r}"


def assert_no_better_than_baseline(engine, tmp_path, case, part):
    """The attack passes no check that the same wrong math without the attack fails."""
    attacked = grade_case(engine, tmp_path, case, part)
    baseline = engine.grade(build(case, tmp_path, "off"), [part], part)
    assert baseline.parts[part].score < baseline.parts[part].max_score, "the baseline should be wrong math"
    assert passed(attacked, part) <= passed(baseline, part), \
        f"the attack passed {passed(attacked, part) - passed(baseline, part)} that the plain wrong math fails"
    assert attacked.parts[part].score <= baseline.parts[part].score
    assert_others_keep_full_marks(attacked, part)
    return attacked


def test_solutions_get_full_marks(engine):
    """Control: the unmodified reference solutions get every point through the same fork server."""
    grade = engine.grade(SOLUTIONS)
    assert sorted(grade.parts) == sorted(PARTS)
    assert_full_marks(grade, PARTS)
    assert grade.score == grade.max_score == engine.rubric.max_score


# ---------------------------------------------------------------- exits

@pytest.mark.quick
@pytest.mark.parametrize("case, says", [
    ("exit_sys_exit_at_import", "sys.exit(0)"),
    ("exit_raise_systemexit_at_import", "sys.exit(None)"),
    ("exit_keyboard_interrupt_at_import", "KeyboardInterrupt"),
    ("exit_os_exit_at_import", "exited"),
])
def test_exit_at_import(engine, tmp_path, case, says):
    """Threat: stop the grader by exiting (sys.exit, raise SystemExit, KeyboardInterrupt,
    os._exit) while the module is imported. Only that part is lost, the grading goes on."""
    grade = grade_case(engine, tmp_path, case, "simple_attention")
    assert_part_zero(grade, "simple_attention", says)
    assert_others_keep_full_marks(grade, "simple_attention")
    if case == "exit_os_exit_at_import":  # the status on visible checks only (a fixed phrase on hidden ones)
        assert "exited with status 0" in grade.parts["simple_attention"].problem
        for check in part_checks(grade, "simple_attention"):
            assert ("exited with status 0" in check.message) == (check.visibility == "visible"), check


def test_sys_exit_in_a_function(engine, tmp_path):
    """Threat: sys.exit(3) inside one function. The checks that call it fail, saying so; the
    part's other checks and the other parts still pass."""
    grade = grade_case(engine, tmp_path, "exit_sys_exit_in_function", "simple_attention")
    part = grade.parts["simple_attention"]
    assert 0 < part.score < part.max_score
    assert messages(grade, "simple_attention")
    assert all("sys.exit(3)" in m for m in messages(grade, "simple_attention"))
    assert_others_keep_full_marks(grade, "simple_attention")


def test_os_exit_in_a_method(engine, tmp_path):
    """Threat: os._exit(7) inside CausalAttention.forward kills the part's process mid-check.
    That part reports the exit status; the parts that do not import causal keep full marks."""
    grade = grade_case(engine, tmp_path, "exit_os_exit_in_method", "causal")
    part = grade.parts["causal"]
    assert part.score < part.max_score
    assert "exited with status 7" in part.problem
    failed = [c for c in part_checks(grade, "causal") if not c.passed]
    assert all("exited with status 7" in c.message for c in failed if c.visibility == "visible")
    from autograder.suites import vocabulary  # after a hidden input: the grader's fixed phrase (issue 37.6)

    assert all(vocabulary.ENDED in c.message for c in failed if c.visibility == "hidden")
    assert any(c.visibility == "hidden" for c in failed)
    assert_others_keep_full_marks(grade, "causal")


# ---------------------------------------------------------------- lying to the comparisons

@pytest.mark.parametrize("case, part", [
    ("patch_torch_comparisons", "simple_attention"),
    ("patch_numpy_and_builtins", "numpy_attention"),
    ("tensor_subclass_lies", "simple_attention"),
    ("ndarray_subclass_lies", "numpy_attention"),
    ("patched_pytest_internals", "simple_attention"),
])
def test_lying_comparisons_buy_nothing(engine, tmp_path, case, part):
    """Threat: wrong math plus monkeypatched torch.allclose / torch.testing.assert_close /
    numpy.testing / builtins.abs, a tensor (or ndarray) subclass whose __torch_function__
    (__array_ufunc__) says "equal", or pytest's internals patched to pass. The checks judge plain
    numbers in the grader's process, so the part scores exactly as the plain wrong math does."""
    assert_no_better_than_baseline(engine, tmp_path, case, part)


def test_a_transfer_that_copies_nothing_earns_nothing(engine, tmp_path):
    """Threat: Exercise 3.1 "passed" without copying a weight: sa_v1's forward replaced and a forward
    hook that answer with sa_v2's output (its own matrices kept in the graph, so gradients reach them),
    and a state_dict that says sa_v1 holds sa_v2's weights. Before, such a transfer earned all 8 points
    (one that only replaced the forward, 6): the checks judged sa_v1's outputs, and its weights only
    through its own state_dict. What sa_v1 holds is now read from its registries: every check of the
    part fails, saying the matrices were not changed, exactly as for the transfer that does nothing."""
    attacked = assert_no_better_than_baseline(engine, tmp_path, "weight_transfer_rewired", "weight_transfer")
    assert attacked.parts["weight_transfer"].score == 0
    assert_part_zero(attacked, "weight_transfer", "was not changed by the transfer")


@pytest.mark.quick
def test_what_a_module_holds_is_read_from_its_registries():
    """inside/child.registered (in-process): an honest module's parameters come in named_parameters' order;
    a module whose class and instance lie (named_parameters, state_dict, named_buffers, __getattr__)
    gives what its registries hold, never what it says of itself."""
    import torch

    from autograder.inside.child import registered

    class Honest(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Parameter(torch.ones(2))
            self.inner = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1))
            self.register_buffer("mask", torch.zeros(3, 3))

    class Liar(Honest):
        def named_parameters(self, *args, **kwargs):
            yield "a", torch.nn.Parameter(torch.full((2,), 7.0))

        def state_dict(self, *args, **kwargs):
            return {"a": torch.full((2,), 7.0)}

    honest, liar = Honest(), Liar()
    liar.named_buffers = lambda *args, **kwargs: iter([("fake", torch.ones(1))])
    object.__setattr__(liar, "a", torch.full((2,), 9.0))  # an instance attribute hiding the parameter
    held = registered(honest)
    assert list(held["parameters"]) == [name for name, _ in honest.named_parameters()]
    assert list(held["buffers"]) == ["mask"]
    lied = registered(liar)
    assert list(lied["parameters"]) == list(held["parameters"]) and list(lied["buffers"]) == ["mask"]
    assert torch.equal(lied["parameters"]["a"], torch.ones(2))
    assert registered(5) == {"parameters": {}, "buffers": {}}


@pytest.mark.quick
def test_a_module_s_structure_is_read_from_its_registries():
    """inside/child.describe (in-process; the structure checks read it: v1_weight_matrices, v2_linear_layers,
    the causal mask's buffer, mha's structure, parameter names for loading weights). Expected: for honest
    modules (the reference's, one with a layer registered twice, a non-persistent buffer and a bias-less
    Linear) exactly what named_parameters, named_buffers, state_dict, named_children and .training say;
    for a module whose class lies through those methods and a `training` it answers itself, what its
    registries hold; an object that is not a module: TypeError."""
    import sys

    import torch

    from autograder.inside.child import describe

    sys.path.insert(0, str(SOLUTIONS))
    try:
        import causal
        import mha
        import self_attention_v1
        import self_attention_v2
    finally:
        sys.path.remove(str(SOLUTIONS))

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(3, 3, bias=False)
            self.b = self.a  # one layer under two names: named_* give it once, state_dict twice
            self.register_buffer("kept", torch.ones(2))
            self.register_buffer("dropped", torch.ones(2), persistent=False)

    def said(module):
        return {"class": type(module).__name__, "training": module.training,
                "parameters": [(n, tuple(p.shape), str(p.dtype)) for n, p in module.named_parameters()],
                "buffers": [(n, tuple(b.shape), str(b.dtype)) for n, b in module.named_buffers()],
                "state_dict": list(module.state_dict()), "children": [(n, type(m).__name__) for n, m in module.named_children()]}

    wrapper = mha.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2).eval()
    honest = [causal.CausalAttention(3, 2, 6, 0.5), mha.MultiHeadAttention(4, 6, 8, 0.0, num_heads=2), wrapper,
              self_attention_v1.SelfAttention_v1(3, 2), self_attention_v2.SelfAttention_v2(3, 2), Tied()]
    for module in honest:
        assert describe(module) == said(module), type(module).__name__

    class Liar(torch.nn.Module):  # matrices as bare parameters, claiming the book's Linear layers and eval mode
        def __init__(self):
            super().__init__()
            self.W_query = torch.nn.Parameter(torch.ones(3, 2))

        def named_parameters(self, *args, **kwargs):
            yield "W_query.weight", torch.nn.Parameter(torch.ones(2, 3))

        def named_children(self):
            yield "W_query", torch.nn.Linear(3, 2, bias=False)

        def state_dict(self, *args, **kwargs):
            return {"W_query.weight": torch.ones(2, 3)}

        def __getattribute__(self, name):
            return False if name == "training" else super().__getattribute__(name)

    liar = Liar()
    assert liar.training is False and said(liar)["children"] == [("W_query", "Linear")]
    assert describe(liar) == {"class": "Liar", "training": True, "parameters": [("W_query", (3, 2), "torch.float32")],
                              "buffers": [], "state_dict": ["W_query"], "children": []}
    with pytest.raises(TypeError, match="not a torch.nn.Module"):
        describe(object())


def test_gpt2_s_parameter_count_without_attention_earns_nothing(engine, tmp_path):
    """Threat: Exercise 3.3's printed parameter count replayed by a module that computes no attention
    (nn.Linear(768, 3073, bias=False): 2,360,064 parameters). Before, it earned ex33_parameter_count's 2
    points: a module the grader did not see built as MultiHeadAttention was judged by its count alone.
    The count earns its points only with the hidden check of the same module's heads and context
    (grading.yml requires): Exercise 3.2 keeps its 4 points, Exercise 3.3 scores 0, as the same layer
    without the count does."""
    attacked = assert_no_better_than_baseline(engine, tmp_path, "exercises_parameter_count_only", "exercises")
    assert attacked.parts["exercises"].score == PART["exercises"] - 4
    checks = {c.name: c for c in attacked.checks if c.part == "exercises"}
    assert not checks["ex33_parameter_count"].passed and not checks["ex33_heads_and_context"].passed
    assert checks["ex33_parameter_count"].voided_by == ("ex33_heads_and_context",)
    assert checks["ex33_parameter_count"].message == grading.GATED


def test_heads_changed_by_mha_py_are_charged_to_mha(engine, tmp_path):
    """Threat: mha.py changes what causal.py's CausalAttention computes in mha's part (each head doubles its
    output: CausalAttention.forward replaced at import, the wrapper hooking its heads, or a forward hook on
    every module), so the wrapper's output is twice the book's while its forward still concatenates its
    heads. Before, mha kept 22 of 22 (20 with the heads hooked) and causal 22: the wrapper's checks put a
    difference between the wrapper and the book down to CausalAttention (graded in causal) whenever the
    output was its heads' side by side and the heads held the seed's weights. A difference is
    CausalAttention's only where causal.py is wrong on its own (the dependency probe, which imports causal.py
    alone); where it is right (and a head runs code of mha.py or is hooked), or the heads are the grader's
    own, the part's code changed them: the wrapper's seeded checks fail, as with the wrapper that doubles its
    output itself, and causal keeps its 22 points."""
    parts = ("causal", "mha")
    for attack in ("on", "hook", "global", "off"):
        grade = engine.grade(build("mha_changes_causal_heads", tmp_path, attack), parts, "mha")
        assert grade.parts["causal"].score == PART["causal"], attack
        failed = {c.name for c in part_checks(grade, "mha") if not c.passed}
        assert {"wrapper_book_example", "wrapper_unseen_seed"} <= failed, (attack, failed)
        assert not {n for n in failed if n.startswith("mha_")}, (attack, failed)  # the efficient class is untouched
        if attack != "off":
            said = " ".join(messages(grade, "mha"))
            assert "compute differently from CausalAttention as causal.py defines it" in said, said
        assert grade.parts["mha"].score <= PART["mha"] - 3, (attack, grade.parts["mha"])


@pytest.mark.parametrize("attack", ["thread", "fork", "orphan", "helper", "numpy"])
def test_a_head_loop_run_outside_the_counted_thread_earns_nothing(engine, tmp_path, attack):
    """Threat: MultiHeadAttention loops over its heads (a matmul and a softmax per head) where the batching
    check's counter, a dispatch mode torch keeps per thread, sees none of its operations: in another thread,
    in a process it forks (waited for or not), in a helper process forked twice at import (whose parent is
    the session's leader), or in NumPy on its tensors' values; written with map, so the grader's reading of
    mha.py finds no loop either. Before, each earned mha_batches_the_heads (mha 22 of 22 with the thread, 19
    with a process or NumPy: the loop cut off from autograd). The child now tells work done outside the
    counting thread during the forward (inside/counting.Elsewhere: other threads' CPU time, children waited
    for, any other process of the part) and values read out of torch (counting.LEAVES_TORCH: .numpy(),
    __array__, .tolist(), ...): the check fails and names it, as the same loop run in forward itself fails it."""
    grade = engine.grade(build("mha_head_loop_elsewhere", tmp_path, attack), ["mha"], "mha")
    checks = {c.name: c for c in part_checks(grade, "mha")}
    assert not checks["mha_batches_the_heads"].passed, grade.parts["mha"]
    assert "runs work in another thread or process" in checks["mha_batches_the_heads"].message
    baseline = engine.grade(build("mha_head_loop_elsewhere", tmp_path, "off"), ["mha"], "mha")
    assert {c.name for c in part_checks(baseline, "mha") if not c.passed} == {"mha_batches_the_heads"}
    assert grade.parts["mha"].score <= baseline.parts["mha"].score == PART["mha"] - 2


def test_grader_detection_with_book_outputs(engine, tmp_path):
    """Threat: recognise the book's inputs and return the book's printed outputs, garbage
    otherwise. The checks that replay a printed example do pass as such, but each earns its points
    only with the checks of the same function on inputs the book never prints (grading.yml
    `requires`), which fail: the detection earns not one point over the same garbage without it."""
    grade = grade_case(engine, tmp_path, "grader_detection", "causal")
    baseline = engine.grade(build("grader_detection", tmp_path, "off"), ["causal"], "causal")
    gained = passed(grade, "causal") - passed(baseline, "causal")
    assert not gained, f"replaying the book earned {gained}"
    replayed = [c for c in part_checks(grade, "causal") if "book" in c.name]
    assert replayed and all(c.message == grading.GATED and c.score == 0 for c in replayed), replayed
    assert grade.parts["causal"].score <= baseline.parts["causal"].score
    assert passed(baseline, "causal") <= passed(grade, "causal")
    unseen = {c.name for c in part_checks(grade, "causal") if "unseen" in c.name or "known_weights" in c.name}
    assert unseen and not unseen & passed(grade, "causal")
    assert grade.parts["causal"].score < grade.parts["causal"].max_score
    assert_others_keep_full_marks(grade, "causal")


def test_stack_frames_hold_no_answers(engine, tmp_path):
    """Threat: walk sys._getframe()/inspect.stack() and gc.get_objects() looking for the
    expected tensors or the suites. The child's stack holds only its own request loop: nothing
    found, scored like plain zeros, and no grader frame or suite module is visible."""
    grade = assert_no_better_than_baseline(engine, tmp_path, "stack_frames", "simple_attention")
    output = grade.output.get("simple_attention", "")
    assert "FRAMES:" in output, "the attack did not report what it saw"
    for grader_side in ("run_check", "run_part", "grade_submission", "test_simple_attention", "expect.py",
                        "autograder.suites", "autograder.runner"):
        assert grader_side not in output, f"the child saw {grader_side}"
    assert "CANDIDATES: []" in output


# ---------------------------------------------------------------- files that would sabotage the grader

def test_shadowing_files_are_never_run(engine, tmp_path):
    """Threat: conftest.py, pytest.ini, sitecustomize.py, usercustomize.py, torch.py, pytest.py,
    json.py, numpy.py, yaml.py, autograder.py and __init__.py shipped next to correct modules,
    each ending the process that imports it (after leaving a marker). Correct code still gets
    full marks and nothing ever imports them."""
    marker = tmp_path / "sabotage-ran"
    grade = grade_case(engine, tmp_path, "shadow_files", "simple_attention", every_part=True, MARKER=marker)
    assert_full_marks(grade, list(grade.parts))
    assert not marker.exists(), marker.read_text()


@pytest.mark.parametrize("command", ["python -m autograder", "ch03-autograder"])
def test_shadow_files_in_the_working_directory_never_reach_the_grader(tmp_path, command):
    """Threat: a TA runs the grader from inside the submission's folder, which ships json.py,
    numpy.py, torch.py, yaml.py... (each leaves a marker and ends the process that imports it).
    `python -m` puts the working directory first on sys.path; the package drops it before importing
    anything else, so the grade completes with full marks and no marker. The console script never
    had it on sys.path; with it, even a shipped autograder.py (which `python -m autograder` would
    find first, and no code of ours can stop) is never imported."""
    marker = tmp_path / "sabotage-ran"
    submission = build("shadow_files", tmp_path, MARKER=marker)
    if command == "ch03-autograder":
        script = Path(sys.executable).parent / "ch03-autograder"
        if not script.is_file():
            pytest.skip(f"{script} is not installed (pip install -e . makes it)")
        argv = [str(script)]
    else:
        (submission / "autograder.py").unlink()
        argv = [sys.executable, "-m", "autograder"]
    results = tmp_path / "results.json"
    run = subprocess.run(argv + ["grade", ".", "--json", str(results)], cwd=submission, capture_output=True,
                         text=True, timeout=300)
    assert not marker.exists(), marker.read_text()
    assert run.returncode == 0, run.stderr[-3000:]
    data = json.loads(results.read_text())
    assert data["score"] == data["max_score"] == TOTAL, data["parts"]
    assert re.search(rf"total +{g(TOTAL)} / {g(TOTAL)}", run.stdout)


def grade_command(capfd, *args):
    """The `grade` command (cli.main, the code `python -m autograder` runs: its engine, fork server and
    environment check of its own, its files and table) in this process, the secret in its environment
    -> (exit status, everything written to stdout and stderr at the file-descriptor level, by this
    process or any it started). (Issue 38 item 6: the properties below are the command's outputs, not
    its command line, which test_shadow_files_in_the_working_directory_never_reach_the_grader runs.)"""
    from autograder import cli

    assert os.environ[SECRET_NAME] == SECRET  # the module's engine fixture set it
    capfd.readouterr()
    status = cli.main(["grade", *map(str, args)])
    said = capfd.readouterr()
    return status, said.out, said.err


@walls
def test_forged_results_do_not_change_the_grade(engine, outside, tmp_path, capfd):
    """Threat: print "PASSED" lines and a fake results.json (score 100), and try to write
    results.json next to the grader's --json output and in the other usual places. Through the
    real `grade` command: the JSON holds the true grade, nothing else appears in its folder and
    the forgery reaches neither the command's output nor the JSON."""
    out = outside / f"cli-{TOKEN}"
    out.mkdir()
    results = out / "results.json"
    submission = build("forged_results", tmp_path, OUT=out)
    status, stdout, stderr = grade_command(capfd, submission, "--json", results)
    assert status == 0, stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["results.json"]
    data = json.loads(results.read_text())
    assert f"FORGED-{TOKEN}" not in stdout + stderr + results.read_text()
    assert data["parts"]["simple_attention"]["score"] == 0
    assert not [t for t in data["tests"] if t["name"].startswith("simple_attention:") and t["status"] == "passed"]
    full = {p: v for p, v in data["parts"].items() if p != "simple_attention"}
    assert all(v["score"] == v["max_score"] for v in full.values()), full
    assert data["score"] == pytest.approx(sum(v["score"] for v in data["parts"].values()))
    assert data["score"] < data["max_score"]
    for place in ("/autograder/results/results.json", "/tmp/results.json", Path.home() / "results.json"):
        assert not _holds_forgery(place), place


def _holds_forgery(path):
    try:
        return f"FORGED-{TOKEN}" in Path(path).read_text()
    except OSError:
        return False


# ---------------------------------------------------------------- reading what is hidden

@walls
def test_hidden_files_are_not_visible(engine, outside, tmp_path):
    """Threat: read the hidden suites, the reference solutions, grading.yml, the book snapshot,
    another student's folder and the batch OUT folder (after trying to unmount what covers them)
    and raise with the contents. The child finds nothing; no hidden content reaches the grade."""
    grade = grade_case(engine, tmp_path, "read_hidden_files", "simple_attention", OUTSIDE=outside)
    assert_part_zero(grade, "simple_attention", "FOUND: nothing")
    assert_others_keep_full_marks(grade, "simple_attention")
    text = everything(grade)
    for secret in HIDDEN_TEXT + (f"BOB-SENTINEL-{TOKEN}", f"OUT-SENTINEL-{TOKEN}"):
        assert secret not in text


@walls
def test_grade_command_hides_the_class_folder(engine, outside, tmp_path, capfd):
    """Threat: a TA runs `grade class/eve` on one student of a class folder; eve's code reads
    class/bob. The command hides the folder the submission sits in: eve's list of what she found
    names no file of class/ (the out/ folder beside it is no business of `grade`), she scores 0 on
    simple_attention with "FOUND:", keeps every other part, and bob's text never appears in the
    JSON or the table."""
    eve = build("read_hidden_files", tmp_path, OUTSIDE=outside)
    shutil.copytree(eve, outside / "class" / f"eve-{TOKEN}")
    results = tmp_path / "eve.json"
    try:
        status, stdout, stderr = grade_command(capfd, outside / "class" / f"eve-{TOKEN}", "--json", results)
    finally:
        shutil.rmtree(outside / "class" / f"eve-{TOKEN}")
    assert status == 0, stderr[-3000:]
    data = json.loads(results.read_text())
    assert data["parts"]["simple_attention"]["score"] == 0
    outputs = [t["output"] for t in data["tests"] if t["name"].startswith("simple_attention:")]
    assert outputs and all("FOUND: " in o and "/class/" not in o for o in outputs), outputs
    assert all(v["score"] == v["max_score"] for p, v in data["parts"].items() if p != "simple_attention")
    assert f"BOB-SENTINEL-{TOKEN}" not in stdout + results.read_text()


@walls
def test_solutions_cannot_be_imported(engine, tmp_path):
    """Threat: import the reference solutions (sys.path, importlib spec from the file path, the
    solutions package, autograder.suites.reference) and delegate to them. None loads."""
    grade = grade_case(engine, tmp_path, "import_solutions", "simple_attention")
    assert_part_zero(grade, "simple_attention", "solutions not reachable")
    assert_others_keep_full_marks(grade, "simple_attention")


@walls
def test_environment_secrets_do_not_leak(engine, tmp_path):
    """Threat: a secret in the grader's environment (GRADER_SECRET_TOKEN), read through
    os.environ and every /proc/*/environ and cmdline the child can see, put into an exception
    message. The child's environment is scrubbed and the grader is out of its sight."""
    assert os.environ[SECRET_NAME] == SECRET
    grade = grade_case(engine, tmp_path, "env_secrets", "simple_attention")
    assert_part_zero(grade, "simple_attention", "LOOT: ", "PATH")
    assert SECRET not in everything(grade)
    assert SECRET_NAME not in everything(grade)
    assert_others_keep_full_marks(grade, "simple_attention")


# ---------------------------------------------------------------- state that could carry over

def test_global_state_changes_stay_in_their_part(engine, tmp_path):
    """Threat: at import, one module sets float64 as the default dtype, disables grad, reseeds,
    changes thread counts, poisons sys.modules and rewrites the other modules' files on disk.
    Each part runs in a fresh process with a fresh copy: every part keeps full marks."""
    grade = grade_case(engine, tmp_path, "global_state", "numpy_attention", every_part=True)
    assert_full_marks(grade, list(grade.parts))


# ---------------------------------------------------------------- resources

def test_loop_that_ignores_signals_is_killed(engine, tmp_path):
    """Threat: an endless loop (two threads) that ignores and blocks SIGALRM, SIGTERM, SIGINT,
    SIGHUP and SIGXCPU. The grader's own clock kills it with SIGKILL after the part's time limit
    (LOOP_TIMEOUT: every second of it is burnt by the loop)."""
    grade = grade_case(engine, tmp_path, "loop_ignores_signals", "simple_attention", limits={"timeout": LOOP_TIMEOUT})
    assert_part_zero(grade, "simple_attention", f"timed out after {LOOP_TIMEOUT} s")
    # the clock, not an exit of the loop, ended it (no upper bound: a loaded machine is late to kill)
    assert grade.parts["simple_attention"].seconds >= LOOP_TIMEOUT
    assert_others_keep_full_marks(grade, "simple_attention")


@walls
def test_fork_storm_is_contained(engine, tmp_path):
    """Threat: a fork bomb at import. The process limit and the part's PID namespace hold it:
    the part fails on its time limit and not one of its processes is left afterwards."""
    grade = grade_case(engine, tmp_path, "fork_storm", "simple_attention", limits={"timeout": LOOP_TIMEOUT})
    assert_part_zero(grade, "simple_attention", "timed out")
    assert_others_keep_full_marks(grade, "simple_attention")
    assert wait_no_processes(SANDBOX_UID) == []


@pytest.mark.parametrize("case", ["memory_flood_tensor", "memory_flood_list"])
def test_memory_flood_fails_the_part_only(engine, tmp_path, case):
    """Threat: allocate a 50 GiB tensor, or grow a list (64 MiB a step) forever at import. The
    part's memory limit stops it; the part fails with a message about memory, the grader is fine.
    The part gets MEMORY_TIMEOUT s, not 3: on a loaded machine the clock must never win the race
    against the memory limit (the limit stops the flood long before)."""
    grade = grade_case(engine, tmp_path, case, "simple_attention", limits={"timeout": MEMORY_TIMEOUT})
    assert grade.parts["simple_attention"].score == 0
    for message in messages(grade, "simple_attention"):
        assert "memory" in message.lower(), message
    assert_others_keep_full_marks(grade, "simple_attention")


@walls
def test_memory_spread_over_processes_is_capped_as_a_whole(engine, tmp_path):
    """Threat: 5 processes of 150 MiB each, every one under the per-process limit, 750 MiB in all
    against the part's 512 (cut from 2048 here, to be quick). Where the fork server has a control
    group, the kernel kills some of them: at least one is killed, at most 3 hold their share at the
    end (one may fill and be killed afterwards), the part scores 0 and the witnesses keep full marks. (Without a control group only the
    per-process limits hold.) The attack counts until every process has filled or died, without a
    deadline, and the part gets MEMORY_TIMEOUT s: the kill is proven without racing the clock."""
    grade = grade_case(engine, tmp_path, "memory_flood_processes", "simple_attention",
                       limits={"memory_mb": 512, "timeout": MEMORY_TIMEOUT})
    if not any(p.startswith("control group (memory") for p in grade.protections):
        pytest.skip(f"no control group on this machine (protections: {grade.protections})")
    assert grade.parts["simple_attention"].score == 0
    for message in messages(grade, "simple_attention"):
        found = re.search(r"FILLED (\d) of 5, KILLED (\d), HOLDING (\d)", message)
        if found:
            assert int(found[3]) <= 3 and int(found[2]) >= 1, message
        else:
            assert "memory" in message.lower(), message
    assert_others_keep_full_marks(grade, "simple_attention")


@walls
def test_control_groups_are_removed(tmp_path):
    """A fork server's control group goes with it: closed normally, nothing is left. One left by a
    server killed with its grader (a group named after a pid that is gone) is ended by the next
    server that starts: a process still in it (student code that cleared its parent-death signal)
    is killed and the group removed. A group named after a live process is never touched."""
    with Sandbox(slot=SLOT) as sandbox:
        groups = sandbox.ready().get("groups", [])
    if not groups:
        pytest.skip("no control group on this machine")
    assert not any(os.path.exists(g) for g in groups)
    dead = subprocess.Popen(["true"])
    dead.wait()
    parent = os.path.dirname(groups[0])
    stale, live = Path(parent, f"ch03-sandbox-{dead.pid}"), Path(parent, f"ch03-sandbox-{os.getpid()}")
    stale.mkdir()
    live.mkdir()
    survivor = subprocess.Popen(["sleep", "30"])
    try:
        (stale / "cgroup.procs").write_text(str(survivor.pid))
        with Sandbox(slot=SLOT) as sandbox:
            sandbox.ready()
        # killed before the server's first word (its group is removed by then): 300 s is a bound on a hang only
        assert survivor.wait(timeout=300) == -signal.SIGKILL
        assert not stale.exists() and live.exists()
    finally:
        survivor.kill()
        survivor.wait()
        for folder in (stale, live):
            if folder.exists():
                folder.rmdir()


@pytest.mark.quick
def test_output_flood_is_capped(engine, tmp_path):
    """Threat: print 200 MB at import (print, stderr and raw writes, ignoring errors). The grader
    keeps at most 64 KiB of it and the (correct) module is judged as usual."""
    grade = grade_case(engine, tmp_path, "output_flood", "simple_attention")
    assert_full_marks(grade, list(grade.parts))
    output = grade.output.get("simple_attention", "")
    assert "flood" in output
    assert len(output.encode()) <= 64 << 10


@walls
def test_oom_killer_takes_the_student_first(engine, tmp_path):
    """Threat: the memory limit is per process and a part may run 64 of them; lowering
    oom_score_adj would make the kernel's OOM killer pick the grader instead. The child's score
    is pinned at 1000 (the most killable) and neither it nor its children can lower it."""
    grade = grade_case(engine, tmp_path, "oom_priority", "simple_attention")
    output = grade.output.get("simple_attention", "")
    for who in ("parent", "child"):
        assert f"oom {who}: ['-1000: Permission denied', '0: Permission denied', '999: Permission denied']; " \
               f"now 1000" in output, output
    assert_full_marks(grade, list(grade.parts))


@walls
def test_leftover_processes_are_gone(engine, tmp_path):
    """Threat: leave `sleep 300` and a double-forked, setsid daemon that ignores SIGTERM/SIGHUP
    running after the part. When the part's process ends, its PID namespace goes with it."""
    grade = grade_case(engine, tmp_path, "leftover_processes", "simple_attention")
    assert_full_marks(grade, list(grade.parts))
    assert "spawned sleep" in grade.output.get("simple_attention", "")
    assert wait_no_processes(SANDBOX_UID) == []


@walls
def test_signals_cannot_reach_the_grader(engine, tmp_path):
    """Threat: SIGKILL to the parent, the process group (killpg 0), every process (kill -1) and
    every pid in /proc. The grader, the fork server and the grading all carry on."""
    grade = grade_case(engine, tmp_path, "signal_grader", "simple_attention", every_part=True)
    # killpg(0) reaches the part's own child (its process group): it may cost that part, no other
    assert_full_marks(grade, [p for p in grade.parts if p != "simple_attention"])
    assert engine.sandbox.process.poll() is None
    assert_full_marks(engine.grade(SOLUTIONS, parts=["causal"]), ["causal"])


@walls
def test_no_network(engine, tmp_path):
    """Threat: connect to a TCP listener and an abstract Unix socket the grader's machine has
    open, send a UDP packet, and connect to a world-connectable Unix socket in /run (where local
    services keep theirs; a network namespace does not cover the file system). Nothing arrives;
    the part is judged as usual."""
    fs_socket = Path("/run") / f"ch03-adversarial-{TOKEN}.sock"
    with socket.socket() as tcp, socket.socket(socket.AF_UNIX) as unix, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp, socket.socket(socket.AF_UNIX) as service:
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        port = tcp.getsockname()[1]
        udp.bind(("127.0.0.1", port))
        unix.bind(f"\0ch03-adversarial-{TOKEN}")
        unix.listen()
        service.bind(str(fs_socket))
        try:
            os.chmod(fs_socket, 0o777)
            service.listen()
            grade = grade_case(engine, tmp_path, "network", "simple_attention", PORT=port, FS_SOCKET=fs_socket)
        finally:
            fs_socket.unlink()
        for listener in (tcp, unix, udp, service):
            listener.setblocking(False)
        for listener in (tcp, unix, service):
            with pytest.raises(BlockingIOError):
                listener.accept()
        with pytest.raises(BlockingIOError):
            udp.recvfrom(100)
    output = grade.output.get("simple_attention", "")
    assert "tcp: " in output and "unix file: " in output
    assert not [line for line in output.splitlines() if ": sent" in line], output
    assert_full_marks(grade, list(grade.parts))


@walls
def test_nothing_written_outside(engine, outside, tmp_path):
    """Threat: plant files on the grader's machine (world-writable folders such as /run/lock,
    /tmp, the project, $HOME, the other submissions, the OUT folder). The host's file system is
    read-only to the child and its own /tmp is private: no file appears anywhere."""
    grade = grade_case(engine, tmp_path, "write_outside", "simple_attention", OUTSIDE=outside)
    assert "written:" in grade.output.get("simple_attention", "")
    assert_full_marks(grade, list(grade.parts))
    name = f"ch03-adversarial-{TOKEN}"
    for folder in ("/run/lock", "/var/tmp", "/tmp", "/dev/shm", "/var/lock", "/run", "/var/crash", "/",
                   PROJECT_ROOT, outside, outside / "class", outside / "out", Path.home(), "/root", "/work", "/srv",
                   "/opt"):
        assert not (Path(folder) / name).exists(), f"{folder}/{name} was written"


def test_forged_protocol_frames(engine, tmp_path):
    """Threat: write forged reply frames straight into the reply pipe (an overflowing array
    shape, JSON nested 40,000 deep, unknown tags, a 200 MiB payload that never comes). The
    grader survives every one of them and the part scores no better than plain wrong math."""
    grade = assert_no_better_than_baseline(engine, tmp_path, "protocol_forgery", "simple_attention")
    assert grade.parts["simple_attention"].score == 0
    assert "sent back something that is not an answer" in grade.parts["simple_attention"].problem
    for message in messages(grade, "simple_attention"):
        assert "grader error" not in message and "json/decoder.py" not in message, message


def test_forged_error_replies_are_cut_down(engine, tmp_path):
    """Threat: forged error replies written straight into the reply pipe, past the child's own
    2000-character cap: 3 MB messages and exception types full of markup, one per check, to
    bloat every report and the gradebook. The grader keeps short plain strings of them."""
    grade = assert_no_better_than_baseline(engine, tmp_path, "forged_error_reply", "simple_attention")
    assert any(f"FORGED-{TOKEN}" in m for m in messages(grade, "simple_attention")), "no forged reply arrived"
    assert max(len(m) for m in messages(grade, "simple_attention")) < 2500
    failed = [c for c in part_checks(grade, "simple_attention") if not c.passed]
    assert all("<" not in c.student_text.split(":", 1)[0] for c in failed)  # the type: a plain name
    assert len(json.dumps(reports.results_json(grade))) < 100_000


# ---------------------------------------------------------------- what staging lets in

def _zip(path, entries):
    """entries: (name, text) regular files, or (name, ('symlink', target))."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in entries:
            if isinstance(content, tuple):
                info = zipfile.ZipInfo(name)
                info.create_system = 3
                info.external_attr = (0o120777 << 16)
                archive.writestr(info, content[1])
            else:
                archive.writestr(name, content)
    return path


def _solution_entries(prefix="ch03/", skip=()):
    return [(prefix + p.name, p.read_text()) for p in sorted(SOLUTIONS.glob("*.py")) if p.stem not in skip]


def test_zip_slip_is_skipped(engine, tmp_path):
    """Threat: a zip with members named ../../x.py, ch03/../../x.py and an absolute path. They
    are skipped with a note, nothing is written outside the extraction folder, and the rest of
    the submission (correct) gets full marks."""
    name = f"ch03-adversarial-{TOKEN}"
    absolute = tmp_path / f"{name}-abs.py"
    archive = _zip(tmp_path / "slip.zip", _solution_entries() + [
        (f"../../{name}-up.py", "print('slipped')\n"),
        (f"ch03/../../{name}-dotdot.py", "print('slipped')\n"),
        (str(absolute), "print('slipped')\n"),
    ])
    grade = engine.grade(archive, parts=("simple_attention", "exercises", "numpy_attention"))
    assert_full_marks(grade, list(grade.parts))
    assert sum("leaves the submission folder" in n for n in grade.notes) == 3, grade.notes
    tmp = Path(tempfile.gettempdir())
    for path in (absolute, tmp / f"{name}-up.py", tmp / f"{name}-dotdot.py", tmp.parent / f"{name}-up.py",
                 Path("/") / f"{name}-up.py", Path("/") / f"{name}-dotdot.py"):
        assert not path.exists(), path
    assert not list(tmp_path.rglob(f"{name}*"))


def test_zip_symlinks_are_skipped(engine, tmp_path):
    """Threat: a zip whose causal.py is a symlink to the reference solution, with passwd.txt ->
    /etc/passwd and a folder symlink `escape` -> a grader folder followed by escape/x.py.
    The links are skipped with a note: causal is graded as absent, nothing lands outside."""
    name = f"ch03-adversarial-{TOKEN}"
    archive = _zip(tmp_path / "links.zip", _solution_entries(skip={"causal"}) + [
        ("ch03/causal.py", ("symlink", str(SOLUTIONS / "causal.py"))),
        ("ch03/passwd.txt", ("symlink", "/etc/passwd")),
        ("ch03/escape", ("symlink", str(tmp_path))),
        (f"ch03/escape/{name}-through.py", "print('through the link')\n"),
    ])
    grade = engine.grade(archive, parts=("causal", *WITNESSES["causal"]))
    notes = " | ".join(grade.notes)
    for link in ("ch03/causal.py", "ch03/passwd.txt", "ch03/escape"):
        assert f"skipped {link}: symbolic links are not accepted" in notes
    assert_part_zero(grade, "causal", "causal.py was not found")
    assert_others_keep_full_marks(grade, "causal")
    assert not (tmp_path / f"{name}-through.py").exists()
    assert "root:" not in everything(grade)


def test_folder_symlinks_are_skipped(engine, tmp_path):
    """Threat: a submission folder whose causal.py is a symlink to solutions/ch03/causal.py, with
    passwd.txt -> /etc/passwd and ref -> solutions/ch03. Skipped with a note; causal is absent."""
    folder = build(None, tmp_path)
    (folder / "causal.py").unlink()
    (folder / "causal.py").symlink_to(SOLUTIONS / "causal.py")
    (folder / "passwd.txt").symlink_to("/etc/passwd")
    (folder / "ref").symlink_to(SOLUTIONS, target_is_directory=True)
    grade = engine.grade(folder, parts=("causal", *WITNESSES["causal"]))
    for link in ("causal.py", "passwd.txt", "ref"):
        assert f"skipped {link}: symbolic links are not accepted" in grade.notes
    assert_part_zero(grade, "causal", "causal.py was not found")
    assert_others_keep_full_marks(grade, "causal")
    assert "root:" not in everything(grade)


# ---------------------------------------------------------------- a whole class

@walls
def test_hostile_student_in_a_batch(outside, tmp_path):
    """Threat: one student in a batch reads the others' submissions and the OUT folder, tries to
    overwrite their results, feedback, grades.csv and the gradebook, signals every process and
    leaves a daemon. The good students get full marks, the hostile one only loses its own part,
    finds nothing, plants nothing, and no process of the batch's sandboxes is left."""
    from autograder.course.gradebook import Gradebook

    classroom, out = outside / f"batch-class-{TOKEN}", outside / f"batch-out-{TOKEN}"
    classroom.mkdir()
    for good in ("good_1", "good_2"):
        shutil.copytree(SOLUTIONS, classroom / good)
        (classroom / good / "notes.txt").write_text(f"{good.upper()}-SENTINEL-{TOKEN}\n")
    built = build("batch_hostile_student", tmp_path, CLASS=classroom, OUT=out)
    shutil.copytree(built, classroom / "hostile")
    # run_batch in a fresh interpreter: its workers are forked, and torch ops in a process forked
    # from one that already ran torch's thread pool (this one) hang
    code = ("import sys; from autograder.batch import run_batch; "
            "print(run_batch(sys.argv[1], sys.argv[2], jobs=2, progress=None))")
    # the batch's uids are this module's (settings: a process draws its own block otherwise, and the
    # watch below would look for the wrong uids)
    returncode, stdout, stderr, seen = run_watching([sys.executable, "-c", code, str(classroom), str(out)],
                                                    env={**os.environ, SECRET_NAME: SECRET,
                                                         UIDS_ENV: str(SANDBOX_UID_BASE)})
    assert returncode == 0, stderr[-3000:]
    assert stdout.split() == ["3"]
    sandboxed = {p for p in seen if p[2] >= SANDBOX_UID_BASE}
    assert sandboxed, "no sandboxed child was ever seen: the watch is blind"
    assert process_ends.wait_ended(seen) == [], "processes of the batch (workers, fork servers, sandboxed children) outlived it"
    book = Gradebook(out / "gradebook.db")
    rows = {student: (score, max_score, parts) for student, score, max_score, parts in book.rows()}
    book.close()
    rubric, _ = grading.load_rubric()
    for good in ("good_1", "good_2"):
        score, max_score, parts = rows[good]
        assert score == max_score == rubric.max_score, (good, parts)
        data = json.loads((out / "results" / f"{good}.json").read_text())
        assert data["score"] == data["max_score"]
        assert "{\"score\": 0}" not in (out / "feedback" / f"{good}.md").read_text()
    score, max_score, parts = rows["hostile"]
    assert parts["simple_attention"] == 0
    assert score == max_score - rubric.parts["simple_attention"].max_score
    hostile = json.loads((out / "results" / "hostile.json").read_text())
    said = [t["output"] for t in hostile["tests"] if t["name"].startswith("simple_attention:")]
    assert said and all("FOUND: nothing; PLANTED: nothing" in m for m in said), said[:1]
    written = "\n".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file() and p.suffix != ".db")
    for secret in [SECRET, f"GOOD_1-SENTINEL-{TOKEN}"] + list(HIDDEN_TEXT):
        assert secret not in written
    assert (classroom / "good_2" / "causal.py").read_text() == (SOLUTIONS / "causal.py").read_text()
    lines = (out / "grades.csv").read_text().splitlines()
    assert lines[0].split(",")[:3] == ["student", "score", "max_score"] and len(lines) == 4


def test_a_dead_fork_server_is_replaced(engine):
    """The fork server is killed between two submissions (as the OOM killer might): the next
    session starts a new one, and both submissions get full marks on the part graded. (The module's
    engine: the cases after this one are graded by the server that replaced it.)"""
    sandbox = engine.sandbox
    first = engine.grade(SOLUTIONS, parts=["simple_attention"])
    dead = sandbox.process.pid
    os.killpg(dead, signal.SIGKILL)
    sandbox.process.wait()
    second = engine.grade(SOLUTIONS, parts=["simple_attention"])
    assert sandbox.process.pid != dead and sandbox.process.poll() is None
    for grade in (first, second):
        assert grade.parts["simple_attention"].score == grade.parts["simple_attention"].max_score == PART["simple_attention"]


# ---------------------------------------------------------------- sandbox v2 (issue 10): one case per class

def test_walking_the_host_finds_no_working_copy(engine, tmp_path):
    """Class 1, host files beyond a deny-list: a copy of the solutions planted where another user's
    clone or a Gradescope bundle would be (/srv, /opt, the host's /tmp, beside the project); the
    submission walks the whole file system for a working simple_attention.py. It finds none: the
    part scores 0 and says so."""
    planted = []
    for base in ("/srv", "/opt", tempfile.gettempdir(), str(PROJECT_ROOT.parent)):
        if os.path.isdir(base) and os.access(base, os.W_OK):
            clone = Path(tempfile.mkdtemp(prefix="ch03-bundle-", dir=base))
            shutil.copytree(SOLUTIONS, clone / "source" / "solutions")
            planted.append(clone)
    try:
        # the walk must finish to show it finds nothing: a slow disk can take more than 3 s
        grade = grade_case(engine, tmp_path, "walk_host_for_solutions", "simple_attention", limits={"timeout": 60})
    finally:
        for clone in planted:
            shutil.rmtree(clone, ignore_errors=True)
    assert planted, "no folder to plant a copy in"
    assert_part_zero(grade, "simple_attention", "found no working copy")
    assert_others_keep_full_marks(grade, "simple_attention")


def test_keyrings_carry_nothing_between_submissions(engine, tmp_path):
    """Class 2, kernel state no namespace covers: a correct submission stores its answers in the
    user, session and user-session keyrings (refused: full marks all the same); a later one with
    no attention code asks the keyrings for them and gets nothing: 0 in that part."""
    store = grade_case(engine, tmp_path / "store", "keyring_store", "simple_attention")
    assert_full_marks(store, list(store.parts))
    said = store.output.get("simple_attention", "")
    assert "keyring:" in said and "stored" not in said, said
    read = grade_case(engine, tmp_path / "read", "keyring_read", "simple_attention")
    assert_part_zero(read, "simple_attention", "no stored answers")


@walls
def test_shared_kernel_state_is_out_of_reach(engine, tmp_path):
    """Class 2 of round 3, channels between students graded at the same time: locks, leases and
    watches on a read-only file every room shares, an AIO context, a pseudo-terminal, a POSIX
    message queue and a netlink socket. Every one is refused (the seccomp allow-list, a /dev without
    ptmx, pts or tty); the submission is otherwise correct and keeps full marks."""
    grade = grade_case(engine, tmp_path, "shared_kernel_state", "simple_attention")
    said = grade.output.get("simple_attention", "")
    assert "shared state:" in said and "worked" not in said, said
    for attempt in ("flock", "fcntl F_SETLK", "fcntl F_OFD_SETLK", "fcntl F_GETLK", "fcntl F_SETLEASE", "inotify",
                    "io_setup", "mq_open", "ptmx", "pts", "tty", "netlink"):
        assert f"{attempt} refused" in said, attempt
    assert_full_marks(grade, list(grade.parts))


def test_signals_to_the_leader_are_dropped(engine, tmp_path):
    """Class 5: a part signals PID 1 of its namespace (its session's leader) with SIGINT, SIGTERM,
    SIGHUP and the rest. The leader installs no handler, so the kernel drops them (as root the
    child's own uid cannot signal it at all): the session goes on and every part, graded after the
    signals in the same session, keeps full marks."""
    grade = grade_case(engine, tmp_path, "kill_the_leader", "simple_attention", every_part=True)
    assert "signalled PID 1:" in grade.output.get("simple_attention", "")
    assert_full_marks(grade, list(grade.parts))
    assert not any(p.problem for p in grade.parts.values()), {k: p.problem for k, p in grade.parts.items()}


def test_no_earlier_output_in_a_later_childs_memory(engine, tmp_path):
    """Class 3, memory inherited from the fork server: a correct submission prints debug lines
    (on hidden inputs); the next submission searches its own memory for them and finds none."""
    printed = grade_case(engine, tmp_path / "printed", "debug_prints", "simple_attention")
    assert f"DEBUG-{TOKEN}" in printed.output.get("simple_attention", "")
    scan = grade_case(engine, tmp_path / "scan", "scan_memory_for_answers", "simple_attention")
    assert_part_zero(scan, "simple_attention", "memory holds")
    assert not [m for m in messages(scan, "simple_attention") if TOKEN in m]


def test_visible_messages_carry_no_hidden_input(engine, tmp_path):
    """Class 4, hidden inputs in visible messages: every call raises with fingerprints of all the
    inputs its process has seen. The visible checks' texts are exactly what they are when no hidden
    check runs at all; the hidden checks did see inputs of their own."""
    folder = build("leak_hidden_inputs", tmp_path)
    part = engine.rubric.parts["simple_attention"]
    visible_only = dataclasses.replace(part, checks={n: c for n, c in part.checks.items() if c.visibility == "visible"},
                                       groups={})
    control = grading.grade_submission(folder, Rubric(engine.rubric.path, {"simple_attention": visible_only}),
                                       engine.suites, engine.sandbox, seed=7)
    full = grading.grade_submission(folder, Rubric(engine.rubric.path, {"simple_attention": part}),
                                    engine.suites, engine.sandbox, seed=7)
    shown = {c.name: c.student_text for c in full.checks if c.visibility == "visible"}
    assert shown == {c.name: c.student_text for c in control.checks}
    hidden_seen = {fp for c in full.checks if c.visibility != "visible" for fp in c.student_text.split()[2:]}
    visible_seen = {fp for text in shown.values() for fp in text.split()[2:]}
    assert hidden_seen - visible_seen, "the hidden checks saw no input of their own: the test proves nothing"


def test_hidden_diagnoses_quote_no_name_the_code_chose(engine, tmp_path):
    """Class 4, the names around an error: every call raises with a fingerprint of its inputs in
    the exception's class name, the file name and line (compile()), the function's name, a
    NotImplementedError's "<module>.<name>" or a missing attribute's name. Each check scores 0; what
    a student sees of a hidden check (its diagnosis, in every channel's words) holds no fingerprint
    and says only "your code raised an exception" (no class, not even a builtin one the code could
    choose by its input); the instructor's text has the fingerprints (the attack ran)."""
    grade = grade_case(engine, tmp_path, "hidden_inputs_in_error_names", "simple_attention")
    assert grade.parts["simple_attention"].score == 0
    hidden = [c for c in part_checks(grade, "simple_attention") if c.visibility != "visible"]
    assert hidden and not any(c.passed for c in hidden)
    shown = [reports.common.student_output(c) for c in hidden]
    shown += [item.message for item in reports.common.what_to_fix(grade.checks, grade.parts)]
    for said in shown:
        assert not re.search(r"leak\d|\d{5}|line \d", said, re.IGNORECASE), said
    assert any("your code raised an exception" in said for said in shown), shown
    assert any(re.search(r"leak\d{5}", c.student_text, re.IGNORECASE) for c in hidden), "the attack never ran"
    assert_others_keep_full_marks(grade, "simple_attention")


def _shown_of_hidden(grade, part):
    """Every text a student may see about the part's checks that ran on hidden inputs."""
    hidden = [c for c in part_checks(grade, part) if c.visibility == "hidden" and not c.passed]
    assert hidden, "no hidden check failed: the attack never reached one"
    shown = [reports.common.student_output(c) for c in hidden]
    shown += [item.message for item in reports.common.what_to_fix(grade.checks, grade.parts)
              if item.part == part and item.hidden]
    return hidden, shown


def test_hidden_diagnoses_carry_no_exit_status_or_signal(engine, tmp_path):
    """Class 3 of round 3: every call ends its process with a status (100-199), a real-time signal
    or a frame that spells out a fingerprint of its inputs. A visible check may say the status (its
    inputs are public); what a student sees of a hidden check says only that the process exited or
    was killed by a signal, a fixed phrase, in every report."""
    grade = grade_case(engine, tmp_path, "hidden_inputs_in_exit_status", "simple_attention")
    assert grade.parts["simple_attention"].score == 0
    assert "FP " in grade.output.get("simple_attention", ""), "the attack never ran"
    visible = [c.message for c in part_checks(grade, "simple_attention") if c.visibility == "visible"]
    assert any(re.search(r"exited with status 1\d\d|killed by signal SIGRTMIN", m) for m in visible), visible
    hidden, shown = _shown_of_hidden(grade, "simple_attention")
    for said in shown + [c.message for c in hidden]:
        assert not re.search(r"status \d|signal [A-Z0-9]|number \d", said), said
    # after a hidden input how it ended is one fixed phrase of the grader's (suites/vocabulary.py)
    from autograder.suites import vocabulary

    assert any(vocabulary.ENDED in c.message for c in hidden), [c.message for c in hidden]
    assert_others_keep_full_marks(grade, "simple_attention")


def test_hidden_diagnoses_name_only_the_specifications_attributes(engine, tmp_path):
    """Class 3 of round 3: forward reads self.leak<N>, N a fingerprint of its input; all 128 names
    are written as self.leak<N> in the source, so a diagnosis that trusted the source's names would
    quote one. A hidden check's diagnosis names no leak attribute (only the specification's
    attributes may be named once the child has seen a hidden input); the visible ones may."""
    grade = grade_case(engine, tmp_path, "hidden_inputs_in_attribute_names", "causal")
    hidden, shown = _shown_of_hidden(grade, "causal")
    for said in shown + [c.message for c in hidden]:
        assert not re.search(r"leak\d", said), said
    assert any(re.search(r"leak\d+", c.student_text) for c in hidden), "the attack never ran"
    assert_others_keep_full_marks(grade, "causal")


def test_answers_recorded_in_one_run_are_worthless_in_the_next(engine, tmp_path):
    """Class 5, replayable unseen inputs: a table of answers keyed by the inputs, recorded from a
    correct submission's output in one run, answers every check when graded again with that run's
    secret (--seed), and only the book's printed examples under a new one."""
    recorded = grading.grade_submission(build("record_answers", tmp_path / "rec"), engine.rubric, engine.suites,
                                        engine.sandbox, parts=["simple_attention"], seed=101)
    table = {}
    for line in recorded.output["simple_attention"].splitlines():
        if line.startswith("REC "):
            _, name, key, answer = line.split(" ", 3)
            table[f"{name} {key}"] = json.loads(answer)
    # the same name as the recorded one: the secret of a submission's inputs also depends on its name
    folder = build("replay_answers", tmp_path / "replay", TABLE=json.dumps(table)).rename(
        tmp_path / "replay" / "record_answers-on")
    part = engine.rubric.parts["simple_attention"]
    same = grading.grade_submission(folder, engine.rubric, engine.suites, engine.sandbox,
                                    parts=["simple_attention"], seed=101)
    fresh = grading.grade_submission(folder, engine.rubric, engine.suites, engine.sandbox,
                                     parts=["simple_attention"], seed=202)
    book = sum(c.points for c in part.checks.values() if "book" in c.name)
    assert same.score == part.max_score, "the replay does not work even on the recorded inputs"
    assert fresh.score <= book < part.max_score, [(c.name, c.passed) for c in fresh.checks]


def test_namespaces_mounts_and_tracing_are_refused(engine, tmp_path):
    """Class 7 (and the filter behind class 2): a user namespace by unshare or clone, a mount,
    ptrace of the parent and a BPF program are all refused; the part keeps full marks."""
    grade = grade_case(engine, tmp_path, "nested_namespaces", "simple_attention")
    said = grade.output.get("simple_attention", "")
    assert "namespaces:" in said and "worked" not in said, said
    assert_full_marks(grade, list(grade.parts))
