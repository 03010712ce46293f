"""The request loop inside the sandboxed child: the only code that touches student modules.

Each request names an operation on a student module or on an object the child holds for the
grader (a handle): call it, read an attribute, take gradients, describe a module. Answers are
plain data (see protocol.py). Whatever the student's code does here can only change the
numbers sent back, which the grader judges in its own process.
"""
import importlib
import inspect
import os
import random
import sys
from typing import Any

import numpy as np
import torch

from autograder.inside import counting, demo_lines, gpu, part_reset, protocol, stand_in
from autograder.inside.counting import count_ops
from autograder.inside.demo_lines import NAMESPACES, compiled_from

WORKSPACE = None  # the folder holding the student's modules, set by serve()
WORKSPACE_NAMES: tuple[str, ...] = ()  # the module names of its top-level .py files, set by serve()
DEVICE = "cpu"    # where the student's modules and the inputs given to them live (`grade --device`)
# part_reset.snapshot() of this child before any student code, filled by serve() (in place: this module's
# globals are watched, and the snapshot is of them)
AS_NEW: dict[str, Any] = {}


class Handles:
    """Objects the grader refers to by number (modules the student's code built)."""

    def __init__(self):
        self.objects, self.ids = {}, {}

    def store(self, obj):
        key = id(obj)
        if key not in self.ids:
            self.ids[key] = len(self.objects) + 1
            self.objects[self.ids[key]] = obj
        return {"__handle__": self.ids[key], "type": type(obj).__name__}

    def get(self, spec):
        try:
            return self.objects[spec["__handle__"]]
        except (KeyError, TypeError):
            raise LookupError(f"unknown handle {spec}") from None


def reset_global_state(seed):
    """Every operation starts from the same global state, whatever the previous one left or a module
    did at import (another part's among them: mha.py imports causal.py): in a served child, every
    setting, mode and watched function as before any student code (part_reset.restore); float32 by
    default, gradients on, each generator seeded with `seed`. A switch already as required is read,
    not set again (reading is 30 times cheaper); every generator is set on every call, as reading
    its state costs more than setting it, so no operation's draws depend on what ran before."""
    if AS_NEW:
        part_reset.restore(AS_NEW)
    if torch.get_default_dtype() is not torch.float32:
        torch.set_default_dtype(torch.float32)
    if not torch.is_grad_enabled():
        torch.set_grad_enabled(True)
    # the CPU generator alone: torch.manual_seed also queues lazy seeding of CUDA and other
    # devices, recording a formatted stack each time (~150 us, on every request)
    torch.default_generator.manual_seed(seed)
    if DEVICE == "cuda":
        torch.cuda.manual_seed(seed)  # dropout on the GPU draws from the device's generator
    np.random.seed(seed % 2**32)
    random.setstate(python_state(seed))


_PYTHON_STATES: dict[Any, tuple] = {}  # seed -> the state random.seed(seed) leaves


def python_state(seed):
    """The state of Python's generator right after random.seed(seed) (gauss_next cleared too), kept
    per seed: restoring it costs a third of seeding again (mt19937's key schedule), same state."""
    state = _PYTHON_STATES.get(seed)
    if state is None:
        random.seed(seed)
        state = random.getstate()
        if len(_PYTHON_STATES) < 64:  # a grading uses a few seeds; a long run of others is seeded each time
            _PYTHON_STATES[seed] = state
    return state


def resolve(handles, target):
    if "handle" in target:
        obj = handles.get({"__handle__": target["handle"]})
    else:
        obj = importlib.import_module(target["module"])
    for name in filter(None, target.get("attr", "").split(".")):
        obj = obj[int(name)] if name.isdigit() else getattr(obj, name)
    return obj


def run(handles, header, payload):
    inputs = protocol.decode(header["input"], payload, handles.get) if "input" in header else {}
    return perform(handles, header, inputs)


