"""The thin adapter the hidden suites use to reach student code: every call is a remote call.

    causal = student.module("causal")
    attn = causal.CausalAttention(3, 2, 6, 0.0, _seed=123)   # built in the sandboxed child
    out = attn(batch)                                         # a plain tensor, rebuilt here
    attn.eval(); attn.load_state_dict(weights); attn.get("mask"); attn.describe()

Nothing here imports or runs student code. Results are plain tensors, arrays and numbers;
objects that are not data (modules) stay in the child and come back as RemoteObject handles.
"""
import builtins
import re
from pathlib import Path
from typing import Any

from autograder import source_reading, stand_ins, text
from autograder.authoring.stubs import HINTS
from autograder.import_failure import SYNTAX_KINDS, cell_place, shown_file
from autograder.inside import protocol
from autograder.sandbox.client import SessionDied  # noqa: F401  (re-exported for the suites)

# The only exception names and places a diagnosis quotes: a check that has run on hidden inputs
# must not carry text the student's code chose (a class named after an answer, a file name or a
# line number picked with compile()) into a message the student sees.
BUILTIN_ERRORS = frozenset(name for name, value in vars(builtins).items()
                           if isinstance(value, type) and issubclass(value, BaseException))


def chapter_files() -> frozenset[str]:
    """The chapter's module files (chapter.yml's parts), read on call: a place a diagnosis may quote."""
    from autograder import chapter

    return frozenset(f"{module}.py" for module in chapter.current().parts)


SYNTAX_PLACE = re.compile(r"\((\w+\.py), line (\d+)\)$")  # the end of a syntax error's message, as Python says it
Cells = dict[str, tuple[str, int]]  # {module: (its notebook as shown, its cell's number from 1)}: Staged.cells


class StudentError(Exception):
    """The student's code raised (or is not implemented yet).

    Every field is student-controlled and cleaned here, where it enters the grader. explain() is
    safe in any message, hidden checks' included: a builtin exception's name (another class is
    "an exception of its own class") and the chapter file it came from, never a line, a function
    name or the exception's text. student_text() (type, message and the full place, short) reaches
    a student only for checks whose inputs were visible ones.
    """

    def __init__(self, kind: str, message: str, where: str = "", not_implemented: bool = False,
                 attributes: frozenset[str] = frozenset(), after_hidden: bool = False, called: str = "",
                 files: frozenset[str] | None = None, cells: Cells | None = None) -> None:
        self.kind = text.identifier(kind)
        self.called = called  # the stub's name of what the grader itself called ('' for a method of a handle)
        # after a hidden input the child could pick its exception, file or attribute name to spell
        # that input out: explain() then says only that it raised (or which of the stubs' own names
        # is not implemented yet), and no attribute of its source is quoted
        # (misconceptions.error_diagnosis keeps to the specification's names)
        self.after_hidden = after_hidden
        attributes = frozenset() if after_hidden else attributes
        self.attributes = attributes  # the `self.<name>` names of the student's source (see Student)
        self.message = text.clean(message, text.MESSAGE)
        self.where = text.excerpt(where, 200)
        self.not_implemented = not_implemented
        self.files = files  # the graded chapter's module files (None: this repository's chapter's)
        self.cells = cells or {}  # the grader's record of the modules staged from notebooks (Staged.cells)
        super().__init__(self.explain())

    def _chapter_files(self) -> frozenset[str]:
        return self.files if self.files is not None else chapter_files()

    def _file(self) -> str:
        """The chapter file the place names first ('' for none: a place the child made up names nothing)."""
        file = self.where.split(",", 1)[0]
        return file if file in self._chapter_files() else ""

    def _cell(self) -> tuple[str, int] | None:
        """(notebook, cell number) where the place's file was a notebook's solution cell, else None."""
        file = self._file()
        return self.cells.get(file[:-3]) if file.endswith(".py") else None

    def explain(self) -> str:
        file = self._file()  # a notebook student's: its cell, as the grader staged it, not a file
        place = f" (in {shown_file(file, self.cells)})" if file and not self.after_hidden else ""
        if self.not_implemented:  # the stubs say "<module>.<qualname>: <hint>"; only a stub's name is quoted
            name = self.message.split(":", 1)[0]  # one of the stubs' own names (HINTS), never another
            # after a hidden input which stub raised is the child's choice (1 of 25): the name is then the
            # one of what the grader called, its own request, or none (issue 37.6)
            if self.after_hidden:
                return f"not implemented yet: {self.called}" if self.called in HINTS else "not implemented yet"
            # the stub's name says where (module.function): no file besides it, so that a visible check and a
            # hidden one say the same of one unfinished function (one item, not two: issue 34 item 7)
            return f"not implemented yet: {name}" if name in HINTS else f"not implemented yet{place}"
        if self.after_hidden:
            return "your code raised an exception"
        kind = self.kind if self.kind in BUILTIN_ERRORS else "an exception of its own class"
        return f"your code raised {kind}{place}"

    def student_text(self) -> str:
        """What the exception said and where, as a short one-line excerpt. A place in a module staged
        from a notebook names the notebook and the cell instead (line N of the module is line N of
        its cell, the line Jupyter numbers): the grader's record, only the rest is the child's."""
        message = self._syntax_in_cell()
        said = f"{self.kind}: {message}" if message else self.kind
        where, cell = self.where, self._cell()
        if cell is not None:
            where = f"{cell_place(self._file()[:-3], *cell)}{where[len(self._file()):]}"
        return text.excerpt(f"{said} ({where})" if where else said)

    def _syntax_in_cell(self) -> str:
        """The message, where Python's syntax error ends in "(causal.py, line 3)" for a module staged from a
        notebook: its cell instead (the same line)."""
        found = SYNTAX_PLACE.search(self.message) if self.kind in SYNTAX_KINDS else None
        if found is None or found.group(1) not in self._chapter_files() or found.group(1)[:-3] not in self.cells:
            return self.message
        module = found.group(1)[:-3]
        return f"{self.message[:found.start()]}({cell_place(module, *self.cells[module])}, line {found.group(2)})"


