"""A student's grade of record, in words, for every channel a student reads (issue 36 items 1 and 5).

What the code earned is not always the grade: a person may have changed a part's score (an
override, gradebook.apply_overrides: the record's extra_data.overrides) and a due date may have
cost a penalty or, past the cutoff, everything (lateness.Late). The feedback page, the feedback
Markdown and the class report say it the same way:

    lines = standing_lines(results, late)   # [] when neither applies: the feedback says only the score
    final = final_score(results, late)

Every text here is plain; each format escapes it where it writes it.
"""
from __future__ import annotations

import json
from typing import Any

from autograder.reports.common import fmt, printable

OVERRIDE_MARK = "changed by a person"  # the words every channel puts beside an overridden part


def overrides_of(results: dict) -> dict[str, dict[str, Any]]:
    """{part: {score, automatic, automatic_then, max_score, reason, by, at}} of a record with overrides applied."""
    found = (results.get("extra_data") or {}).get("overrides") or {}
    return found if isinstance(found, dict) else {}


def final_score(results: dict, late: Any = None) -> float:
    """The grade of record: the late policy's final score when there is one, else the score (overrides included)."""
    return float(late.final_score) if late is not None else float(results.get("score", 0))


def override_line(part: str, o: dict) -> str:
    line = (f"{part}: {fmt(o['automatic_then'])} -> {fmt(o['score'])} / {fmt(o['max_score'])}, {OVERRIDE_MARK} "
            f"({printable(str(o['by']), 80)}, {o['at']}): {printable(str(o['reason']), 500)}")
    if o["automatic"] != o["automatic_then"]:
        line += (f" (the grader's score for it is now {fmt(o['automatic'])}, was {fmt(o['automatic_then'])} "
                 f"when it was changed: the person's score stands)")
    return line


def standing_lines(results: dict, late: Any = None) -> list[str]:
    """The sentences that say how the grade of record comes from the score; [] without an override or a
    late policy."""
    overrides = overrides_of(results)
    if not overrides and late is None:
        return []
    top = fmt(results.get("max_score", 0))
    lines = []
    if overrides:
        lines.append(f"Score after a person's change: {fmt(results.get('score', 0))} / {top}")
        lines += [f"Part {override_line(part, o)}" for part, o in sorted(overrides.items())]
    else:
        lines.append(f"Score your code earned: {fmt(results.get('score', 0))} / {top}")
    if late is not None:
        lines.append(f"Late policy: {late.why()}")
        lines.append(f"Final score (the grade of record): {fmt(late.final_score)} / {top}")
    return lines


def standing_key(results: dict, late: Any = None) -> str:
    """What the feedback says of the grade of record, as one string: rewritten when it changes."""
    return json.dumps(standing_lines(results, late))
