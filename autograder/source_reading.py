"""The grader's own reading of the submitted source: parsed here with `ast`, never run.

What the child reports of itself (its count of operations, its run on the emulated GPU) could be forged
by code that reaches into the grader's machinery; what the source says cannot be changed by
running it. A check that judges efficiency or devices passes only when both agree (efficiency.py).
Every function here takes source text and returns plain data; text that does not parse says nothing.
The text is the one Python runs (module_text: decoded by the file's own coding declaration).
"""
import ast
import importlib.util
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NamedTuple, Union, cast

# the Python modules of a submission: staging refuses more (submission.stage), so the grader's reading holds every
# module the child can import. Read 64 at most while staging copied any number, a submission's 66th module,
# which the reading never saw, hid a head loop from the counter with _disable_current_modes: 22 of 22
MAX_MODULES = 64
LIMIT = 8 << 20  # characters of a module read at most: the whole of any staged module (submission.MAX_BYTES);
# a longer text says nothing (read whole or not at all: nothing can hide past the part read)

TENSOR_FACTORIES = {"ones", "zeros", "empty", "full", "arange", "eye", "rand", "randn", "tril", "triu",
                    "ones_like", "zeros_like", "empty_like", "full_like", "linspace"}  # not torch.tensor(scalar):
# a 0-dim CPU tensor meets a GPU tensor without error
LIKE = {"ones_like", "zeros_like", "empty_like", "full_like"}  # these take the device of the tensor they copy
HEAD_WORDS = ("head",)  # a loop over range(self.num_heads) / self.heads / ... in forward


def module_text(path: Any) -> str:
    """The text of a submitted module as Python compiles it when the child imports it: the file's bytes
    decoded by its own coding declaration (PEP 263: `# coding: utf-7` on one of its first two lines, or a
    BOM), with universal newlines (importlib.util.decode_source, as the import system decodes). Read as
    UTF-8 instead, a module declaring utf-7 showed the grader comments where the child ran code (`#+AAo-`
    is a line break in utf-7): a head loop hidden from the counter there kept 22 of 22 with nothing listed.
    A declaration Python refuses leaves the module unimportable: then UTF-8, errors replaced. Raises OSError
    when the file cannot be read."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return importlib.util.decode_source(data)
    except (SyntaxError, UnicodeError, LookupError, ValueError):
        return data.decode("utf-8", errors="replace")


# the trees of the submission being graded, by the text parsed (per_submission); None: none kept
_TREES: dict | None = None
# what was read off those trees and their nodes, by (what, id(node)): (the node, the result) (per_submission)
_READ: dict | None = None


@contextmanager
def per_submission() -> Iterator[None]:
    """While one submission is graded (grading.grade_submission), each module's text is parsed once,
    each tree walked once (nodes: the list of its nodes every question reads) and read once for what
    every check asks of it (identifiers, assignments onto classes, the imports, the tampering found);
    a function the checks read (what a class runs) is walked once too, and the reading of the
    submission's modules (Reading) is made once where its answers cannot depend on the order of the
    questions (reading_of). The trees are kept by their text, what was read off them by node, and both
    dropped when its grading ends, never shared with another submission's. Nothing here changes a
    tree (every reader only walks it)."""
    global _TREES, _READ
    outer, _TREES, outer_read, _READ = _TREES, {}, _READ, {}
    try:
        yield
    finally:
        _TREES, _READ = outer, outer_read


def _read_once(what: str, tree: Any, read: Callable[[Any], Any]) -> Any:
    """read(tree), once per tree (or node of one) while a submission is graded (per_submission); the
    result is shared, so callers never change it."""
    if _READ is None:
        return read(tree)
    kept = _READ.get((what, id(tree)))
    if kept is None or kept[0] is not tree:  # (the tree is kept with it: its id is never another's)
        kept = _READ[(what, id(tree))] = (tree, read(tree))
    return kept[1]


def nodes(node: ast.AST) -> list:
    """Every node of node's tree, node first, in ast.walk's order (breadth first): walked once per
    node while a submission is graded (per_submission), so each question reads this list instead of
    walking the tree again. Shared: callers never change it."""
    return _read_once("nodes", node, _walk)


def _walk(node: ast.AST) -> list:
    return list(ast.walk(node))


def parse(source: str) -> ast.Module | None:
    """The module's tree; None when the text does not parse or is longer than LIMIT (read whole or not at all)."""
    if len(source) > LIMIT:
        return None
    text = source
    if _TREES is None:
        return _parse(text)
    if text not in _TREES:  # (by the text itself: equal texts, one tree)
        _TREES[text] = _parse(text)
    return _TREES[text]


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


Sources = Union[str, Mapping[str, str], "Reading"]  # a Reading: the sources read once


class Found(NamedTuple):
    """A class of the submission, as the grader reads it: the module whose file holds it, its statement."""
    module: str
    node: ast.ClassDef


