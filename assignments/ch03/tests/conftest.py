"""Shared setup for the public chapter 3 tests.

--submission=DIR   test the modules in DIR (default: assignments/ch03, the folder above this one);
                   with a space instead of '=', name the tests folder too: `pytest tests --submission DIR`
-m causal          run only the tests of one module (see MODULES for the markers)

Modules are imported by their plain names (`causal`, `mha`, ...) from the submission folder,
fresh, so that a module of the same name imported earlier from somewhere else never stands in.
A test that reaches code raising NotImplementedError fails with "not implemented yet: <what>", one that
reaches code raising another error with that error and the line of the submission that raised it (no
traceback of the tests or of torch); a wrong result that matches a common mistake is named as that
mistake (_diagnose.py), in one message.

grader_versions.json (beside this file, written by the course's release) holds the Python, torch
and NumPy versions the grader uses: the header of every run shows them, and a warning (never a
failure) says when yours differ in their major or minor version.
"""
import __future__

import ast
import importlib
import importlib.machinery
import importlib.util
import json
import platform
import sys
import traceback
from pathlib import Path

import numpy as np
import pytest
import torch
from _diagnose import Check

HERE = Path(__file__).resolve().parent
# the chapter's modules (its manifest's copy, written by `python -m autograder stubs`)
MODULES = json.loads((HERE / "chapter.json").read_text(encoding="utf-8"))["parts"]


def pytest_addoption(parser):
    try:
        parser.addoption("--submission", metavar="DIR", default=None,
                         help="folder with the chapter 3 modules to test (default: assignments/ch03)")
    except ValueError:  # already added by a conftest loaded before this one; the option is the same
        pass


def pytest_configure(config):
    for name in MODULES:
        config.addinivalue_line("markers", f"{name}: the tests of {name}.py")
    folder = config.getoption("submission")
    if folder and not Path(folder).is_dir():
        raise pytest.UsageError(f"--submission {folder}: no such folder")


def grader_versions():
    """{python, torch, numpy} the grader uses, or {} when this folder has no grader_versions.json."""
    try:
        found = json.loads((HERE / "grader_versions.json").read_text())
    except (OSError, ValueError):
        return {}
    return {k: str(found[k]) for k in ("python", "torch", "numpy") if isinstance(found, dict) and k in found}


