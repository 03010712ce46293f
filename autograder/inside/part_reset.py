"""Between two parts in one child: forget the first part, and say whether the child is still as new.

A submission's parts share one child (runner.run_submission: visible checks first, hidden last).
After each part the grader asks the child to reset: the student's modules leave sys.modules, the
grader's handles are dropped, cyclic garbage is collected. Then the child compares itself with the
snapshot taken before any student code ran (`snapshot()`): the functions of torch, NumPy and the
standard library, the interpreter's and torch's global switches, the environment, the threads, the
open files, the processes in the namespace, /tmp and /dev/shm. Any difference and the child is
retired: the next part gets a fresh one, as if each part had its own.

Before each operation (child.reset_global_state) the child also puts back, as the snapshot has them,
what a module of ANOTHER part could change while this part runs (mha.py imports causal.py; a
dependency's probe runs causal's forward in mha's child): inference mode, every torch switch with a setter
(`_settings()`: each zero-argument torch._C._get_X with a _set_X, found by name, and the public ones
beside them), the torch function and dispatch modes pushed since (a default device among them), NumPy's
error handling, the warnings filters, the recursion limit, the trace and profile functions, the
collector's switch, the interval timers (signal.alarm, setitimer: cancelled), torch.compile's eager
stance (`compile_eagerly`), and every function or class of a watched namespace replaced or removed
(`restore()`). So no operation depends on what a
module did at import or an earlier operation did; a child that had anything put back is still
retired after the part.

This protects honest code from its own side effects (a learner's `torch.set_default_dtype` at
import, a patched function, a left-over thread); it is not a wall. A hostile submission can
hide a change from this check, but only from its own later parts, which run its own code
anyway; a hidden input reaches the child only after every check a student may see has run, and
the leader still kills everything a child leaves behind when it ends.
"""
import _signal
import builtins
import ctypes
import functools
import gc
import importlib
import inspect
import itertools
import json
import math
import operator
import os
import random
import signal
import struct
import sys
import threading
import traceback
import types
import warnings
from typing import Any

import numpy as np
import torch

# the signals whose handler a part could change, as numbers: _signal's own functions, as the
# signal module's wrappers turn each number and handler into an enum (a tenth of a millisecond a reset)
SIGNALS = tuple(sorted(s for s in _signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)))
TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)  # a part's timer fires in a later part
GROWTH_LIMIT = 1 / 4  # of the part's memory: a child holding more than this after a reset is retired


def _watched(also=()):
    """Namespaces whose contents student code could replace, and the checks would then use (also: the
    grader's own modules in the child, given by the child: this module imports none of them)."""
    nn = torch.nn
    spaces = [builtins, torch, nn, nn.functional, nn.init, torch.linalg, torch.autograd, torch.Tensor, *LAYERS,
              np, np.linalg, np.random, np.testing, math, random, os, sys, gc, inspect, importlib, traceback,
              json, struct, itertools, functools, operator, types, warnings, threading, *_torch_modules(),
              *_torch_layers(), *also]
    return [s for s in spaces if hasattr(s, "__dict__")]


# the classes of torch.nn the chapter's code builds on (watched first, by name)
LAYERS = (torch.nn.Module, torch.nn.Linear, torch.nn.Dropout, torch.nn.Parameter, torch.nn.ModuleList,
          torch.nn.Sequential, torch.nn.Embedding)


def _torch_layers():
    """Every other layer class torch.nn offers (nn.Softmax, nn.LayerNorm, ...: beyond LAYERS):
    a module that replaced nn.Softmax.forward when imported changed every nn.Softmax of the parts graded
    after it in the same child (tests/test_left_by_another_part.py). Found once, in the fork server, as
    _torch_modules; an unchanged class costs an operation one read of its dict's version."""
    if not _LAYERS_FOUND:
        _LAYERS_FOUND.extend(layer for _, layer in sorted(vars(torch.nn).items()) if isinstance(layer, type)
                             and issubclass(layer, torch.nn.Module) and layer not in LAYERS)
    return _LAYERS_FOUND