class Reading:
    """The submission's modules as Python would bind their names at the end of an import, read with
    ast (never run): `class X`, `X = Y`, `from m import Y as X`, `import m` and `m.Y`, in the order
    the module's top level runs them (the bodies of its if, try, with and for statements too, not an
    `if __name__ == "__main__":` block); the last binding of a name is the one that counts."""

    def __init__(self, sources: str | Mapping[str, str], module: str = ""):
        self.sources = {module: sources} if isinstance(sources, str) else dict(sources)
        self._trees: dict = {}
        self._env: dict = {}
        self._bases: dict = {}  # id(ClassDef) -> the bindings its base expressions had where it was defined
        self._functions: dict = {}  # (module, id(ClassDef)) -> functions(): asked again, the same answer

    def tree(self, module: str) -> ast.Module | None:
        if module not in self._trees:
            source = self.sources.get(module)
            self._trees[module] = parse(source) if isinstance(source, str) else None
        return self._trees[module]

    def bindings(self, module: str) -> dict:
        """{name: binding} at the end of the module's top level; a binding is ("class", module, node),
        ("def", module, node), ("module", name), ("from", module, name) or None (anything else)."""
        if module in self._env:
            return self._env[module]
        env: dict[str, Any] = {}
        self._env[module] = env  # (an import cycle reads what is bound so far)
        tree = self.tree(module)
        walrus = tree is not None and _has_walrus(tree)  # (none in the module: no statement holds one)
        for node in _run_at_import(tree.body if tree is not None else []):
            if isinstance(node, ast.ClassDef):
                self._bases[id(node)] = [_value(env, b) for b in node.bases]
                env[node.name] = ("class", module, node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                env[node.name] = ("def", module, node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                value = _value(env, node.value) if isinstance(node, (ast.Assign, ast.AnnAssign)) and \
                    node.value is not None else None
                for target in targets:
                    if isinstance(target, ast.Name):
                        env[target.id] = value
                    else:
                        for sub in ast.walk(target):
                            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                                env[sub.id] = None
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
                    for target in targets:
                        if isinstance(target, ast.Name):
                            env[target.id] = ("def", module, node.value)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    env[alias.asname or top] = ("module", alias.name if alias.asname else top)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    source_module = node.module or ""
                    if alias.name == "*":
                        if node.level == 0 and source_module in self.sources:
                            env.update({k: v for k, v in self.bindings(source_module).items() if not k.startswith("_")})
                    else:
                        env[alias.asname or alias.name] = ("from", source_module, alias.name) if node.level == 0 \
                            else None
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                for sub in ast.walk(node.target):
                    if isinstance(sub, ast.Name):
                        env[sub.id] = None
            elif isinstance(node, ast.Delete):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        env.pop(target.id, None)
            for sub in ast.walk(node) if walrus and not isinstance(node, (ast.ClassDef, ast.FunctionDef,
                                                                          ast.AsyncFunctionDef)) else ():
                if isinstance(sub, ast.NamedExpr):  # (walrus) x := ...
                    env[sub.target.id] = None
        return env

    def follow(self, binding, depth: int = 0):
        """A binding followed through the submission's modules: ("class" | "def", module, node) or None
        (bound to something outside the submission, or to no class or function)."""
        while binding is not None and depth < 32:
            depth += 1
            if binding[0] in ("class", "def"):
                return binding
            if binding[0] == "from" and binding[1] in self.sources:
                binding = self.bindings(binding[1]).get(binding[2])
            else:
                return None
        return None

    def find(self, module: str, name: str) -> Found | None:
        """The class `module.name` is bound to at the end of module's import, when it is a class written
        in the submission (None otherwise)."""
        found = self.follow(self.bindings(module).get(name))
        return Found(found[1], found[2]) if found and found[0] == "class" else None

    def bases(self, found: Found) -> list:
        """found and its bases written in the submission, nearest first (each once)."""
        self.bindings(found.module)
        chain: list[Found] = []
        todo = [found]
        while todo and len(chain) < 64:
            cls = todo.pop(0)
            if any(c.node is cls.node for c in chain):
                continue
            chain.append(cls)
            self.bindings(cls.module)
            for base in self._bases.get(id(cls.node), []):
                target = self.follow(base)
                if target and target[0] == "class":
                    todo.append(Found(target[1], target[2]))
        return chain

    def functions(self, found: Found) -> list:
        """What runs when the class computes: the methods but __init__ of the class and of its bases
        written in the submission, functions the class body binds (forward = f), those the modules write
        onto the class from outside (Cls.forward = f, setattr(Cls, "forward", f)), and, transitively,
        the functions of the submission these call by name. [(module, function node)]"""
        key = (found.module, id(found.node))
        kept = self._functions.get(key)
        if kept is None or kept[0] is not found.node:
            kept = self._functions[key] = (found.node, self._find_functions(found))
        return list(kept[1])

    def _find_functions(self, found: Found) -> list:
        chain = self.bases(found)
        picked: list = []
        for cls in chain:
            env = self.bindings(cls.module)
            for node in cls.node.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name != "__init__":
                    picked.append((cls.module, node))
                elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    picked += self._functions_of(cls.module, env, node.value, cls)
        classes = {id(c.node) for c in chain}
        for module in self.sources:
            env = self.bindings(module)
            tree = self.tree(module)
            for owner, value in _written_onto(tree) if tree is not None else ():
                target = self.follow(_value(env, owner))
                if target and target[0] == "class" and id(target[2]) in classes:
                    picked += self._functions_of(module, env, value, None)
        seen: set[int] = set()
        result: list[Any] = []
        while picked:
            module, function = picked.pop(0)
            if id(function) in seen or len(result) > 4096:
                continue
            seen.add(id(function))
            result.append((module, function))
            env = self.bindings(module)
            for sub in nodes(function):
                if isinstance(sub, ast.Call) and isinstance(sub.func, (ast.Name, ast.Attribute)):
                    target = self.follow(_value(env, sub.func))
                    if target and target[0] == "def":
                        picked.append((target[1], target[2]))
        return result

    def _functions_of(self, module, env, value, cls):
        """The submission's functions a value refers to: a lambda, f, m.f, Other.f (a method)."""
        if isinstance(value, ast.Lambda):
            return [(module, value)]
        if isinstance(value, ast.Name) and cls is not None:  # a name bound earlier in the class body
            for node in cls.node.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == value.id:
                    return [(cls.module, node)]
        if isinstance(value, ast.Attribute):
            owner = self.follow(_value(env, value.value))
            if owner and owner[0] == "class":
                return [(owner[1], n) for c in self.bases(Found(owner[1], owner[2])) for n in c.node.body
                        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == value.attr][:1]
        target = self.follow(_value(env, value))
        return [(target[1], target[2])] if target and target[0] == "def" else []


def reading_of(sources: Sources, module: str = "") -> Reading:
    """The Reading of these sources (module: the name of a single text): while a submission is graded
    (per_submission), one Reading for every question asked of the same sources, which then reads each
    module's bindings and what each class runs once. Shared only where the modules import no `*` in a
    cycle: there a module's bindings depend on which module is read first (an import cycle reads what
    is bound so far), so each question reads them afresh, in its own order, as a new Reading would.
    Elsewhere a Reading's answers do not depend on the questions asked before."""
    if isinstance(sources, Reading):
        return sources
    if _READ is None:
        return Reading(sources, module)
    items = ((module, sources),) if isinstance(sources, str) else tuple(sources.items())
    key = ("reading", items)
    kept = _READ.get(key)
    if kept is None:
        fresh = Reading(sources, module)
        kept = _READ[key] = (items, None if _star_cycle(fresh) else fresh)
    return kept[1] if kept[1] is not None else Reading(sources, module)


def _star_cycle(reading: Reading) -> bool:
    """Some module of the reading imports `*` from the submission's modules in a cycle (itself too)."""
    stars = {}
    for module in reading.sources:
        tree = reading.tree(module)
        stars[module] = [] if tree is None else _read_once("stars", tree, _find_stars)
    done: set[str] = set()

    def cycle(module: str, path: tuple) -> bool:
        if module in path:
            return True
        if module in done or module not in stars:
            return False
        if any(cycle(other, path + (module,)) for other in stars[module]):
            return True
        done.add(module)
        return False

    return any(cycle(module, ()) for module in stars)


def _find_stars(tree: ast.Module) -> list:
    """The modules `from m import *` names at the module's top level (as Reading.bindings reads it)."""
    return [node.module or "" for node in _run_at_import(tree.body) if isinstance(node, ast.ImportFrom)
            and node.level == 0 and any(alias.name == "*" for alias in node.names)]


def _has_walrus(tree: ast.Module) -> bool:
    return _read_once("walrus", tree, lambda t: ast.NamedExpr in set(map(type, nodes(t))))


def _is_main_guard(test: ast.AST) -> bool:
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__" and \
        len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant) and \
        test.comparators[0].value == "__main__"


TRY_NODES: tuple[type[ast.Try], ...] = (ast.Try, getattr(ast, "TryStar", ast.Try))  # try, and except* (3.11)


def _run_at_import(body: list):
    """The statements a module's top level runs, in order: those inside its if/try/with/for/while
    blocks too (any branch: the reading cannot know which runs), not an `if __name__ == "__main__":`."""
    for node in body:
        if isinstance(node, ast.If):
            if _is_main_guard(node.test):
                yield from _run_at_import(node.orelse)
                continue
            yield from _run_at_import(node.body)
            yield from _run_at_import(node.orelse)
        elif isinstance(node, TRY_NODES):
            yield from _run_at_import(node.body)
            for handler in node.handlers:
                yield from _run_at_import(handler.body)
            yield from _run_at_import(node.orelse)
            yield from _run_at_import(node.finalbody)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            yield from _run_at_import(node.body)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            yield node
            yield from _run_at_import(node.body)
            yield from _run_at_import(node.orelse)
        else:
            yield node


def _value(env: dict, expr: ast.AST):
    """What an expression is bound to, by the bindings so far: a name, or m.name of an imported module."""
    if isinstance(expr, ast.Name):
        return env.get(expr.id)
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        owner = env.get(expr.value.id)
        if owner is not None and owner[0] == "module":
            return ("from", owner[1], expr.attr)
    return None


def _written_onto(tree: ast.Module) -> list:
    """(owner expression, value) for each `Owner.attr = value` and `setattr(Owner, "attr", value)`
    anywhere in the module: a method can be replaced from outside the class."""
    return _read_once("written onto", tree, _find_written_onto)


def _find_written_onto(tree: ast.Module) -> list:
    found = []
    for node in nodes(tree):
        if isinstance(node, ast.Assign):
            found += [(t.value, node.value) for t in node.targets if isinstance(t, ast.Attribute)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and \
                len(node.args) == 3:
            found.append((node.args[0], node.args[2]))
    return found


def find(sources: Sources, module: str, class_name: str, pointer: dict | None = None) -> Found | None:
    """The class `module.class_name` is bound to, read by the grader (Reading), or None. pointer: the
    child's word on it ({"module", "qualname", "line", "line_module"}: data, see efficiency.where_bound): the grader's
    reading must agree with it (the same module and class name, and the line of the forward the child
    runs among those of what the class runs); where the reading finds no class (a binding made at run
    time), the class the pointer names is read when the submission writes one there."""
    reading = reading_of(sources, module)
    found = reading.find(module, class_name)
    if pointer is None:
        return found
    named, qualname, line = pointer.get("module"), pointer.get("qualname"), pointer.get("line")
    line_module = pointer.get("line_module")
    if found is None and isinstance(named, str) and isinstance(qualname, str) and "." not in qualname:
        found = reading.find(named, qualname)
    if found is None or found.module != named or found.node.name != qualname:
        return None
    if isinstance(line, int) and not isinstance(line, bool):
        lines = {(m, min([f.lineno] + [d.lineno for d in getattr(f, "decorator_list", [])]))
                 for m, f in reading.functions(found)}
        if (line_module, line) not in lines:
            return None
    return found


def class_functions(source: Sources, class_name: str, module: str = "", pointer: dict | None = None) \
        -> list | None:
    """The function nodes of what class_name runs (Reading.functions); None when the name is bound to
    no class the submission writes (or the child's pointer disagrees with the reading)."""
    reading = reading_of(source, module)
    found = find(reading, module, class_name, pointer)
    return None if found is None else [f for _, f in reading.functions(found)]


def _mentions_heads(node: ast.AST) -> bool:
    """The expression names heads: self.num_heads, self.heads, range(num_heads), n_heads, ..."""
    for sub in ast.walk(node):
        word = sub.attr if isinstance(sub, ast.Attribute) else sub.id if isinstance(sub, ast.Name) else ""
        if any(w in word.lower() for w in HEAD_WORDS):
            return True
    return False


def loops_over_heads(source: Sources, class_name: str, module: str = "", pointer: dict | None = None) \
        -> tuple | None:
    """(module, line) of a Python loop over the heads (a for loop, comprehension or while loop whose
    iterable or condition names the heads) in what class_name runs (Reading.functions); () when there is
    none; None when the name is bound to no class the submission writes (find)."""
    reading = reading_of(source, module)
    found = find(reading, module, class_name, pointer)
    if found is None:
        return None
    for where, function in reading.functions(found):
        line = _read_once("head loop", function, _head_loop)
        if line is not None:
            return where, line
    return ()


def _head_loop(function: Any) -> int | None:
    """The line of the function's first loop over the heads (loops_over_heads), None when it has none.
    A loop that only gathers the heads' already computed results (gathers_only: torch.cat([context[:, h]
    for h in range(self.num_heads)], dim=-1)) computes nothing per head and is not one."""
    for node in nodes(function):
        if isinstance(node, ast.For) and _mentions_heads(node.iter) and \
                not all(gathers_only(statement) for statement in node.body + node.orelse) or \
                isinstance(node, ast.While) and _mentions_heads(node.test):
            return node.lineno or function.lineno
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            loops = [g for g in node.generators if _mentions_heads(g.iter)]
            work = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            work += [e for g in node.generators for e in g.ifs] + [g.iter for g in node.generators if g not in loops]
            if loops and not all(gathers_only(expression) for expression in work):
                return getattr(loops[0].iter, "lineno", 0) or node.lineno or function.lineno
    return None


# what a loop over the heads may call and still compute nothing per head: picking, viewing and collecting
GATHERS = frozenset({"append", "extend", "transpose", "permute", "view", "reshape", "contiguous", "squeeze",
                     "unsqueeze", "select", "narrow", "flatten", "unflatten", "t"})
INDEX_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)


def gathers_only(node: ast.AST) -> bool:
    """node (a statement or expression of a loop's body) only picks, views and collects tensors
    (names, attributes, subscripts with integer arithmetic in their index, calls of GATHERS methods,
    assignments of those): no operator on tensors, no other call, so no computation per head. Read from
    names only (a helper's method named view may compute): the batching check passes only when the
    counts agree (suites/efficiency.per_head_work: no computing operation issued more often with more heads)."""
    if isinstance(node, (ast.Name, ast.Constant, ast.Load, ast.Store, ast.Pass, ast.Slice)):
        return True
    if isinstance(node, (ast.Expr, ast.Starred, ast.Attribute)):
        return gathers_only(node.value)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(gathers_only(e) for e in node.elts)
    if isinstance(node, ast.Subscript):
        return gathers_only(node.value) and _index_only(node.slice)
    if isinstance(node, ast.Assign):
        return all(gathers_only(t) for t in node.targets) and gathers_only(node.value)
    if isinstance(node, ast.AugAssign):  # outs += [context[:, h]]
        return isinstance(node.op, ast.Add) and isinstance(node.value, (ast.List, ast.Tuple)) and \
            gathers_only(node.target) and gathers_only(node.value)
    if isinstance(node, ast.Call):
        if not (isinstance(node.func, ast.Attribute) and node.func.attr in GATHERS and gathers_only(node.func.value)):
            return False
        collects = node.func.attr in ("append", "extend")  # what it collects, else sizes and dims (-1, h * 2)
        return all(gathers_only(a) or not collects and _index_only(a)
                   for a in [*node.args, *(k.value for k in node.keywords)])
    return False


def _index_only(node: ast.AST) -> bool:
    """An index: slices, names, constants, attributes and their integer arithmetic (h * head_dim)."""
    if isinstance(node, ast.Slice):
        return all(_index_only(part) for part in (node.lower, node.upper, node.step) if part is not None)
    if isinstance(node, ast.Tuple):
        return all(_index_only(e) for e in node.elts)
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, INDEX_ARITHMETIC) and _index_only(node.left) and _index_only(node.right)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.USub) and _index_only(node.operand)
    if isinstance(node, ast.Attribute):
        return _index_only(node.value)
    return isinstance(node, (ast.Name, ast.Constant, ast.Load))


