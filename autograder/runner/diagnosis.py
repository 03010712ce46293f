"""What a part's results say together, once its checks have run: the cause most failed checks name
(part_diagnosis), and the part that asked about a class the grader had not given it (charge_trespass)."""
from __future__ import annotations

from autograder.runner.records import PartRun
from autograder.suites import expect

TRESPASS = ("it asked the grader to compute with the grader's own classes, which the grader had not given "
            "this part: the part earns no points")


def charge_trespass(run: PartRun) -> None:
    """A part whose child asked about a class the grader had not given it (stand_ins.NotGiven): every
    check of the part fails with TRESPASS, whatever it answered (it may have passed on the grader's
    own work); the questions are listed for the instructor (grading: Grade.tampering)."""
    if not run.ledger.refused:
        return
    run.problem = TRESPASS
    for result in run.results:
        if not result.not_graded:
            result.passed, result.message, result.cause, result.figure = False, TRESPASS, "", None
            result.student_text, result.unexplained = "", False


def part_diagnosis(run: PartRun, withheld: set[str] | frozenset[str] = frozenset()) -> None:
    """One bug, one explanation: the cause named by most of the part's failed checks is the part's
    diagnosis (causes named equally often are all given, as possibilities); a failed check that could
    name none (its numbers are just wrong) is told that cause as the likely one. A cause that is only
    one of several mistakes with the same numbers (expect.SEVERAL) counts where no check names one
    cause alone: a softmax over dim 0 named by the weights' checks explains the context vectors'
    "the softmax over dim 0, or the weights transposed". withheld: the checks whose diagnosis
    grading.yml withholds; a diagnosis only they name is the instructor's (class report), never
    told to a check a student reads."""
    causes = [result.cause for result in run.results if not result.passed and result.cause]
    single = [cause for cause in causes if not cause.startswith(expect.SEVERAL)]
    counts: dict[str, int] = {}
    for cause in single or causes:
        counts[cause] = counts.get(cause, 0) + 1
    top = [cause for cause, n in counts.items() if n == max(counts.values(), default=0)]
    run.diagnosis = top[0] if len(top) == 1 else ("one of: " + "; or ".join(top[:3]) if top else "")
    said = {result.cause for result in run.results if not result.passed and result.name not in withheld}
    shown = all(cause in said for cause in top)  # each cause it names, a check a student reads names too
    for result in run.results:
        if run.diagnosis and shown and result.unexplained and not result.passed:
            result.message += f" (most likely the cause named by this part's other failed checks: {run.diagnosis})"