_LAYERS_FOUND: list = []


# torch's modules whose globals its layers and functions read when they run (nn.Linear.forward reads F from
# torch.nn.modules.linear's namespace): a module of one part replacing one (torch.nn.modules.linear.F) changed
# every nn.Linear of the parts graded after it in the same child (self_attention_v2.py cost causal 21 of 22
# points; the redteam lane's leftover 3)
# (those of the layers the chapter's code builds: each namespace watched costs every operation a read)
TORCH_MODULES = ("torch._tensor", "torch.functional", "torch.random", "torch.overrides", "torch.nn.parameter",
                 "torch.autograd.grad_mode", "torch.nn.modules.module", "torch.nn.modules.linear",
                 "torch.nn.modules.dropout", "torch.nn.modules.container", "torch.nn.modules.activation",
                 "torch.nn.modules.sparse")


def _torch_modules():
    """The loaded modules of TORCH_MODULES: found once (in the fork server, before any child: every child
    inherits the list, as it inherits the modules)."""
    if not _TORCH_FOUND:
        _TORCH_FOUND.extend(sys.modules[name] for name in TORCH_MODULES if isinstance(sys.modules.get(name), types.ModuleType))
    return _TORCH_FOUND


_TORCH_FOUND: list = []


def _namespaces(also=()):
    """Per watched namespace: (the namespace, the dict behind it, that dict's version, its names, the
    objects they hold, in order), kept by the snapshot for _namespaces_as_before. The names and objects
    are those prepare() kept in the fork server when the dict's version says it has not changed since:
    the child then touches none of the 4,500 entries (each touch of an object inherited from the fork
    server copies its memory page: 1,500 page copies, about 7 ms, in every child)."""
    found = []
    for space in _watched(also):
        inner, contents = _dict_of(space), vars(space)
        version = _version(inner)
        kept = _PREPARED.get(id(space))
        if version is not None and kept is not None and kept[0] is space and kept[2] == version:
            found.append(kept)
        else:
            found.append((space, inner, version, tuple(contents), tuple(contents.values())))
    return tuple(found)


def _namespaces_as_before(saved):
    """Does every namespace of `saved` (_namespaces) hold the same names, in the same order, for the
    same objects? A dict whose version is unchanged holds exactly what it held (CPython gives a dict a
    new version at every insertion, replacement or deletion): nothing else is read. Any other is
    compared in place, at C speed (no copy, no id() per entry; the GIL is held throughout, so no
    thread changes a namespace meanwhile): a change undone since passes. A name removed and added
    again moves to the end: reported as a change, as the child would rather be replaced than trusted."""
    try:
        for space, inner, version, names, values in saved:
            if version is not None and _version(inner) == version:
                continue
            now = vars(space)
            if len(now) != len(names) or not all(map(operator.is_, now, names)) or \
                    not all(map(operator.is_, now.values(), values)):
                return False
    except RuntimeError:  # changed while read: changed
        return False
    return True


def prepare(also=()):
    """In the fork server, before it forks any child: keep each watched namespace's names and objects
    with its dict's version (_namespaces), for every child's snapshot to share."""
    _PREPARED.clear()
    _PREPARED.update((id(entry[0]), entry) for entry in _namespaces(also))


_PREPARED: dict[int, tuple] = {}  # id(namespace) -> _namespaces' entry for it, kept by prepare()


def _dict_of(space):
    """The dict behind vars(space): a module's own, a class's behind its read-only proxy (None if not found)."""
    contents = vars(space)
    if type(contents) is dict:
        return contents
    inner = gc.get_referents(contents)
    return inner[0] if len(inner) == 1 and type(inner[0]) is dict else None


def _dict_version(d):
    """CPython's version of a dict (PyDictObject.ma_version_tag, after ma_used), read in place."""
    return ctypes.c_uint64.from_address(id(d) + _VERSION_OFFSET).value