def local_versions():
    import numpy

    return {"python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__}


def _major_minor(version):
    return tuple(version.split("+")[0].split(".")[:2])


def version_differences():
    """'Python 3.10.2 here, 3.11.7 on the grader; ...' for each that differs in major.minor ('' if none)."""
    grader, here = grader_versions(), local_versions()
    names = {"python": "Python", "torch": "torch", "numpy": "NumPy"}
    found = [f"{names[k]} is {here[k]} here, {grader[k]} on the grader" for k in names
             if k in grader and _major_minor(grader[k]) != _major_minor(here[k])]
    return "; ".join(found)


def version_warning():
    """The warning shown at the start of a run where the versions differ ('' when they do not)."""
    found = version_differences()
    if not found:
        return ""
    return (f"warning: your {found}. Tests that pass here can still differ on the grader in the last digits of "
            "floating-point results (the checks allow small tolerances), in default dtypes and in what an "
            "operation accepts or warns about; the grader's run is the one that counts.")


def pytest_report_header(config):
    grader = grader_versions()
    if not grader:
        return None
    here = local_versions()
    line = ", ".join(f"{k} {here[k]}" for k in ("python", "torch", "numpy"))
    their = ", ".join(f"{k} {grader[k]}" for k in ("python", "torch", "numpy") if k in grader)
    return [f"chapter 3: this machine has {line}; the grader has {their}"]


def pytest_sessionstart(session):
    """The version warning, before any test runs (also with -q, which hides the header); never a failure."""
    message = version_warning()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if message and reporter is not None:
        reporter.write_line(message, yellow=True)


def submission_folder(config):
    """The folder of the modules under test: --submission, else the folder above this one."""
    folder = config.getoption("submission")
    return Path(folder).resolve() if folder else HERE.parent


@pytest.fixture(scope="session")
def submission_dir(pytestconfig):
    return submission_folder(pytestconfig)


@pytest.fixture
def load(submission_dir):
    """load("causal") -> the module causal.py of the submission folder."""

    def load_module(name):
        module = sys.modules.get(name)
        if module is None or Path(getattr(module, "__file__", None) or ".").parent != submission_dir:
            # a stale copy of any chapter module could be imported by another (mha imports causal)
            for stale in MODULES:
                sys.modules.pop(stale, None)
            if str(submission_dir) in sys.path:
                sys.path.remove(str(submission_dir))
            sys.path.insert(0, str(submission_dir))
            if not (submission_dir / f"{name}.py").is_file():
                pytest.fail(f"{name}.py is missing from {submission_dir}", pytrace=False)
            # what a module runs when imported (a demo line of the book's, torch.manual_seed(123) and a forward)
            # must not move the random numbers a test drew its weights from after seeding: the generators'
            # states are put back after the import
            generators = (torch.get_rng_state(), np.random.get_state())
            FINDER.folder = submission_dir
            if FINDER not in sys.meta_path:
                sys.meta_path.insert(0, FINDER)
            try:
                return importlib.import_module(name)
            except Exception as e:  # any import error is the student's to see, in one line
                problem = f"{type(e).__name__}: {e}"
            finally:
                torch.set_rng_state(generators[0])
                np.random.set_state(generators[1])
            pytest.fail(f"{name}.py could not be imported: {problem}", pytrace=False)
        return module

    return load_module


# What the grader's own import does with a module whose top level raises, done here too, so that these tests
# and the grader agree (autograder/inside/demo_lines.py is the grader's side): a demo line pasted below a class
# (`print(sa_v1(inputs))`, with `inputs` from another listing) that raises when the module is imported is
# skipped, and the module's classes and functions are tested; an import of a package not installed binds its
# names to a stand-in that raises where it is used. Each is told once, at the end of the run (NOTES). A class or
# function statement that raises, a `raise` of the module's own, or running out of memory or recursion still
# fails the import, as in the grader.
DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
NOTES = []  # what the run tells at its end about the modules' top levels
# the packages the grader has: Python's standard library, torch, NumPy and the chapter's own modules
GRADER_HAS = {*sys.stdlib_module_names, "torch", "numpy", *MODULES}


class ChapterModules:
    """sys.meta_path's finder for the chapter's modules of the submission folder (`folder`)."""

    folder = None

    def find_spec(self, name, path=None, target=None):
        file = self.folder / f"{name}.py" if self.folder is not None and path is None and name in MODULES else None
        if file is None or not file.is_file():
            return None
        return importlib.util.spec_from_file_location(name, file, loader=DemoTolerantLoader(name, str(file)))


class DemoTolerantLoader(importlib.machinery.SourceFileLoader):
    def exec_module(self, module):
        tree = self.tree()
        note_packages_the_grader_lacks(module.__name__, tree)
        try:
            super().exec_module(module)
        except Exception as error:
            if tree is None or not skippable(error, statement_at(tree, raised_at(error, self.path)), tree, self.path):
                raise
            run_skipping(module, tree, self.path)

    def tree(self):
        try:
            return ast.parse(self.get_data(self.path), self.path)
        except Exception:  # a file Python cannot parse: its import fails as it is, with Python's error
            return None


FINDER = ChapterModules()


def raised_at(error, path):
    """The line of the module's own top level (its '<module>' frame) the error passed through last (0: none)."""
    line, tb = 0, error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "<module>" and code.co_filename == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def statement_at(tree, line):
    return next((s for s in tree.body if s.lineno <= line <= (s.end_lineno or s.lineno)), None)


def skippable(error, statement, tree, path):
    """Is this a demo line's accident (skip it, test the rest) rather than the module's own failure?"""
    if statement is None or isinstance(error, (MemoryError, RecursionError)):
        return False
    if missing_package(statement, error):
        return True
    if isinstance(statement, DEFINITIONS):
        return False
    tb = error.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    own = tb.tb_frame.f_code.co_name == "<module>" and tb.tb_frame.f_code.co_filename == path
    raises = [node for node in ast.walk(statement) if isinstance(node, ast.Raise)]
    return not (own and any(node.lineno <= tb.tb_lineno <= (node.end_lineno or node.lineno) for node in raises))


def missing_package(statement, error):
    """Is error the ModuleNotFoundError of an import statement for a package it names itself?"""
    if type(error) is not ModuleNotFoundError or not error.name:
        return False
    if isinstance(statement, ast.ImportFrom):
        named = [statement.module or ""] if not statement.level else []
    elif isinstance(statement, ast.Import):
        named = [alias.name for alias in statement.names]
    else:
        return False
    return any(n.split(".")[0] == error.name.split(".")[0] for n in named)


class NotInstalled:
    """What a name imported from a missing package is bound to: using it raises the import's error."""

    def __init__(self, package):
        self.package = package

    def __call__(self, *args, **kwargs):
        raise ModuleNotFoundError(f"No module named '{self.package}'", name=self.package)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self()


def run_skipping(module, tree, path):
    """Run the module's top level again, one statement at a time, skipping each demo line that raises."""
    name, lines = module.__name__, Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    kept = {k: v for k, v in vars(module).items() if k in ("__name__", "__file__", "__loader__", "__spec__",
                                                           "__package__", "__cached__", "__builtins__")}
    vars(module).clear()
    vars(module).update(kept, __doc__=ast.get_docstring(tree, clean=False))
    flags = sum(getattr(__future__, alias.name).compiler_flag for s in tree.body
                if isinstance(s, ast.ImportFrom) and s.module == "__future__" for alias in s.names)
    skipped = []
    for statement in tree.body:
        try:
            exec(compile(ast.Module(body=[statement], type_ignores=[]), path, "exec", flags=flags, dont_inherit=True),
                 vars(module))
        except Exception as error:
            if not skippable(error, statement, tree, path):
                raise
            said = lines[statement.lineno - 1].strip()[:120]
            if missing_package(statement, error):
                for alias in statement.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    vars(module)[bound] = NotInstalled(getattr(statement, "module", None) or alias.name)
                if error.name.split(".")[0] in GRADER_HAS:  # a package the grader lacks has its note already
                    NOTES.append(f"{name}.py, line {statement.lineno}: `{said}` raised ModuleNotFoundError: {error}: "
                                 "the code that uses it fails its own tests")
            else:
                skipped.append((statement.lineno, said, f"{type(error).__name__}: {error}"[:200]))
    if skipped:
        (line, said, raised), more = skipped[0], [str(line) for line, _, _ in skipped[1:]]
        others = f" (and line{'s' if len(more) > 1 else ''} {', '.join(more)}, which raised too)" if more else ""
        NOTES.append(f"{name}.py, line {line}: `{said}` raised {raised} when the module was imported. It is demo "
                     f"code at the top level: these tests and the grader skip it{others} and test the rest (no points "
                     f"lost), but `import {name}` stops there in Python: put demo code under "
                     f"`if __name__ == \"__main__\":`")


def note_packages_the_grader_lacks(name, tree):
    """A note for each package the module imports that the grader does not have (scipy, pandas, einops): it
    may be installed here, but where the code is graded the import fails and what uses it loses its points."""
    told = set()
    for node in ast.walk(tree) if tree is not None else ():
        roots = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and not node.level and node.module else []
        for root in sorted({r.split(".")[0] for r in roots} - GRADER_HAS - told):
            told.add(root)
            NOTES.append(f"{name}.py, line {node.lineno}: imports {root}, which the grader does not have (only "
                         "Python's standard library, torch, NumPy and your own files): code that uses it fails "
                         "there, even where it passes here")


def pytest_terminal_summary(terminalreporter):
    for note in dict.fromkeys(NOTES):
        terminalreporter.write_line(f"note: {note}", yellow=True)


@pytest.fixture(scope="session")
def book():
    """The book's printed values: name -> tensor (ints stay ints); also 'inputs' and 'batch'."""
    raw = json.loads((HERE / "book_examples.json").read_text())
    values = {name: entry["value"] if isinstance(entry["value"], int) else torch.tensor(entry["value"])
              for name, entry in raw["values"].items()}
    values["inputs"] = torch.tensor(raw["inputs"])
    values["batch"] = torch.stack((values["inputs"], values["inputs"]))
    return values


class PytestCheck(Check):
    """_diagnose.Check, failing as pytest failures: the message without a traceback."""

    @staticmethod
    def fail(message):
        __tracebackhide__ = True
        raise pytest.fail.Exception(message, pytrace=False) from None  # no chained error shown

    @staticmethod
    def waits(reason):
        """A test that must wait for another part (reason, from waits_for, is not '') is skipped with the reason."""
        if reason:
            pytest.skip(reason)
        return False


@pytest.fixture
def check():
    return PytestCheck()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    # what code run by an earlier test left switched (gradients off: torch.set_grad_enabled(False) in another
    # part's forward; float64 as the default dtype) is not this test's: each test starts from torch's defaults
    torch.set_grad_enabled(True)
    torch.set_default_dtype(torch.float32)
    try:
        return (yield)
    except NotImplementedError as e:
        frame = traceback.extract_tb(e.__traceback__)[-1]
        missing = str(e) or f"{Path(frame.filename).name}, line {frame.lineno}, in {frame.name}"
        message = f"not implemented yet: {missing}"
    except AssertionError:  # a test's own assert: pytest's message, as ever
        raise
    except Exception as e:  # raised in the student's code: the error and the student's line that raised it
        message = raised_in_submission(e, item.config)
    pytest.fail(message, pytrace=False)  # out of the except block: no chained error shown


def raised_in_submission(error, config):
    """'TypeError: ...' and where in the submission's modules it was raised (the last such line); the
    test's own frames and the libraries' are left out (no fixture values, no torch internals)."""
    folder = submission_folder(config)
    said = f"{type(error).__name__}: {error}"
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = Path(frame.filename).resolve()
        if path.parent == folder:
            return f"{said}\n  raised in {path.name}, line {frame.lineno}, in {frame.name}: {(frame.line or '').strip()}"
    return said
