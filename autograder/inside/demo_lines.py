"""A student module whose top-level demo code raises still gives the grader its classes and functions.

Learners paste the book's demo lines below their class: `print(sa_v1(inputs))` (with `inputs` from
another listing), `ca(torch.rand(2, 6, 5))` with a d_in the layer was not built for.
Run at import, such a line raised and the whole module failed to import: the part lost every point
although its class was right. A notebook's solution cell is staged the same way (its demo lines that
read a name no cell gives are commented out before: submitted_notebooks._without_other_cells_demo;
the rest arrive here), so both get one rule:

  A workspace module is imported as Python imports it. Only when that raises, and the statement of
  the module's own top level that raised is neither an import nor a def or class statement (nor a
  `raise` of its own, nor a MemoryError or RecursionError: meant_as_demo), is the
  module run again, one top-level statement at a time in a fresh namespace, each statement that is
  neither an import nor a definition and raises skipped (with what raised, SKIPPED). An import or a
  definition that raises still fails the import: a broken class is the part's. An import of a package the
  grading environment lacks (ModuleNotFoundError for the module the statement names: scipy, matplotlib)
  binds its names to NotInstalled, which raises that error where it is used: the functions that use it
  fail their own checks (suites/misconceptions.NOT_INSTALLED), the rest of the module is graded.

The child puts SKIPPED (module, the statement's first line, the exception's class name) in its replies;
the grader names the line itself, from its own reading of the staged file (runner.demo_notes), and the
part keeps the points its classes earn. Code under `if __name__ == "__main__":` never runs here (the
module's name is its own), as it never did.

This module imports nothing of the grader outside `inside/` (the room binds `inside/` whole).
"""
import __future__

import ast
import importlib.machinery
import importlib.util
import os
import sys

SKIPPED: list = []  # [module, line, exception class name] of each statement skipped, in order
# id(code object) -> (module name, the code object kept alive): every code object this loader compiled itself
# from a file of the submission's folder, never a file name the code says it has: a submission's
# compile(src, "causal.py", "exec") or function.__code__.replace(co_filename=...) makes code that is no
# file's (the redteam lane's leftover: mha.py's code named causal.py was causal's bug). Read through
# compiled_from (here and inside/child.py: the "where" of an error, origin, a stub's NotImplementedError)
COMPILED: dict = {}
# module name -> the namespace its file's code was run in (a function of that file has it as __globals__)
NAMESPACES: dict = {}
LIMIT = 20  # entries kept (and sent)
DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# a demo's exception; never sys.exit() (a module that exits at import ends its import, as before:
# tests/test_adversarial.py::test_exit_at_import), KeyboardInterrupt and the like
SKIPPABLE = (Exception,)
NEVER_SKIPPED = (MemoryError, RecursionError)
KEPT = ("__name__", "__file__", "__loader__", "__spec__", "__package__", "__cached__", "__builtins__", "__path__")


class Finder:
    """sys.meta_path's finder for the workspace's top-level modules (and those alone)."""

    def __init__(self, folder, names):
        self.folder, self.names = folder, frozenset(names)

    def find_spec(self, name, path=None, target=None):
        if path is not None or name not in self.names:
            return None
        file = os.path.join(self.folder, name + ".py")
        if not os.path.isfile(file):
            return None
        return importlib.util.spec_from_file_location(name, file, loader=Loader(name, file))

    def invalidate_caches(self):
        pass


class Loader(importlib.machinery.SourceFileLoader):
    """A workspace module, compiled here from its source (never a .pyc handed in or left in __pycache__),
    every code object recorded (COMPILED) with the namespace it runs in (NAMESPACES); run as Python
    runs it, then statement by statement when a demo statement raised (the module's docstring)."""

    def get_code(self, fullname):
        code = compile(self.get_data(self.path), self.path, "exec", dont_inherit=True)
        record(code, fullname)
        return code

    def exec_module(self, module):
        NAMESPACES[module.__name__] = module.__dict__
        try:
            super().exec_module(module)
        except SKIPPABLE as exc:
            tree = self._tree()
            line = raised_at(exc.__traceback__, module.__name__)
            statement = statement_at(tree, line) if tree is not None else None
            if statement is None or not meant_as_demo(exc, tree, module.__name__) or \
                    isinstance(statement, DEFINITIONS) and not missing_package(statement, exc):
                raise
            run_skipping(module, tree, self.path)

    def _tree(self):
        try:
            return ast.parse(self.get_data(self.path), self.path)
        except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
            return None


def record(code, module):
    """code and every code object nested in it: compiled by this loader from `module`'s file (COMPILED)."""
    stack = [code]
    while stack:
        current = stack.pop()
        COMPILED[id(current)] = (module, current)
        stack.extend(c for c in current.co_consts if type(c) is type(code))