def perform(handles, header, inputs):
    """One operation (header's op, target and seed) on its decoded inputs -> its result."""
    args, kwargs = on_device(list(inputs.get("args", ()))), on_device(dict(inputs.get("kwargs", {})))
    op, target = header["op"], header["target"]
    if op == "substitute":
        return substitute(inputs.get("stand_ins", {}))
    # the student's modules are imported BEFORE the seed: whatever a module does at import (a demo's
    # torch.manual_seed(123), torch.rand(3), a layer built at the top level) never moves the draws
    # the specification's checks depend on, which start from the seed set right after
    for name in [target.get("module")] + [p[0] for p in inputs.get("patches", ()) if isinstance(p, (list, tuple))]:
        if isinstance(name, str) and name:
            importlib.import_module(name)
    obj: Any = resolve(handles, target) if op != "import" else None
    reset_global_state(header.get("seed", 0))
    if op == "import":
        return None
    if op == "getattr":
        return obj
    if op == "call":
        return placed(obj(*args, **kwargs), obj)
    if op == "grads":
        return gradients(obj, args, kwargs)
    if op == "describe":
        return describe(obj)
    if op == "registered":
        return registered(obj)
    if op == "origin":
        return origin(obj)
    if op == "leftovers":
        return leftovers()
    if op == "record":
        answer = record(obj, args, kwargs, inputs.get("patches", ()), on_device(list(inputs.get("returns", ()))))
        answer["result"] = placed(answer["result"], obj)
        return answer
    if op == "assign":
        return assign(handles, target, args[0])
    if op == "count_ops":
        return count_ops(obj, args, kwargs, inputs.get("device"))
    raise ValueError(f"unknown operation {op!r}")


def run_plan(handles, header, payload):
    """A plan: several operations in one request (issue 38.7), run in order -> (reply, buffers).

    header["steps"]: [{"op", "target", "seed"}], header["input"]: the list of their inputs. A step's
    target may be {"step": i, "attr": ...}: what step i returned, when that went back as a handle.
    The plan stops at the first failure: the reply holds every earlier step's result ({"result",
    "bytes": its share of the payload}, in order) and that step's error, as error_reply gives it
    alone; or, where a step refers to a step whose result is not a handle, it stops before it
    ("stopped": that step), for the grader to go on as it would have on the earlier answer."""
    done: list[dict[str, Any]] = []
    buffers: list[bytes] = []
    changed: set[str] = set()
    steps = header.get("steps")
    try:
        inputs = protocol.decode(header["input"], payload, handles.get)
        if not isinstance(steps, list) or not isinstance(inputs, list) or len(inputs) != len(steps):
            raise ValueError("a plan's steps and inputs do not match")
    except BaseException as exc:
        return {"steps": done, **error_reply(exc)}, buffers
    for step, given in zip(steps, inputs, strict=True):
        try:
            target = step["target"]
            if "step" in target:
                earlier = done[target["step"]]["result"] if 0 <= target["step"] < len(done) else None
                if not (isinstance(earlier, dict) and "__handle__" in earlier):
                    return {"steps": done, "stopped": len(done)}, buffers
                target = {"handle": earlier["__handle__"], "attr": target.get("attr", "")}
            try:
                result = perform(handles, {**step, "target": target}, dict(given))
            finally:
                changed.update(settings_changed())
            structure, more = protocol.encode(result, fallback=handles.store)
        except BaseException as exc:  # the student's exception ends the plan, as it ends a single request
            return {"steps": done, **error_reply(exc), **with_changed(changed)}, buffers
        done.append({"result": structure, "bytes": sum(len(b) for b in more)})
        buffers += more
    return {"steps": done, **with_changed(changed)}, buffers


def settings_changed():
    """The torch switches the operation just run changed and left changed (part_reset.changed): the
    grader names them where a failed check's numbers or gradients depend on them."""
    try:
        return part_reset.changed(AS_NEW) if AS_NEW else []
    except Exception:  # a switch that cannot be read now: nothing to name
        return []


def with_changed(names):
    """The reply's "changed" entry: the names, sorted, when there are any; and its "skipped" entry: the
    top-level demo statements of the student's modules skipped at import (demo_lines), when any were."""
    return {**({"changed": sorted(names)} if names else {}), **demo_lines.reply_entry()}


def placed(result, called):
    """What a call returned, with a module the student's code built moved to DEVICE, as the grader's
    inputs are (not module.to(...) returning itself). Every way of building one goes through here: a
    wrapper built with stand-in heads (op record) once kept its own layers on the CPU, so on a GPU
    its real bug was hidden behind a device error (issue 35's H200: mha-wrapper-extra-out-proj)."""
    if DEVICE != "cpu" and isinstance(result, torch.nn.Module) and result is not getattr(called, "__self__", None):
        result.to(DEVICE)
    return result


