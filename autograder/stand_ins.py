"""The grader's end of the stand-ins (inside/stand_in.py): the reference solutions, run here.

Where a check of one part needs another part that is not right on its own, the child holds a
StandIn of each of that part's classes: their layout and tensors, none of their code; and a stand-in
of each of its functions (causal_mask, masked_attention_weights: a student's mha.py may import them).
Building one, its forward and its backward, a function's call and its backward, are questions the child
sends as data; they are answered here, in the grader's process, with solutions/ch03 itself (one source
of truth: no second copy of the reference, nothing compiled in the child), with the operations the
answer issued (the child's operation count holds them, inside/counting.add).

A question is data from the student's process: its numbers are bounded before anything is built
(constructor arguments, the elements a module holds, the size of a forward), and every answer is
plain tensors and numbers.

Who may ask (issue 37.2): only the child of a part the grader gave stand-ins, and only about the
classes and functions it substituted (`allowed`: each substituted module's classes and functions and
the grader's classes they hold, as a wrapper holds CausalAttention heads). Any other question is refused as NotGiven and
recorded in the part's Ledger: the runner fails every check of that part and lists it for the
instructor as tampering. The work is bounded per question and per part: before anything runs, the
question runs on the meta device (no memory, no arithmetic) under a FLOP counter and a byte counter;
a forward (or backward: counted as three forwards) over MAX_FLOPS, a part over MAX_PART_FLOPS, or
memory over the part's own memory limit is refused. The grader's CPU time answering (process time,
every thread) is the Ledger's `seconds`, which Student adds to the part's time (student.py).
"""
from __future__ import annotations

import builtins
import contextlib
import dataclasses
import functools
import importlib.util
import inspect
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch.nn.modules import module as nn_module
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

from autograder import chapter, text
from autograder.inside import counting

MODULES = ("simple_attention", "self_attention_v1", "self_attention_v2", "causal", "mha")  # in import order
MAX_ARGUMENT = 4096          # any whole number given to a constructor
MAX_ELEMENTS = 1 << 25       # parameters and buffers of one module
MAX_WORK = 1 << 28           # batch * tokens * tokens * heads of one forward
MAX_FLOPS = 1 << 30          # floating-point operations of one forward (a backward counts three)
MAX_PART_FLOPS = 1 << 34     # of every question one part's child asks
MAX_BYTES = 1 << 30          # tensors one question makes, at most (and never more than the part's memory)
DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16}


class Refused(ValueError):
    """A question the grader does not answer (too large, malformed): raised in the child as ValueError."""


class NotGiven(Refused):
    """A question about a class the grader did not give this child: never answered, and charged."""


@dataclasses.dataclass
class Ledger:
    """What answering one part's questions cost the grader (runner.PartRun keeps one per part)."""
    seconds: float = 0.0   # the grader's CPU time (all its threads) spent answering
    flops: float = 0.0     # the work answered, as the meta device counted it
    refused: list[str] = dataclasses.field(default_factory=list)  # questions about classes not given (NotGiven)


def allowed(modules) -> frozenset[tuple[str, str]]:
    """The (module, class or function) pairs a child given stand-ins for `modules` may ask about: each
    module's own classes and functions, and the grader's classes it holds (mha's wrapper builds causal's
    CausalAttention)."""
    found: set[tuple[str, str]] = set()
    for module in modules:
        if module not in MODULES:
            continue
        found.update((module, name) for name in functions(module))
        for value in vars(solutions()[module]).values():
            if isinstance(value, type) and issubclass(value, torch.nn.Module) and \
                    value.__module__.startswith("_ch03_reference_"):
                found.add((value.__module__.replace("_ch03_reference_", ""), value.__name__))
    return frozenset(found)


# the reference solutions of the chapter being graded (reference(): grading.grade_submission sets it
# from the chapter it is given); None: this repository's, chapter.current(), read on call
_REFERENCE: Path | None = None


