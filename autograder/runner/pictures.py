"""The feedback's pictures: each part's probe on the book's example, taken before any hidden input exists
in the child the visible turns left (take_pictures), and given to the first failed check about attention
weights (attach_figures)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from autograder.runner.place import Limits, Place
from autograder.runner.records import Figure, Fixtures, PartRun
from autograder.student import Student

if TYPE_CHECKING:
    from autograder.rubric import Rubric
    from autograder.submission import Staged


FIGURE_SECONDS = 10  # at most, for all of a submission's pictures: a picture never costs a part its time or points


def picture_parts(runs: dict[str, PartRun], rubric: Rubric, staged: Staged | None = None) -> list[str]:
    """The parts a picture may be drawn for: a probe, a check about attention weights whose diagnosis
    students may read, the module there, no crash or time-out so far."""
    from autograder.suites import figures

    found = []
    for name, run in runs.items():
        checks = rubric.parts[name].checks
        shown = [n for n in figures.FIGURE_CHECKS.get(name, ())
                 if n in checks and checks[n].diagnosis != "withheld"]
        if shown and name in figures.PROBES and not run.problem and not (staged and staged.missing(name)):
            found.append(name)
    return found


def take_pictures(place: Place, runs: dict[str, PartRun], rubric: Rubric, fixtures: Fixtures,
                  staged: Staged | None = None, keep: bool = True) -> dict[str, Figure | None]:
    """Each part's probe (suites/figures.py) on the book's example, BEFORE the grader has sent any hidden
    input anywhere (issue 37.7: a picture drawn after the hidden checks could carry what they left, in
    container mode under /tmp for a later session of the same uid) -> {part: figure or None}. The probes
    run in the place's child, the one the visible turns left after it forgot its last part cleanly (the
    same reset a part's turn needs to follow another's: inside/part_reset.py), or else in a fresh child
    of the place's session, another only after a probe ended it. A probe that draws nothing (right
    weights, a crash) gives None. The probes' time, output and any crash count for nothing; together
    they get FIGURE_SECONDS. keep: the child goes on to the hidden turns when it forgets the probes
    cleanly too (else, and without keep, the place is left without a child)."""
    from autograder.suites import figures

    pictures: dict[str, Figure | None] = {}
    names = picture_parts(runs, rubric, staged)
    if not names:
        return pictures
    deadline = time.monotonic() + FIGURE_SECONDS
    memory_mb = max(rubric.parts[name].memory_mb for name in names)
    if place.child is not None and not place.child.died:  # its clocks start again: the probes' own
        place.child.next_part(FIGURE_SECONDS, memory_mb)
    for name in names:
        left = deadline - time.monotonic()
        if left < 1:
            break
        if place.child is None or place.child.died:
            place.end_child()
            try:
                place.fresh_child(Limits(left, memory_mb, left))
            except Exception:  # a sandbox that fails now costs the pictures only
                place.child = None
                break
        assert place.child is not None
        if not place.child.died:
            pictures[name] = figures.take(figures.PROBES[name], Student(place.child), fixtures["book"]())
    _forget_probes(place, keep)
    return pictures


def _forget_probes(place: Place, keep: bool) -> None:
    """After the probes: the child stays the place's only when it is kept and forgets them cleanly (what
    they printed is dropped with them); otherwise it is ended."""
    child = place.child
    if child is None:
        return
    if not keep or child.died or not child.finish()["reusable"]:
        place.end_child()


def attach_figures(runs: dict[str, PartRun], rubric: Rubric, pictures: dict[str, Figure | None]) -> None:
    """Each part's picture (take_pictures) goes to the first failed check about attention weights (a
    visible one first; never one whose diagnosis grading.yml withholds, nor a part that crashed)."""
    from autograder.suites import figures

    for name, run in runs.items():
        checks = rubric.parts[name].checks
        failed = [r for r in run.results if not r.passed and r.name in figures.FIGURE_CHECKS.get(name, ())
                  and checks[r.name].diagnosis != "withheld"]
        if failed and pictures.get(name) and not run.problem:
            min(failed, key=lambda r: checks[r.name].visibility != "visible").figure = pictures[name]