def _device_given(call: ast.Call) -> bool:
    """device= given (or **options), and not the CPU written out (_names_the_cpu)."""
    return any(k.arg is None or k.arg == "device" and not _names_the_cpu(k.value) for k in call.keywords)


def _names_the_cpu(node: ast.AST) -> bool:
    """'cpu' (or 'cpu:0') written out, or torch.device('cpu'): a device no GPU run changes. With a value read in
    the same forward (which the emulated GPU could not answer before its fake tensors had real twins,
    inside/emulated_gpu.Twins), torch.ones(T, T, device="cpu") passed both the reading and the emulation, and
    failed on a GPU (tests/test_compiled_code.py::test_a_mask_made_on_the_cpu_by_name_costs_the_device_point); the
    emulation now observes it, and the reading, which must agree, names it too."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "device" and \
            node.args and not node.keywords:
        node = node.args[0]
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.split(":")[0] == "cpu"


def _cpu_factory(node: ast.AST) -> bool:
    """torch.<factory>(...) without device= (or with the CPU's): a tensor made on the CPU."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
            isinstance(node.func.value, ast.Name) and node.func.value.id == "torch" and
            node.func.attr in TENSOR_FACTORIES - LIKE and not _device_given(node)):
        return False
    if node.func.attr in ("tril", "triu"):  # torch.triu(scores) keeps its argument's device
        return bool(node.args) and _cpu_factory(node.args[0])
    return True