@contextlib.contextmanager
def reference(folder: str | Path) -> Iterator[None]:
    """While one submission is graded (grading.grade_submission, with its chapter's solutions), the
    stand-ins and the suites' own reference (solutions() without a folder) are loaded from folder."""
    global _REFERENCE
    outer, _REFERENCE = _REFERENCE, Path(folder)
    try:
        yield
    finally:
        _REFERENCE = outer


def solutions(folder: str | Path | None = None) -> dict[str, Any]:
    """{module name: the reference solution's module}, loaded in this process from folder (default: the
    chapter being graded, reference(); outside a grade this repository's solutions/ch03) under private
    names; `from causal import ...` inside them resolves among them."""
    if folder is None:
        folder = _REFERENCE or chapter.current().solutions  # the folder envcheck grades
    return _load(str(folder))


@functools.lru_cache(maxsize=1)
def _load(folder: str) -> dict[str, Any]:
    folder_path = Path(folder)
    loaded: dict[str, Any] = {}

    def chapter_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name in loaded:
            return loaded[name]
        return builtins.__import__(name, globals, locals, fromlist, level)

    for stem in MODULES:  # (not `name`: the release's leak test finds no suite line in public files)
        spec = importlib.util.spec_from_file_location(f"_ch03_reference_{stem}", folder_path / f"{stem}.py")
        assert spec is not None and spec.loader is not None  # a .py file always has a loader
        module = importlib.util.module_from_spec(spec)
        module.__dict__["__builtins__"] = {**vars(builtins), "__import__": chapter_import}
        spec.loader.exec_module(module)
        loaded[stem] = module
        for value in list(vars(module).values()):
            if isinstance(value, type) and issubclass(value, torch.nn.Module) and value.__module__ == module.__name__:
                value.__init__ = _recording(value.__init__)  # type: ignore[method-assign]  # recorded
    return loaded


