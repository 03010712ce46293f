"""The pictures of a Markdown report (`grade --markdown FILE`): PNG files in a folder beside FILE.

Markdown cannot hold an image itself, so each figure's heatmaps (reports/plots.py) are written to
FILE's folder, in <stem>_pictures/, and the report links them by a relative path: the report and
its folder can be moved together. File names come from the grader's part names and a count only:
never a check's name (issue 37.7: a hidden check is unnamed in every student channel, its pictures'
file names too).
"""
import re
from pathlib import Path

from autograder.figure_data import FigureError, validate
from autograder.reports.markdown import md_text
from autograder.reports.plots import available, figure_pictures


def _md(text):
    """Grader text as literal Markdown, escaped only where it would render (reports.markdown.md_text):
    "torch.manual_seed(123)" reads as written, in the file and where it renders."""
    return md_text(text, 300)


def _slug(text):
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(text)).strip("-")[:60] or "figure"


def markdown_pictures(grade, markdown_path):
    """Write the PNGs of every figure of `grade` beside markdown_path -> the Markdown section that shows
    them ('' when no check carries a figure). Figures come from public inputs: shown for hidden checks
    too, under their part's name only."""
    figures = []
    for check in grade.checks:
        if check.figure is None:
            continue
        try:
            figures.append((check, validate(check.figure)))
        except FigureError:
            continue
    if not figures:
        return ""
    lines = ["", "### Your attention weights next to the expected ones", ""]
    if not available():
        return "\n".join(lines + ["(the pictures need matplotlib, which is not installed here)", ""])
    path = Path(markdown_path)
    folder = path.parent / f"{path.stem}_pictures"
    folder.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for check, figure in figures:
        counts[check.part] = counts.get(check.part, 0) + 1
        lines += [f"**{_md(check.part)}**: {_md(figure['title'])}", ""]
        if figure["diagnosis"]:
            lines += [f"What the picture shows: {_md(figure['diagnosis'])}", ""]
        for index, (name, got, want) in enumerate(figure_pictures(figure)):
            stem = f"{_slug(check.part)}-{counts[check.part]}-{index + 1}"
            (folder / f"{stem}-yours.png").write_bytes(got)
            (folder / f"{stem}-expected.png").write_bytes(want)
            label = f" ({_md(name)})" if name else ""
            lines += [f"![your code{label}]({folder.name}/{stem}-yours.png) "
                      f"![expected{label}]({folder.name}/{stem}-expected.png)", ""]
    return "\n".join(lines)