def _to_the_cpu(node: ast.AST) -> bool:
    """x.cpu(), x.to('cpu'), x.to(device='cpu'), x.to(torch.device('cpu')): a tensor moved to the CPU."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr == "cpu":
        return not node.args
    return node.func.attr == "to" and (any(_names_the_cpu(a) for a in node.args[:1]) or
                                       any(k.arg == "device" and _names_the_cpu(k.value) for k in node.keywords))


def cpu_tensors(source: Sources, class_name: str, module: str = "", pointer: dict | None = None) \
        -> list | None:
    """[(module, line, 'torch.ones')] for each tensor factory called without device= in what class_name
    runs (Reading.functions): such a tensor is made on the CPU whatever the inputs' device. None when the
    name is bound to no class the submission writes (find). (x.new_ones(...), torch.ones_like(x),
    device=x.device and a registered buffer all follow the inputs.)"""
    reading = reading_of(source, module)
    found = find(reading, module, class_name, pointer)
    if found is None:
        return None
    made = []
    for where, function in reading.functions(found):
        made += [(where, line, call) for line, call in _read_once("cpu tensors", function, _cpu_calls)]
    return sorted(set(made))


def _cpu_calls(function: ast.AST) -> list:
    """[(line, 'torch.ones')] of the function's tensor factories called without device= (or with the CPU's) and
    not moved, and [(line, '.cpu')] of its moves to the CPU (.cpu(), .to('cpu'))."""
    moved = _moved(function)
    made = []
    for node in nodes(function):
        if _cpu_factory(node) and id(node) not in moved:
            call = cast(ast.Call, node)  # _cpu_factory: a call of torch.<factory>
            made.append((call.lineno, f"torch.{cast(ast.Attribute, call.func).attr}"))
        elif _to_the_cpu(node) and id(node) not in moved:
            made.append((cast(ast.Call, node).lineno, f".{cast(ast.Attribute, cast(ast.Call, node).func).attr}"))
    return made


# what a machine has, asked by name (the dotted name's last parts, under any name of torch: `th.cuda.is_available`,
# `from torch import cuda`): a device chosen from the answer follows the machine, not the inputs
MACHINE_CALLS = {"cuda.is_available", "cuda.device_count", "cuda.current_device", "cuda.is_initialized",
                 "cuda.get_device_name", "cuda.get_device_properties", "cuda.get_device_capability",
                 "backends.cuda.is_built", "mps.is_available", "mps.is_built", "accelerator.is_available",
                 "accelerator.current_accelerator", "accelerator.device_count", "accelerator.current_device_index"}
MACHINE_VALUES = {"version.cuda", "version.hip"}  # torch.version.cuda: None on a CPU-only build


def _dotted(node: ast.AST) -> str:
    """'a.b.c' for a chain of names and attributes (getattr(a, "b") read as a.b); '' for anything else."""
    parts = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and \
                len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            parts.append(node.args[1].value)
            node = node.args[0]
        else:
            break
    if not isinstance(node, ast.Name):
        return ""
    return ".".join([node.id, *reversed(parts)])


def _ends_with(dotted: str, names: set) -> bool:
    return any(dotted == name or dotted.endswith("." + name) for name in names)


def _asks_the_machine(node: ast.AST) -> bool:
    """Is node a question to the machine about its devices (MACHINE_CALLS called, MACHINE_VALUES read)?"""
    if isinstance(node, ast.Call):
        return _ends_with(_dotted(node.func), MACHINE_CALLS)
    return isinstance(node, ast.Attribute) and _ends_with(_dotted(node), MACHINE_VALUES)


def machine_devices(source: Sources, class_name: str, module: str = "", pointer: dict | None = None) \
        -> list | None:
    """[(module, line)] where what class_name runs (Reading.functions) asks the machine about its devices, or reads
    a name its module's top level bound from such a question (DEVICE = "cuda" if torch.cuda.is_available() else
    "cpu"), or an attribute of self that an __init__ of the class or its bases set from one: a tensor put on a device
    chosen so follows the machine, not the inputs (on a GPU machine given inputs on the CPU it meets them on the
    GPU), and code that asks can take one path on the grader's emulated GPU (a CPU-only build) and another on a
    GPU. None when the name is bound to no class the submission writes (find)."""
    reading = reading_of(source, module)
    found = find(reading, module, class_name, pointer)
    if found is None:
        return None
    attributes = {target.attr for cls in reading.bases(found) for init in cls.node.body
                  if isinstance(init, (ast.FunctionDef, ast.AsyncFunctionDef)) and init.name == "__init__"
                  for node in nodes(init) for target in _bound_from_the_machine(node)
                  if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"}
    found_at = []
    for where, function in reading.functions(found):
        names = _read_once("machine names", reading.tree(where), _machine_names) if reading.tree(where) else set()
        names = names - _local_names(function)  # (a local `device = x.device` is not the module's `device`)
        for node in nodes(function):
            if _asks_the_machine(node) or \
                    (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names) or \
                    (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and node.attr in attributes
                     and isinstance(node.value, ast.Name) and node.value.id == "self"):
                found_at.append((where, node.lineno))
    return sorted(set(found_at))


def _local_names(function: ast.AST) -> set:
    """The names a function binds itself (its parameters, what it assigns), unless declared global."""
    declared = {name for node in nodes(function) if isinstance(node, ast.Global) for name in node.names}
    bound = {node.id for node in nodes(function) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        arguments = function.args
        bound |= {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                  *filter(None, [arguments.vararg, arguments.kwarg])]}
    return bound - declared


def _bound_from_the_machine(node: ast.AST) -> list:
    """The targets of an assignment whose value asks the machine about its devices; [] for any other node."""
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None or \
            not any(_asks_the_machine(n) for n in nodes(node.value)):
        return []
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def _machine_names(tree: ast.Module) -> set:
    """The names a module's top level binds from a question to the machine about its devices."""
    return {n.id for node in _run_at_import(tree.body) for target in _bound_from_the_machine(node)
            for n in nodes(target) if isinstance(n, ast.Name)}


