#!/usr/bin/env python3
"""Issue 38 item 5 (branch `layout`): the moves, replayable on any later tree.

    python3 scripts/relayout_issue38.py stand_ins   # step 1 (item 5.2): suites/{stand_ins,source_reading}.py up
    python3 scripts/relayout_issue38.py groups      # step 2 (item 5.3): course/, deploy/, authoring/

Run from the repository root on a clean tree; each step does `git mv` and rewrites every reference in
the tracked text files (dotted module paths, `from autograder import a, b` lists, file paths), then
prints what it changed. Idempotent: a second run changes nothing.
"""
import re
import subprocess
import sys
import textwrap
from pathlib import Path

# what student.py (the suites' adapter) and grading.py need of suites/, beside them: the dependency
# goes suites -> student only
STAND_INS = {"autograder.suites.stand_ins": "autograder.stand_ins",
             "autograder.suites.source_reading": "autograder.source_reading"}
GROUPS = {
    # course records: a class's grades over time, none of them part of a grade's computation
    "autograder.gradebook": "autograder.course.gradebook",
    "autograder.lateness": "autograder.course.lateness",
    "autograder.lms_export": "autograder.course.lms_export",
    "autograder.regrades": "autograder.course.regrades",
    "autograder.gradescope_limits": "autograder.course.gradescope_limits",
    # deployment targets: what GitHub Actions and nbgrader call into
    "autograder.ghactions": "autograder.deploy.ghactions",
    "autograder.nbgrader_plugins": "autograder.deploy.nbgrader_plugins",
    "autograder.nbgrader_exchange": "autograder.deploy.nbgrader_exchange",
    # authoring: the student material made from the solutions (stubs, notebooks) and its check
    "autograder.stubs": "autograder.authoring.stubs",
    "autograder.notebooks": "autograder.authoring.notebooks",
    "autograder.book_check": "autograder.authoring.book_check",
}
PACKAGE_DOCS = {
    "autograder.course": "Course records: a class's grades over time (gradebook, lateness, regrades, the LMS "
                         "export, Gradescope's submission limits); none takes part in computing a grade.",
    "autograder.deploy": "Deployment targets' own code: what GitHub Actions (ghactions) and nbgrader "
                         "(nbgrader_plugins, nbgrader_exchange) call into; the commands live in autograder/commands.",
    "autograder.authoring": "The student material made from the solutions: stubs (stubs), nbgrader notebooks "
                            "(notebooks), and the check that the solutions reproduce the book (book_check).",
}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".txt", ".cfg", ".sh", ".ipynb", ".json", ".html", ""}


def sh(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def to_path(dotted):
    return dotted.replace(".", "/") + ".py"


def tracked_text_files():
    for name in sh("git", "ls-files").splitlines():
        path = Path(name)
        if path.resolve() == Path(__file__).resolve():
            continue  # this script names the old paths on purpose
        if path.suffix in TEXT_SUFFIXES and path.is_file() and not path.is_symlink():
            try:
                yield path, path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue


def split_from_imports(text, moves):
    """`from P import a, b as c, d` where some names moved to another package: one line per package."""
    by_parent = {}
    for old, new in moves.items():
        parent, name = old.rsplit(".", 1)
        by_parent.setdefault(parent, {})[name] = new.rsplit(".", 1)[0]

    def fix(match):
        indent, parent, names, comment = match.group(1), match.group(2), match.group(3), match.group(4) or ""
        moved_here = by_parent.get(parent, {})
        items = [n.strip() for n in names.split(",") if n.strip()]
        keep, moved = [], {}
        for item in items:
            name = item.split(" as ")[0].strip()
            if name in moved_here:
                moved.setdefault(moved_here[name], []).append(item)
            else:
                keep.append(item)
        if not moved:
            return match.group(0)
        lines = [(parent, f"{indent}from {parent} import {', '.join(keep)}{comment}")] if keep else []
        for package, its in moved.items():
            lines.append((package, f"{indent}from {package} import {', '.join(its)}" + ("" if keep else comment)))
        return "\n".join(line for _, line in sorted(lines))  # in isort's order among themselves

    parents = "|".join(re.escape(p) for p in by_parent)
    return re.sub(rf"^([ \t]*)from ({parents}) import ([\w ,]+?)([ \t]+#.*)?$", fix, text, flags=re.M)


def name_order(item):
    """isort's order of the names of one `from` import: CONSTANTS, Classes, then the rest."""
    name = item.split(" as ")[0]
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, item)