_VERSION_OFFSET = 3 * struct.calcsize("P")  # ob_refcnt, ob_type, ma_used


def _versions_readable():
    """Whether _dict_version reads a version that changes at every change of a dict, and only then
    (checked once here, on a dict of its own): CPython 3.9 to 3.12, which keep the field there."""
    if sys.implementation.name != "cpython" or not (3, 9) <= sys.version_info[:2] <= (3, 12) or hasattr(sys, "gettotalrefcount"):
        return False
    probe = {"a": 1}
    seen = [_dict_version(probe)]
    unchanged = _dict_version(probe) == seen[0]
    probe["a"] = 2
    seen.append(_dict_version(probe))
    probe["b"] = 1
    seen.append(_dict_version(probe))
    del probe["b"]
    seen.append(_dict_version(probe))
    return unchanged and len(set(seen)) == len(seen) and _dict_version(probe) == seen[-1]


VERSIONS = _versions_readable()


def _version(d):
    """d's version where it can be read (VERSIONS), else None: the namespace is then compared in full."""
    return _dict_version(d) if VERSIONS and type(d) is dict else None


# torch._C's getters that are not settings a check's numbers depend on (names, tracing, graph state)
_NOT_SETTINGS = {"_get_thread_name", "_get_tracing_state", "_get_graph_exec_group", "_get_value_trace",
                 "_get_tensor_metadata", "_get_dispatch_mode"}
_DENORMAL = 1e-310  # a subnormal double: x * 1.0 is 0.0 once denormals are flushed (torch.set_flush_denormal)


def _flushing_denormals():
    return _DENORMAL * 1.0 == 0.0


def _public_setters():
    """torch's settings set through its public functions, as (read, set) pairs."""
    def anomaly(value):
        torch.set_anomaly_enabled(*value)

    def deterministic(value):
        torch.use_deterministic_algorithms(value[0], warn_only=value[1])

    return [
        (torch.get_default_dtype, torch.set_default_dtype),
        (torch.is_grad_enabled, torch.set_grad_enabled),
        (torch.get_num_threads, torch.set_num_threads),
        (lambda: (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()), anomaly),
        (lambda: (torch.are_deterministic_algorithms_enabled(),
                  torch.is_deterministic_algorithms_warn_only_enabled()), deterministic),
        (_flushing_denormals, torch.set_flush_denormal),
    ]


def _setter(put):
    """put, taking back what its getter reads (a tuple read is given as its arguments)."""
    def setter(value):
        return put(*value) if isinstance(value, tuple) else put(value)

    return setter


def _find_setters():
    """Every torch switch this child can read and set again: each torch._C._get_X that takes no
    argument and has a _set_X taking back what it reads (the backends' flags, matmul precision, SDPA's
    kernels, the quantized engine, ...: found by name, so a switch a newer torch adds is covered), then
    the public ones (_public_setters). Tried once here, in the fork server, each set to its own value."""
    found = []
    for name in sorted(dir(torch._C)):
        if not name.startswith("_get_") or name in _NOT_SETTINGS or not hasattr(torch._C, "_set_" + name[5:]):
            continue
        get, put = getattr(torch._C, name), getattr(torch._C, "_set_" + name[5:])
        try:
            value = get()
            put(*value) if isinstance(value, tuple) else put(value)
            if get() != value:
                continue
        except Exception:  # takes an argument, or cannot be set on this build
            continue
        found.append((get, _setter(put)))
    for get, put in _public_setters():
        try:
            put(get())
        except Exception:  # a build without it
            continue
        found.append((get, put))
    return tuple(found)


SETTERS = _find_setters()
_GETTERS = tuple(get for get, _ in SETTERS)


def _settings():
    """The values of SETTERS' switches, in order (one torch cannot read: its error's type, a changed value too)."""
    try:
        return tuple([get() for get in _GETTERS])
    except Exception:  # one torch refuses to read
        return tuple(map(_read, SETTERS))