# .to(x.device), .type_as(x): the tensor follows the inputs; .cuda(): it goes to the GPU (`if x.is_cuda: mask =
# mask.cuda()` is right on a GPU machine; an unconditional .cuda() raises on the CPU inputs of the other checks)
MOVES = {"to", "type_as", "cuda"}


def _moved(function: ast.AST) -> set:
    """ids of the nodes whose tensor is moved to another device before use: inside the receiver of
    .to(...) / .type_as(...) / .cuda() (but .to('cpu'): _to_the_cpu), or assigned to a name that is moved so in the
    same function."""
    receivers = [n.func.value for n in nodes(function) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Attribute) and n.func.attr in MOVES and not _to_the_cpu(n)]
    names = {r.id for r in receivers if isinstance(r, ast.Name)}
    moved = {id(sub) for r in receivers for sub in ast.walk(r)}
    for node in nodes(function) if names else ():
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in node.targets):
            moved |= {id(sub) for sub in ast.walk(node.value)}
    return moved


def init_parameters(source: Sources, class_name: str, module: str = "") -> list | None:
    """The names of the __init__ positional parameters of the class class_name is bound to (its own or
    the nearest base's written in the submission), self left out (None: no such class or __init__)."""
    reading = reading_of(source, module)
    found = reading.find(module, class_name)
    for cls in reading.bases(found) if found else ():
        init = next((n for n in cls.node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if init is not None:
            return [a.arg for a in init.args.posonlyargs + init.args.args][1:]
    return None


def reordered(source: Sources, class_name: str, contract: tuple, module: str = "") -> list | None:
    """class_name.__init__'s parameter names when they are the contract's names in another order (so a
    call by keywords reaches them as specified); None otherwise."""
    names = init_parameters(source, class_name, module)
    if not names or len(names) < len(contract) or set(names[:len(contract)]) != set(contract):
        return None
    return names if names[:len(contract)] != list(contract) else None


def imported_from(source: str, module: str) -> list:
    """The names `from <module> import ...` brings in (their own names, as imported), in order."""
    tree = parse(source)
    names = []
    for node in nodes(tree) if tree is not None else ():
        if isinstance(node, ast.ImportFrom) and node.module == module and node.level == 0:
            names += [alias.name for alias in node.names if alias.name != "*"]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == module:
            names.append(node.attr)  # mha.SomeClass
    return list(dict.fromkeys(names))


def tuple_asserts(source: str, class_name: str = "") -> list:
    """The line numbers of `assert (condition, "message")`: a non-empty tuple is always true, so the
    assert never fires. class_name: only inside that class."""
    tree = parse(source)
    found = reading_of(source).find("", class_name) if class_name else None
    scope = found.node if found else None if class_name else tree
    if scope is None:
        return []
    return [node.lineno for node in nodes(scope)
            if isinstance(node, ast.Assert) and isinstance(node.test, ast.Tuple) and node.test.elts]


DISPATCH = r"dispatch|_disable_current_modes|_pop_mode|_push_mode|torch_function|TorchFunction|_python_mode|" \
           r"function_mode|function_stack"  # (torch.overrides._get_current_function_mode_stack: the counter's and
# the emulated GPU's torch function modes, WholeAttention and OneGPU, seen from the code they measure)
GRADER_HOOKS = {  # what the code names (an identifier it reads, calls, imports or looks up) -> a pattern
    "a dispatch mode": DISPATCH,  # TorchDispatchMode, _python_dispatch, _pop_torch_dispatch_stack, ...
    "torch's private bindings": r"^_C$",
    "stack frames": r"^(?:_getframe|currentframe|inspect\.stack|f_back|f_locals|f_globals|tb_frame|gi_frame|cr_frame|"
                    r"getargvalues)$",
    # a function the interpreter calls on every call and return (sys.setprofile, sys.settrace, threading's, Python
    # 3.12's sys.monitoring), on its audit events (sys.addaudithook: never removed, so not put back between
    # operations either) or that evaluates every frame (dynamo's set_eval_frame): set in forward, a profile hook
    # saw count_ops return its answer and rewrote it (mixed devices gone: causal 22 of 22 with a CPU mask before,
    # tests/test_device_evidence.py::test_a_hook_on_the_interpreter_s_calls_earns_no_measured_point)
    "a hook on the interpreter's calls": r"^(?:set(?:profile|trace)(?:_all_threads)?|monitoring|addaudithook|"
                                         r"_?set_eval_frame|eval_frame)$",
    "the garbage collector's objects": r"^(?:get_referrers|get_referents|get_objects)$",
    "builtins": r"^(?:builtins|__builtins__)$",
    # (the import system's finders and loaders, the grader's among them, and a function's module namespace: how
    # code reaches the child's own machinery, inside/, without naming it)
    "the grader's modules": r"^autograder\b|^sys\.modules$|^meta_path$|^path_hooks$|^__globals__$|^__loader__$",
    "the counting machinery": r"^(?:count_ops|Counter\.__\w+)$",
    # exec, eval and compile; and every other way Python makes code from data the reading never sees: a loader of
    # any file (a staged notes.txt run with SourceFileLoader kept 22 of 22 with a head loop hidden in it),
    # marshal, runpy, code objects built or replaced, pickle (which calls what its data names), ctypes
    "code made from text": r"^(?:exec|eval|compile)\(\)$|^(?:marshal|runpy|run_path|run_module|exec_module|"
                           r"load_module|source_to_code|get_code|SourceFileLoader|SourcelessFileLoader|FileLoader|"
                           r"spec_from_file_location|spec_from_loader|module_from_spec|CodeType|co_code|codeop|"
                           r"InteractiveInterpreter|InteractiveConsole|pickle|_pickle|cloudpickle|dill|ctypes|cffi)$",
    # an operator's kernel of the code's own (torch.library: custom_op, Library, torch.library.impl; a compiled
    # library loaded into torch; inductor's compiled kernels, AOTInductor's packages): torch's dispatcher runs it
    # below the counter's dispatch mode (which counts the call once, none of what the kernel does) and runs its
    # fake version on the emulated GPU, never its own; compiled kernels run outside the dispatcher altogether: a
    # head loop in a custom op called as torch.ops.learner.heads earned the batching check
    # (tests/test_compiled_code.py)
    "an operator kernel of its own": r"^(?:library|_library|custom_op|triton_op|Library|load_library|cpp_extension|"
                                     r"load_inline|_inductor|aoti_\w+|AOTI\w*)$",
    # an attribute or module named by a string made as the code runs ("_python_" + "dispatch"), which the reading
    # cannot follow to what it reaches: every kind above, unread (RUN_TIME_NAME, _find_identifiers)
    "a name made at run time": r"\(\?\)$",
    # the device checks run the code on an emulated GPU (inside/emulated_gpu.py): code that asks whether
    # its tensors are fake or meta can behave there unlike on a GPU
    "the device emulation": r"^(?:FakeTensor\w*|fake_tensor|_subclasses|is_fake|is_meta|in_kernel_invocation_manager)$",
}
_HOOK_PATTERNS = [(what, re.compile(pattern, re.IGNORECASE if what == "a dispatch mode" else 0))
                  for what, pattern in GRADER_HOOKS.items()]
LOOKUPS = {"getattr", "setattr", "delattr", "hasattr"}  # f(obj, "name"): the literal is an attribute's name
IMPORTERS = {"import_module", "__import__"}  # f("module"): the literal is a module's name
RUN_TIME_NAME = "{}(?)"  # what the reading names a lookup whose name it cannot read: getattr(?), vars(?)
# lookups by a name given as a value: attrgetter("x")(obj), getattr_static(obj, "x"), obj.__getattribute__("x")
NAMED_LOOKUPS = {"attrgetter", "getattr_static", "__getattribute__", "__getattr__"}
NAMESPACE_GETS = {"get", "pop", "setdefault", "__getitem__"}  # a name looked up in a table of them


def identifiers(tree: ast.Module) -> list:
    """[(line, column, text)] of what the code names, in the order of the text: names, attributes
    (x.attr, and sys.modules / Counter.__x__ as such), the modules and names of imports, the names
    given as literals to getattr & co., import_module, __import__ or sys.modules[...], and calls of
    exec, eval and compile as 'exec()'. Comments and other strings (docstrings) are never read.
    A name such a lookup is given that the reading cannot read (made as the code runs: "_python_" +
    "dispatch", a parameter; or getattr passed as a value, vars(m)[k], m.__dict__[k], attrgetter(k),
    getattr_static) is 'getattr(?)' & co.: it could reach any of GRADER_HOOKS' kinds unseen (mha.py spelling
    torch.utils._python_dispatch._disable_current_modes so kept 22 of 22 with a head loop hidden from the
    counter). A loop variable over string literals reads as each of them."""
    return _read_once("identifiers", tree, _find_identifiers)


def _find_identifiers(tree: ast.Module) -> list:
    found = []
    aliases = {"sys": {"sys"}, "Counter": {"Counter"}, "inspect": {"inspect"}}
    every = nodes(tree)
    for node in every:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in aliases:
                    aliases[alias.name].add(alias.asname or alias.name)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in aliases:
                    aliases[alias.name].add(alias.asname or alias.name)

    def add(node, text):
        found.append((getattr(node, "lineno", 0), getattr(node, "col_offset", 0), text))

    literal_loops = _names_of_literal_loops(every)

    def add_name(node, where, how):
        """The name a lookup or import (how: getattr, vars, ...) is given: a literal; a loop variable over
        literals (each of them: for name in ("W_query", "W_key"): getattr(self, name)); else a name made at
        run time."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for part in node.value.split("."):
                add(where, part)
        elif isinstance(node, ast.Name) and node.id in literal_loops:
            for value in literal_loops[node.id]:
                for part in value.split("."):
                    add(where, part)
        else:
            add(where, RUN_TIME_NAME.format(how))

    called = {id(node.func) for node in every if isinstance(node, ast.Call)}
    # the namespaces read by a name (the subscript's or the get's, read above): vars(m)[k], m.__dict__.get(k)
    by_name = {id(node.value) for node in every if isinstance(node, ast.Subscript)} | \
        {id(node.func.value) for node in every if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
         and node.func.attr in NAMESPACE_GETS}
    for node in every:
        if isinstance(node, ast.Name):
            add(node, node.id)
            if node.id in LOOKUPS | IMPORTERS and id(node) not in called:  # reduce(getattr, names, torch)
                add(node, RUN_TIME_NAME.format(node.id))
        elif isinstance(node, ast.Attribute):
            if _namespace_of(node) and id(node) not in by_name:
                add(node, RUN_TIME_NAME.format("__dict__"))  # m.__dict__.items(), passed on, ...
            base = node.value.id if isinstance(node.value, ast.Name) else ""
            if base in aliases["sys"] and node.attr == "modules":
                add(node, "sys.modules")
            elif base in aliases["inspect"] and node.attr == "stack":
                add(node, "inspect.stack")
            elif base in aliases["Counter"] and node.attr.startswith("__"):
                add(node, f"Counter.{node.attr}")
            else:
                add(node, node.attr)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for part in (node.module or "").split(".") if isinstance(node, ast.ImportFrom) else ():
                add(node, part)
            for alias in node.names:
                for part in alias.name.split("."):
                    add(node, part)
        elif isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else \
                node.func.attr if isinstance(node.func, ast.Attribute) else ""
            if name in ("exec", "eval", "compile") and isinstance(node.func, ast.Name):
                add(node, f"{name}()")
            elif name in LOOKUPS and len(node.args) >= 2:
                add_name(node.args[1], node.args[1], name)
            elif name in LOOKUPS | IMPORTERS and (not node.args or isinstance(node.args[0], ast.Starred)):
                add(node, RUN_TIME_NAME.format(name))  # getattr(*args)
            elif name in IMPORTERS:
                add_name(node.args[0], node, name)
            elif name in NAMED_LOOKUPS:
                given = node.args[1] if name == "getattr_static" and len(node.args) >= 2 else \
                    node.args[0] if node.args and name != "getattr_static" else None
                if given is None:
                    add(node, RUN_TIME_NAME.format(name))
                else:
                    add_name(given, node, name)
            elif name in NAMESPACE_GETS and isinstance(node.func, ast.Attribute) and _by_name(node.func.value):
                # sys.modules.get("m"), vars(m).get(k), m.__dict__.pop(k)
                if node.args:
                    add_name(node.args[0], node, _by_name(node.func.value))
                else:
                    add(node, RUN_TIME_NAME.format(_by_name(node.func.value)))
            elif name in ("getmembers", "getmembers_static"):  # every name and value, none written
                add(node, RUN_TIME_NAME.format(name))
            if _namespace_of(node) and id(node) not in by_name:  # vars(m) iterated, passed on, ...
                add(node, RUN_TIME_NAME.format("vars"))
        elif isinstance(node, ast.Subscript) and _by_name(node.value):  # sys.modules["m"], vars(m)[k], m.__dict__[k]
            add_name(node.slice, node, _by_name(node.value))
    return sorted(found, key=lambda entry: entry[:2])  # (stable: an import's module before its names)


def _names_of_literal_loops(every: list) -> dict:
    """{name: its string literals} for each name the code binds only as the variable of a for loop (or
    comprehension) over a tuple or list of string literals: a lookup by such a name reads one of them."""
    loops: dict[str, set] = {}
    targets: set[int] = set()  # the loop variables' own nodes
    for node in every:
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(node.target, ast.Name) and \
                isinstance(node.iter, (ast.Tuple, ast.List)) and node.iter.elts and \
                all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.iter.elts):
            loops.setdefault(node.target.id, set()).update(cast(ast.Constant, e).value for e in node.iter.elts)
            targets.add(id(node.target))
    other: set[str] = set()  # names bound any other way
    for node in every:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in targets:
            other.add(node.id)
        elif isinstance(node, ast.arg):
            other.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            other.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            other.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            other.update(node.names)
        elif isinstance(node, ast.NamedExpr):
            other.add(node.target.id)
    return {name: sorted(values) for name, values in loops.items() if name not in other}


def _by_name(node: ast.AST) -> str:
    """'' or what node is, when it is a table of names to objects: 'modules' (sys.modules, under any name),
    'vars' (vars(m)) or '__dict__' (m.__dict__)."""
    if isinstance(node, ast.Attribute) and node.attr == "modules":
        return "modules"
    return ("vars" if isinstance(node, ast.Call) else "__dict__") if _namespace_of(node) else ""


def _namespace_of(node: ast.AST) -> bool:
    """node is a namespace's dict: vars(x) (not vars() of the code's own scope) or x.__dict__."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" and \
        bool(node.args) or isinstance(node, ast.Attribute) and node.attr == "__dict__"


def tampering(sources: Mapping[str, str]) -> list:
    """'module.py, line N: what (identifier)' for each reach into the grader's machinery the submission's
    code makes (the first of each kind per module): dispatch modes and torch's private bindings, frames,
    the collector's objects, builtins, the counting machinery, the grader's modules, code made from text
    (which the grader's own reading cannot see). Read from the parsed code, never from comments or
    strings; a module that does not parse is listed as such (the reading cannot see into it)."""
    found = []
    for module, source in sorted(sources.items()):
        tree = parse(source)
        if tree is None:
            if source.strip():
                found.append(f"{module}.py, line 1: code the grader cannot read (it does not parse)")
            continue
        found += [f"{module}.py, line {line}: {what} ({text})"
                  for line, what, text in _read_once("tampering", tree, _reaches)]
    return found


def _reaches(tree: ast.Module) -> list:
    """[(line, what, identifier)]: the first identifier of each of GRADER_HOOKS's kinds in the tree."""
    first: dict[str, tuple] = {}  # what -> (line, text) of the first identifier of that kind
    read: set[str] = set()  # (a text read again is of the same kinds, met first before)
    for line, _, text in identifiers(tree):
        if text in read:
            continue
        read.add(text)
        for what, pattern in _HOOK_PATTERNS:
            if what not in first and pattern.search(text):
                first[what] = (line, text)
        if len(first) == len(_HOOK_PATTERNS):
            break
    return [(first[what][0], what, first[what][1]) for what, _ in _HOOK_PATTERNS if what in first]


def imported_modules(sources: Mapping[str, str], module: str) -> list:
    """module and the submission's modules it imports, directly or through others (read, not run)."""
    seen, todo = [], [module]
    while todo:
        name = todo.pop(0)
        if name in seen or name not in sources:
            continue
        seen.append(name)
        tree = parse(sources[name])
        todo += _read_once("imports", tree, _imports) if tree is not None else []
    return seen


def _imports(tree: ast.Module) -> list:
    """The top-level names of the modules the tree imports (import m, from m import ...), in its order."""
    found = []
    for node in nodes(tree):
        if isinstance(node, ast.Import):
            found += [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module.split(".")[0])
    return found