CONSTRUCTORS = {  # the specified positional parameters of the chapter's classes
    ("self_attention_v1", "SelfAttention_v1"): ("d_in", "d_out"),
    ("self_attention_v2", "SelfAttention_v2"): ("d_in", "d_out", "qkv_bias"),
    ("causal", "CausalAttention"): ("d_in", "d_out", "context_length", "dropout", "qkv_bias"),
    ("mha", "MultiHeadAttentionWrapper"): ("d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"),
    ("mha", "MultiHeadAttention"): ("d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"),
}
SELF_ATTRIBUTE = re.compile(r"\bself\.([A-Za-z_]\w{0,39})\b")


def source_attributes(folder: str | Path, limit: int = 200) -> frozenset[str]:
    """The first `limit` distinct names written as `self.<name>` in the staged modules of folder."""
    names = set()
    for path in sorted(Path(folder).glob("*.py")):
        try:
            source = source_reading.module_text(path)
        except OSError:
            continue
        for found in SELF_ATTRIBUTE.finditer(source):
            names.add(found.group(1))
            if len(names) >= limit:
                return frozenset(names)
    return frozenset(names)


def _called(target) -> str:
    """The stub's name (stubs.HINTS) of a module's function or class the grader calls, from its own
    request; '' for anything else (a method reached through a handle)."""
    module, attr = target.get("module"), target.get("attr")
    if not isinstance(module, str) or not isinstance(attr, str) or not attr:
        return ""
    name = f"{module}.{attr}"
    return name if name in HINTS else f"{name}.__init__" if f"{name}.__init__" in HINTS else ""