def _read(setter):
    try:
        return setter[0]()
    except Exception as exc:  # torch refuses to read it (its matmul precision, set by two APIs at once)
        return f"unreadable: {type(exc).__name__}"


def _switches():
    """The interpreter's, torch's and NumPy's global settings a check's numbers could depend on."""
    def optional(name, *args):
        fn = getattr(torch._C, name, None) or getattr(torch, name, None)
        try:
            return fn(*args) if fn else None
        except Exception:  # a build without it
            return None

    opts = torch._tensor_str.PRINT_OPTS
    module_hooks = torch.nn.modules.module
    hooks = [len(getattr(module_hooks, name)) for name in dir(module_hooks)
             if name.startswith("_global_") and isinstance(getattr(module_hooks, name), dict)]
    return (
        _settings(), torch.is_inference_mode_enabled(),
        optional("get_default_device"), optional("_len_torch_function_stack"),
        optional("_len_torch_dispatch_stack"), tuple(hooks), torch.backends.mkldnn.enabled,
        (opts.precision, opts.threshold, opts.edgeitems, opts.linewidth, opts.sci_mode),
        tuple(sorted(np.geterr().items())), repr(sorted(np.get_printoptions().items())),
        sys.getrecursionlimit(), sys.getswitchinterval(), sys.gettrace(), sys.getprofile(),
        tuple(sys.path), tuple(map(id, sys.meta_path)), tuple(map(id, sys.path_hooks)),
        id(sys.stdin), id(sys.stdout), id(sys.stderr), id(sys.displayhook), id(sys.excepthook),
        gc.isenabled(), gc.get_threshold(), len(gc.callbacks), len(warnings.filters),
        tuple(map(_signal.getsignal, SIGNALS)),
        os.getcwd(), tuple(sorted(os.environ.items())), _umask(), _timers(),
    )


def kernels():
    """The operator kernels and definitions registered from Python (torch.library: its Library objects' impl and
    define, the functional torch.library.impl, which keeps its Library for good), as a fingerprint. Such a
    kernel is torch's dispatcher's, not a namespace restore() reads: self_attention_v2.py registering its own
    CPU kernel for aten::_softmax at import made every softmax of the parts graded after it in the same child
    wrong (causal 4 of 22: tests/test_left_by_another_part.py). A registration left after the part retires the
    child (reset), and one a probed part leaves makes it "leaves" (child.leftovers)."""
    library = sys.modules.get("torch.library")
    registries = [getattr(library, name, None) for name in ("_impls", "_defs", "_keep_alive")]
    return tuple((len(found), hash(frozenset(map(str, found)))) if isinstance(found, (set, list)) else None
                 for found in registries)


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _processes_and_files():
    """What the child has beyond its own thread: threads, files, other processes, /tmp, IPC."""
    def listing(path):
        try:
            return sorted(os.listdir(path))
        except OSError:
            return None

    others = [p for p in listing("/proc") or () if p.isdigit() and int(p) not in (1, os.getpid())]
    ipc: list[int | None] = []
    for kind in ("shm", "msg", "sem"):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                ipc.append(len(f.read().splitlines()))
        except OSError:
            ipc.append(None)
    return (threading.active_count(), len(listing("/proc/self/task") or ()), listing("/proc/self/fd"),
            others, listing("/tmp"), listing("/dev/shm"), tuple(ipc))


def snapshot(also_watched=()):
    """The child as it is before any student code: taken once, when it starts. also_watched: the
    grader's own modules whose contents are watched too (the child passes itself and the protocol)."""
    also = tuple(also_watched)
    watched = {getattr(space, "__name__", "") for space in _watched(also)}
    return {"modules": set(sys.modules), "watched": {name: id(sys.modules.get(name)) for name in watched},
            "namespaces": _namespaces(also), "switches": _switches(), "kernels": kernels(),
            "around": _processes_and_files(),
            "rss": _resident(), "restore": _restorable(), "versions": _version_views(_namespaces(also)),
            "saved_hooks": _saved_hooks(), "compiling_eagerly": _compiling_eagerly()}


