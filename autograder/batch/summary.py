"""What the batch tells the instructor at the end (summary_text): graded now and up to date, regrades
and moved scores, who was not graded and why, the score spread, overrides, lateness, and who left the
class folder."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from autograder import text
from autograder.batch.plan import OTHER_GRADER, Results
from autograder.course import lateness
from autograder.course.gradebook import Gradebook


@dataclass(frozen=True)
class Outcome:
    """What one run did, as its summary tells it: the students found in the class folder, those graded
    now, those the gradebook held before the run, why each was graded (plan.to_grade), their late rows
    (outputs.judge_lateness), the names of TIMES.csv or EXT.csv that match no submission, and the
    scores the run moved (None: the gradebook's latest run's, when any was graded)."""
    students: list[str]
    graded: list[str]
    known: list[str]
    reasons: dict[str, str] | None = None
    late: dict[str, lateness.Late] | None = None
    strays: list[str] | tuple[str, ...] = ()
    moves: list[tuple[str, float, float, dict[str, tuple[float, float]]]] | None = None


def summary_text(book: Gradebook, folder: str | Path, out: str | Path, outcome: Outcome) -> str:
    """What the batch did, for the instructor: graded now, up to date, who was regraded because the
    grader changed, the submissions not graded with the reason, the score spread, lateness (and the
    names of TIMES.csv or EXT.csv, `strays`, that match no submission), and who is in the gradebook
    but no longer in folder."""
    students, graded, known, reasons = outcome.students, outcome.graded, outcome.known, outcome.reasons
    late, strays, moves = outcome.late, outcome.strays, outcome.moves
    effective = book.effective_records()
    rows = {student: (float(r.get("score", 0)), float(r.get("max_score", 0))) for student, r, _ in effective}
    problems, kept = book.problems(), book.not_graded()
    present = [s for s in students if s in rows]
    lines = [f"batch: {len(students)} submission(s) in {folder}"]
    if graded:
        lines.append(f"  graded now: {len(graded)}; up to date: {len(students) - len(graded)}")
    else:
        lines.append(f"  nothing to grade: {len(students)} up to date (unchanged since they were graded)")
    regraded = sorted(s for s in graded if (reasons or {}).get(s, "").startswith(OTHER_GRADER))
    if regraded:
        why = sorted({(reasons or {})[s].removeprefix(OTHER_GRADER).lstrip(": ") for s in regraded})
        lines.append(f"  regraded, {OTHER_GRADER} ({len(regraded)}): {', '.join(regraded)}")
        lines += [f"    what changed: {w}" for w in why]
    moves = (book.moves() if graded else []) if moves is None else moves
    if moves:
        lines.append(f"  scores moved ({len(moves)}): " + ", ".join(f"{s} {b:g} -> {a:g}" for s, b, a, _ in moves)
                     + " (regrades.csv)")
    broken = [(s, problems[s]) for s in present if problems.get(s) and s not in kept]
    if broken:
        lines.append(f"  not graded, scored 0 ({len(broken)}):")
        lines += [f"    {s}: {text.excerpt(problem, 240)}" for s, problem in broken]
    overloaded = [(s, problems.get(s, "")) for s in present if s in kept]
    if overloaded:  # the machine's doing (runner.NOT_GRADED): no score stands, graded again on the next run
        lines.append(f"  not graded, no score ({len(overloaded)}):")
        lines += [f"    {s}: {text.excerpt(problem, 240)}" for s, problem in overloaded]
    present = [s for s in present if s not in kept]
    if present:
        scores = [rows[s][0] for s in present]
        top = max(rows[s][1] for s in present)
        what = "scores"
        if late:  # the grade of record: after the late policy (grades.csv keeps both)
            scores, what = [late[s].final_score if s in late else rows[s][0] for s in present], \
                "final scores, after the late policy"
        lines.append(f"  {what} (of {top:g}): min {min(scores):g}, median {statistics.median(scores):g}, "
                     f"max {max(scores):g}")
    overridden = {s: o for s, o in book.overrides().items() if s in students}
    if overridden:
        lines.append(f"  scores changed by a person, standing over the grader's ({len(overridden)}): " + ", ".join(
            f"{s} {part} {o['score']:g} (the grader's: {_automatic(effective, s, part)})"
            for s, parts in sorted(overridden.items()) for part, o in sorted(parts.items())))
    if late:
        lines += _late_summary(late)
    if strays:  # a name the instructor gave that matches no submission: said, never dropped silently
        lines.append(f"  in --submitted-at/--extensions but not in {folder}: {', '.join(strays)}")
    removed = sorted(set(known) - set(students))
    if removed:
        lines.append(f"  in the gradebook but no longer in {folder} (left out of grades.csv): {', '.join(removed)}")
    lines.append(f"  grades: {Path(out) / 'grades.csv'}; feedback: {Path(out) / 'feedback'}; "
                 f"gradebook: {Path(out) / 'gradebook.db'}")
    return "\n".join(lines) + "\n"


def _automatic(effective: list[tuple[str, Results, str]], student: str, part: str) -> str:
    """The grader's own current score of an overridden part, as the summary shows it."""
    for who, results, _ in effective:
        if who == student:
            o = ((results.get("extra_data") or {}).get("overrides") or {}).get(part)
            return f"{o['automatic']:g}" if o else "?"
    return "?"


def _late_summary(late: dict[str, lateness.Late]) -> list[str]:
    charged = sorted(s for s, row in late.items() if row.late_days)
    unknown = sorted(s for s, row in late.items() if row.late_days is None)

    def cost(row: lateness.Late) -> str:
        return "past the cutoff: final 0" if row.cutoff else f"-{row.penalty:g}%: final {row.final_score:g}"

    lines = [f"  late ({len(charged)}): " + (", ".join(f"{s} {late[s].late_days} day(s) {cost(late[s])}"
                                                    for s in charged) or "nobody")]
    if unknown:
        lines.append(f"  no submission time known, not charged ({len(unknown)}): {', '.join(unknown)}")
    return lines