class Student:
    """One part's session on one submission."""

    def __init__(self, session: Any, attributes: frozenset[str] = frozenset(), folder: str | Path | None = None,
                 files: frozenset[str] | None = None, cells: Cells | None = None) -> None:
        """attributes: the names the submission's source writes as `self.<name>` (source_attributes):
        a diagnosis may repeat one of them, chosen before any input was seen. folder: the staged
        submission, whose text the grader reads itself (source()). files: the graded chapter's module
        files, the places an error may name (None: this repository's chapter's). cells: the modules staged
        from notebooks (Staged.cells), whose errors name the notebook's cell instead of the file."""
        self.session = session
        self.files = files
        self.cells = cells
        self.attributes = attributes
        self.folder = folder
        self.keywords = False  # call the chapter's classes by keyword where their source reorders the contract
        self._reordered: dict[tuple[str, str], tuple[Any, tuple[str, ...]]] | None = None
        self.last_arguments: list[Any] = []
        self.call_limit: float | None = None  # seconds one remote call may take (None: the part's limit)
        # the torch switches an operation changed and left changed, as the child read them after it (its
        # reply's "changed": torch's names, kept only where they are plain short names); a check's diagnosis
        # clears it before the check and reads it after (suites/helpers.diagnose_errors)
        self.changed_settings: set[str] = set()
        # the top-level demo statements of the student's modules the child skipped at import (inside/demo_lines.py),
        # as (module, line, exception class: a builtin's name or ''), read from replies before any hidden input;
        # the runner shares one set between a submission's Students (SubmissionContext.demo_lines)
        self.demo_lines: set[tuple[str, int, str]] = set()
        self.substituted = False  # the child holds the grader's own code for another part: never reused
        self._sources: dict[str, str] | None = None
        # the grader's classes this child was given stand-ins for: the only ones whose questions are
        # answered (stand_ins.allowed); the part's costs of answering (the runner may share one
        # Ledger between a part's children, so the part's bounds hold over all of them)
        self.given: frozenset = frozenset()
        # the verdicts of the dependency probe on the parts this part uses (suites/dependencies.py: '' where the
        # part is right on its own), set by the runner before the part's checks
        self.verdicts: dict[str, str] = {}
        self.ledger, self.ledger_base = stand_ins.Ledger(), 0.0

    def charge_to(self, ledger: stand_ins.Ledger) -> None:
        """Answer this child's questions on the part's Ledger (its seconds from now count in this child)."""
        self.ledger, self.ledger_base = ledger, ledger.seconds

    @property
    def answered_seconds(self):
        """The grader's CPU time answering this child's questions since charge_to."""
        return self.ledger.seconds - self.ledger_base

    @property
    def saw_hidden(self):
        """The child has been sent a hidden input (runner.run_checks marks it)."""
        return bool(getattr(self.session, "saw_hidden", False))

    def module(self, name):
        return RemoteCallable(self, {"module": name, "attr": ""})

    def reordered(self) -> dict[tuple[str, str], tuple[Any, tuple[str, ...]]]:
        """{(module, class): (its parameter names, the contract's)} for the chapter's classes whose __init__
        takes the contract's names in another order (read from the source here)."""
        if self._reordered is None:
            self._reordered = {}
            for (module, name), contract in CONSTRUCTORS.items():
                names = source_reading.reordered(self.sources(), name, contract, module)
                if names:
                    self._reordered[(module, name)] = (names, contract)
        return self._reordered

    def source(self, module):
        """The submitted text of <module>.py as staged ('' when absent or unknown): read here, by the
        grader, never run (source_reading.py parses it)."""
        if self.folder is None:
            return ""
        try:
            return source_reading.module_text(Path(self.folder) / f"{module}.py")
        except OSError:
            return ""

    def sources(self):
        """{module name: submitted text} of every top-level .py file staged (whole: staging bounds them):
        the grader's reading follows a class name through the modules that bind it (source_reading.Reading)."""
        if self._sources is None:
            self._sources = {}
            for path in sorted(Path(self.folder).glob("*.py"))[:source_reading.MAX_MODULES] if self.folder is not None else ():
                try:
                    self._sources[path.stem] = source_reading.module_text(path)
                except OSError:
                    continue
        return self._sources

    def request(self, op, target, args=(), kwargs=None, seed=0, extra=None):
        message = {"args": list(args), "kwargs": dict(kwargs or {}), **(extra or {})}
        structure, buffers = protocol.encode(message, fallback=_handle_ref)
        header, payload = self._exchange({"op": op, "target": target, "input": structure, "seed": seed}, buffers)
        if "error" in header:
            raise self._error(header["error"], target)
        answer = self._answer(header.get("result"), payload, "result" in header)
        if isinstance(answer, StudentError):
            raise answer
        return answer

    def _error(self, e, target) -> StudentError:
        """The student's exception of the request to target, as the child reported it."""
        return StudentError(str(e.get("type")), str(e.get("message", "")), str(e.get("where", "")),
                            bool(e.get("not_implemented")), self.attributes, self.saw_hidden, _called(target),
                            self.files, self.cells)

    def _answer(self, structure, payload, present=True):
        """One answer rebuilt here (RemoteObjects for handles), or the StudentError that says it could
        not be read back. Every string of it (names in describe(), recorded argument names, returned
        text, dictionary keys) is cleaned as it enters the grader (autograder/text.py), in the walk
        that rebuilds it; tensors, numbers and handles as they are."""
        try:
            if not present:
                raise KeyError("result")
            return protocol.decode(structure, payload, lambda ref: RemoteObject(self, ref), text.clean)
        except (KeyError, protocol.ProtocolError) as exc:
            return StudentError("ProtocolError", f"the answer could not be read back ({exc})",
                                after_hidden=self.saw_hidden)

    def plan(self, steps, one_limit=False):
        """Several requests in one exchange with the child (issue 38.7): steps (Step) run there in order,
        each as its own request would, until the first that fails -> [each step's answer, or the
        StudentError its request would have raised (then the last)]; shorter when a step refers to an
        earlier step's answer (Step.on) that is not a module, for the caller to go on as it would have
        after that answer. Only steps the grader would send unconditionally once the earlier ones
        answered (stopping at an exception) belong in one plan; a hidden input travels in the plan whose
        step uses it. Where one call has a time limit of its own (call_limit), the steps go one by one, unless
        one_limit: then the limit is the whole plan's (a dependency probe's: stricter, never charged)."""
        if self.call_limit is not None and not one_limit or len(steps) < 2:
            return self._one_by_one(steps)
        messages, header_steps = [], []
        for step in steps:
            messages.append({"args": list(step.args), "kwargs": dict(step.kwargs), **(step.extra or {})})
            header_steps.append({"op": step.op, "target": step.target, "seed": step.seed})
        structure, buffers = protocol.encode(messages, fallback=_handle_ref)
        header, payload = self._exchange({"op": "plan", "steps": header_steps, "input": structure}, buffers)
        answers: list[Any] = []
        done = header.get("steps")
        position = 0
        for entry in done[:len(steps)] if isinstance(done, list) else ():
            size = entry.get("bytes") if isinstance(entry, dict) else None
            if type(size) is not int or not 0 <= size <= len(payload) - position:
                answers.append(StudentError("ProtocolError", "the answer could not be read back (bad plan step)",
                                            after_hidden=self.saw_hidden))
                return answers
            answers.append(self._answer(entry.get("result"), payload[position:position + size], "result" in entry))
            position += size
            if isinstance(answers[-1], StudentError):
                return answers
        if "error" in header and len(answers) < len(steps):
            answers.append(self._error(header["error"], _step_target(steps[len(answers)].target, answers)))
        elif len(answers) < len(steps) and header.get("stopped") != len(answers):
            answers.append(StudentError("ProtocolError", "the answer could not be read back (the plan stopped)",
                                        after_hidden=self.saw_hidden))
        return answers

    def _one_by_one(self, steps):
        """Student.plan's answers, one request per step."""
        answers: list[Any] = []
        for step in steps:
            target = _step_target(step.target, answers)
            if target is None:
                return answers
            try:
                answers.append(self.request(step.op, target, step.args, step.kwargs, step.seed, step.extra))
            except StudentError as e:
                answers.append(e)
                return answers
        return answers

    def _exchange(self, header, buffers):
        """One request and its reply; on the way, every question a stand-in of the grader's classes
        asks from inside the child (inside/stand_in.py) is answered here, in the grader's process, when
        this child was given that class (self.given), and charged to the part: the grader's CPU time
        answering counts against the call's and the part's time (_left), as the child's own would."""
        # the child's CPU time so far is read only where a call's own limit needs it (_left)
        start = (self.session.spent() if self.call_limit is not None else 0.0, self.ledger.seconds)
        reply, payload = self.session.call(header, buffers, self._left(start))
        while "stand_in" in reply:
            answer = stand_in_answer(reply, payload, self.given, self.ledger, getattr(self.session, "memory_mb", None))
            reply, payload = self.session.call(*answer, self._left(start))
        changed = reply.get("changed")
        if isinstance(changed, list):
            self.changed_settings.update(name for name in changed[:64] if isinstance(name, str) and
                                         re.fullmatch(r"\w{1,60}", name))
        self._read_skipped(reply.get("skipped"))
        return reply, payload

    def _read_skipped(self, skipped: Any) -> None:
        """The reply's "skipped" entry (inside/demo_lines.py) into self.demo_lines: only before any hidden input
        (after one, what the child says could carry it), only the chapter's modules, a line number and a
        builtin exception's name (any other class: ''). The grader quotes the line from its own copy."""
        if not isinstance(skipped, list) or self.saw_hidden:
            return
        files = self.files if self.files is not None else chapter_files()
        for entry in skipped[:20]:
            if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
                    and f"{entry[0]}.py" in files and type(entry[1]) is int and 0 < entry[1] < 1_000_000
                    and isinstance(entry[2], str)):
                continue
            self.demo_lines.add((entry[0], entry[1], entry[2] if entry[2] in BUILTIN_ERRORS else ""))

    def _left(self, start):
        """Seconds of CPU time the child may still use in this call (None: the part's limit, which the
        child's own clock enforces): the call's limit and the part's, less what the grader spent
        answering this part's questions."""
        spent, answered = start
        left = None
        if self.call_limit is not None:
            left = self.call_limit - (self.session.spent() - spent) - (self.ledger.seconds - answered)
        timeout = getattr(self.session, "timeout", None)
        if self.answered_seconds and isinstance(timeout, (int, float)):
            part = timeout - self.session.spent() - self.answered_seconds
            left = part if left is None else min(left, part)
        return None if left is None else max(0.0, left)

    def substitute(self, modules: Any) -> Any:
        """From now on the child imports the grader's own classes (stand-ins computed here, from the
        reference solutions: stand_ins.py) for each module named, in place of the student's;
        () gives the student's back."""
        self.substituted = self.substituted or bool(modules)
        self.given = stand_ins.allowed(modules)
        return self.request("substitute", {}, extra={"stand_ins": stand_ins.substitutes(modules)})

    def import_module(self, name: str) -> Any:
        return self.request("import", {"module": name})

    def record(self, function, *args, patches=(), returns=(), _seed=0, **kwargs):
        """Call function(*args, **kwargs) in the child with every (module, attribute) of patches
        (e.g. ("exercises", "MultiHeadAttentionWrapper")) replaced by a stand-in that keeps the
        arguments of each call and returns the next of `returns` (RemoteObjects; None after them).
        -> (what function returned, [Call, one per call]). The originals are put back; the
        arguments as they were after the call are in self.last_arguments."""
        target = function._target if isinstance(function, RemoteCallable) else {"handle": function._id}
        extra = {"patches": [list(p) for p in patches], "returns": list(returns)}
        answer = self.request("record", target, args, kwargs, _seed, extra)
        self.last_arguments = list(answer.get("arguments", ()))
        return answer.get("result"), [Call(c) for c in answer.get("calls", ())]


