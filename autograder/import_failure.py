"""A part whose module does not import is one problem, said once: the error and its line.

A module with a syntax error, or one that raises while it is being imported (a name it imports that
does not exist, a NameError at the top level), cannot run a single check of its part: every check
fails with the same error, and the hidden ones only say "your code raised an exception". Reported
check by check, one mistake became several items, one of them advice about a check that never got
to run. Here such a part gets the import error as its problem (PartRun.problem), and each failed
check of it the same message, which every report says once for the part (reports.common.what_to_fix),
and the class report lists with the parts that crashed.

What is said comes from what the student may see anyway: a syntax error from the grader's own
reading of the staged file (`ast.parse`, which runs nothing), and only when the child raised a
syntax error at import too; an error raised at import from the student text of a check with
visible inputs. Nothing else about the part is said.

    explain(run, folder, visible, cells)   run: a runner.PartRun (its checks run); folder: the staged
                                    modules; visible: the names of the part's checks with visible inputs;
                                    cells: the modules staged from notebooks (Staged.cells), which are
                                    named by their cell instead of their file
"""
from __future__ import annotations

import ast
import re
import sys
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Protocol

from autograder import source_reading, text
from autograder.inside import demo_lines


class PartRun(Protocol):
    """What is read and written of a runner.PartRun (runner imports this module, not the other way)."""
    part: str
    problem: str
    results: list[Any]  # runner.CheckResult: name, passed, message, student_text, cause, unexplained

SYNTAX_KINDS = ("SyntaxError", "IndentationError", "TabError")
# how a place in a module staged from a notebook names its cell (cell_place), as a pattern: the module
CELL_PLACE = r", the solution cell '(\w+)' \(cell \d+ from the top\)"
# the end of StudentError.student_text() for an error raised by a module's top level (its file, or its cell)
AT_IMPORT = re.compile(r"(?:\((\w+\.py)|" + CELL_PLACE + r"), line \d+, in <module>\)$")
SOURCE_LINE = 120  # the most of the offending line quoted


def explain(run: PartRun, folder: str | Path, visible: Collection[str] = (),
            cells: Mapping[str, tuple[str, int]] | None = None) -> None:
    """Set run.problem (and every failed check's message) when the part's module does not import;
    every check of the part must have failed, so a module that imports is never said not to."""
    if run.problem or not run.results or any(r.passed for r in run.results):
        return
    said = syntax_error(run, Path(folder), cells) or error_at_import(run, visible, cells)
    if not said:
        return
    run.problem = said
    for result in run.results:
        result.message, result.cause, result.unexplained = said, "", False


def cell_place(module: str, notebook: str, number: int) -> str:
    """How a student's error names the notebook cell a module came from (CELL_PLACE reads it back)."""
    return f"{notebook}, the solution cell '{module}' (cell {number} from the top)"


def shown_file(name: str, cells: Mapping[str, tuple[str, int]] | None = None) -> str:
    """A chapter file as the student knows it: "causal.py", or for a module staged from a notebook
    "the solution cell 'causal' of ch03.ipynb"."""
    module = name[:-3] if name.endswith(".py") else name
    found = (cells or {}).get(module)
    return f"the solution cell '{module}' of {found[0]}" if found else name


def syntax_error(run: PartRun, folder: Path, cells: Mapping[str, tuple[str, int]] | None = None) -> str:
    """"<file> does not import: SyntaxError: <msg> (line N: <the line>)" when the child raised a syntax
    error for a chapter file and the grader's own parse of that staged file finds one; else ''."""
    raised = {_file_of(r.student_text) for r in run.results if r.student_text.startswith(SYNTAX_KINDS)}
    raised.discard("")
    for name in sorted(raised, key=lambda n: n != f"{run.part}.py"):  # the part's own module first
        found = parse_error(folder / name)
        if found:
            return f"{shown_file(name, cells)} does not import: {found}"
    return ""


def parse_error(path: Path) -> str:
    """The syntax error the grader's parser finds in path ('' when it parses or cannot be read)."""
    try:
        source = path.read_bytes()
    except OSError:
        return ""
    try:
        ast.parse(source, filename=path.name)
    except SyntaxError as e:
        line = ""
        if e.lineno:
            lines = source.decode("utf-8", "replace").splitlines()
            code = lines[e.lineno - 1].strip() if 0 < e.lineno <= len(lines) else ""
            line = f"line {e.lineno}" + (f": {text.excerpt(code, SOURCE_LINE)}" if code else "")
        return text.excerpt(f"{type(e).__name__}: {e.msg}" + (f" ({line})" if line else ""))
    except (ValueError, RecursionError, MemoryError) as e:  # null bytes, nesting the parser refuses
        return text.excerpt(f"SyntaxError: {type(e).__name__}: {e}")
    return ""


def error_at_import(run: PartRun, visible: Collection[str], cells: Mapping[str, tuple[str, int]] | None = None) -> str:
    """"<file> does not import: <the error>" when a check with visible inputs saw the module's top level
    raise (the student may see that text); else ''."""
    for result in run.results:
        found = AT_IMPORT.search(result.student_text or "")
        if found and result.name in visible:
            name = found.group(1) or f"{found.group(2)}.py"
            return f"{shown_file(name, cells)} does not import: {result.student_text}"
    return ""


