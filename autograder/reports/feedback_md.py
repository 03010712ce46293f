"""The batch's feedback file for one student (OUT/feedback/<student>.md), written from the record
`batch` stores (reports.results_json): the score, each part, what to fix as a student may see it
(reports.common's rule, written with reports.markdown's escapes) and the notes; with an override or a
due date, the grade of record first (reports.standing)."""
from typing import Any

from autograder.reports.common import fmt, printable, what_to_fix
from autograder.reports.markdown import fix_section, md_text
from autograder.reports.records import checks_of, parts_of
from autograder.reports.standing import OVERRIDE_MARK, overrides_of, standing_lines


def feedback(student: str, results: dict[str, Any], late: Any = None) -> str:
    """results: the record with any overrides applied (gradebook.apply_overrides); late: the student's
    lateness.Late when the batch had a due date. With either, the grade of record comes first, in words."""
    parts = parts_of(results)
    changed = overrides_of(results)
    lines = [f"# Chapter 3 feedback for {md_text(student, 200)}", ""]
    said = standing_lines(results, late)
    if said:
        lines += ["## Your grade", ""] + [f"- {md_text(line, 1000)}" for line in said] + ["", "## Parts", ""]
    else:
        lines += [f"Score: {fmt(results['score'])} / {fmt(results['max_score'])}", ""]
    lines += [f"- {md_text(name, 100)}: {fmt(p.score)} / {fmt(p.max_score)}"
              + (f" ({OVERRIDE_MARK})" if name in changed else "") for name, p in parts.items()]
    lines += fix_section(what_to_fix(checks_of(results), parts), "##")
    notes = (results.get("extra_data") or {}).get("notes") or []
    if notes:
        lines += ["", "## Notes", ""] + [f"- {md_text(printable(note))}" for note in notes]
    return "\n".join(lines) + "\n"
