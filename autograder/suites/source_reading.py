"""The grader's own reading of the submitted source: parsed here with `ast`, never run.

What the child reports of itself (its count of operations, its meta-device run) could be forged
by code that reaches into the grader's machinery; what the source says cannot be changed by
running it. A check that judges efficiency or devices passes only when both agree (efficiency.py).
Every function here takes source text and returns plain data; text that does not parse says nothing.
"""
import ast
from typing import Optional

LIMIT = 1 << 20  # characters of a module read at most

TENSOR_FACTORIES = {"ones", "zeros", "empty", "full", "arange", "eye", "rand", "randn", "tril", "triu", "tensor",
                    "ones_like", "zeros_like", "empty_like", "full_like", "linspace"}
LIKE = {"ones_like", "zeros_like", "empty_like", "full_like"}  # these take the device of the tensor they copy
HEAD_WORDS = ("head",)  # a loop over range(self.num_heads) / self.heads / ... in forward


def parse(source: str) -> Optional[ast.Module]:
    try:
        return ast.parse(source[:LIMIT])
    except (SyntaxError, ValueError):
        return None


def find_class(tree: Optional[ast.Module], name: str) -> Optional[ast.ClassDef]:
    if tree is None:
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def method(cls: Optional[ast.ClassDef], name: str) -> Optional[ast.FunctionDef]:
    if cls is None:
        return None
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def _mentions_heads(node: ast.AST) -> bool:
    """The expression names heads: self.num_heads, self.heads, range(num_heads), n_heads, ..."""
    for sub in ast.walk(node):
        word = sub.attr if isinstance(sub, ast.Attribute) else sub.id if isinstance(sub, ast.Name) else ""
        if any(w in word.lower() for w in HEAD_WORDS):
            return True
    return False


def loops_over_heads(source: str, class_name: str) -> Optional[bool]:
    """Does class_name's forward loop over the heads in Python (a for loop or a comprehension whose
    iterable names the heads)? None when the class cannot be read from the source."""
    forward = method(find_class(parse(source), class_name), "forward")
    if forward is None:
        return None
    for node in ast.walk(forward):
        if isinstance(node, (ast.For, ast.comprehension)) and _mentions_heads(node.iter):
            return True
        if isinstance(node, ast.While) and _mentions_heads(node.test):
            return True
    return False


def _device_given(call: ast.Call) -> bool:
    return any(k.arg == "device" or k.arg is None for k in call.keywords)  # device=..., or **options


def cpu_tensors_in_forward(source: str, class_name: str) -> Optional[list]:
    """The tensor factories class_name's forward calls without device= (torch.ones(T, T), torch.tensor(...)),
    as 'torch.ones' strings: such a tensor is made on the CPU whatever the inputs' device. None when
    the class cannot be read. (x.new_ones(...), torch.ones_like(x) and a registered buffer follow the inputs.)"""
    forward = method(find_class(parse(source), class_name), "forward")
    if forward is None:
        return None
    found = []
    for node in ast.walk(forward):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id == "torch" and \
                node.func.attr in TENSOR_FACTORIES - LIKE and not _device_given(node):
            if node.func.attr in ("tril", "triu") and node.args and not _is_factory_call(node.args[0]):
                continue  # torch.triu(scores) keeps its argument's device
            found.append(f"torch.{node.func.attr}")
    return found


def _is_factory_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
        isinstance(node.func.value, ast.Name) and node.func.value.id == "torch" and \
        node.func.attr in TENSOR_FACTORIES - LIKE - {"tril", "triu"} and not _device_given(node)


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


GRADER_HOOKS = ("_disable_current_modes", "TorchDispatchMode", "_python_dispatch", "_get_current_dispatch_mode",
                "_pop_mode", "_push_mode", "sys._getframe", "inspect.currentframe", "inspect.stack", "f_back",
                "f_locals", "f_globals", "gc.get_referrers", "gc.get_objects", "import builtins", "__builtins__",
                "autograder", "count_ops", "__torch_dispatch__", "sys.modules",
                "_set_torch_dispatch_mode", "DispatchKey", "_C._ExcludeDispatchKeyGuard", "_DisableTorchDispatch")


def tampering(sources: dict) -> list:
    """'module.py: what' for each reach into the grader's machinery the submission's source writes:
    dispatch modes, frames, builtins, the counting machinery, the grader's modules. Plain text
    search, on purpose: the instructor reads the lines; nobody is charged for them here."""
    found = []
    for module, source in sorted(sources.items()):
        text = source[:LIMIT]
        for hook in GRADER_HOOKS:
            if hook in text:
                line = text[:text.index(hook)].count("\n") + 1
                found.append(f"{module}.py, line {line}: {hook}")
    return found