def _version_views(saved):
    """Per watched namespace whose dict version is readable: [a ctypes view of that version, the version
    it must have, the namespace's _namespaces entry]. The views are made once: reading one is a fiftieth
    of the cost of _dict_version, which restore() would pay for each namespace before every operation;
    restore() moves the version on where it has put a namespace back exactly as it was."""
    return [[ctypes.c_uint64.from_address(id(inner) + _VERSION_OFFSET), version, entry]
            for entry in saved for _, inner, version, _, _ in [entry] if version is not None]


def _restorable():
    """What restore() puts back, as it is now: (settings, function modes, dispatch modes, NumPy's error
    handling, the warnings filters' list and its entries, recursion limit, trace, profile, gc switch, which
    interval timers are armed, inference mode)."""
    return (_settings(), torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack(),
            np.geterr(), warnings.filters, list(warnings.filters), sys.getrecursionlimit(), sys.gettrace(),
            sys.getprofile(), gc.isenabled(), _timers(), torch.is_inference_mode_enabled())


def changed(before):
    """The names of torch's switches (SETTERS' getters, as torch names them; "inference_mode") that differ
    from the snapshot `before` now: read right after an operation, what that operation changed and left
    changed (restore() had put everything back before it). Reads only: restore() undoes them before the
    next operation. [] when nothing changed (one read of the settings)."""
    settings, inference = before["restore"][0], before["restore"][-1]
    names = [] if torch.is_inference_mode_enabled() == inference else ["inference_mode"]
    if _settings() != settings:
        names += [getattr(get, "__name__", "") for (get, put), value in zip(SETTERS, settings, strict=True)
                  if _read((get, put)) != value]
    return names


def _timers():
    """The interval timers armed (signal.setitimer, signal.alarm): whether each is."""
    return tuple(signal.getitimer(which) != (0.0, 0.0) for which in TIMERS)


def restore(before):
    """Before an operation: every setting, mode and watched function as the snapshot `before` has them
    (see the module's docstring). A name added to a watched namespace stays (a learner's helper method
    on a class is theirs to use) unless it hides a base class's; one replaced or removed gets its
    object back. Whatever was undone, reset() still retires the child after the part (what was undone
    may have left more behind: a cache, an object built under it), as it does for what cannot be put
    back here (a module replaced in sys.modules, a thread, a file). Reads only, when nothing changed."""
    settings, functions, dispatch, errors, filters, filter_list, limit, trace, profile, collecting, timers, \
        inference = before["restore"]
    undone = False
    if torch.is_inference_mode_enabled() != inference:  # a learner's torch.inference_mode() entered, kept open
        undone = True
        _GUARDS.append(torch._C._InferenceMode(inference))  # torch's own guard, kept: the mode as before
    if _timers() != timers:  # a timer armed since: its signal would end (or interrupt) a later operation
        undone = True
        for which, armed in zip(TIMERS, timers, strict=True):
            if not armed:
                signal.setitimer(which, 0)
    if _settings() != settings:
        undone = True
        for (get, put), value in zip(SETTERS, settings, strict=True):
            try:
                if _read((get, put)) != value:
                    put(value)
            except Exception:  # reset() still finds it
                pass
    if torch._C._len_torch_function_stack() != functions:
        undone = True
        _pop_function_modes(functions)
    if torch._C._len_torch_dispatch_stack() != dispatch:
        from torch.utils._python_dispatch import _pop_mode
        undone = True
        while torch._C._len_torch_dispatch_stack() > dispatch:
            _pop_mode()
    if np.geterr() != errors:
        undone = True
        np.seterr(**errors)
    if warnings.filters is not filters or warnings.filters != filter_list:
        undone = True
        warnings.filters = filters
        filters[:] = filter_list
        warnings._filters_mutated()  # type: ignore[attr-defined]  # its cache of filters, as warnings.simplefilter does
    if (sys.getrecursionlimit(), gc.isenabled()) != (limit, collecting) or sys.gettrace() is not trace or \
            sys.getprofile() is not profile:
        undone = True
        sys.setrecursionlimit(limit)
        sys.settrace(trace)
        sys.setprofile(profile)
        (gc.enable if collecting else gc.disable)()
    for kept in before["versions"]:
        if kept[0].value != kept[1]:
            undone = True
            _restore_namespace(kept[2])
            if _namespaces_as_before([kept[2][:2] + (None,) + kept[2][3:]]):  # exactly as it was: fast again
                kept[1] = kept[0].value
    for entry in before["namespaces"]:
        if entry[2] is None and not _namespaces_as_before([entry]):
            undone = True
            _restore_namespace(entry)
    if _saved_hooks() != before.get("saved_hooks", _saved_hooks()):
        undone = True
        _put_saved_hooks_back(before["saved_hooks"])
    if before.get("compiling_eagerly") and not _compiling_eagerly():  # torch.compile switched back on (compile_eagerly)
        undone = True
        _eager_stance()
    if undone:
        before["undone"] = True