def _recording(init):
    """The class's __init__, keeping its arguments on the instance (a head built inside a wrapper
    is described to the child with the arguments it was built with)."""
    signature = inspect.signature(init)

    @functools.wraps(init)
    def recorded(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        init(self, *args, **kwargs)
        self.__dict__["_stand_in_arguments"] = list(bound.arguments.values())[1:]
    return recorded


def classes(module: str) -> dict[str, list]:
    """{class name: [[parameter, default?], ...]} of the nn.Module classes the solution module defines."""
    found = {}
    solution = solutions()[module]
    for name, value in vars(solution).items():
        if isinstance(value, type) and issubclass(value, torch.nn.Module) and value.__module__ == solution.__name__:
            found[name] = _parameters(value)
    return found


def functions(module: str) -> dict[str, list]:
    """{function name: [[parameter, default?], ...]} of the plain functions the solution module defines
    (causal.py's causal_mask and masked_attention_weights, which a student's mha.py may import)."""
    solution = solutions()[module]
    return {name: _parameters(value) for name, value in vars(solution).items()
            if inspect.isfunction(value) and value.__module__ == solution.__name__ and not name.startswith("_")}


def _parameters(callable_) -> list:
    return [[p.name] if p.default is inspect.Parameter.empty else [p.name, _default(p.default)]
            for p in inspect.signature(callable_).parameters.values()]


def _default(value):
    return value if isinstance(value, (bool, int, float, str, type(None))) else None


def substitutes(modules) -> dict[str, dict[str, dict[str, list]]]:
    """{module: {"classes": {class: signature}, "functions": {function: signature}}} for the child's
    substitute request, in import order."""
    return {module: {"classes": classes(module), "functions": functions(module)}
            for module in MODULES if module in modules}


def answer(question: Any, tensors: list, given: frozenset = frozenset(), ledger: Ledger | None = None,
           memory_mb: float | None = None) -> tuple[dict, list]:
    """The answer to one question from the child -> (answer, tensors); Refused or the solution's own
    exception when there is none. given: the (module, class) pairs this child was given (`allowed`):
    any other class is NotGiven, recorded in ledger.refused; ledger: the part's costs, added to here;
    memory_mb: the part's memory limit, which no question's tensors may pass."""
    ledger = ledger if ledger is not None else Ledger()
    if not isinstance(question, dict) or not all(isinstance(t, torch.Tensor) for t in tensors):
        raise Refused("malformed question")
    where = question.get("where")
    if not (isinstance(where, list) and len(where) == 2 and tuple(map(str, where)) in given):
        said = ".".join(text.identifier(w, 40) for w in where[:2]) if isinstance(where, list) else "?"
        ledger.refused.append(f"asked the grader to compute {said}, a class or function it was not given")
        raise NotGiven("the grader answers only the stand-ins it gave this part")
    arguments = _arguments(question.get("arguments"))
    limit = MAX_BYTES if memory_mb is None else min(MAX_BYTES, int(memory_mb) << 20)
    clock = time.process_time()
    try:
        if question.get("do") in ("call", "call_backward"):
            return _call(_function(where), arguments, question, tensors, ledger, limit)
        cls = _class(where)
        if question.get("do") == "construct":
            return _construct(cls, arguments, question.get("dtype"), tensors, limit)
        if question.get("do") in ("forward", "backward"):
            return _run(cls, arguments, question, tensors, ledger, limit)
        raise Refused("unknown question")
    finally:
        ledger.seconds += time.process_time() - clock


def _class(where):
    if not (isinstance(where, list) and len(where) == 2 and where[0] in MODULES):
        raise Refused("not one of the grader's classes")
    cls = getattr(solutions()[where[0]], str(where[1]), None)
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        raise Refused("not one of the grader's classes")
    return cls


def _function(where):
    """The solution module's own public function where names (functions() lists the same), else Refused."""
    solution = solutions()[where[0]] if where[0] in MODULES else None
    function = getattr(solution, str(where[1]), None)
    if not (inspect.isfunction(function) and function.__module__ == getattr(solution, "__name__", None)
            and not str(where[1]).startswith("_")):
        raise Refused("not one of the grader's functions")
    return function


def _call(function, arguments, question, tensors, ledger, limit=MAX_BYTES):
    """A call of the solution's function (or its backward) on the child's numbers and tensors (at
    question["tensor_at"] among the arguments; a backward's upstream gradient last), measured first on
    the meta device as a forward is (_measure) and refused when it would cost too much."""
    places, backward = question.get("tensor_at"), question.get("do") == "call_backward"
    if not (isinstance(places, list) and len(set(places)) == len(places) and
            all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(arguments) for i in places)):
        raise Refused("malformed question")
    if "shapes" in question and not backward and not tensors:  # the emulated GPU's call: the answer's shape only
        tensors = _shaped(question["shapes"], len(places))
        try:
            with torch.device("meta"):
                output = function(*[tensors.pop(0) if i in places else a for i, a in enumerate(arguments)])
        except Exception as e:  # the shapes do not fit: the real function's error
            raise Refused(text.excerpt(str(e), 200)) from None
        if not isinstance(output, torch.Tensor):
            raise Refused("the grader's function gave no tensor")
        return {"shape": list(output.shape), "dtype": str(output.dtype).replace("torch.", "")}, []
    if len(tensors) != len(places) + backward or any(t.numel() > MAX_ELEMENTS for t in tensors):
        raise Refused("malformed question" if len(tensors) != len(places) + backward else
                      "the input is larger than the grader's stand-in takes")
    wanted = question.get("wanted") if backward else [False] * len(places)
    if not (isinstance(wanted, list) and len(wanted) == len(places)):
        raise Refused("malformed question")

    def called(given, device=None):
        values = list(arguments)
        for place, tensor in zip(places, given, strict=True):
            values[place] = tensor
        with torch.device(device) if device else contextlib.nullcontext():
            return function(*values)

    counter, made = FlopCounterMode(display=False), _Bytes()
    try:
        with counter, made:
            called([torch.empty(t.shape, dtype=t.dtype, device="meta") for t in tensors[:len(places)]], "meta")
    except Exception:  # what fails on shapes fails in the real run too: that says why
        pass
    _charge(counter.get_total_flops(), made.total, sum(t.numel() * t.element_size() for t in tensors), backward,
            ledger, limit)
    inputs = [t.detach().requires_grad_(bool(w) and t.is_floating_point()) for t, w in zip(tensors, wanted, strict=False)]
    with torch.enable_grad():
        with counting.Counter() as counter:  # what the child's operation count holds for this call
            output = called(inputs)
        if not isinstance(output, torch.Tensor):
            raise Refused("the grader's function gave no tensor")
        if not backward:
            return {"counts": counter.counts}, [output.detach()]
        want = [t for t in inputs if t.requires_grad]
        grads = torch.autograd.grad(output, want, tensors[-1], allow_unused=True) if want and output.requires_grad \
            else [None] * len(want)
    return {}, [g if g is not None else torch.zeros_like(t) for g, t in zip(grads, want, strict=True)]


