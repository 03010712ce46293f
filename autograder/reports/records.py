"""Reading back a stored record (what results_json wrote, as batch keeps it per student): its
checks and parts as the reports read them, the same records a Grade holds (scores.ScoredCheck,
scores.PartScore). Every report that reads records imports this module, never results_json, which
writes them: results_json.results_json is the one way from a Grade to a record, checks_of and parts_of
the one way back."""
from __future__ import annotations

from typing import Any

from autograder.scores import PartScore, ScoredCheck


def checks_of(results: dict[str, Any]) -> list[ScoredCheck]:
    """The checks of a record written by results_json, as common.what_to_fix reads them (a record keeps
    no figure: None)."""
    checks = []
    for test in results.get("tests", []):
        extra = test.get("extra_data") or {}
        part, _, name = str(test.get("name", "")).partition(": ")
        # a record without extra_data (an older one): the output's first line is the diagnosis
        message = extra.get("message", "") if extra else str(test.get("output", "")).split("\n", 1)[0]
        checks.append(ScoredCheck(
            part=extra.get("part", part), name=extra.get("check", name), passed=test.get("status") == "passed",
            score=test.get("score", 0), max_score=test.get("max_score", 0),
            visibility=test.get("visibility", "visible"),
            message=message,
            student_text=extra.get("student_text", ""), detail=extra.get("detail", ""),
            diagnosis=extra.get("diagnosis", "shown"), voided_by=tuple(extra.get("voided_by") or ()),
            cause=str(extra.get("cause", "")), unexplained=extra.get("unexplained") is True))
    return checks


def diagnoses_of(results: dict[str, Any]) -> dict[str, str]:
    """{part: the part's diagnosis} (runner.part_diagnosis) of a record; {} for an older record."""
    diagnoses = (results.get("extra_data") or {}).get("diagnoses") or {}
    return {str(part): str(d) for part, d in diagnoses.items() if d} if isinstance(diagnoses, dict) else {}


def not_graded_of(results: Any) -> list[str]:
    """The parts the machine kept from being graded, from the record's structured field (results_json's
    extra_data.not_graded, set by the grader from Grade.not_graded): never from any message or problem
    text, which may quote the student (issue 37.3). [] for a finished grade or an older record."""
    found = (results.get("extra_data") or {}).get("not_graded") if isinstance(results, dict) else None
    return sorted(str(part) for part in found) if isinstance(found, dict) else []


def parts_of(results: dict[str, Any]) -> dict[str, PartScore]:
    """{part: its PartScore} of a record written by results_json (score, max_score, problem, diagnosis,
    not_graded; seconds as the record keeps them, 0.0 for an older record)."""
    extra = results.get("extra_data") or {}
    problems, seconds = extra.get("problems") or {}, extra.get("seconds") or {}
    diagnoses, kept = diagnoses_of(results), set(not_graded_of(results))
    return {part: PartScore(p["score"], p["max_score"], problem=problems.get(part, ""), seconds=seconds.get(part, 0.0),
                            diagnosis=diagnoses.get(part, ""),
                            not_graded=problems.get(part, "") if part in kept else "")
            for part, p in (results.get("parts") or {}).items()}
