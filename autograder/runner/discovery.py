"""The checks and what they are given: a check is a function `test_<name>(student, ...)` in
autograder/suites/test_<part>.py (discover, in the order it is written); the fixtures a check can ask
for by parameter name: `student` (runner/check.py gives it), `book` (the book's printed values), `seed`
and `rng` (an int and a seeded torch.Generator for fresh inputs: default_fixtures)."""
from __future__ import annotations

import importlib
import inspect
from typing import Any

from autograder.runner.records import Checks, Fixtures
from autograder.secret import check_seed, draw_secret


def discover(parts: tuple[str, ...] | list[str] | None = None) -> dict[str, Checks]:
    """part -> [(check name, function)] in the order they are written, for the chapter's parts (the
    Engine's chapter, through grading.load_rubric; None: this repository's, chapter.current())."""
    if parts is None:
        from autograder import chapter

        parts = chapter.current().parts
    suites: dict[str, Checks] = {}
    for part in parts:
        module = importlib.import_module(f"autograder.suites.test_{part}")
        checks: Checks = [(name[5:], fn) for name, fn in vars(module).items()
                  if name.startswith("test_") and inspect.isfunction(fn) and fn.__module__ == module.__name__]
        suites[part] = sorted(checks, key=lambda item: item[1].__code__.co_firstlineno)
    return suites


def fixture(fixtures: Fixtures, parameter: str, part: str, name: str) -> Any:
    """What a check's parameter gets: seed and rng drawn for the check (part, name), the others made afresh."""
    if parameter in ("seed", "rng"):
        return fixtures[parameter]((part, name))
    return fixtures[parameter]()


def default_fixtures(secret: int | None = None, key: str = "") -> Fixtures:
    """Fixture factories, called afresh for every check that names them: `book` (the book's printed
    values), and `seed` / `rng` (an int and a torch.Generator for the check's unseen inputs, drawn
    from the run's secret, the submission and the check's name: a table of answers captured in one
    run is worth nothing in the next)."""
    from autograder.suites import book

    values = book.values()
    if secret is None:  # the run's secret: the engine passes its own; else the environment's, or a fresh draw
        from autograder.settings import from_environment

        secret = from_environment().seed
        secret = draw_secret() if secret is None else secret
    secret = int(secret)
    fixtures: Fixtures = {"book": lambda: values, "secret": secret, "key": key}
    fixtures["seed"] = lambda check=("", ""): check_seed(secret, key, *check)
    import torch  # here, not at import: nbgrader's commands load the plugins (and so the runner) without grading

    fixtures["rng"] = lambda check=("", ""): torch.Generator().manual_seed(check_seed(secret, key, *check))
    return fixtures
