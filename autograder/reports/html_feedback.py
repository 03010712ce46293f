"""A student's feedback as one self-contained HTML page (batch: OUT/feedback/<student>.html).

The score and each part's, what to fix as a student may see it (reports.common's rule, the same
as feedback/<student>.md: visible checks with the student's own error, hidden ones by their
diagnosis only), and, where a check about attention weights failed, the student's weights on the
book's example next to the expected ones as two heatmaps per panel (data: images drawn by
reports/plots.py from the numbers the record carries; suites/figures.py says where they come
from: public inputs only, so they are shown for hidden checks too, under the part). Every text is
escaped (html_page.esc); the page loads nothing and runs no script.

    feedback_html(student, results, problem="")   results: a results_json record (what batch stores)
    figure_html(figure, said="")                  the pictures of one figure, for other HTML channels
    gradescope_test(test, figure)                 a Gradescope test whose output shows the figure
"""
from typing import Any

from autograder.figure_data import FigureError, figure_of, validate
from autograder.reports.common import OWN_TEXT, fmt, printable, what_to_fix
from autograder.reports.html_page import bar, esc, img, page
from autograder.reports.plots import available, figure_pictures
from autograder.reports.records import checks_of, parts_of
from autograder.reports.standing import OVERRIDE_MARK, final_score, overrides_of, standing_lines

NO_PICTURES = "(the pictures of this feedback need matplotlib, which is not installed where it was made)"


def figure_html(figure, said=""):
    """One figure: its title, the misconception in words (unless `said` already says it), and per panel
    the student's heatmap beside the expected one (figure: validated plain data, autograder/figure_data.py)."""
    parts = [f'<p class="muted">{esc(figure["title"])}</p>']
    if figure["diagnosis"] and figure["diagnosis"] not in said:
        parts.append(f'<p class="diagnosis">What the picture shows: {esc(figure["diagnosis"])}</p>')
    if not available():
        return "\n".join(parts + [f'<p class="muted">{esc(NO_PICTURES)}</p>'])
    for name, got, want in figure_pictures(figure):
        label = f" ({name})" if name else ""
        parts.append('<div class="pictures">'
                     f'<figure>{img(got, f"your attention weights{label}")}'
                     f'<figcaption>your code{esc(label)}</figcaption></figure>'
                     f'<figure>{img(want, f"expected attention weights{label}")}'
                     f'<figcaption>expected{esc(label)}</figcaption></figure></div>')
    return "\n".join(parts)


def _parts_table(parts, changed=()):
    rows = [f'<tr><th scope="row">{esc(part)}</th><td class="num">{fmt(p.score)} / {fmt(p.max_score)}'
            + (f' <span class="note">({OVERRIDE_MARK})</span>' if part in changed else "")
            + f'</td><td>{bar(p.score, p.max_score)}</td></tr>' for part, p in parts.items()]
    return ('<table><tr><th scope="col">part</th><th scope="col" class="num">score</th>'
            '<th scope="col"><span class="visually-hidden">share of the points</span></th></tr>\n'
            + "\n".join(rows) + "</table>")


def figures_by_part(results: dict[str, Any]) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """{part: [(check name, figure)]}: the validated figures a record's tests carry, in order, once each,
    with the check that carries each."""
    found: dict = {}
    for check, test in zip(checks_of(results), results.get("tests", []), strict=True):  # one check per test
        figure = figure_of(test)
        if figure is not None and figure not in [f for _, f in found.get(check.part, [])]:
            found.setdefault(check.part, []).append((check.name, figure))
    return found


def _item_html(item):
    points = f" (-{fmt(item.points)})" if item.points else ""
    own = f'<div class="muted">{esc(OWN_TEXT)}: <code>{esc(item.own_text)}</code></div>' if item.own_text else ""
    where = "".join(f'<div class="muted">{esc(note)}</div>' for note in item.notes)
    return (f'<div class="fix"><div class="check">{esc(item.title)}{esc(points)}</div>'
            f"<div>{esc(item.message)}</div>{where}{own}</div>")


def _what_to_fix(results):
    """What to fix by reports.common's rule; each part's pictures right after the visible check that
    carries them, or after the part's first item when that check is hidden (and not named)."""
    items = what_to_fix(checks_of(results), parts_of(results))
    figures = figures_by_part(results)
    named = {(item.part, name) for item in items for name in item.checks + item.voided}
    blocks = []
    for item in items:
        blocks.append(_item_html(item))
        due = [(name, f) for name, f in figures.get(item.part, [])
               if name in item.checks + item.voided or (item.part, name) not in named]
        if due:
            said = " ".join(other.message for other in items if other.part == item.part)
            blocks += [f'<div class="picture">{figure_html(figure, said)}</div>' for _, figure in due]
            figures[item.part] = [entry for entry in figures[item.part] if entry not in due]
    return "\n".join(blocks)


def feedback_html(student: str, results: dict[str, Any], problem: str = "", late: Any = None) -> str:
    """The page for one student (student: the name batch gives the submission, escaped here). results:
    the record with any overrides applied; late: the student's lateness.Late when the batch had a due
    date. With either, the grade of record comes first, in words (reports.standing)."""
    body = [f"<h1>Chapter 3 feedback for {esc(printable(student, 200))}</h1>"]
    said = standing_lines(results, late)
    if said:
        final = final_score(results, late)
        body += [f'<p>Grade of record: <strong>{fmt(final)} / {fmt(results.get("max_score", 0))}</strong></p>',
                 '<ul class="standing">' + "".join(f"<li>{esc(line)}</li>" for line in said) + "</ul>"]
    else:
        body.append(f'<p>Score: <strong>{fmt(results.get("score", 0))} / {fmt(results.get("max_score", 0))}'
                    '</strong></p>')
    if problem:  # every check failed for this one reason: said once
        body.append(f'<div class="fix"><strong>Your submission could not be graded:</strong> '
                    f'{esc(printable(problem))}</div>')
    body += ["<h2>Parts</h2>", _parts_table(parts_of(results), overrides_of(results))]
    if not problem:
        body += ["<h2>What to fix</h2>", _what_to_fix(results) or '<p class="ok">Every check passed.</p>']
    notes = (results.get("extra_data") or {}).get("notes") or []
    if notes:
        body += ["<h2>Notes</h2>", "<ul>" + "".join(f"<li>{esc(printable(note))}</li>" for note in notes) + "</ul>"]
    return page(f"Chapter 3 feedback: {printable(student, 200)}", "\n".join(body))


def gradescope_test(test, figure):
    """A Gradescope results.json test: where `figure` (the check's, or None) is valid and pictures can be
    drawn, its output becomes HTML (the text escaped, line by line, then the pictures) and its
    output_format "html"; otherwise the test is returned as it is."""
    if figure is None or not available():
        return test
    try:
        figure = validate(figure)
    except FigureError:
        return test
    message = str(test.get("output", ""))
    pictures = []
    for name, got, want in figure_pictures(figure):
        label = f" ({name})" if name else ""
        pictures.append(f"<p>{img(got, f'your attention weights{label}')} {img(want, f'expected{label}')}<br>"
                        f"left: your code{esc(label)}; right: expected</p>")
    said = "" if not figure["diagnosis"] or figure["diagnosis"] in message else \
        f"<p>What the picture shows: {esc(figure['diagnosis'])}</p>"
    lines = "<br>".join(esc(line) for line in message.split("\n"))
    return {**test, "output": f"<p>{lines}</p><p>{esc(figure['title'])}</p>{said}" + "".join(pictures),
            "output_format": "html"}