IMPORT_BLOCK = re.compile(r"(?:(?:from \S+ import [^\n]*|import [^\n]*|#[^\n]*)?\n)*")


def merge_from_imports(text, packages):
    """Two top-level `from P import ...` lines of one package in one block of imports (one made by the
    split): one line, at the first (lines in strings or after other code are left alone)."""
    for package in packages:
        pattern = re.compile(rf"^from {re.escape(package)} import ([\w ,]+)$", re.M)
        found = list(pattern.finditer(text))
        if len(found) < 2:
            continue
        first, same = found[0], [found[0]]
        for m in found[1:]:
            if IMPORT_BLOCK.fullmatch(text, same[-1].end() + 1, m.start()):
                same.append(m)
        if len(same) < 2:
            continue
        names = sorted({n.strip() for m in same for n in m.group(1).split(",") if n.strip()}, key=name_order)
        for m in reversed(same[1:]):
            text = text[:m.start()] + text[m.end() + 1:]
        text = text[:first.start()] + f"from {package} import {', '.join(names)}" + text[first.end():]
    return text


def rewrite(text, moves):
    split = split_from_imports(text, moves)
    if split != text:
        text = merge_from_imports(split, sorted({new.rsplit(".", 1)[0] for new in moves.values()}))
    for old, new in sorted(moves.items(), key=lambda item: -len(item[0])):
        text = re.sub(rf"(?<![\w.]){re.escape(old)}(?![\w])", new, text)  # dotted: imports, plugin paths, mocks
        text = re.sub(rf"(?<![\w/.]){re.escape(to_path(old))}", to_path(new), text)  # autograder/x/y.py
    for old in moves:  # out of suites/: paths relative to autograder/ in docs and comments
        if old.startswith("autograder.suites."):
            name = old.rsplit(".", 1)[1]
            text = re.sub(rf"(?<![\w/.])suites/{name}\.", f"{name}.", text)
    return text


def move(moves):
    moved = {}  # what this run moved (a second run moves nothing and fixes nothing twice)
    for old, new in moves.items():
        source, target = Path(to_path(old)), Path(to_path(new))
        if source.exists():
            moved[old] = new
            target.parent.mkdir(parents=True, exist_ok=True)
            init = target.parent / "__init__.py"
            package = ".".join(target.parent.parts)
            if not init.exists() and package in PACKAGE_DOCS:
                init.write_text('"""' + textwrap.fill(PACKAGE_DOCS[package], 100) + '"""\n', encoding="utf-8")
                sh("git", "add", str(init))
            sh("git", "mv", str(source), str(target))
    for old, new in moved.items():  # a module one folder deeper finds the package's files one step further up
        target = Path(to_path(new))
        if target.is_file() and new.count(".") > old.count("."):
            text = target.read_text(encoding="utf-8")
            fixed = re.sub(r"Path\(__file__\)((?:\.resolve\(\))?)\.parent\b(?!s)", r"Path(__file__)\1.parents[1]", text)
            fixed = re.sub(r"(Path\(__file__\)(?:\.resolve\(\))?\.parents)\[(\d+)\]",
                           lambda m: f"{m.group(1)}[{int(m.group(2)) + 1}]", fixed) if fixed == text else fixed
            if fixed != text:
                target.write_text(fixed, encoding="utf-8")
    changed = []
    for path, text in tracked_text_files():
        new = rewrite(text, moves)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(str(path))
    print(f"{len(changed)} files rewritten:", *changed, sep="\n  ")


if __name__ == "__main__":
    step = sys.argv[1:] or ["stand_ins", "groups"]
    for name in step:
        move({"stand_ins": STAND_INS, "groups": GROUPS}[name])
