"""The grader's own reading of the submitted source: parsed here with `ast`, never run.

What the child reports of itself (its count of operations, its meta-device run) could be forged
by code that reaches into the grader's machinery; what the source says cannot be changed by
running it. A check that judges efficiency or devices passes only when both agree (efficiency.py).
Every function here takes source text and returns plain data; text that does not parse says nothing.
"""
import ast
import hashlib
from contextlib import contextmanager
from typing import Iterator, Optional

LIMIT = 1 << 20  # characters of a module read at most

TENSOR_FACTORIES = {"ones", "zeros", "empty", "full", "arange", "eye", "rand", "randn", "tril", "triu",
                    "ones_like", "zeros_like", "empty_like", "full_like", "linspace"}  # not torch.tensor(scalar):
# a 0-dim CPU tensor meets a GPU tensor without error
LIKE = {"ones_like", "zeros_like", "empty_like", "full_like"}  # these take the device of the tensor they copy
HEAD_WORDS = ("head",)  # a loop over range(self.num_heads) / self.heads / ... in forward


# the trees of the submission being graded, by the digest of the text parsed (per_submission); None: none kept
_TREES: Optional[dict] = None


@contextmanager
def per_submission() -> Iterator[None]:
    """While one submission is graded (grading.grade_submission), each module's text is parsed once:
    the trees are kept by the text's SHA-256 and dropped when its grading ends, never shared with
    another submission's. Nothing here changes a tree (every reader only walks it)."""
    global _TREES
    outer, _TREES = _TREES, {}
    try:
        yield
    finally:
        _TREES = outer


def parse(source: str) -> Optional[ast.Module]:
    text = source[:LIMIT]
    if _TREES is None:
        return _parse(text)
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    if key not in _TREES:
        _TREES[key] = _parse(text)
    return _TREES[key]


def _parse(text: str) -> Optional[ast.Module]:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def find_class(tree: Optional[ast.Module], name: str) -> Optional[ast.ClassDef]:
    if tree is None:
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def _assigned_to(tree: ast.Module, class_name: str) -> list:
    """The values written onto the class after its body (`MultiHeadAttention.forward = f`,
    setattr(MultiHeadAttention, "forward", f)): a method can be replaced from outside the class."""
    values = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                                                and t.value.id == class_name for t in node.targets):
            values.append(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and \
                len(node.args) == 3 and isinstance(node.args[0], ast.Name) and node.args[0].id == class_name:
            values.append(node.args[2])
    return values


def _functions_named(tree: ast.Module, value: ast.AST) -> list:
    """The functions of the module a value refers to: f (a module function), Other.f (a method), a lambda."""
    if isinstance(value, ast.Lambda):
        return [value]
    if isinstance(value, ast.Name):
        return [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == value.id]
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
        owner = find_class(tree, value.value.id)
        return [n for n in (owner.body if owner else ()) if isinstance(n, ast.FunctionDef) and n.name == value.attr]
    return []


def class_functions(source: str, class_name: str) -> Optional[list]:
    """What runs when class_name computes: its methods but __init__, those of its bases written in the
    same module, whatever the module writes onto the class from outside (MultiHeadAttention.forward = f),
    and the module's functions all these call by name. None when the class is not in the source."""
    tree = parse(source)
    cls = find_class(tree, class_name)
    if cls is None:
        return None
    classes = [cls] + [find_class(tree, b.id) for b in cls.bases if isinstance(b, ast.Name) and find_class(tree, b.id)]
    functions = [n for c in classes for n in c.body if isinstance(n, ast.FunctionDef) and n.name != "__init__"]
    functions += [f for value in _assigned_to(tree, class_name) for f in _functions_named(tree, value)]
    called = {n.func.id for f in functions for n in ast.walk(f) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return functions + [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in called]


def _mentions_heads(node: ast.AST) -> bool:
    """The expression names heads: self.num_heads, self.heads, range(num_heads), n_heads, ..."""
    for sub in ast.walk(node):
        word = sub.attr if isinstance(sub, ast.Attribute) else sub.id if isinstance(sub, ast.Name) else ""
        if any(w in word.lower() for w in HEAD_WORDS):
            return True
    return False


def loops_over_heads(source: str, class_name: str) -> Optional[int]:
    """The line of a Python loop over the heads (a for loop, comprehension or while loop whose iterable
    or condition names the heads) in what class_name runs (class_functions); 0 when there is none;
    None when the class is not in the source."""
    functions = class_functions(source, class_name)
    if functions is None:
        return None
    for function in functions:
        for node in ast.walk(function):
            if isinstance(node, (ast.For, ast.comprehension)) and _mentions_heads(node.iter) or \
                    isinstance(node, ast.While) and _mentions_heads(node.test):
                return getattr(node, "lineno", None) or getattr(node.iter, "lineno", 0) or function.lineno
    return 0


def _device_given(call: ast.Call) -> bool:
    return any(k.arg == "device" or k.arg is None for k in call.keywords)  # device=..., or **options


def _cpu_factory(node: ast.AST) -> bool:
    """torch.<factory>(...) without device=: a tensor made on the default device (the CPU)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
            isinstance(node.func.value, ast.Name) and node.func.value.id == "torch" and
            node.func.attr in TENSOR_FACTORIES - LIKE and not _device_given(node)):
        return False
    if node.func.attr in ("tril", "triu"):  # torch.triu(scores) keeps its argument's device
        return bool(node.args) and _cpu_factory(node.args[0])
    return True


def cpu_tensors(source: str, class_name: str) -> Optional[list]:
    """[(line, 'torch.ones')] for each tensor factory called without device= in what class_name runs
    (class_functions): such a tensor is made on the CPU whatever the inputs' device. None when the class
    is not in the source. (x.new_ones(...), torch.ones_like(x), device=x.device and a registered
    buffer all follow the inputs.)"""
    functions = class_functions(source, class_name)
    if functions is None:
        return None
    found = []
    for function in functions:
        moved = _moved(function)
        for node in ast.walk(function):
            if _cpu_factory(node) and id(node) not in moved:
                found.append((node.lineno, f"torch.{node.func.attr}"))
    return sorted(set(found))


MOVES = {"to", "type_as"}  # .to(x.device), .type_as(x): the tensor follows the inputs


def _moved(function: ast.AST) -> set:
    """ids of the nodes whose tensor is moved to another device before use: inside the receiver of
    .to(...) / .type_as(...), or assigned to a name that is moved so in the same function."""
    receivers = [n.func.value for n in ast.walk(function) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Attribute) and n.func.attr in MOVES]
    names = {r.id for r in receivers if isinstance(r, ast.Name)}
    moved = {id(sub) for r in receivers for sub in ast.walk(r)}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in node.targets):
            moved |= {id(sub) for sub in ast.walk(node.value)}
    return moved


def init_parameters(source: str, class_name: str) -> Optional[list]:
    """The names of class_name.__init__'s positional parameters, self left out (None: not in the source)."""
    cls = find_class(parse(source), class_name)
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None) if cls else None
    if init is None:
        return None
    return [a.arg for a in init.args.posonlyargs + init.args.args][1:]


def reordered(source: str, class_name: str, contract: tuple) -> Optional[list]:
    """class_name.__init__'s parameter names when they are the contract's names in another order (so a
    call by keywords reaches them as specified); None otherwise."""
    names = init_parameters(source, class_name)
    if not names or len(names) < len(contract) or set(names[:len(contract)]) != set(contract):
        return None
    return names if names[:len(contract)] != list(contract) else None


def imported_from(source: str, module: str) -> list:
    """The names `from <module> import ...` brings in (their own names, as imported), in order."""
    tree = parse(source)
    names = []
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.ImportFrom) and node.module == module and node.level == 0:
            names += [alias.name for alias in node.names if alias.name != "*"]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == module:
            names.append(node.attr)  # mha.SomeClass
    return list(dict.fromkeys(names))