def on_device(value):
    """The grader's tensors (data from its process, always on the CPU), moved to DEVICE; lists,
    tuples and dicts walked. Parameters stay parameters; handles and other objects are left."""
    if DEVICE == "cpu":
        return value
    if isinstance(value, torch.nn.Parameter):
        return torch.nn.Parameter(value.detach().to(DEVICE), requires_grad=value.requires_grad)
    if isinstance(value, torch.Tensor):
        return value.to(DEVICE)
    if isinstance(value, (list, tuple)):
        return type(value)(on_device(v) for v in value)
    if isinstance(value, dict):
        return {k: on_device(v) for k, v in value.items()}
    return value


def gradients(module, args, kwargs):
    """Forward, backward with the given upstream gradient; the gradient of every parameter."""
    grad_output = kwargs.pop("grad_output")
    module.zero_grad(set_to_none=True)
    output = module(*args)
    if not isinstance(output, torch.Tensor) or output.shape != grad_output.shape:
        shape = tuple(output.shape) if isinstance(output, torch.Tensor) else type(output).__name__
        raise ValueError(f"the output ({shape}) does not match grad_output {tuple(grad_output.shape)}")
    # the gradients of output.backward(grad_output), without its shape check's import of sympy (~0.6 s per child)
    (output * grad_output).sum().backward()
    return {name: p.grad for name, p in module.named_parameters()}


class Recorder:
    """Stands in for a class the student's code builds: keeps each call's arguments and returns the
    next object the grader supplied (None once those run out)."""

    def __init__(self, returns):
        self.calls, self.returns = [], list(returns)
        self.original: Any = None

    def __call__(self, *args, **kwargs):
        call = {"args": list(args), "kwargs": dict(kwargs)}
        try:  # the arguments in the order of the replaced class's own signature, defaults filled in
            bound = inspect.signature(self.original).bind(*args, **kwargs)
            bound.apply_defaults()
            call["bound"] = list(bound.arguments.values())
            call["names"] = list(bound.arguments)
        except (TypeError, ValueError):
            pass
        self.calls.append(call)
        return self.returns[len(self.calls) - 1] if len(self.calls) <= len(self.returns) else None


def record(function, args, kwargs, patches, returns):
    """function(*args, **kwargs) with each (module, attribute) of patches replaced by one Recorder,
    put back afterwards -> {"result": what it returned, "calls": [{"args", "kwargs", "bound"}, ...],
    "arguments": args as they are after the call (an in-place change shows there)}.
    The class is recognised by what it is, not by its name: every other name a student module
    gives the same object (an alias, an import under another name, a class attribute) is replaced too."""
    recorder, saved = Recorder(returns), []
    try:
        originals = []
        for module_name, attr in patches:
            module = importlib.import_module(module_name)
            original = module.__dict__.get(attr)
            if original is not None and not isinstance(original, Recorder):
                originals.append(original)
            saved.append((module.__dict__, attr, module.__dict__.get(attr, Recorder)))
            recorder.original = recorder.original or original
            module.__dict__[attr] = recorder
        for namespace, name in aliases(originals):
            saved.append((namespace, name, namespace[name]))
            namespace[name] = recorder
        result = function(*args, **kwargs)
    finally:
        for namespace, attr, old in reversed(saved):
            if old is Recorder:
                namespace.pop(attr, None)
            else:
                namespace[attr] = old
    return {"result": result, "calls": recorder.calls, "arguments": list(args)}


def aliases(originals):
    """(namespace, name) of every other name the student's modules give one of the original objects."""
    if not originals:
        return []
    return [(module.__dict__, name) for module in student_modules() for name, value in list(module.__dict__.items())
            if any(value is original for original in originals)]


def student_modules():
    """The loaded modules that come from the student's folder (its top-level .py files, listed by
    serve()), and the grader's stand-ins for them. Looked up by name: a scan of all of sys.modules
    (torch's thousands) would cost a millisecond per recorded call."""
    found = []
    for name in set(WORKSPACE_NAMES) | SUBSTITUTED:
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None) or ""
        if module is not None and (name in SUBSTITUTED or isinstance(file, str) and file.startswith(WORKSPACE or "\0")):
            found.append(module)
    return found