def stand_in_answer(reply, payload, given=frozenset(), ledger=None, memory_mb=None):
    """The grader's answer to a stand-in's question (a reply {"stand_in": ...}) -> the request that
    carries it back: plain tensors and numbers, or the refusal the child raises. given: the classes
    this child was given (nothing is answered for any other: stand_ins.NotGiven, kept in ledger);
    ledger, memory_mb: the part's costs and memory limit (stand_ins.answer)."""
    try:
        asked = protocol.decode(reply["stand_in"], payload)
        tensors = asked.get("tensors", []) if isinstance(asked, dict) else []
        found, tensors = stand_ins.answer(asked.get("question") if isinstance(asked, dict) else None, tensors,
                                          given, ledger, memory_mb)
    except Exception as exc:  # the question is the child's data; the solution's own error goes back to it
        return {"op": "stand_in_answer", "error": stand_ins.error(exc)}, []
    structure, buffers = protocol.encode({**found, "tensors": tensors})
    return {"op": "stand_in_answer", "input": structure}, buffers


class Step:
    """One request of a plan (Student.plan): op on target with args and kwargs after seed. target may be
    Step.on(i, attr): attribute path attr of what step i returned (a module)."""

    def __init__(self, op, target, args=(), kwargs=None, seed=0, extra=None):
        self.op, self.target, self.args, self.kwargs = op, target, tuple(args), dict(kwargs or {})
        self.seed, self.extra = seed, extra

    @staticmethod
    def on(step, attr=""):
        return {"step": step, "attr": attr}


