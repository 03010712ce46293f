"""Pictures for the reports, drawn in the grader's process from plain data (lists of floats).

matplotlib's object API with the Agg canvas: no pyplot, no display, no global backend switch, so
drawing never opens a window nor changes what a caller's own pyplot does. Nothing here runs in the
sandbox, and every text drawn (titles, tick labels) is the grader's: student text never reaches a
picture. Each function returns PNG bytes; data_uri() makes them embeddable in a self-contained page.

    heatmap_png(matrix, labels, title, scale)   one attention-weight matrix, values in the cells
    figure_pictures(figure)                     [(panel name, student's PNG, expected PNG)] of a figure
    figure_pairs(figure)                        [(panel name, one PNG of both side by side)] of a figure
    draw_all(figures) / remember(drawn)         a figure's pictures drawn in one process (a batch's
                                                worker, where the grade is made) and handed to another
                                                (the batch's parent), which then only writes them
    histogram_png(scores, max_score)            the class's score distribution
    available()                                 False where matplotlib is missing: the reports say so
                                                in words instead of failing
    warm_up()                                   import what drawing needs now (about 0.3 s), e.g.
                                                while a batch waits for its sandbox to start
"""
import base64
import hashlib
import io
import json
import math
from collections.abc import Iterable
from typing import Any

from autograder.figure_data import validate

DPI = 90
MISSING = "n/a"   # what a cell that was NaN or Inf in the student's output shows


def _canvas(width, height):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(figure)
    return figure


def warm_up() -> None:
    """Import matplotlib's figure and Agg canvas now (nothing where it is missing)."""
    try:
        from matplotlib import figure  # noqa: F401
        from matplotlib.backends import backend_agg  # noqa: F401
    except ImportError:
        pass


def _png(figure):
    buffer = io.BytesIO()
    # no date or version in the file: the same data gives the same bytes
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def data_uri(png):
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def scale_of(*matrices):
    """(vmin, vmax) shared by the matrices of one comparison: from 0 (or below) to their largest value."""
    values = [v for m in matrices for row in m for v in row if v is not None and math.isfinite(v)]
    low, high = min([0.0] + values), max([0.0] + values)
    return low, high if high > low else low + 1.0


def heatmap_png(matrix, labels=(), title="", scale=(0.0, 1.0)):
    """matrix: rows of floats (None: not a finite number, drawn hatched and marked n/a), at most 16x16;
    labels: the tokens (rows: queries, columns: keys), used when there is one per row and column."""
    side = max(len(matrix), max((len(row) for row in matrix), default=0))
    figure = _canvas(1.2 + 0.42 * side, 1.0 + 0.42 * side)
    _heatmap(figure.add_axes((0.26, 0.22, 0.70, 0.66)), matrix, labels, title, scale)
    return _png(figure)


def pair_png(got, want, labels=(), scale=(0.0, 1.0), titles=("your code", "expected")):
    """The student's matrix and the expected one side by side in one picture (one color scale): for
    channels that stack their images one under the other (a notebook's outputs)."""
    side = max(len(got), max((len(row) for row in got), default=0))
    width, height = 1.2 + 0.42 * side, 1.0 + 0.42 * side
    figure = _canvas(2 * width, height)
    for index, (matrix, title) in enumerate(((got, titles[0]), (want, titles[1]))):
        _heatmap(figure.add_axes((0.13 + 0.5 * index, 0.22, 0.35, 0.66)), matrix, labels, title, scale)
    return _png(figure)