SUBSTITUTED: set[str] = set()  # names of the chapter's modules the grader's own code stands in for (substitute())
# the modules loaded under each set of stand-ins (() : the student's own code alone), kept when substitute()
# changes the set: going back to a set puts its modules back instead of importing them again, which would
# come after a hidden input (a failed check run again on the student's own code, runner/check.py; a module
# that sleeps at import would be charged there). The grader imports the part's module before the first
# stand-ins come (runner/attempts.with_dependencies). A child that held stand-ins takes no other part.
LOADED: dict[tuple[str, ...], dict[str, Any]] = {}


def substitute(stand_ins):
    """The grader's classes and functions (as stand-ins: data and a door to the grader, stand_in.py) for
    each module of stand_ins ({module name: {"classes": {name: signature}, "functions": {name: signature}}},
    in import order) from now on, in place of the student's; {} gives the student's back. Every student module leaves sys.modules first, so
    that those imported next import the modules in place now; the modules loaded under this set of
    stand-ins before (LOADED) come back as they were."""
    leaving = {id(m) for m in student_modules()}
    names = [n for n, m in list(sys.modules.items()) if id(m) in leaving]
    LOADED.setdefault(tuple(sorted(SUBSTITUTED)), {}).update({n: sys.modules[n] for n in names})
    for name in names:
        del sys.modules[name]
    SUBSTITUTED.clear()
    kept = LOADED.get(tuple(sorted(stand_ins)), {})
    for name, given in stand_ins.items():
        sys.modules[name] = kept[name] if name in kept else \
            stand_in.make_module(name, given.get("classes", {}), given.get("functions", {}))
        SUBSTITUTED.add(name)
    sys.modules.update({n: m for n, m in kept.items() if n not in SUBSTITUTED})
    return sorted(SUBSTITUTED)


def assign(handles, target, value):
    """Set the attribute path target["attr"] (e.g. 'heads.0') of a handle to value."""
    *parents, last = target["attr"].split(".")
    owner = resolve(handles, {"handle": target["handle"], "attr": ".".join(parents)})
    if last.isdigit():
        owner[int(last)] = value
    else:
        setattr(owner, last, value)
    return None


REGISTERED_MODULES = 4096  # modules walked at most by registered()
# an nn.Module's own instance dict, through the slot every module has (a class's own __dict__ property,
# found first by attribute lookup, could answer anything)
_INSTANCE_DICT = torch.nn.Module.__dict__["__dict__"]


def _own(module):
    """A module's own instance dict (never its class's or instance's __dict__ property or __getattr__)."""
    return _INSTANCE_DICT.__get__(module, type(module))


def _tensors(own, key):
    """[(name, tensor)] of one of a module's registries (_parameters, _buffers): None entries (a Linear
    without bias) and anything not a tensor left out."""
    registry = dict.get(own, key)
    return [(name, value) for name, value in dict.items(registry) if isinstance(name, str)
            and issubclass(type(value), torch.Tensor)] if isinstance(registry, dict) else []


def _walk(module, each_once=True):
    """[(prefix, module, its own dict)] of a module and its submodules, depth first (each module before its
    submodules, in registration order), read from nn.Module's own _modules dicts: each once, the order of
    named_modules; with each_once False, under every name it has, the order of state_dict. At most
    REGISTERED_MODULES; an object that is not an nn.Module: none."""
    found: list[tuple[str, Any, dict[str, Any]]] = []
    stack, seen = [("", module)], set()
    while stack and len(found) < REGISTERED_MODULES:
        prefix, current = stack.pop()
        if (each_once and id(current) in seen) or not issubclass(type(current), torch.nn.Module):
            continue
        seen.add(id(current))
        own = _own(current)
        found.append((prefix, current, own))
        children = dict.get(own, "_modules")
        named = [(f"{prefix}{name}.", child) for name, child in dict.items(children)
                 if isinstance(name, str)] if isinstance(children, dict) else []
        stack.extend(reversed(named))
    return found


def registered(module):
    """{"parameters": {name: tensor}, "buffers": {name: tensor}} of a module and its submodules, in the
    order named_parameters gives (each module's own, then its submodules', depth first), read from
    nn.Module's own registries (the _parameters, _buffers and _modules dicts, as plain dicts), never
    through a method the module, its class or its instance could override (state_dict,
    named_parameters, __getattr__): what the module holds, whatever it says of itself. An object that
    is not an nn.Module holds nothing."""
    found: dict[str, dict[str, Any]] = {"parameters": {}, "buffers": {}}
    for prefix, _, own in _walk(module):
        for kind, key in (("parameters", "_parameters"), ("buffers", "_buffers")):
            for name, value in _tensors(own, key):
                found[kind].setdefault(prefix + name, value)
    return found


