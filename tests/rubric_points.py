"""The rubric's points, read from grading.yml through the rubric loader (issue 36 item 2): a test that
means "full marks", "the part's points" or "a check's points" takes them from here, never as a number
written in the test, so the edits the docs invite (a check's points, a part's) keep the tests right.

    TOTAL                  the rubric's total (full marks)
    PART["mha"]            a part's points
    CHECK["mha", "name"]   a check's points
    g(x)                   a number as the reports print it (8, 2.5)
"""
from pathlib import Path

from autograder import rubric

RUBRIC_PATH = Path(__file__).resolve().parents[1] / "grading.yml"
RUBRIC = rubric.load(RUBRIC_PATH)
TOTAL = RUBRIC.max_score
PART = {name: part.max_score for name, part in RUBRIC.parts.items()}
CHECK = {(name, check): c.points for name, part in RUBRIC.parts.items() for check, c in part.checks.items()}


def g(x: float) -> str:
    return f"{x:g}"


def points_of(part: str, passed: list[str] | tuple[str, ...]) -> float:
    """The points a part earns when exactly the checks `passed` pass (no groups in this rubric's parts
    that the callers use)."""
    return sum(CHECK[part, name] for name in passed)