def _step_target(target, answers):
    """A step's target as a single request names it (an earlier step's answer as its handle), or None
    when that answer is not a module."""
    if "step" not in target:
        return target
    earlier = answers[target["step"]]
    return {"handle": earlier._id, "attr": target.get("attr", "")} if isinstance(earlier, RemoteObject) else None


def outcome(answer):
    """A plan's answer as the single request gives it: the value, or its StudentError raised."""
    if isinstance(answer, StudentError):
        raise answer
    return answer


class Call:
    """One recorded call: args, kwargs, and bound and names (every argument and its parameter name in
    the order of the replaced class's own signature, defaults filled in; None when they did not fit)."""

    def __init__(self, raw):
        self.args = list(raw.get("args", ()))
        self.kwargs = dict(raw.get("kwargs", {}))
        self.bound = list(raw["bound"]) if isinstance(raw.get("bound"), (list, tuple)) else None
        names = raw.get("names")
        self.names = [str(n) for n in names] if isinstance(names, (list, tuple)) and self.bound is not None \
            and len(names) == len(self.bound) else None


class RemoteCallable:
    """A function, class or attribute path inside a student module."""

    def __init__(self, student, target):
        self._student, self._target = student, target

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        path = f"{self._target['attr']}.{name}".lstrip(".")
        return RemoteCallable(self._student, {**self._target, "attr": path})

    def __call__(self, *args, _seed=0, **kwargs):
        args, kwargs = self._arguments(args, kwargs)
        return self._student.request("call", self._target, args, kwargs, _seed)

    def as_step(self, *args, _seed=0, **kwargs):
        """This call as a step of a plan (Student.plan)."""
        args, kwargs = self._arguments(args, kwargs)
        return Step("call", self._target, args, kwargs, _seed)

    def _arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        known = self._student.reordered().get((self._target.get("module"), self._target.get("attr"))) \
            if self._student.keywords and "module" in self._target else None
        if known and args:  # the contract's positional arguments, passed by the contract's names
            names, contract = known
            kwargs = {**dict(zip(contract, args[:len(contract)], strict=False)), **kwargs}  # fewer args: the rest by name
            args = tuple(args[len(contract):])
        return args, kwargs

    def get(self):
        """The attribute's value (data, or a RemoteObject for anything else)."""
        return self._student.request("getattr", self._target)


