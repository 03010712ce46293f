"""Reading submitted notebooks: the solution cells (by nbgrader grade_id) back into modules, without
running anything. Notebooks are parsed as JSON; a malformed file or cell is an error naming the file
and the cell; IPython magics and shell lines are commented out (they mean nothing to the grader).
(Writing the notebooks: autograder.authoring.notebooks.)"""
import ast
import builtins
import json
import re
from pathlib import Path
from typing import Any


def _modules(modules):
    """The module names a solution cell may have: the given ones, else this repository's chapter's parts."""
    if modules is None:
        from autograder import chapter

        return chapter.current().parts
    return modules


class _LineScanner:
    """Where a line of Python source starts, read one line at a time, each character once.

    State between lines: the depth of open brackets, the quote of an unclosed string (a triple-quoted
    one, or a single-quoted one continued by a backslash) and a backslash continuation. A line starts
    a statement when none of them is open. Comments and string contents are skipped, never parsed.
    """
    _CODE = re.compile(r"""[#"'()\[\]{}\\]""")
    _STRING = {quote: re.compile(r"\\|" + re.escape(quote)) for quote in ("'''", '"""', "'", '"')}

    def __init__(self):
        self.depth, self.quote, self.continued = 0, None, False
        self._newline_escaped = False

    def at_statement_start(self):
        return self.depth == 0 and self.quote is None and not self.continued

    def feed(self, line):
        """Advance over one line (with its newline, if any)."""
        self.continued = self._newline_escaped = False
        pos, end = 0, len(line)
        while pos < end:
            if self.quote:
                pos = self._in_string(line, pos)
                continue
            match = self._CODE.search(line, pos)
            if match is None or match.group() == "#":
                break
            char, pos = match.group(), match.end()
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            elif char == "\\":
                self.continued = not line[pos:].rstrip("\r\n")
                pos += 1
            elif line.startswith(char * 3, match.start()):
                self.quote, pos = char * 3, match.start() + 3
            else:
                self.quote = char
        if self.quote in ("'", '"') and not self._newline_escaped:
            self.quote = None  # a one-line string ends with its line (unclosed, it is a syntax error anyway)

    def _in_string(self, line, pos):
        """Inside a string from pos: the position after its closing quote, or the end of the line."""
        assert self.quote is not None  # called only inside a string
        match = self._STRING[self.quote].search(line, pos)
        if match is None:
            return len(line)
        if match.group() == "\\":
            self._newline_escaped = line[match.end():] in ("\n", "\r\n", "\r")
            return match.end() + 1  # the escaped character, a newline included
        self.quote = None
        return match.end()


def comment_out_magics(source):
    """source with IPython-only lines turned into comments, so it is plain Python.

    A line is IPython-only when it starts (after indentation) with '%' (a line magic, or '%%' for a
    cell magic) or '!' (a shell command) at the start of a statement; inside a string or an open
    bracket such a line is left alone. The commented line keeps its indentation: '    # %time ...'.
    Nothing is run. One pass over the text (_LineScanner): linear in its length, however many
    magic lines it holds.
    """
    scanner = _LineScanner()
    out = []
    for line in source.splitlines(keepends=True):
        stripped = line.lstrip()
        if stripped[:1] in ("%", "!") and not stripped.startswith("!=") and scanner.at_statement_start():
            line = f"{line[: len(line) - len(stripped)]}# {stripped}"  # a comment: nothing in it is open
        else:
            scanner.feed(line)
        out.append(line)
    return "".join(out)


def _source_text(cell, where):
    source = cell.get("source", "")
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    raise ValueError(f"{where}: 'source' should be a string or a list of strings")


def read_notebook(path):
    """The parsed JSON of the notebook at path, checked to be nbformat 4 with a list of cells."""
    path = Path(path)
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    except RecursionError:
        raise ValueError(f"{path}: not a notebook: JSON nested too deeply") from None
    except ValueError:  # what json parses but Python will not build: a number of more than 4300 digits
        raise ValueError(f"{path}: not valid JSON: a number too long to read") from None
    if not isinstance(notebook, dict):
        raise ValueError(f"{path}: a notebook is a JSON object, got {type(notebook).__name__}")
    if notebook.get("nbformat") != 4:
        raise ValueError(f"{path}: only nbformat 4 notebooks are read, this one says nbformat {notebook.get('nbformat')!r}")
    if not isinstance(notebook.get("cells"), list):
        raise ValueError(f"{path}: no 'cells' list")
    return notebook


