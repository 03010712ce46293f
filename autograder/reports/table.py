"""The terminal score table printed by `grade`, `ci` and Gradescope's instructor log."""
from autograder.reports.common import fmt


def table(grade, show_hidden=True):
    """The score table printed by `grade`: one line per part, then what failed and why."""
    lines = [f"Submission: {grade.submission}", "", f"{'part':<20}{'score':>12}", "-" * 32]
    for part, p in grade.parts.items():
        lines.append(f"{part:<20}{fmt(p['score']) + ' / ' + fmt(p['max_score']):>12}")
    lines += ["-" * 32, f"{'total':<20}{fmt(grade.score) + ' / ' + fmt(grade.max_score):>12}"]
    failed = [c for c in grade.checks if not c.passed and (show_hidden or c.visibility == "visible")]
    if failed:
        lines += ["", "What went wrong:"]
        current = None
        for c in failed:
            if c.part != current:
                current = c.part
                lines.append(f"  {c.part}:")
            lines.append(f"    - {c.name} (0 / {fmt(c.max_score)}): {c.message}")
    for note in grade.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)