def describe(module):
    """A module's structure as the grader's structure checks read it: its class's name, its training flag,
    its parameters and buffers (name, shape, dtype; a tensor registered twice once, under its first name,
    as named_parameters gives them), its state_dict's keys (parameters and persistent buffers) and its
    children (name, class). Read from nn.Module's own registries like registered(), never through a method
    the module could override (named_parameters, state_dict, named_children, a `training` property)."""
    if not issubclass(type(module), torch.nn.Module):
        raise TypeError(f"a {type(module).__name__} is not a torch.nn.Module")
    walked = _walk(module)
    listed: dict[str, list[Any]] = {"parameters": [], "buffers": []}
    keys = []
    for kind, key in (("parameters", "_parameters"), ("buffers", "_buffers")):
        seen = set()
        for prefix, _, own in walked:
            for name, value in _tensors(own, key):
                if id(value) not in seen:
                    seen.add(id(value))
                    listed[kind].append((prefix + name, tuple(value.shape), str(value.dtype)))
    for prefix, _, own in _walk(module, each_once=False):  # state_dict's: parameters, then persistent buffers
        transient = dict.get(own, "_non_persistent_buffers_set")
        transient = transient if isinstance(transient, set) else set()
        keys += [prefix + name for name, _ in _tensors(own, "_parameters")]
        keys += [prefix + name for name, _ in _tensors(own, "_buffers") if name not in transient]
    own = _own(module)
    children = dict.get(own, "_modules")
    named, seen_children = [], set()
    for name, child in dict.items(children) if isinstance(children, dict) else ():
        if isinstance(name, str) and issubclass(type(child), torch.nn.Module) and id(child) not in seen_children:
            seen_children.add(id(child))
            named.append((name, type(child).__name__))
    return {"class": type(module).__name__, "training": dict.get(own, "training", True) is True,
            "parameters": listed["parameters"], "buffers": listed["buffers"], "state_dict": keys,
            "children": named}


def origin(obj):
    """The submission's module a function (or method) was written in, as this child compiled and ran it:
    its code compiled from that module's file and its globals that module's namespace; '' otherwise (a
    library's function, or code made or rebound while the submission ran, whatever file name it gives)."""
    function = getattr(obj, "__func__", obj)
    code, namespace = getattr(function, "__code__", None), getattr(function, "__globals__", None)
    module = compiled_from(code)
    return module if module and NAMESPACES.get(module) is namespace else ""


def leftovers():
    """What the code run so far left in place that no operation puts back (part_reset.restore does not:
    these are the code's to use while its part runs), as plain strings: the hooks registered on every
    module (torch.nn.modules.module's _global_* registries), the import system's finders and path hooks,
    and the submission's module names that sys.modules maps to something this child did not load from
    that file (demo_lines.Loader) nor stand in for. The dependency probe compares them before and after a
    part it probes runs in another part's child (suites/dependencies.py): a difference would act on the
    checks of the part that uses it (causal.py registering a hook on every MultiHeadAttention)."""
    hooks = torch.nn.modules.module
    found = [f"{name}={len(value)}" for name, value in sorted(vars(hooks).items())
             if name.startswith("_global_") and isinstance(value, dict)]
    found += [f"meta_path={[id(f) for f in sys.meta_path]}", f"path_hooks={[id(h) for h in sys.path_hooks]}"]
    found.append(f"kernels={part_reset.kernels()}")  # an operator's kernel registered with torch.library
    for name in sorted(WORKSPACE_NAMES):
        module = sys.modules.get(name)
        if module is not None and name not in SUBSTITUTED and NAMESPACES.get(name) is not getattr(module, "__dict__", None):
            found.append(f"module {name} not its file's")
    return found


