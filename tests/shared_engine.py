"""The engines the tests grade with: autograder.engine.Engine, the production path, opened as the
tests open it (tests/conftest.py's session `engine`; a module that needs its own settings, slot or
rubric cut opens one with open_engine)."""
from __future__ import annotations

import copy
import dataclasses

from autograder import settings as settings_mod
from autograder.engine import Engine


class SharedEngine(Engine):
    """The production Engine (Engine.open: sandbox, rubric; no environment check, as no test's
    verdict rests on it), with two conveniences for tests:

    - it unpacks as (rubric, suites, sandbox) and indexes so (`rubric = engine[0]`), for the tests
      written against the older tuple fixture; new tests read engine.rubric / engine.suites and
      grade with engine.grade;
    - with_seed / with_suites: a view of the same engine (same fork server) whose grades use another
      secret or other suites (a test's own checks), still graded by Engine.grade.
    """

    def _triple(self) -> tuple:
        return self.rubric, self.suites, self.sandbox

    def __iter__(self):
        return iter(self._triple())

    def __getitem__(self, index):
        return self._triple()[index]

    def with_seed(self, seed: int | None) -> SharedEngine:
        """This engine grading under another secret (None: a fresh one, drawn now)."""
        view = copy.copy(self)
        view.settings = dataclasses.replace(self.settings, seed=seed).with_secret()
        view.owns_sandbox = False  # closing a view never ends the shared fork server
        return view

    def with_suites(self, suites: dict) -> SharedEngine:
        """This engine grading with other suites (the real ones with a test's own check in them)."""
        view = copy.copy(self)
        view.suites, view.owns_sandbox = suites, False
        return view


def open_engine(cls: type[Engine] = SharedEngine, slot: int = 0) -> Engine:
    """An engine as the tests use it: the environment's settings, the chapter's rubric, its fork server
    started and warmed up (ready), no environment check."""
    opened = cls.open(settings_mod.from_environment(), check=False, slot=slot)
    assert opened.sandbox is not None
    opened.sandbox.ready()
    return opened
