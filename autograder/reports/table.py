"""The terminal score table: the instructor's (`grade`, Gradescope's hidden log) or a student's (`ci`).

Every field goes through common.printable at print time: one line, no control characters or
escape sequences, capped, so that no text a submission produced can redraw the terminal.
"""
from autograder.reports.common import OWN_TEXT, fmt, instructor_lines, printable, said_with_problem, what_to_fix


def table(grade, show_hidden=True, seed=True):
    """show_hidden=True: for the instructor: every failed check by name with the student's own text,
    the instructor detail, part problems and (seed=True) the run's secret, to regrade with --seed.
    show_hidden=False: what a student may see (common.what_to_fix), never the secret."""
    lines = [f"Submission: {printable(grade.submission, 300)}", "", f"{'part':<20}{'score':>12}", "-" * 32]
    for part, p in grade.parts.items():
        score = "not graded" if p.not_graded else fmt(p.score) + ' / ' + fmt(p.max_score)
        lines.append(f"{printable(part, 60):<20}{score:>12}")
    total = "not graded" if grade.not_graded else fmt(grade.score) + ' / ' + fmt(grade.max_score)
    lines += ["-" * 32, f"{'total':<20}{total:>12}"]
    if grade.not_graded:  # never a lower score: the machine's trouble is nobody's grade
        lines += ["", f"NOT GRADED: the machine was overloaded ({', '.join(grade.not_graded)}): no score stands; "
                      f"grade again on a quieter machine"]
    lines += _instructor_failures(grade) if show_hidden else _student_failures(grade)
    lines += [f"note: {printable(note)}" for note in grade.notes]
    if show_hidden and grade.tampering:  # the instructor's only
        lines += ["", "TAMPERING: the source reaches into the grader:"] + [f"  {printable(t, 200)}" for t in grade.tampering]
    if show_hidden and seed and grade.seed is not None:
        lines.append(f"unseen inputs: regrade with --seed {grade.seed} (instructors only)")
    return "\n".join(lines)


def _instructor_failures(grade):
    failed = [c for c in grade.checks if not c.passed]
    problems = {part: p.problem for part, p in grade.parts.items() if p.problem}
    if not failed and not problems:
        return []
    lines = ["", "What went wrong:"]
    for part in grade.parts:
        if part not in problems and not any(c.part == part for c in failed):
            continue
        lines.append(f"  {part}:")
        said = [c for c in failed if c.part == part and said_with_problem(c, grade.parts)]
        if part in problems:  # the checks that failed with it are counted, not listed again
            lines.append(f"    problem: {printable(problems[part])}"
                         + (f" ({len(said)} check{'s' if len(said) > 1 else ''} failed with it)" if said else ""))
        for c in (c for c in failed if c.part == part and c not in said):
            hidden = "" if c.visibility == "visible" else f" [{c.visibility}]"
            first, *more = instructor_lines(c)
            lines.append(f"    - {c.name}{hidden} (0 / {fmt(c.max_score)}): {first}")
            lines += [f"        {line}" for line in more]
    return lines


def _student_failures(grade):
    items = what_to_fix(grade.checks, grade.parts)
    if not items:
        return []
    lines = ["", "What to fix:"]
    for item in items:
        lines.append(f"  - {item.title} (-{fmt(item.points)}): {item.message}")
        lines += [f"      {note}" for note in item.notes]
        if item.own_text:
            lines.append(f"      {OWN_TEXT}: {item.own_text}")
    return lines