def _student_frames(tb):
    """[(module, line, function name)] of the traceback's frames that run code this child compiled
    from the submission's files (demo_lines.COMPILED), outermost first."""
    found = []
    while tb is not None:
        code = tb.tb_frame.f_code
        module = compiled_from(code)
        if module:
            found.append((module, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    return found


def where(tb):
    """The innermost frame of the student's own files, as 'causal.py, line 12, in forward': a frame
    whose code this child compiled from that file, never one that names it (demo_lines.COMPILED)."""
    frames = _student_frames(tb)
    if not frames:
        return ""
    module, line, name = frames[-1]
    return f"{module}.py, line {line}, in {name}"


def error_reply(exc):
    kind = type(exc).__name__
    message = str(exc)
    if isinstance(exc, SystemExit):
        message = f"the code called sys.exit({exc.code!r})"
    return {"error": {
        "type": kind,
        "message": message[:2000],
        "where": where(exc.__traceback__),
        "not_implemented": isinstance(exc, NotImplementedError) and raised_by_student(exc.__traceback__),
    }}


def raised_by_student(tb):
    """True when the innermost frame of the traceback is in the student's own files (a stub's raise),
    not inside torch or another library (FlexAttention on CPU raises NotImplementedError too)."""
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return bool(compiled_from(tb.tb_frame.f_code))


def serve(requests_fd, replies_fd, workspace, protections=(), device="cpu", memory_mb=512):
    """Say which walls stand (before any student code runs), then answer requests until the
    grader closes the channel; between two parts, reset (part_reset.py) when the grader asks.
    device: where the student's modules run ("cpu" or "cuda"; on "cuda" this child initialises
    CUDA itself and caps its GPU memory at memory_mb, gpu.py)."""
    global WORKSPACE, WORKSPACE_NAMES, DEVICE
    DEVICE = device
    counting.LEADER[:] = [str(os.getppid())]  # this part's session leader (inside/counting._processes)
    if device == "cuda":
        try:
            protections = list(protections) + [gpu.claim(memory_mb)]
        except Exception as exc:  # the grader's GPU, not the student's code: no student code has run yet
            protocol.send(replies_fd, {"ready": False, "gpu_error": f"{type(exc).__name__}: {exc}"[:500]})
            return
    WORKSPACE = os.path.realpath(workspace) + os.sep
    try:
        WORKSPACE_NAMES = tuple(n[:-3] for n in os.listdir(WORKSPACE) if n.endswith(".py"))
    except OSError:
        WORKSPACE_NAMES = ()
    sys.path.insert(0, WORKSPACE.rstrip(os.sep))
    # the student's modules are compiled and imported by demo_lines' loader (COMPILED, NAMESPACES), where a
    # top-level demo line that raises is skipped
    demo_lines.install(WORKSPACE.rstrip(os.sep), WORKSPACE_NAMES)
    # where the submission's folder is read-only (the room's), no compiled module can be cached in it: not
    # tried (each import of a student module marshalled its code and failed to make __pycache__)
    if not os.access(WORKSPACE, os.W_OK):
        sys.dont_write_bytecode = True
    stand_in.CHANNEL.update(requests=requests_fd, replies=replies_fd)
    # before any student code: what a reset child must look like (this module and the protocol watched too)
    as_new = AS_NEW  # filled in place, and read by reset_global_state and by the reset between parts
    as_new.update(part_reset.snapshot(also_watched=(protocol, sys.modules[__name__])))
    protocol.send(replies_fd, {"ready": True, "protections": list(protections)})
    handles = Handles()
    while True:
        try:
            header, payload = protocol.receive(requests_fd)
        except protocol.ProtocolError:
            return
        if header.get("op") == "end_part":  # the grader's next part may run here if nothing is left over
            handles = Handles()
            why = part_reset.reset(as_new, WORKSPACE, header.get("memory_mb", 512))
            flush_output()
            protocol.send(replies_fd, {"clean": not why, "why": why})
            continue
        if header.get("op") == "plan":
            reply, buffers = run_plan(handles, header, payload)
            flush_output()
            protocol.send(replies_fd, reply, buffers)
            continue
        changed = []
        try:
            try:
                result = run(handles, header, payload)
            finally:
                changed = settings_changed()
            structure, buffers = protocol.encode(result, fallback=handles.store)
            reply = {"result": structure, **with_changed(changed)}
        except BaseException as exc:  # the student's exception, exit or interrupt is this part's answer
            reply, buffers = {**error_reply(exc), **with_changed(changed)}, []
        flush_output()
        protocol.send(replies_fd, reply, buffers)


def flush_output():
    """Push what the student's code printed into the captured output now: the child is ended by
    SIGKILL, so anything left in Python's buffers would be lost."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:  # a replaced or broken stream (or a full output file): nothing to do
            pass