def _heatmap(ax, matrix, labels, title, scale):
    import numpy as np

    rows = np.array([[math.nan if v is None else float(v) for v in row] for row in matrix], dtype=float)
    n, m = rows.shape
    side = max(n, m)
    ax.set_facecolor("#d0d0d0")
    masked = np.ma.masked_invalid(rows)
    ax.imshow(masked, cmap="Blues", vmin=scale[0], vmax=scale[1], aspect="equal")
    ax.set_title(title, fontsize=9)
    named = len(labels) == n == m
    ax.set_xticks(range(m), list(labels) if named else [str(j) for j in range(m)], rotation=45, ha="right",
                  fontsize=7)
    ax.set_yticks(range(n), list(labels) if named else [str(i) for i in range(n)], fontsize=7)
    ax.set_xlabel("key", fontsize=7)
    ax.set_ylabel("query", fontsize=7)
    if side <= 8:
        middle = (scale[0] + scale[1]) / 2
        for i in range(n):
            for j in range(m):
                value = rows[i, j]
                text = MISSING if math.isnan(value) else f"{value:.2f}" if abs(value) < 100 else f"{value:.0e}"
                color = "white" if not math.isnan(value) and value > middle else "black"
                ax.text(j, i, text, ha="center", va="center", fontsize=6.5, color=color)


MAX_DRAWN = 512  # figures whose pictures a process keeps (drawn here or handed over): about 40 KB each
_DRAWN: dict[str, list] = {}  # a validated figure's key -> its figure_pictures


def figure_key(figure):
    """A validated figure -> the key of its pictures (the same data, the same key, in any process)."""
    return hashlib.sha256(json.dumps(figure, sort_keys=True, allow_nan=True).encode()).hexdigest()


def figure_pictures(figure):
    """A figure (suites/figures.py data, validated again here) -> [(panel name, student PNG, expected PNG)],
    each pair on one color scale. Drawn once per process (or handed over by remember())."""
    figure = validate(figure)
    key = figure_key(figure)
    if key in _DRAWN:
        return list(_DRAWN[key])
    pictures = []
    for panel in figure["panels"]:
        scale = scale_of(panel["got"], panel["want"])
        got = heatmap_png(panel["got"], figure["labels"], "your code", scale)
        want = heatmap_png(panel["want"], figure["labels"], "expected", scale)
        pictures.append((panel["name"], got, want))
    remember({key: pictures})
    return list(pictures)


def draw_all(figures: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The pictures of each figure (validated ones, e.g. html_feedback.figures_by_part's), drawn here ->
    {figure_key: figure_pictures}: plain bytes, for another process's remember()."""
    return {figure_key(figure): figure_pictures(figure) for figure in figures}


def remember(drawn: dict[str, Any]) -> None:
    """Keep pictures drawn elsewhere (draw_all, in a batch's worker), so that figure_pictures here only
    hands them out; at most MAX_DRAWN figures are kept (the oldest go first, and are drawn again if asked)."""
    for key, pictures in drawn.items():
        _DRAWN.pop(key, None)
        _DRAWN[key] = [(str(name), bytes(got), bytes(want)) for name, got, want in pictures]
    while len(_DRAWN) > MAX_DRAWN:
        del _DRAWN[next(iter(_DRAWN))]


def figure_pairs(figure):
    """A figure -> [(panel name, one PNG: the student's heatmap left, the expected one right)]."""
    figure = validate(figure)
    return [(panel["name"], pair_png(panel["got"], panel["want"], figure["labels"],
                                     scale_of(panel["got"], panel["want"]))) for panel in figure["panels"]]


def available() -> bool:
    """Can pictures be drawn here? (matplotlib is a dependency; a grade never fails for want of a picture)"""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def histogram_png(scores, max_score, bins=10):
    """scores: floats in [0, max_score] -> a bar chart of how many students fall in each tenth."""
    figure = _canvas(5.6, 2.6)
    ax = figure.add_axes((0.1, 0.2, 0.86, 0.7))
    top = float(max_score) if max_score and max_score > 0 else 1.0
    clipped = [min(max(float(s), 0.0), top) for s in scores if s is not None and math.isfinite(float(s))]
    edges = [top * k / bins for k in range(bins + 1)]
    counts, _, _ = ax.hist(clipped, bins=edges, color="#3b75af", edgecolor="white")
    ax.set_xlim(0, top)
    ax.set_xlabel(f"score (out of {top:g})", fontsize=8)
    ax.set_ylabel("students", fontsize=8)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.tick_params(labelsize=7)
    ax.set_title(f"{len(clipped)} submission(s)", fontsize=9)
    return _png(figure)