def _shaped(shapes, count):
    """[meta tensors] of the [[shape, dtype], ...] a call on the emulated GPU gives, bounded as tensors are."""
    if not (isinstance(shapes, list) and len(shapes) == count):
        raise Refused("malformed question")
    made = []
    for entry in shapes:
        shape, dtype = entry if isinstance(entry, list) and len(entry) == 2 else (None, None)
        if not (isinstance(shape, list) and len(shape) <= 8 and dtype in DTYPES and
                all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_ELEMENTS for n in shape)
                and math.prod(shape) <= MAX_ELEMENTS):
            raise Refused("malformed question")
        made.append(torch.empty(shape, dtype=DTYPES[dtype], device="meta"))
    return made


def _arguments(arguments):
    if not isinstance(arguments, list) or len(arguments) > 16:
        raise Refused("malformed arguments")
    for value in arguments:
        if not isinstance(value, (bool, int, float, type(None))) or isinstance(value, float) and not math.isfinite(value):
            raise Refused("the grader's stand-in takes numbers, booleans or None")
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= MAX_ARGUMENT:
            raise Refused(f"the grader's stand-in takes whole numbers from 0 to {MAX_ARGUMENT}")
    return arguments


def _built(cls, arguments, dtype=torch.float32):
    """The solution class built on the meta device (no memory, no generator): its layout, bounded
    while it is built: the numbers its parameters and buffers hold are counted as each is registered,
    and the construction is refused as soon as they pass MAX_ELEMENTS (a wrapper of 4096 heads asked
    for is refused at its second head, not after the grader built all 4096 on its own time)."""
    held = 0

    def count(module, name, tensor):
        nonlocal held
        held += tensor.numel() if isinstance(tensor, torch.Tensor) else 0
        if held > MAX_ELEMENTS:
            raise Refused(f"the grader's stand-in holds at most {MAX_ELEMENTS} numbers")

    default = torch.get_default_dtype()
    counting = [nn_module.register_module_parameter_registration_hook(count),
                nn_module.register_module_buffer_registration_hook(count)]
    try:
        torch.set_default_dtype(dtype)
        with torch.device("meta"):
            module = cls(*arguments)
    finally:
        torch.set_default_dtype(default)
        for handle in counting:
            handle.remove()
    if sum(t.numel() for t in _tensors(module)) > MAX_ELEMENTS:  # the finished module, counted once more
        raise Refused(f"the grader's stand-in holds at most {MAX_ELEMENTS} numbers")
    return module


def _tensors(module):
    return [t for m in module.modules() for t in list(m._parameters.values()) + list(m._buffers.values())
            if t is not None]


def _construct(cls, arguments, dtype, tensors, limit=MAX_BYTES):
    """Build the solution class after the child's generator state -> its layout and tensors, in
    order, and the generator's state afterwards: the same draws the class makes in the child."""
    if len(tensors) != 1 or tensors[0].dtype != torch.uint8:
        raise Refused("malformed generator state")
    chosen = DTYPES.get(dtype, torch.float32)
    layout = _built(cls, arguments, chosen)  # bounded before anything is allocated
    if sum(t.numel() * t.element_size() for t in _tensors(layout)) > limit:
        raise Refused("the grader's stand-in would hold more memory than the part may use")
    default = torch.get_default_dtype()
    with torch.random.fork_rng(devices=[]):
        torch.set_rng_state(tensors[0])
        try:
            torch.set_default_dtype(chosen)
            module = cls(*arguments)
        finally:
            torch.set_default_dtype(default)
        state = torch.get_rng_state()
    tree, values = _layout(module)
    return {"tree": tree}, [state] + values