def tuple_asserts(source: str, class_name: str = "") -> list:
    """The line numbers of `assert (condition, "message")`: a non-empty tuple is always true, so the
    assert never fires. class_name: only inside that class."""
    tree = parse(source)
    scope = find_class(tree, class_name) if class_name else tree
    if scope is None:
        return []
    return [node.lineno for node in ast.walk(scope)
            if isinstance(node, ast.Assert) and isinstance(node.test, ast.Tuple) and node.test.elts]


GRADER_HOOKS = {  # what the source writes -> a regular expression that finds it
    "a dispatch mode": r"_disable_current_modes|TorchDispatchMode|_python_dispatch|_get_current_dispatch_mode|"
                       r"_pop_mode|_push_mode|_set_torch_dispatch_mode|_DisableTorchDispatch|__torch_dispatch__",
    "stack frames": r"sys\._getframe|inspect\.currentframe|inspect\.stack|\bf_back\b|\bf_locals\b|\bf_globals\b",
    "the garbage collector's objects": r"gc\.get_referrers|gc\.get_objects",
    "builtins": r"\bimport builtins\b|__builtins__",
    "the grader's modules": r"\bautograder\b|\bsys\.modules\b",
    "the counting machinery": r"\bcount_ops\b|\bCounter\.__",
    "code made from text": r"(?<![\w.])(?:exec|eval|compile)\s*\(",
}


def tampering(sources: dict) -> list:
    """'module.py, line N: what' for each reach into the grader's machinery the submission's source
    writes: dispatch modes, frames, builtins, the counting machinery, the grader's modules, code made
    from text (which the grader's own reading cannot see). A plain search, on purpose: the instructor
    reads the lines; nobody is charged for them here."""
    import re

    found = []
    for module, source in sorted(sources.items()):
        text = source[:LIMIT]
        for what, pattern in GRADER_HOOKS.items():
            match = re.search(pattern, text)
            if match:
                found.append(f"{module}.py, line {text[:match.start()].count(chr(10)) + 1}: {what} ({match.group()})")
    return found