def notebook_solution_sources(notebook, where, modules=None, skip_unknown=False, cells=None, imports=None):
    """{module: code} of the solution cells of a parsed notebook (a dict), magics commented out.
    cells (a dict, when given) gets {module: the index of its cell in the notebook, from 0}; imports (a dict, when
    given) gets {module: {name: the import statement}} of what the code cells above its cell import at their top
    level (cells_imports): in the kernel those names are there when the cell runs.

    A solution cell is a code cell whose metadata.nbgrader.solution is true; its grade_id names the
    module. Only grade_id and the solution flag are read: outputs and other metadata are ignored.
    ValueError, naming `where` and the cell index, for a cell that is not an object, a malformed
    source or nbgrader metadata, a solution cell whose grade_id is not one of `modules` (with
    skip_unknown such a cell is passed over instead), or a module with two solution cells.
    """
    modules = _modules(modules)
    found: dict = {}
    where_found: dict = {}
    above: dict[str, str] = {}  # name -> the import statement of a code cell above that binds it (the last one)
    for index, cell in enumerate(notebook["cells"]):
        at = f"{where}, cell {index}"
        if not isinstance(cell, dict):
            raise ValueError(f"{at}: a cell is a JSON object, got {type(cell).__name__}")
        metadata = cell.get("metadata", {})
        meta = metadata.get("nbgrader") if isinstance(metadata, dict) else None
        code_above = dict(above)
        if cell.get("cell_type") == "code":
            above.update(cells_imports(cell, at))
        if meta is None:
            continue
        if not isinstance(meta, dict):
            raise ValueError(f"{at}: metadata.nbgrader should be an object")
        if meta.get("solution") is not True or cell.get("cell_type") != "code":
            continue
        module = meta.get("grade_id")
        if module not in modules:
            if skip_unknown:
                continue
            raise ValueError(f"{at}: solution cell with grade_id {module!r}, which is not one of the "
                             f"chapter's modules ({', '.join(modules)})")
        if module in found:
            raise ValueError(f"{at}: a second solution cell for {module} (the first is cell {where_found[module]})")
        text = comment_out_magics(_source_text(cell, at))
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:  # JSON's "\\ud800" escape: no module file can hold it
            raise ValueError(f"{at}: the cell's code holds a lone surrogate (U+{ord(text[e.start]):04X}, character "
                             f"{e.start}), which no Python file can hold") from None
        found[module] = text if text.endswith("\n") else text + "\n"
        where_found[module] = index
        if imports is not None:
            imports[module] = code_above
    if cells is not None:
        cells.update(where_found)
    return found


def cells_imports(cell, where):
    """{name: its import statement} of the absolute import statements at the top level of a code cell
    (`import numpy as np` -> {"np": "import numpy as np"}); none for a cell that does not parse or whose source is
    malformed (notebook_solution_sources names that where it matters). A star import is not followed."""
    try:
        tree = ast.parse(comment_out_magics(_source_text(cell, where)))
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        return {}
    found = {}
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                said = f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
                found[alias.asname or alias.name.split(".")[0]] = said
        elif isinstance(statement, ast.ImportFrom) and not statement.level and statement.module:
            for alias in statement.names:
                if alias.name != "*":
                    found[alias.asname or alias.name] = f"from {statement.module} import {alias.name}" + \
                        (f" as {alias.asname}" if alias.asname else "")
    return found


def solution_sources(path, modules=None, cells=None, imports=None):
    """{module: code} of the solution cells of the notebook file at path (see notebook_solution_sources)."""
    return notebook_solution_sources(read_notebook(path), Path(path), modules, cells=cells, imports=imports)


def notebook_paths(source):
    """The notebooks `source` names: one .ipynb file, a folder's *.ipynb files (not its subfolders,
    in name order), or a list of .ipynb paths (kept in its order)."""
    if isinstance(source, (list, tuple)):
        return [Path(path) for path in source]
    source = Path(source)
    return sorted(source.glob("*.ipynb")) if source.is_dir() else [source]


def extract_modules(source: Any, out_dir: str | Path, modules: Any = None,
                    origins: dict[str, tuple[Path, int]] | None = None) -> Any:
    """Write <module>.py into out_dir for every solution cell of the notebook(s); return the module names.

    source is one .ipynb file, a folder whose *.ipynb files (not its subfolders) are read in name
    order, or a list of notebook paths. Notebooks are parsed as JSON and never run. Malformed
    notebooks raise ValueError naming the file and, for a cell, its index; so does a module found
    in two notebooks. Nothing is written unless every notebook is well formed. Only names in
    `modules` are ever written, so a grade_id cannot choose another file name. origins (a dict,
    when given) gets {module: (the notebook's path, the index of its solution cell, from 0)}: line N
    of <module>.py is line N of that cell.
    """
    found: dict = {}
    origin: dict = {}
    imports: dict = {}
    for path in notebook_paths(source):
        cells: dict = {}
        for module, text in solution_sources(path, modules, cells, imports).items():
            if module in found:
                raise ValueError(f"{path}: a second solution cell for {module} (the first is in {origin[module][0]})")
            found[module], origin[module] = text, (path, cells[module])
    found = with_earlier_cells_names(found, _modules(modules), imports)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for module, text in found.items():
        (out_dir / f"{module}.py").write_text(text)
    if origins is not None:
        origins.update(origin)
    return list(found)