def _layout(module, stand_in=False):
    """A module as data: attributes, parameters and buffers (names; tensors in order), submodules."""
    values = [p.detach() for p in module._parameters.values() if p is not None]
    values += [b for b in module._buffers.values() if b is not None]
    tree = {"attributes": {k: v for k, v in vars(module).items()
                           if not k.startswith("_") and k != "training" and isinstance(v, (bool, int, float, str))},
            "parameters": list(module._parameters), "absent": [k for k, v in module._parameters.items() if v is None],
            "buffers": [k for k, v in module._buffers.items() if v is not None],
            "transient": sorted(module._non_persistent_buffers_set), "training": module.training, "children": []}
    if stand_in:
        tree["stand_in"] = [type(module).__module__.replace("_ch03_reference_", ""), type(module).__name__]
        tree["arguments"] = list(module.__dict__.get("_stand_in_arguments", []))
    else:
        tree["class"] = type(module).__name__
    for name, child in module._modules.items():
        ours = type(child).__module__.startswith("_ch03_reference_")
        child_tree, child_values = _layout(child, stand_in=ours)
        tree["children"].append([name, child_tree])
        values += child_values
    return tree, values


def _run(cls, arguments, question, tensors, ledger=None, limit=MAX_BYTES):
    """Forward (or backward) of the solution class with the child's tensors in place of its own,
    measured first on the meta device (_measure) and refused when it would cost too much."""
    names, inputs = question.get("names"), question.get("inputs")
    backward = question.get("do") == "backward"
    if not (isinstance(names, list) and isinstance(inputs, int) and 0 < inputs <= 4):
        raise Refused("malformed question")
    if len(tensors) != len(names) + inputs + backward:
        raise Refused("malformed question")
    module = _built(cls, arguments, tensors[-1].dtype if tensors[-1].is_floating_point() else torch.float32)
    _bound_work(module, tensors[len(names):len(names) + inputs])
    training = question.get("training") if isinstance(question.get("training"), list) else []
    _measure(cls, arguments, module, dict(zip(names, tensors, strict=False)), tensors[len(names):len(names) + inputs],
             training, backward, ledger if ledger is not None else Ledger(), limit)
    for name, sub in module.named_modules():
        sub.training = name in training
    given = dict(zip(names, tensors, strict=False))  # the tensors after the names: the inputs
    if backward:
        wanted = question.get("wanted")
        if not (isinstance(wanted, list) and len(wanted) == len(tensors) - 1):
            raise Refused("malformed question")
        given = {n: t.detach().requires_grad_(bool(w) and t.is_floating_point())
                 for (n, t), w in zip(given.items(), wanted, strict=False)}
    _place(module, given)
    inputs_ = [t.detach().requires_grad_(backward and bool(w) and t.is_floating_point())
               for t, w in zip(tensors[len(names):len(names) + inputs], (question.get("wanted") or [0] * 99)[len(names):],
                               strict=False)]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(question.get("seed") or 0) % 2**63)
        with torch.enable_grad():
            with counting.Counter() as counter:  # what the child's operation count holds for this forward
                output = module(*inputs_)
            if not isinstance(output, torch.Tensor):
                raise Refused("the grader's class gave no tensor")
            if not backward:
                return {"counts": counter.counts}, [output.detach()]
            leaves = list(given.values()) + inputs_
            want = [t for t in leaves if t.requires_grad]
            grads = torch.autograd.grad(output, want, tensors[-1], allow_unused=True)
    return {}, [g if g is not None else torch.zeros_like(t) for g, t in zip(grads, want, strict=True)]


