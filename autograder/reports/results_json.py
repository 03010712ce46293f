"""Gradescope's results.json schema (plus `parts` and `extra_data`): the record every other channel reads."""


def results_json(grade):
    """Gradescope's results.json schema, plus parts: {part: {score, max_score}}."""
    tests = [{
        "name": f"{c.part}: {c.name}",
        "score": c.score,
        "max_score": c.max_score,
        "status": "passed" if c.passed else "failed",
        "output": c.message,
        "visibility": c.visibility,
        # the student's and the expected weights on the book's example: numbers only (figure_data.py)
        **({"extra_data": {"figure": c.figure}} if getattr(c, "figure", None) else {}),
    } for c in grade.checks]
    return {
        "score": grade.score,
        "max_score": grade.max_score,
        "output": _summary_output(grade),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "parts": {part: {"score": p["score"], "max_score": p["max_score"]} for part, p in grade.parts.items()},
        "extra_data": {"protections": grade.protections, "notes": grade.notes,
                       "problems": {part: p["problem"] for part, p in grade.parts.items() if p.get("problem")},
                       "seconds": {part: p.get("seconds", 0.0) for part, p in grade.parts.items()}},
    }


def _summary_output(grade):
    lines = [f"Sandbox: {', '.join(grade.protections) or 'none reported'}"]
    lines += [f"{part}: {p['problem']}" for part, p in grade.parts.items() if p["problem"]]
    return "\n".join(lines + grade.notes)
