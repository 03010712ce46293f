"""A graded notebook cell's report, as a notebook student reads it (deploy/nbgrader_plugins.py writes it
into the cell's outputs). A notebook student has no .py files: where the grader's words name a module
file, they name the solution cell whose grade_id is that module instead (its text is the module, line
for line). Plain text, like the terminal table; nothing here imports nbgrader."""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any


@functools.lru_cache(maxsize=4)
def _module_file(parts: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(rf"\b({'|'.join(map(re.escape, parts))})\.py\b")


def in_notebook_words(said: str, modules: Iterable[str] | None = None) -> str:
    """The grader's words about a module file (causal.py, line 5) as a notebook student sees that code:
    the solution cell named after the module. modules: the chapter's parts (None: this repository's)."""
    if modules is None:
        from autograder import chapter

        modules = chapter.current().parts
    return _module_file(tuple(modules)).sub(lambda found: f"your solution cell '{found.group(1)}'", said)


def what_to_fix_lines(checks: list[Any], parts: dict[str, Any], modules: Iterable[str] | None = None) -> list[str]:
    """The lines of a graded cell's report on its part's failures, as a student may see them
    (reports.common.what_to_fix: visible checks with the student's own error text, hidden checks by
    their diagnosis only and unnamed, a part problem once), in the notebook's words (in_notebook_words)."""
    from autograder.reports.common import OWN_TEXT, what_to_fix  # (here: it loads torch)

    items = what_to_fix(checks, parts)
    lines = ["What to fix:"] if items else []
    for item in items:  # one line each, the checks it failed in and the student's own error text after it
        lines.append(in_notebook_words(f"  - {item.label} (-{item.points:g}): {item.message}", modules))
        lines += [in_notebook_words(f"    {note}", modules) for note in item.notes]
        if item.own_text:
            lines.append(f"    {OWN_TEXT}: {item.own_text}")
    return lines