class _Bytes(TorchDispatchMode):
    """Counts the bytes of every tensor the operations under it make."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self.total += t.numel() * t.element_size()
        return out


def _measure(cls, arguments, module, given, inputs, training, backward, ledger, limit):
    """The question's forward run on the meta device (shapes only: no memory, no arithmetic) with the
    child's tensors as they are: its FLOPs and the bytes of every tensor it makes. Refused when one
    question passes MAX_FLOPS (a backward counts three forwards), the part passes MAX_PART_FLOPS, or
    the bytes (with the tensors given, twice for a backward) pass `limit`; else added to the ledger."""
    meta = {name: torch.empty(t.shape, dtype=t.dtype, device="meta") for name, t in given.items()}
    sample = _built(cls, arguments, module_dtype(module))
    for name, sub in sample.named_modules():
        sub.training = name in training
    _place(sample, meta)
    counter, made = FlopCounterMode(display=False), _Bytes()
    try:
        with counter, made:
            sample(*[torch.empty(x.shape, dtype=x.dtype, device="meta") for x in inputs])
    except Refused:
        raise
    except Exception:  # what fails on shapes fails in the real run too: that says why
        return
    held = sum(t.numel() * t.element_size() for t in given.values()) + sum(x.numel() * x.element_size() for x in inputs)
    _charge(counter.get_total_flops(), made.total, held, backward, ledger, limit)


def _charge(flops, made, held, backward, ledger, limit):
    """A question's forward as measured on the meta device (flops, the bytes of the tensors it made) and the
    bytes of the tensors given (held): refused when it passes MAX_FLOPS (a backward counts three forwards),
    the part passes MAX_PART_FLOPS, or the bytes (made twice for a backward) pass `limit`; else its FLOPs
    are added to the part's ledger. A class's forward (_measure) and a function's call (_call) alike."""
    flops *= 3 if backward else 1
    if flops > MAX_FLOPS:
        raise Refused("the grader's stand-in answers at most a small forward per call")
    if ledger.flops + flops > MAX_PART_FLOPS:
        raise Refused("this part has asked the grader's stand-in for all the work it answers")
    if made * (2 if backward else 1) + held > limit:
        raise Refused("the grader's stand-in would use more memory than the part may use")
    ledger.flops += flops


def module_dtype(module):
    floating = [t.dtype for t in _tensors(module) if t.is_floating_point()]
    return floating[0] if floating else torch.float32


def _bound_work(module, inputs):
    heads = max([1] + [int(getattr(m, "num_heads", 1)) for m in module.modules()]) * \
        max(1, sum(1 for m in module.modules() if m is not module and type(m).__module__.startswith("_ch03_reference_")))
    for x in inputs:
        if x.dim() >= 2 and x.numel() // max(1, x.shape[-1]) * x.shape[-2] * heads > MAX_WORK:
            raise Refused("the input is larger than the grader's stand-in takes")
        if x.numel() > MAX_ELEMENTS:
            raise Refused("the input is larger than the grader's stand-in takes")


def _place(module, given):
    """Every parameter and buffer of module becomes the child's tensor of the same name; one the
    child's module no longer has becomes None; a name the class does not have is refused."""
    known = {n for n, _ in module.named_parameters()} | {n for n, _ in module.named_buffers()}
    for name in given:
        if name not in known:
            raise AttributeError(f"the grader's {type(module).__name__} has no parameter or buffer {name}")
    for name, sub in module.named_modules():
        prefix = f"{name}." if name else ""
        for store in (sub._parameters, sub._buffers):
            for leaf in list(store):
                store[leaf] = given.get(prefix + leaf)


def error(exc: BaseException) -> dict:
    """A refusal or the solution's exception as the child raises it (a builtin type, a short message)."""
    kind = type(exc).__name__
    kind = kind if isinstance(getattr(builtins, kind, None), type) else ("ValueError" if isinstance(exc, Refused)
                                                                         else "RuntimeError")
    return {"type": kind, "message": text.excerpt(str(exc), 300)}