_GUARDS: list = []  # the guards restore() entered for this child's life (it is retired after the part)

# torch's own switch that makes torch.compile run the code it is given as written (torch._dynamo.config.disable)
NO_COMPILING = "TORCH_COMPILE_DISABLE"


def compile_eagerly():
    """torch.compile (and torch._dynamo.optimize, a compiled nn.Module's forward, fullgraph=True or not) runs
    the student's code as written, in the child, under the grader's counting and its emulated GPU, with nothing
    compiled. Compiling is not something the room can do: inductor wants a C++ compiler (none is on the
    allow-list: a compiler writes and loads code the grader never reads, and its kernels run where the batching
    check's counter does not see), worker processes and a cache folder, and spends seconds of the part's CPU
    time before it fails. Before, a correct MultiHeadAttention whose forward was wrapped in torch.compile scored
    5 of 22: every call raised InductorError (no working C++ compiler) and the part timed out "looking for a
    loop that never ends" (tests/test_compiled_code.py). Set in the fork server (zygote.main), before any student
    code: every child inherits it; and put back before every operation where the snapshot has it (restore,
    _compiling_eagerly: a child's, not a test process's), so that a module that sets it back (causal.py at
    import) compiles none of another part's calls. torch.compile still asks for inductor's cache folder on every
    call: the child's environment names its own /tmp (isolation.CHILD_ENVIRONMENT)."""
    os.environ[NO_COMPILING] = "1"
    _eager_stance()


def _eager_stance():
    config: Any = importlib.import_module("torch._dynamo.config")  # (a config module: no stubs)
    config.disable = True
    # and torch.compile's own "ignore every torch.compile" stance: with the switch alone, torch.compile(f,
    # fullgraph=True) raised "found no compiled frames" on every call
    set_stance = getattr(torch.compiler, "set_stance", None)  # (torch 2.6 and later; pyproject allows 2.2)
    if set_stance is not None:
        set_stance("force_eager")


def _compiling_eagerly():
    """True when torch.compile's stance is compile_eagerly's (or torch._dynamo was never imported). The stance
    alone decides: under force_eager no frame is compiled whatever the switch says (reading the switch, a config
    module's attribute, cost 2 us an operation)."""
    frames = sys.modules.get("torch._dynamo.eval_frame")
    return frames is None or getattr(getattr(frames, "_stance", None), "stance", "force_eager") == "force_eager"


def _saved_hooks():
    """autograd's default hooks on saved tensors (torch.autograd.graph.saved_tensors_hooks, save_on_cpu): the
    innermost pair, as objects, and whether they are switched on (disable_saved_tensors_hooks). A module that
    enters saved_tensors_hooks at import and never leaves changes what every later backward reads: a
    self_attention_v2.py halving each saved tensor cost causal, graded after it in the same child, its
    gradients check (tests/test_left_by_another_part.py)."""
    autograd: Any = torch._C._autograd  # (torch's stubs lack _saved_tensors_hooks_is_enabled)
    top = autograd._top_saved_tensors_default_hooks(False)
    return (tuple(map(id, top)) if top else None, autograd._saved_tensors_hooks_is_enabled())