def compiled_from(code):
    """The workspace module whose file this loader compiled `code` from ('' when none did)."""
    entry = COMPILED.get(id(code))
    return entry[0] if entry is not None and entry[1] is code else ""


def meant_as_demo(exc, tree, module):
    """Could exc be a demo line's accident? Not a MemoryError or RecursionError (what ran out would run out again,
    and a flood is the part's: tests/test_adversarial.py's memory floods), nor what the module's own top level
    raises with a `raise` statement (the innermost frame is its '<module>' frame, on a line of a raise written
    outside any function): an exception meant, which ends the import as before."""
    if isinstance(exc, NEVER_SKIPPED):
        return False
    tb, last = exc.__traceback__, None
    while tb is not None:
        last, tb = tb, tb.tb_next
    if last is None:
        return True
    code = last.tb_frame.f_code
    if code.co_name != "<module>" or compiled_from(code) != module:
        return True
    line = last.tb_lineno
    return not any(isinstance(node, ast.Raise) and node.lineno <= line <= (node.end_lineno or node.lineno)
                   for node in _top_level_nodes(tree))


def _top_level_nodes(tree):
    """Every node of tree outside function and class bodies."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def raised_at(tb, module):
    """The line of `module`'s top level (its '<module>' frame, compiled here) the traceback passed through
    last; 0: none."""
    line = 0
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "<module>" and compiled_from(code) == module:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def statement_at(tree, line):
    """The top-level statement of tree whose lines hold `line` (None: none does)."""
    for statement in tree.body:
        if statement.lineno <= line <= (statement.end_lineno or statement.lineno):
            return statement
    return None


def future_flags(tree):
    flags = 0
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            for alias in statement.names:
                feature = getattr(__future__, alias.name, None)
                flags |= getattr(feature, "compiler_flag", 0)
    return flags


def run_skipping(module, tree, path):
    """Run tree's statements one at a time in module's namespace, emptied first; a statement that is no
    import or definition and raises is skipped and recorded (SKIPPED), any other raises."""
    namespace = module.__dict__
    kept = {name: namespace[name] for name in KEPT if name in namespace}
    namespace.clear()
    namespace.update(kept)
    namespace["__doc__"] = ast.get_docstring(tree, clean=False)
    flags = future_flags(tree)
    for statement in tree.body:
        code = compile(ast.Module(body=[statement], type_ignores=[]), path, "exec", flags=flags, dont_inherit=True)
        record(code, module.__name__)
        try:
            exec(code, namespace)
        except SKIPPABLE as exc:
            if missing_package(statement, exc):
                for name, imported in bound_by(statement):
                    namespace[name] = NotInstalled(imported)
            elif isinstance(statement, DEFINITIONS) or not meant_as_demo(exc, tree, module.__name__):
                raise
            entry = [module.__name__, statement.lineno, type(exc).__name__[:60]]
            if entry not in SKIPPED and len(SKIPPED) < LIMIT:
                SKIPPED.append(entry)


def missing_package(statement, exc):
    """Is exc the ModuleNotFoundError of an import statement for the module it names itself (scipy not
    installed where the course grades: `from scipy.special import softmax`)? A name missing from a module
    that is there (ImportError), or a module imported by another, stays an error of the import."""
    if type(exc) is not ModuleNotFoundError or not isinstance(exc.name, str) or not exc.name:
        return False
    if isinstance(statement, ast.ImportFrom):
        named = [statement.module or ""] if not statement.level else []
    elif isinstance(statement, ast.Import):
        named = [alias.name for alias in statement.names]
    else:
        return False
    top = exc.name.split(".")[0]
    return any(name.split(".")[0] == top for name in named)


def bound_by(statement):
    """[(the name an import statement binds, the module it would have come from)]."""
    if isinstance(statement, ast.ImportFrom):
        return [(alias.asname or alias.name, statement.module or "") for alias in statement.names if alias.name != "*"]
    return [(alias.asname, alias.name) if alias.asname else (alias.name.split(".")[0], alias.name.split(".")[0])
            for alias in statement.names]


class NotInstalled:
    """What a name imported from a package the grading environment lacks is bound to: using it (a call, an
    attribute) raises the ModuleNotFoundError the import raised, in the check that uses it."""

    def __init__(self, module):
        object.__setattr__(self, "_module", module)

    def _raise(self, *args, **kwargs):
        module = object.__getattribute__(self, "_module")
        raise ModuleNotFoundError(f"No module named '{module}'", name=module)

    __call__ = _raise

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self._raise()

    def __repr__(self):
        return f"<not installed: {object.__getattribute__(self, '_module')}>"


def install(folder, names):
    """Put the finder first in sys.meta_path for the workspace's modules (names) in folder."""
    sys.meta_path.insert(0, Finder(folder, names))


def reply_entry():
    """The replies' "skipped" entry: what was skipped so far in this child, when anything was."""
    return {"skipped": [list(entry) for entry in SKIPPED]} if SKIPPED else {}