def with_earlier_cells_names(sources: dict[str, str], order: Any,
                             imports: dict[str, dict[str, str]] | None = None) -> dict[str, str]:
    """{module: code}, where a solution cell reads a class, function or variable that an earlier solution cell (an
    earlier part in `order`, the chapter's) defines or assigns at its top level and never binds that name itself:
    in the notebook's kernel the cells share one namespace, so the mha cell may use CausalAttention without `from
    causal import CausalAttention`, and the book's `print(sa_v2(inputs))` at the end of the v2 cell reads the
    `inputs` of the cell above. Such a cell gets that import on the line of its first statement, before it (the cell's line
    numbers stay those of the module), where that is a simple statement (a docstring, an import); else (a class or
    def first, a __future__ import) after its last line, which serves the names its functions read when called.
    The same for a name a code cell above it imports (imports: {module: {name: import statement}}, from
    notebook_solution_sources): the setup cell's `import numpy as np`, the student's own `import math` cell.
    Read with ast, never run; a cell that does not parse is left as it is (its syntax error is its own part's)."""
    defined: dict[str, tuple[str, bool]] = {}  # name -> (its module, whether a class or function)
    out = dict(sources)
    for module in [m for m in order if m in sources]:
        try:
            tree = ast.parse(sources[module])
        except (SyntaxError, ValueError):
            continue
        bound, read = _bound_and_read(tree)
        # a variable only where the cell's own top level reads it (its demo lines, run at import, which would
        # raise NameError without it); one read in a function alone is left (an import of its cell would make
        # this cell's import depend on that one's)
        at_top = {node.id for statement in tree.body
                  if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  for node in ast.walk(statement) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
        missing = sorted(name for name in (read - bound - set(dir(builtins))) & set(defined)
                         if defined[name][1] or name in at_top)
        kernel = (imports or {}).get(module, {})
        imported = sorted(name for name in read - bound - set(dir(builtins)) - set(missing) if name in kernel)
        text, shown = _without_other_cells_demo(sources[module], tree,
                                                bound | set(missing) | set(imported) | set(dir(builtins)))
        if missing or imported:
            # a class or function imported by name; a variable (the book's `inputs`, `d_in`) assigned from its
            # cell's module, so that the grader's reading still sees a module variable (a method reading it is
            # suites/source_mistakes.GLOBAL_READ's mistake); a name a cell above imports, by its own statement
            given = [kernel[name] for name in imported]
            given += [f"from {defined[name][0]} import {name}" if defined[name][1] else
                      f"import {defined[name][0]}; {name} = {defined[name][0]}.{name}" for name in missing]
            text = _with_line(text, tree, "; ".join(given))
        out[module] = text
        for node in tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                defined.setdefault(node.name, (module, True))
            for target in _assigned(node):
                if node not in shown:
                    defined.setdefault(target, (module, False))
    return out


def _without_other_cells_demo(text: str, tree: ast.Module, known: set[str]) -> tuple[str, list[ast.stmt]]:
    """text with its top-level demo lines that read a name no solution cell gives it (the notebook's setup cell's
    `book` or `heatmaps`, a scratch cell's variable: `print(softmax_naive(book["attn_scores_2"]))`) commented out,
    as magics are: in the kernel they print or draw, graded they would raise NameError at import. A statement that
    reads what such a line assigned goes with it; definitions and imports are never touched, nor a line shared with
    another statement. known: the names the cell binds or is given. -> (text, the statements commented out)."""
    lines = text.splitlines(keepends=True)
    lost: set[str] = set()
    shown: list[ast.stmt] = []
    starts = [s.lineno for s in tree.body]
    ends = [s.end_lineno or s.lineno for s in tree.body]
    for i, statement in enumerate(tree.body):
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            continue
        names = [n for n in ast.walk(statement) if isinstance(n, ast.Name)]
        reads = {n.id for n in names if isinstance(n.ctx, ast.Load)}
        if not (reads - known or reads & lost):
            continue
        first, last = starts[i], ends[i]
        if (i and ends[i - 1] >= first) or (i + 1 < len(starts) and starts[i + 1] <= last) or statement.col_offset:
            continue  # a line shared with another statement
        for number in range(first - 1, last):
            lines[number] = "# " + lines[number]
        lost |= {n.id for n in names if not isinstance(n.ctx, ast.Load)}
        shown.append(statement)
    return "".join(lines), shown


def _assigned(node: ast.stmt) -> list[str]:
    """The plain names a top-level assignment binds (`inputs = ...`, `d_in, d_out = ...`, `x: int = 3`)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return [name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)]


SIMPLE = (ast.Expr, ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Pass)


def _with_line(text: str, tree: ast.Module, line: str) -> str:
    """text with `line` (simple statements) before its first statement, on that statement's line, when that is a
    simple statement starting the line and not a __future__ import; else after text's last line."""
    first = tree.body[0] if tree.body else None
    if isinstance(first, SIMPLE) and first.col_offset == 0 and \
            not (isinstance(first, ast.ImportFrom) and first.module == "__future__"):
        lines = text.splitlines(keepends=True)
        lines[first.lineno - 1] = f"{line}; {lines[first.lineno - 1]}"
        return "".join(lines)
    return f"{text}{'' if text.endswith(chr(10)) else chr(10)}{line}\n"


def _bound_and_read(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(every name the module binds anywhere: assigned, defined, imported, a parameter, global or nonlocal;
    every name it reads)."""
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return bound, read


# --- student notebooks without nbgrader -----------------------------------------------------------