def _put_saved_hooks_back(saved):
    """Pop the default hooks on saved tensors pushed since the snapshot, and switch them back on or off."""
    autograd: Any = torch._C._autograd
    for _ in range(1 << 16):
        top = autograd._top_saved_tensors_default_hooks(False)
        if not top or tuple(map(id, top)) == saved[0]:
            break
        autograd._pop_saved_tensors_default_hooks()
    if autograd._saved_tensors_hooks_is_enabled() != saved[1]:
        if saved[1]:
            autograd._saved_tensors_hooks_enable()
        else:
            autograd._saved_tensors_hooks_disable(autograd._saved_tensors_hooks_get_disabled_error_message() or "")


def _pop_function_modes(depth):
    """The torch function modes pushed since the snapshot, popped: a default device first
    (torch.set_default_device keeps its mode in torch._GLOBAL_DEVICE_CONTEXT, and undoes it there)."""
    context = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)
    if context is not None:
        try:
            torch.set_default_device(None)
        except Exception:  # its mode was not on top: popped below, forgotten here
            torch._GLOBAL_DEVICE_CONTEXT.device_context = None
    while torch._C._len_torch_function_stack() > depth:
        torch._C._pop_torch_function_stack()


_MISSING = object()


def _restore_namespace(entry):
    """Every name of a watched namespace (entry: its _namespaces entry) that holds another object, or
    none, given its object back; a name added to a class that hides one of its bases' (torch.Tensor.softmax
    over TensorBase's) removed. Other added names stay: a learner's helper is theirs to use."""
    space, _, _, names, values = entry
    now = vars(space)
    for name, value in zip(names, values, strict=True):
        if now.get(name, _MISSING) is not value:
            try:
                setattr(space, name, value)
            except (AttributeError, TypeError):  # a read-only attribute: reset() still finds it
                pass
    if isinstance(space, type) and len(now) != len(names):
        kept = set(names)
        for name in [n for n in now if n not in kept and any(n in vars(base) for base in space.__mro__[1:])]:
            try:
                delattr(space, name)
            except (AttributeError, TypeError):
                pass


def forget_student_modules(before, workspace):
    """Remove from sys.modules every entry added since the snapshot (`before`: the names then) that
    is not a library module read from a file: the submission's modules, and anything made at run
    time. (A watched module replaced under its own name stays: reset() retires the child.)"""
    for name in [name for name in sys.modules if name not in before]:  # keys only: no module touched
        module = sys.modules.get(name)
        origin = getattr(module, "__file__", None) if isinstance(module, types.ModuleType) else None
        if not isinstance(origin, str) or origin.startswith(workspace):
            sys.modules.pop(name, None)


def reset(before, workspace, memory_mb):
    """Forget the part just run -> the reasons the child is no longer as new ([] when it is)."""
    forget_student_modules(before["modules"], workspace)
    gc.collect()
    why = []
    if before.pop("undone", False):
        why.append("a global setting, mode or function was changed (undone before each operation since)")
    if any(id(sys.modules.get(name)) != ident for name, ident in before["watched"].items()):
        why.append("a module of torch, NumPy or the standard library was replaced in sys.modules")
    if not _namespaces_as_before(before["namespaces"]):
        why.append("a function or class of torch, NumPy or the standard library was replaced")
    if _switches() != before["switches"]:
        why.append("a global setting changed")
    if kernels() != before["kernels"]:
        why.append("an operator's kernel was registered with torch.library")
    if _processes_and_files() != before["around"]:
        why.append("threads, processes, open files or temporary files were left behind")
    if _resident() - before["rss"] > GROWTH_LIMIT * (int(memory_mb) << 20):
        why.append("memory still held")
    return why


def _resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
