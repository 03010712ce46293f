"""A figure: the student's and the expected attention weights, as plain data every report reads.

    {"title": str, "labels": [token, ...], "diagnosis": str,
     "panels": [{"name": str, "got": [[float | None]], "want": [[float]]}]}

Every string is the grader's own (suites/figures.py writes them); "got" holds the numbers the
student's code computed on public inputs (None where not finite), "want" the grader's reference.
validate() rebuilds a figure from whatever it is given (a results file is read back from disk):
numbers only, at most MAX_PANELS panels of at most MAX_SIDE x MAX_SIDE, got and want of one shape.
No torch here: the reports read figures without it.
"""
import math

MAX_SIDE = 16
MAX_PANELS = 4


class FigureError(ValueError):
    """Figure data that is not what this module describes (shape, size, type)."""


# ---------------------------------------------------------------- plain data, validated

def matrix(values, finite_only=False, where="matrix"):
    """A nested list -> [[float | None]] (None for NaN/Inf), at most MAX_SIDE a side."""
    if not isinstance(values, (list, tuple)) or not values:
        raise FigureError(f"{where}: a non-empty list of rows is needed")
    rows, width = [], None
    for row in values:
        if not isinstance(row, (list, tuple)) or not row:
            raise FigureError(f"{where}: every row must be a non-empty list")
        width = len(row) if width is None else width
        if len(row) != width:
            raise FigureError(f"{where}: rows of different lengths")
        rows.append([_number(v, finite_only, where) for v in row])
    if len(rows) > MAX_SIDE or (width or 0) > MAX_SIDE:
        raise FigureError(f"{where}: {len(rows)}x{width} is larger than {MAX_SIDE}x{MAX_SIDE}")
    return rows


def _number(value, finite_only, where):
    if value is None and not finite_only:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FigureError(f"{where}: entries must be numbers, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        if finite_only:
            raise FigureError(f"{where}: entries must be finite")
        return None
    return value


def validate(figure):
    """A figure (plain data, e.g. read back from a results file) checked and rebuilt -> a new dict."""
    if not isinstance(figure, dict):
        raise FigureError("a figure must be a dict")
    labels = figure.get("labels", [])
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise FigureError("figure labels must be a list of strings")
    panels = figure.get("panels")
    if not isinstance(panels, list) or not 1 <= len(panels) <= MAX_PANELS:
        raise FigureError(f"a figure needs 1 to {MAX_PANELS} panels")
    clean = []
    for i, panel in enumerate(panels):
        if not isinstance(panel, dict):
            raise FigureError(f"panel {i} must be a dict")
        got = matrix(panel.get("got"), where=f"panel {i} got")
        want = matrix(panel.get("want"), finite_only=True, where=f"panel {i} want")
        if (len(got), len(got[0])) != (len(want), len(want[0])):
            raise FigureError(f"panel {i}: got and want have different shapes")
        clean.append({"name": str(panel.get("name", "")), "got": got, "want": want})
    return {"title": str(figure.get("title", "")), "labels": list(labels)[:MAX_SIDE],
            "diagnosis": str(figure.get("diagnosis", "")), "panels": clean}


def figure_of(test):
    """The validated figure a results.json test carries in extra_data, or None (none, or not valid)."""
    extra = test.get("extra_data") if isinstance(test, dict) else None
    if not isinstance(extra, dict) or extra.get("figure") is None:
        return None
    try:
        return validate(extra["figure"])
    except FigureError:
        return None