class RemoteObject:
    """An object that lives in the child (a module the student's code built)."""

    def __init__(self, student, ref):
        self._student, self._ref = student, ref
        self._type_name = text.identifier(ref.get("type", "?"))  # a class name the student chose

    @property
    def type_name(self):
        """The class name the student chose; after a hidden input, a fixed phrase instead."""
        return "(class not shown)" if self._student.saw_hidden else self._type_name

    @property
    def _id(self):
        return self._ref["__handle__"]

    def __call__(self, *args, _seed=0, **kwargs):
        return self._student.request("call", {"handle": self._id}, args, kwargs, _seed)

    def as_step(self, *args, _seed=0, **kwargs):
        """self(*args, **kwargs) as a step of a plan (Student.plan)."""
        return Step("call", {"handle": self._id}, args, kwargs, _seed)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return RemoteCallable(self._student, {"handle": self._id, "attr": name})

    def get(self, path):
        """Read an attribute path, e.g. get('mask'), get('heads.0'), get('dropout.p')."""
        return self._student.request("getattr", {"handle": self._id, "attr": path})

    def describe(self):
        """Class name, training flag, parameters and buffers (name, shape, dtype) in registration order."""
        return self._student.request("describe", {"handle": self._id})

    def registered(self):
        """{"parameters": {name: tensor}, "buffers": {name: tensor}} as the module's registries hold
        them (inside/child.registered: read without any method the student's code could override)."""
        return self._student.request("registered", {"handle": self._id})

    def registered_step(self):
        """self.registered() as a step of a plan (Student.plan)."""
        return Step("registered", {"handle": self._id})

    def grads(self, *args, grad_output, _seed=0):
        """Gradient of every named parameter after backward(grad_output) through self(*args)."""
        return self._student.request("grads", {"handle": self._id}, args, {"grad_output": grad_output}, _seed)

    def count_ops(self, *args, device=None, _seed=0):
        """self(*args) in the child under a mode that counts the tensor operations it issues ->
        {"counts": {aten op name: calls}, "output", "device", "dtype", "shape"} (output None off the
        CPU). device="emulated-cuda": the module and its arguments on the emulated GPU instead
        (inside/emulated_gpu.py; no counts, no output data).
        The counts come from the student's process: judge them only together with a right output."""
        return self._student.request("count_ops", {"handle": self._id}, args, {}, _seed, {"device": device})

    def assign(self, path, value):
        """Set the attribute path (e.g. 'heads.0') of this object to value (a RemoteObject or data)."""
        return self._student.request("assign", {"handle": self._id, "attr": path}, (value,))

    def same_object(self, other):
        return isinstance(other, RemoteObject) and other._id == self._id

    def __repr__(self):
        return f"<remote {self.type_name} #{self._id}>"


def _handle_ref(value):
    if isinstance(value, RemoteObject):
        return dict(value._ref)
    raise TypeError(f"cannot send a {type(value).__name__} to the student's process")
