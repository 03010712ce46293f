"""The grading engine: what every entry point (grade, ci, gradescope, batch, selftest, nbgrader's
GradeInSandbox) builds, in one place.

    with Engine.open(settings, rubric_path) as engine:   # sandbox, rubric, environment check
        grade = engine.grade("path/to/submission")
    reports.write(grade, ...)

Engine.open reads the rubric file first (RubricError: a malformed grading.yml is refused before anything
starts), starts the sandbox's fork server (it imports torch in the room while this process
imports the grader), then checks the rubric against the suites (RubricError) and grades the reference solutions
(envcheck.ensure; EnvironmentFailed: nobody is graded). What student code may see is the
sandbox's mode, decided by the settings alone (docs/sandbox.md, "What each mode hides"): no entry
point names folders to hide. Every Grade it makes carries the run's
secret (settings.seed, drawn once per engine when not given) and the environment check's record.
A batch's workers each get an engine of their own on a door to the batch's one fork server
(Engine.for_worker). The engine's sandbox owns its fork server: one that dies (as it starts or
later) is replaced when the next session opens, a bounded number of times (client.SERVER_STARTS);
when none will start, the submission's parts are "not graded", the machine's doing.
Every engine, when it is made, first removes the temporary folders a grader killed before it left
behind (scratch.sweep: only those whose owner process is gone), and gives torch's cache a folder of
the process's own (scratch.torch_cache), which is removed when it exits.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from autograder import chapter as chapter_mod
from autograder import scratch
from autograder import settings as settings_mod
from autograder.settings import Settings

if TYPE_CHECKING:
    from autograder.chapter import Chapter
    from autograder.grading import Grade
    from autograder.rubric import Rubric
    from autograder.sandbox.client import Sandbox


class Engine:
    """One run's grader: its settings, chapter, rubric and suites, sandbox and environment check."""

    def __init__(self, settings: Settings | None = None, rubric_path: str | Path | None = None,
                 chapter: Chapter | None = None) -> None:
        scratch.sweep()  # what graders killed before (SIGKILL: no cleanup ran) left in the temporary folder
        scratch.torch_cache()  # torch's cache folder, once per process: one of ours, not torchinductor_<user>
        self.chapter = chapter or chapter_mod.current()
        self.settings = (settings or settings_mod.from_environment()).with_secret()
        self.rubric_path = Path(rubric_path) if rubric_path else self.chapter.rubric
        self.sandbox: Sandbox | None = None
        self.owns_sandbox = False
        self.rubric: Rubric | None = None
        self.suites: dict[str, list[Any]] | None = None
        self.environment_check: dict[str, Any] | None = None

    @classmethod
    def open(cls, settings: Settings | None = None, rubric_path: str | Path | None = None,
             check: bool = True, slot: int = 0, sandbox: Sandbox | None = None,
             chapter: Chapter | None = None) -> Engine:
        """An engine ready to grade: sandbox started (or the given one used), rubric read and, with
        check, the environment checked. On any failure what was started is stopped again.
        chapter: the manifest the entry point resolved (None: this repository's, chapter.current())."""
        engine = cls(settings, rubric_path, chapter)
        from autograder import rubric as rubric_mod  # (yaml only: no torch before the fork server starts)

        try:
            rubric_mod.load(engine.rubric_path)  # its form and values (the names of its parts and checks: the suites')
        except rubric_mod.RubricError:
            engine.load_rubric()  # read with the suites, as every run reads it: the error told is that reading's
            raise
        engine.start_sandbox(slot, sandbox)
        try:
            engine.load_rubric()  # while the fork server warms up in its room
            if engine.owns_sandbox:  # refuses where its fork server cannot start at all (its own exception)
                assert engine.sandbox is not None
                engine.sandbox.serving()
            if check:
                engine.check_environment()
        except BaseException:
            engine.close()
            raise
        return engine

    def start_sandbox(self, slot: int = 0, sandbox: Sandbox | None = None) -> Sandbox:
        """The sandbox this engine grades in: the given one (its owner closes it) or a new fork server."""
        if sandbox is None:
            from autograder.sandbox.client import Sandbox

            sandbox, self.owns_sandbox = Sandbox(slot=slot, settings=self.settings.sandbox), True
        self.sandbox = sandbox
        return sandbox

    def load_rubric(self) -> Rubric:
        """The rubric and the suites it names; from here this process computes the grader's own values
        (the suites' reference math, the stand-ins), on one intra-op thread (one_thread)."""
        from autograder import grading

        self.rubric, self.suites = grading.load_rubric(self.rubric_path, self.chapter)
        one_thread()
        return self.rubric

    def check_environment(self) -> dict[str, Any]:
        """The reference solutions graded here first (envcheck.ensure); EnvironmentFailed stops the run."""
        from autograder import envcheck

        assert self.sandbox is not None and self.rubric is not None and self.suites is not None
        self.environment_check = envcheck.ensure(self.sandbox, self.rubric, self.suites, self.rubric_path,
                                                 reference=self.chapter.solutions,
                                                 cache=self.settings.envcheck_cache, seed=self.settings.seed,
                                                 manifest=self.chapter)
        return self.environment_check

    def grade(self, path: str | Path, parts: list[str] | None = None, figures: bool = True,
              rubric: Rubric | None = None, cells: dict[str, tuple[str, int]] | None = None) -> Grade:
        """Grade the submission at path (a folder, zip or notebooks): SubmissionError when it cannot be
        staged. parts: only these parts; rubric: a rubric cut down from this one (selftest); cells: for
        modules the caller took from notebooks itself (nbgrader), where each came from (Staged.cells)."""
        from autograder import grading

        assert self.sandbox is not None and self.rubric is not None and self.suites is not None, "Engine.open() first"
        return grading.grade_submission(path, rubric or self.rubric, self.suites, self.sandbox, parts=parts,
                                        seed=self.settings.seed, figures=figures,
                                        environment_check=self.environment_check, chapter=self.chapter,
                                        cells=cells)

    def for_worker(self, sandbox: Sandbox | None, slot: int) -> Engine:
        """An engine for a worker process of this run: the same settings, rubric and suites (this engine's,
        which the forked worker inherits, instead of reading and checking the rubric file again in every
        worker; read here only where this engine has none yet) and environment check, grading in
        `sandbox` (its door to the run's fork server) or a fork server of its own."""
        worker = Engine(self.settings, self.rubric_path, self.chapter)
        worker.environment_check = self.environment_check
        worker.start_sandbox(slot, sandbox)
        if self.rubric is not None and self.suites is not None:
            worker.rubric, worker.suites = self.rubric, self.suites
            one_thread()
        else:
            worker.load_rubric()
        return worker

    def close(self) -> None:
        if self.sandbox is not None and self.owns_sandbox:
            self.sandbox.close()
        self.sandbox, self.owns_sandbox = None, False

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def one_thread() -> None:
    """torch's intra-op thread pool down to one thread in the grading process. The grader's own tensors
    are a few dozen numbers: no operation on them is split over threads, yet with the default pool (one
    thread per core) every call pays its threads' hand-over, and on a busy machine, where those threads
    wait for a core, a softmax of a 6x6 matrix took 5-20 ms instead of 0.04 ms (measured 2026-11-28 on
    the course's 2-core machine at a load of 4-30, cProfile on): a grading's CPU in this process fell from 1.8-2.3 s
    to 0.7-0.8 s. The children set the same in the room (inside/zygote.py), a batch's workers too."""
    import torch

    torch.set_num_threads(1)
