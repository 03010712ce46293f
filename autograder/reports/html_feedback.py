"""A student's feedback as one self-contained HTML page (batch: OUT/feedback/<student>.html).

The score and each part's, what to fix (the failed visible checks, with the grader's diagnosis),
how many hidden checks failed per part, and, where a check about attention weights failed, the
student's weights on the book's example next to the expected ones as two heatmaps (data: images,
drawn by reports/plots.py from the numbers the results carry; suites/figures.py says where they
come from). Hidden checks are not named; their pictures are shown, as they come from public inputs.
Every text is escaped (html_page.esc); the page loads nothing and runs no script.

    feedback_html(student, results, problem="")   results: a results_json record (what batch stores)
    figure_html(figure)                           the pictures of one figure, for other HTML channels
"""
from autograder.figure_data import figure_of
from autograder.reports.common import fmt
from autograder.reports.html_page import bar, esc, img, page
from autograder.reports.plots import available, figure_pictures

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


def _parts_table(results):
    rows = [f'<tr><td>{esc(part)}</td><td class="num">{fmt(p["score"])} / {fmt(p["max_score"])}</td>'
            f'<td>{bar(p["score"], p["max_score"])}</td></tr>' for part, p in results.get("parts", {}).items()]
    return ('<table><tr><th>part</th><th class="num">score</th><th></th></tr>\n' + "\n".join(rows) + "</table>")


def _failed(results):
    """{part: ([visible failed tests], [hidden failed tests])} in the results' order."""
    by_part = {}
    for test in results.get("tests", []):
        if test.get("status") != "failed":
            continue
        part = str(test.get("name", "")).split(": ", 1)[0]
        visible, hidden = by_part.setdefault(part, ([], []))
        (visible if test.get("visibility") == "visible" else hidden).append(test)
    return by_part


def _what_to_fix(results):
    blocks = []
    for part, (visible, hidden) in _failed(results).items():
        blocks.append(f"<h3>{esc(part)}</h3>")
        for test in visible:
            figure = figure_of(test)
            blocks.append(f'<div class="fix"><div class="check">{esc(test.get("name", ""))}</div>'
                          f'<div>{esc(test.get("output", ""))}</div>'
                          + (figure_html(figure, str(test.get("output", ""))) if figure else "") + "</div>")
        if hidden:
            blocks.append(f'<p class="muted">{len(hidden)} hidden check(s) of {esc(part)} also failed '
                          f'({fmt(sum(t.get("max_score", 0) for t in hidden))} points).</p>')
            for figure in filter(None, map(figure_of, hidden)):
                blocks.append(f'<div class="fix">{figure_html(figure)}</div>')
    return "\n".join(blocks)


def feedback_html(student, results, problem=""):
    """The page for one student (student: the name batch gives the submission, escaped here)."""
    body = [f"<h1>Chapter 3 feedback for {esc(student)}</h1>",
            f'<p>Score: <strong>{fmt(results.get("score", 0))} / {fmt(results.get("max_score", 0))}</strong></p>']
    if problem:  # every check failed for this one reason: said once
        body.append(f'<div class="fix"><strong>Your submission could not be graded:</strong> {esc(problem)}</div>')
    body += ["<h2>Parts</h2>", _parts_table(results)]
    if not problem:
        body += ["<h2>What to fix</h2>", _what_to_fix(results) or '<p class="ok">Every check passed.</p>']
    notes = (results.get("extra_data") or {}).get("notes") or []
    if notes:
        body += ["<h2>Notes</h2>", "<ul>" + "".join(f"<li>{esc(note)}</li>" for note in notes) + "</ul>"]
    return page(f"Chapter 3 feedback: {student}", "\n".join(body))


def gradescope_test(test):
    """A results.json test for Gradescope: one that carries a figure gets its output as HTML (the
    message escaped, then the pictures; output_format "html") and loses the figure's numbers."""
    figure = figure_of(test) if available() else None
    extra = {k: v for k, v in (test.get("extra_data") or {}).items() if k != "figure"}
    test = {k: v for k, v in test.items() if k != "extra_data"}
    if extra:
        test["extra_data"] = extra
    if figure is None:
        return test
    message = str(test.get("output", ""))
    pictures = []
    for name, got, want in figure_pictures(figure):
        label = f" ({name})" if name else ""
        pictures.append(f"<p>{img(got, f'your attention weights{label}')} {img(want, f'expected{label}')}<br>"
                        f"left: your code{esc(label)}; right: expected</p>")
    said = "" if not figure["diagnosis"] or figure["diagnosis"] in message else \
        f"<p>What the picture shows: {esc(figure['diagnosis'])}</p>"
    test["output"] = (f"<p>{esc(message)}</p><p>{esc(figure['title'])}</p>{said}" + "".join(pictures))
    test["output_format"] = "html"
    return test