def _file_of(student_text: str) -> str:
    """The chapter file a syntax error names: "SyntaxError: invalid syntax (mha.py, line 26)" -> mha.py;
    "... (ch03.ipynb, the solution cell 'mha' (cell 7 from the top), line 26)" -> mha.py."""
    found = re.search(r"\((\w+\.py), line \d+|" + CELL_PLACE + r", line \d+", student_text)
    return "" if not found else found.group(1) or f"{found.group(2)}.py"


NOT_INSTALLED = ("is not installed where your code is graded (only Python's standard library, torch, NumPy and "
                 "the files you hand in are)")
# a module of Python's standard library that the submission's uid could not import (container mode where the
# grader's Python lies in a folder other users cannot read, such as a pyenv under /root): the environment's doing
STDLIB_UNLOADABLE = ("a module of Python's standard library that the grading environment could not load for your "
                     "code (a limit of the machine it is graded on, not a mistake of yours)")


def demo_note(skipped: Collection[tuple[str, int, str]], part: str, folder: str | Path,
              cells: Mapping[str, tuple[str, int]] | None = None) -> str:
    """What the student is told of the top-level statements of the part's module that raised at import and
    were skipped (inside/demo_lines.py; skipped: (module, line, exception class or '') as the child reported
    them, Student.demo_lines): '' when none. Only lines where the grader's own parse of the staged file starts
    a top-level statement are said: a demo statement (no import or definition), or an import whose package is
    missing (ModuleNotFoundError). The line, the package and the names a NameError's line reads that the module
    never binds are the grader's reading of its own copy; the child said only the line and the class."""
    lines = sorted((line, kind) for module, line, kind in skipped if module == part)
    if not lines:
        return ""
    try:
        source = source_reading.module_text(Path(folder) / f"{part}.py")
        tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    starts = {s.lineno: s for s in tree.body}
    file = shown_file(f"{part}.py", cells)
    code = source.splitlines()
    missing = [(line, starts[line]) for line, kind in lines if kind == "ModuleNotFoundError" and line in starts
               and isinstance(starts[line], (ast.Import, ast.ImportFrom))]
    demo = [(line, kind, starts[line]) for line, kind in lines
            if line in starts and not isinstance(starts[line], demo_lines.DEFINITIONS)]
    said = []
    if missing:
        line, statement = missing[0]
        package = (statement.module if isinstance(statement, ast.ImportFrom) else
                   statement.names[0].name if isinstance(statement, ast.Import) else "") or "?"
        top = package.split(".")[0]
        # a standard-library module is there, but not importable by the submission's uid: the environment's doing
        what, advice = ((STDLIB_UNLOADABLE, "tell your instructor; torch and NumPy do load")
                        if top in sys.stdlib_module_names else (f"which {NOT_INSTALLED}", "write it with torch or NumPy"))
        said.append(f"{file}, line {line}: `{text.excerpt(code[line - 1].strip(), SOURCE_LINE)}` imports {top}, "
                    f"{what}. The grader graded the rest of {file}: code that uses it fails its own checks ({advice}).")
    if demo:
        line, kind, statement = demo[0]
        raised = f"raised {kind}" if kind else "raised an exception of its own class"
        unbound = ""
        if kind == "NameError":
            names = sorted(_unbound_reads(statement, tree))
            if names:
                unbound = f" (it reads {', '.join(names[:3])}, which {file} never defines)"
        more = ""
        if len(demo) > 1:
            rest = [str(n) for n, _, _ in demo[1:]]
            plural = "s" if len(rest) > 1 else ""
            more = f" (and {len(rest)} more top-level line{plural} that raised too: line{plural} {', '.join(rest[:5])})"
        where = ("put demo code in a cell of its own, outside the solution cell" if part in (cells or {})
                 else 'put demo code under `if __name__ == "__main__":`')
        said.append(f"{file}, line {line}: `{text.excerpt(code[line - 1].strip(), SOURCE_LINE)}` {raised} when the "
                    f"module was imported{unbound}. It is demo code at the top level: the grader skipped it{more} and "
                    f"graded your classes and functions without it (no points lost for it). Run on its own, the code "
                    f"still stops there: {where}.")
    return text.excerpt(" ".join(said), 900)


def _unbound_reads(statement: ast.stmt, tree: ast.Module) -> set[str]:
    """The names the statement reads that the module's top level binds nowhere (nor a `global` statement,
    nor Python's builtins): a function's parameter `d_in` does not give the demo line its `d_in`."""
    import builtins

    bound = set(dir(builtins))
    for top in tree.body:
        if isinstance(top, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            bound.add(top.name)
            bound.update(name for node in ast.walk(top) if isinstance(node, ast.Global) for name in node.names)
        elif isinstance(top, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in top.names)
        else:
            bound.update(node.id for node in ast.walk(top) if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load))
    return {node.id for node in ast.walk(statement) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)} - bound
