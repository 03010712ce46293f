"""`batch` writes a feedback page per student and the class report, and both render in a browser.

A class of five, graded with --jobs 1: alice (the solutions), bob (attention_weights with the
softmax over dim 0), carol (a zip with simple_attention.py only and a member named like markup
that leaves the folder: a note quotes the name), dave (a file that is not a zip) and gus (a syntax
error in mha.py: a crash, not a misconception). Checked:
bob's page holds his weights and the expected ones as two images, alice's none, carol's note is
escaped; report.html names the whole class, bob's misconception with him, dave as unreadable, the
per-part means of the stored results and the parts' times; misconceptions.csv agrees.
Then headless Chromium (Debian's `chromium`, one browser for the module, tests/chromium.py; skipped,
saying why, where it is missing) opens a feedback page, report.html and an nbgrader feedback page at
1280 px: no horizontal overflow, no console message (the pages run no script and load nothing, so
any message is an error or a blocked load), every image decodes, and the accessible text (headings,
column headers, alt texts) is what a screen reader should get.
"""
import csv
import html
import io
import json
import re
import shutil
import statistics
import zipfile
from types import SimpleNamespace

import axe
import chromium
import pytest
from in_process import run_plain

from autograder import selftest

HOSTILE_MEMBER = "../<img src=x onerror=alert(1)>.py"
IMG = re.compile(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]+"')


@pytest.fixture(scope="module")
def batch_out(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    folder = root / "submissions"
    folder.mkdir()
    shutil.copytree(selftest.SOLUTIONS, folder / "alice", ignore=shutil.ignore_patterns("__pycache__"))
    entry = next(e for e in selftest.corpus() if e.id == "simple-weights-softmax-dim0")
    selftest.apply(entry, folder / "bob")
    with zipfile.ZipFile(folder / "carol.zip", "w") as archive:
        archive.write(selftest.SOLUTIONS / "simple_attention.py", "simple_attention.py")
        archive.writestr(HOSTILE_MEMBER, "x = 1\n")
    (folder / "dave.zip").write_bytes(b"not a zip")
    shutil.copytree(selftest.SOLUTIONS, folder / "gus", ignore=shutil.ignore_patterns("__pycache__"))
    mha = (folder / "gus" / "mha.py").read_text()
    (folder / "gus" / "mha.py").write_text(mha.replace("    def forward(self, x):", "    def forward(self x):", 1))
    out = root / "out"
    # cli.main in this process (tests/in_process.py): its fork server starts as on the command line
    status, _, stderr = run_plain(["batch", folder, "--out", out, "--jobs", "1"])
    assert status == 0, stderr[-3000:]
    return out


def student_names(out):
    return sorted(p.stem for p in (out / "results").glob("*.json"))


def test_every_student_gets_a_feedback_page_and_only_the_wrong_softmax_has_pictures(batch_out):
    names = student_names(batch_out)
    assert names == ["alice", "bob", "carol", "dave", "gus"]
    pages = {n: (batch_out / "feedback" / f"{n}.html").read_text() for n in names}
    assert len(IMG.findall(pages["bob"])) == 2 and "the softmax runs over dim 0" in pages["bob"]
    bob = json.loads((batch_out / "results" / "bob.json").read_text())
    [carrier] = [t for t in bob["tests"] if "figure" in (t.get("extra_data") or {})]
    assert carrier["name"] == "simple_attention: scores_and_weights_book_example"
    panel = carrier["extra_data"]["figure"]["panels"][0]
    assert panel["got"] != panel["want"]
    assert "<img" not in pages["alice"] and "Every check passed." in pages["alice"]
    assert "<img" not in pages["carol"] and html.escape(HOSTILE_MEMBER) in pages["carol"]  # the note, escaped
    assert "could not be graded" in pages["dave"] and "not a valid zip file" in pages["dave"]


def test_the_class_report_names_the_whole_class_and_what_went_wrong(batch_out):
    page = (batch_out / "report.html").read_text()
    names = student_names(batch_out)
    for name in names:
        assert f">{html.escape(name)}</a>" in page, name  # every student, linked to their page
    assert "<img src=x" not in page and re.search(r"<td>dave</td><td>submission</td><td>[^<]*not a valid zip file", page)
    # issue 31 item 3: gus's syntax error is in the table of crashes, and with unfinished work, once
    assert re.search(r"<td>gus</td><td>mha</td><td>mha.py does not import: SyntaxError: invalid syntax \(line \d+: "
                     r"def forward\(self x\):\)</td>", page)
    unfinished = page[page.index("<h3>Unfinished work"):page.index("<h2>Unreadable")]
    [(count, who)] = re.findall(r'<tr><td class="num">(\d)</td><td>mha</td><td>did not run: [^<]*<br>'
                                r'<span class="muted">[^<]*</span></td><td>([^<]*)</td>', unfinished)
    assert (count, who) == ("2", "carol, gus")  # carol handed in no mha.py
    rows = re.findall(r'<tr><td class="num">(\d+)</td><td>([^<]*)</td><td>([^<]*)<br><span class="muted">seen by '
                      r'\d+ check\(s\): ([^<]*)</span></td><td>([^<]*)</td></tr>', page)
    softmax = [row for row in rows if row[2].startswith("the softmax runs over dim 0")]
    assert [(count, part, who) for count, part, _, _, who in softmax] == [("1", "simple_attention", "bob")]
    assert {"scores_and_weights_book_example", "attention_weights_on_unseen_scores"} <= set(softmax[0][3].split(", "))
    records = [json.loads((batch_out / "results" / f"{n}.json").read_text()) for n in names]
    mean = statistics.mean(r["parts"]["simple_attention"]["score"] for r in records)
    assert f"<td>simple_attention</td><td class=\"num\">{mean:.2f} / 10</td>" in page
    alice = json.loads((batch_out / "results" / "alice.json").read_text())
    assert set(alice["extra_data"]["seconds"]) == set(alice["parts"]) and all(
        s > 0 for s in alice["extra_data"]["seconds"].values())
    assert "Slowest runs: " in page and len(IMG.findall(page)) == 1  # the histogram
    with open(batch_out / "misconceptions.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert not [r for r in table if "gus" in r["who"]]  # a module that does not import is no misconception
    bob_rows = [r for r in table if r["who"] == "bob"]
    assert bob_rows and all(r["part"] == "simple_attention" for r in bob_rows)
    [row] = [r for r in bob_rows if r["misconception"] == softmax[0][2]]
    assert row["students"] == "1" and set(row["checks"].split(";")) == set(softmax[0][3].split(", "))


# ---------------------------------------------------------------- in a browser

@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module (tests/chromium.py: DevTools protocol over a pipe)."""
    if chromium.CHROMIUM is None:
        pytest.skip(chromium.SKIP_REASON)
    started = chromium.Browser()
    yield started
    started.close()


def test_the_console_check_sees_a_blocked_load(browser, tmp_path):
    """The checks below can fail: a page with our policy that asks for a file logs an error, and its
    image does not load."""
    from autograder.reports.html_page import page

    bad = tmp_path / "bad.html"
    bad.write_text(page("bad", '<img src="missing.png" alt="a missing picture">'))
    tab = browser.open(bad.as_uri())
    assert any("Content Security Policy" in m for m in tab.console()), tab.console()
    assert tab.images() == [["a missing picture", 0, 0]]
    tab.close()


@pytest.mark.parametrize("which", ["feedback/bob.html", "report.html"])
def test_the_pages_read_well_in_chromium_at_1280_pixels(batch_out, browser, which):
    """Issue 31 item 6: at 1280 px no horizontal scrolling (the report's "Every student" table too),
    every image decodes, nothing on the console, and what a screen reader gets: the headings, the
    tables' column headers and every image's alt text."""
    tab = browser.open((batch_out / which).as_uri(), width=1280)
    assert tab.overflow() <= 0
    assert tab.console() == []
    images = tab.images()
    assert images and all(width > 100 and height > 100 for _, width, height in images), images
    said = tab.accessible()
    headings = [name for role, name in said if role == "heading"]
    headers = [name for role, name in said if role == "columnheader"]
    alts = [name for role, name in said if role == "image"]
    assert alts == [alt for alt, _, _ in images] and all(alts)
    if which == "report.html":
        assert headings[:3] == ["Chapter 3: class report", "Score distribution", "Per-part means"]
        assert "Every student" in headings and "Unreadable submissions and parts that crashed" in headings
        assert alts == ["histogram of the class's scores"]
        assert {"self_attention_v1", "numpy_attention", "misconception", "who"} <= set(headers)  # whole names
        wide = tab.evaluate("Array.from(document.querySelectorAll('.wide')).map(d => d.scrollWidth - d.clientWidth)")
        assert wide == [0]  # the table itself fits: no scrolling inside its box either
    else:
        assert headings == ["Chapter 3 feedback for bob", "Parts", "What to fix"]
        assert alts == ["your attention weights (attention_weights)", "expected attention weights (attention_weights)"]
        assert headers == ["part", "score", "share of the points"]  # the bars' column is named too (issue 36 item 6)
    tab.close()


def course_pages(batch_out, folder):
    """The class report and bob's feedback page as a course in its second week has them (issue 36): a due
    date with a cutoff, an extension and an unknown time (the Late work table), a regrade that said what
    changed, and a TA's override of bob's simple_attention -> {name: path}."""
    from datetime import timedelta

    from autograder.course import lateness
    from autograder.course.gradebook import Gradebook, apply_overrides
    from autograder.reports import class_report
    from autograder.reports.html_feedback import feedback_html

    book = Gradebook.read_only(batch_out / "gradebook.db")
    records = book.records()
    book.close()
    bob = next(r for s, r, _ in records if s == "bob")
    top = bob["parts"]["simple_attention"]["max_score"]
    override = {"simple_attention": {"score": top, "automatic": bob["parts"]["simple_attention"]["score"],
                                     "reason": "the softmax over dim 0 was a typo the student fixed in class; "
                                               "checked by hand against the book's example",
                                     "by": "ta_bob", "at": "2026-12-03T10:00:00+00:00"}}
    records = [(s, apply_overrides(r, override) if s == "bob" else r, p) for s, r, p in records]
    due = lateness.parse_time("2026-12-01T23:59:00Z", "--due")
    policy = lateness.LatePolicy(due, 10, 1, {"bob": due + timedelta(days=2, seconds=1), "carol": due + timedelta(hours=5),
                                              "alice": due}, {"carol": due + timedelta(days=1)})
    late = {s: policy.judge(s, float(r["score"]), lateness.Collected(None, s == "gus", "")) for s, r, p in records if not p}
    moves = [{"run": 3, "at": "2026-12-02T09:00:00+00:00", "student": "bob", "before": 90.0, "after": 91.0,
              "parts": {"simple_attention": (9.0, 10.0)},
              "why": "graded by another grader: points of simple_attention.attention_weights_on_unseen_scores 2 -> 3; "
                     "suites changed: test_simple_attention.py, test_causal.py; torch 2.12.0+cpu -> 2.13.0+cpu"}]
    folder.mkdir(parents=True, exist_ok=True)
    pages = {"course report": folder / "report.html", "course feedback of bob": folder / "bob.html"}
    pages["course report"].write_text(class_report.class_report(records, late, moves))
    bob_now = next(r for s, r, _ in records if s == "bob")
    pages["course feedback of bob"].write_text(feedback_html("bob", bob_now, "", late["bob"]))
    return pages


def test_the_course_report_fits_1280_pixels_with_its_late_work_notes_wrapped(batch_out, browser, tmp_path):
    """Issue 36 item 4: the Late work table's note column wraps inside the page at 1280 px (it ran past
    it); the regrades' reasons and the overrides' reasons wrap too."""
    pages = course_pages(batch_out, tmp_path / "course")
    tab = browser.open(pages["course report"].as_uri(), width=1280)
    assert tab.overflow() <= 0 and tab.console() == []
    boxes = tab.evaluate("Array.from(document.querySelectorAll('.wide')).map(d => d.scrollWidth - d.clientWidth)")
    assert len(boxes) == 4 and boxes == [0, 0, 0, 0]  # regrades, late work, overrides, every student
    notes = tab.evaluate("Array.from(document.querySelectorAll('td.note')).map(td => "
                         "[td.getBoundingClientRect().right <= window.innerWidth, td.getClientRects().length, "
                         "Math.round(td.getBoundingClientRect().height / parseFloat(getComputedStyle(td).lineHeight))])")
    assert notes and all(inside for inside, _, _ in notes), notes
    assert max(lines for _, _, lines in notes) > 1  # a long note did wrap
    tab.close()


@pytest.fixture(scope="module")
def axe_core():
    """axe.min.js's text (tests/axe.py: from $CH03_AXE_CORE, the cache, or npm at test time), or a skip saying why."""
    if chromium.CHROMIUM is None:
        pytest.skip(chromium.SKIP_REASON)
    source = axe.axe_source()
    if source is None:
        pytest.skip(axe.SKIP_REASON)
    return source


def test_the_accessibility_audit_sees_what_it_should(browser, axe_core, tmp_path):
    """The audit below can fail: an image without alt text and grey-on-white text are found, at
    critical and serious impact."""
    from autograder.reports.html_page import page

    bad = tmp_path / "bad.html"
    bad.write_text(page("bad", '<h1>bad</h1><p style="color: #c8c8c8">too pale to read</p>'
                               '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">'))
    tab = browser.open(bad.as_uri())
    found = {v["id"]: v["impact"] for v in axe.audit(tab, axe_core)}
    tab.close()
    assert found.get("image-alt") == "critical" and found.get("color-contrast") == "serious", found


def test_every_page_a_person_reads_passes_the_accessibility_audit(batch_out, browser, axe_core, tmp_path):
    """Issue 36 item 6: axe-core (the field's checker) in headless Chromium finds nothing serious or
    critical on report.html, the feedback pages (a full score, pictures, an unreadable submission, a
    crash), a report and a feedback page with late work, regrades and an override, and nbgrader's
    feedback page: contrast, table headers, names of images and controls."""
    pages = {"report.html": batch_out / "report.html",
             **{f"feedback/{s}.html": batch_out / "feedback" / f"{s}.html" for s in ("alice", "bob", "dave", "gus")},
             **course_pages(batch_out, tmp_path / "course"),
             "nbgrader feedback": nbgrader_feedback_page(batch_out / "results" / "bob.json", tmp_path)}
    found = {}
    for name, path in pages.items():
        tab = browser.open(path.as_uri(), width=1280)
        found[name] = [(v["id"], v["impact"], v["help"], v["nodes"][:2]) for v in axe.serious(axe.audit(tab, axe_core))]
        tab.close()
    assert {name: bad for name, bad in found.items() if bad} == {}


def test_the_nbgrader_feedback_page_wraps_between_words_with_its_pictures_side_by_side(batch_out, browser, tmp_path):
    """Issue 31 item 5: bob's graded cell as nbgrader's generate_feedback writes it (its feedback
    template, our preprocessors, sanitized HTML), at 1280 and at 700 px: the report's lines break
    between words only, the picture is the two heatmaps side by side, it loads, nothing on the console."""
    page = nbgrader_feedback_page(batch_out / "results" / "bob.json", tmp_path)
    for width in (1280, 700):
        tab = browser.open(page.as_uri(), width=width)
        # nbgrader's page loads MathJax from its CDN, which a test machine may not reach: nothing else
        assert [m for m in tab.console() if not re.search(r"\(https://cdnjs\.cloudflare\.com/ajax/libs/mathjax/", m)] == []
        [(alt, picture_width, picture_height)] = tab.images()
        assert alt.startswith("your attention weights (attention_weights) (left) beside the expected ones (right)")
        assert picture_width > 1.8 * picture_height  # two square heatmaps in one row
        report = "Array.from(document.querySelectorAll('div.output_text pre')).find(p => " \
                 "p.textContent.startsWith('simple_attention: '))"
        lines = tab.evaluate(f"(() => {{ const p = {report}; return Math.round(p.getBoundingClientRect().height / "
                             f"parseFloat(getComputedStyle(p).lineHeight)); }})()")
        assert lines > tab.evaluate(f"{report}.textContent.split('\\n').length")  # long lines did wrap
        assert tab.evaluate(WORDS_SPLIT) == []
        # the check can fail: a style that breaks anywhere splits words
        tab.evaluate(f"{report}.style.wordBreak = 'break-all'")
        assert tab.evaluate(WORDS_SPLIT) != []
        tab.close()


# the words of the graded cell's report that the browser breaks across two lines
WORDS_SPLIT = r"""(() => {
  const split = [];
  for (const pre of document.querySelectorAll("div.output_text pre, div.output_area pre")) {
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const re = /\S+/g;
      let m;
      while ((m = re.exec(node.data))) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
        if (tops.size > 1) split.push(m[0]);
      }
    }
  }
  return split;
})()"""


def nbgrader_feedback_page(record_path, tmp_path):
    """The feedback page of one graded cell holding a stored record's simple_attention report and
    pictures, made by nbconvert with nbgrader's feedback template and the preprocessors the course's
    generate_feedback runs after GetGrades (nbgrader_config.py)."""
    pytest.importorskip("nbgrader")
    import nbformat
    from nbconvert.exporters import HTMLExporter
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from traitlets.config import Config

    from autograder.deploy import nbgrader_plugins
    from autograder.reports.records import checks_of, parts_of

    record = json.loads(record_path.read_text())
    checks = checks_of(record)
    for check, test in zip(checks, record["tests"], strict=True):
        check.figure = (test.get("extra_data") or {}).get("figure")
    grade = SimpleNamespace(checks=checks, parts=parts_of(record), notes=[])
    cell = nbformat.v4.new_code_cell("### BEGIN HIDDEN TESTS\nassert True\n### END HIDDEN TESTS", metadata={
        "nbgrader": {"grade": True, "grade_id": "score_simple_attention", "locked": True, "points": 10.0,
                     "schema_version": 3, "solution": False, "task": False, "score": 5.0}})
    outputs = nbgrader_plugins.GradeInSandbox()._outputs(cell, "simple_attention", grade, False, "")
    cell.outputs = nbgrader_plugins.with_figures(outputs, grade, "simple_attention")
    notebook = nbformat.v4.new_notebook(cells=[cell])
    config = Config()  # as nbgrader_config.py configures generate_feedback's exporter
    nbgrader_plugins.configure_feedback_page(config)
    config.HTMLExporter.merge(config.GenerateFeedback.HTMLExporter)  # this exporter has no GenerateFeedback parent
    config.HTMLExporter.sanitize_html = True  # as nbgrader_config.py sets it
    resources = {"nbgrader": {"notebook": "01_self_attention", "score": 5.0, "max_score": 10.0, "late_penalty": 0},
                 "config_dir": str(tmp_path)}  # no custom.css there
    exporter = HTMLExporter(config=config)
    for step in (nbgrader_plugins.ScrubHiddenTests, CSSHTMLHeaderPreprocessor, nbgrader_plugins.WrapOutputLines):
        exporter.register_preprocessor(step, enabled=True)  # after the exporter's own, as nbgrader registers them
    body, _ = exporter.from_notebook_node(notebook, resources=resources)
    page = tmp_path / "feedback.html"
    page.write_text(body)
    return page


def _record(parts_checks):
    """A results_json-like record: {part: [(check, passed, message)]}."""
    tests = [{"name": f"{part}: {check}", "score": 1.0 if passed else 0.0, "max_score": 1.0,
              "status": "passed" if passed else "failed", "visibility": "visible", "output": message}
             for part, checks in parts_checks.items() for check, passed, message in checks]
    return {"score": 0, "max_score": 1, "tests": tests}  # a record without extra_data: the output is the message


@pytest.mark.quick
def test_unfinished_work_is_one_row_per_part_below_the_misconceptions():
    """Issue 22: one stub submission filled the top of the list with one row per unimplemented piece
    and pushed a real misconception out of it."""
    from autograder.reports import class_report

    stub = {part: [(f"check_{i}", False, f"check {i} of {part}: not implemented yet: {part}.f{i} (in {part}.py)")
                   for i in range(12)] for part in ("causal", "mha", "exercises")}
    wrong_transfer = {"weight_transfer": [("book_example", False, "sa_v1(inputs) is wrong: the weights are not transposed")]}
    records = [("stubby", _record(stub), ""), ("ann", _record(wrong_transfer), ""), ("ben", _record(wrong_transfer), ""),
               ("cid", _record({"causal": [("mask", False, "a different mistake")]}), "")]
    rows = class_report.misconceptions(records)
    assert [(r["part"], r["message"], len(r["students"]), r["unfinished"]) for r in rows] == [
        ("weight_transfer", "the weights are not transposed", 2, False), ("causal", "a different mistake", 1, False),
        ("causal", "not implemented yet", 1, True), ("exercises", "not implemented yet", 1, True),
        ("mha", "not implemented yet", 1, True)]
    assert len(rows[2]["checks"]) == 12
    page = class_report.class_report(records)
    assert page.index("the weights are not transposed") < page.index("Unfinished work")
    assert page.count("not implemented yet</") + page.count("not implemented yet<br>") == 3


def test_sources_that_reach_into_the_grader_are_listed_for_the_instructor():
    """Issue 30 item 2: results_json's extra_data.tampering (the grader's reading of the source) reaches report.html."""
    from autograder.reports import class_report as report

    results = {"score": 19, "max_score": 22, "tests": [], "parts": {"mha": {"score": 19, "max_score": 22}},
               "extra_data": {"tampering": ["mha.py, line 87: a dispatch mode (_python_dispatch)"]}}
    clean = {**results, "extra_data": {}}
    page = report.class_report([("mallory", results, ""), ("ann", clean, "")])
    assert report.tampering([("mallory", results, ""), ("ann", clean, "")]) == [
        ("mallory", "mha.py, line 87: a dispatch mode (_python_dispatch)")]
    section = page[page.index("Tampering: sources that reach into the grader"):]
    assert "mallory" in section.split("</table>")[0] and "ann" not in section.split("</table>")[0]
    assert "mha.py, line 87: a dispatch mode (_python_dispatch)" in page
    assert "No submission&#x27;s source reaches into the grader" in report.class_report([("ann", clean, "")]) or \
        "No submission's source reaches into the grader" in report.class_report([("ann", clean, "")])


def _full_record(parts_checks, problems=None):
    """A record as results_json stores it: {part: [(check, passed, message, extra)]}, extra_data with the
    part problems."""
    tests = [{"name": f"{part}: {check}", "score": 1.0 if passed else 0.0, "max_score": 1.0,
              "status": "passed" if passed else "failed", "visibility": "visible", "output": message,
              "extra_data": {"part": part, "check": check, "message": message, **extra}}
             for part, checks in parts_checks.items() for check, passed, message, extra in checks]
    return {"score": 0, "max_score": 1, "tests": tests, "extra_data": {"problems": problems or {}}}


@pytest.mark.quick
def test_only_misconceptions_are_misconceptions_and_each_student_counts_once():
    """Issue 31 item 3: crashes, timeouts and modules that do not import are unfinished work (one row per
    part and kind); a voided check counts with the mistake that voids it; one student is one count
    per misconception, whatever the checks' messages add before it."""
    from autograder import grading
    from autograder.reports import class_report

    no_import = "mha.py does not import: SyntaxError: invalid syntax (line 26: def forward(self x):)"
    timed_out = "the causal process timed out (its CPU time ran past 20 s)"
    mistake = "the scores are not scaled by 1/sqrt(head_dim)"
    ann = _full_record({
        "mha": [("book", False, grading.GATED, {"voided_by": ["unseen"]}),  # passes, voided by unseen
                ("unseen", False, f"MultiHeadAttention with 2 heads is wrong: {mistake}", {}),
                ("dropout", False, f"MultiHeadAttention with dropout: changing later tokens changed earlier ones: "
                                   f"{mistake}", {}),
                ("shape", True, "", {})],
        "causal": [("a", False, "your code raised an exception", {}), ("b", False, "your code raised TypeError "
                                                                             "(in causal.py)", {})]})
    ben = _full_record({
        "mha": [(name, False, no_import, {}) for name in ("book", "unseen", "dropout", "shape")],
        "causal": [("a", False, "not run: " + timed_out, {}), ("b", False, "not run: " + timed_out, {})]},
        problems={"mha": no_import, "causal": timed_out})
    cid = _full_record({
        "mha": [("book", False, grading.GATED, {"detail": "required: unseen"}),  # an older record: the detail says
                ("unseen", False, f"MultiHeadAttention with 2 heads is wrong: {mistake}", {}),
                ("ctor", False, "your code raised TypeError: the constructor does not take the specified arguments", {}),
                ("ctor_hidden", False, "your code raised an exception: the constructor does not take the specified "
                                       "arguments", {})],
        "causal": [("a", True, "", {}), ("b", True, "", {})]})
    rows = class_report.misconceptions([("ann", ann, ""), ("ben", ben, ""), ("cid", cid, "")])
    said = [(r["part"], r["message"], r["students"], r["checks"], bool(r["unfinished"])) for r in rows]
    assert said == [
        ("mha", mistake, ["ann", "cid"], ["book", "dropout", "unseen"], False),
        ("mha", "your code raised TypeError: the constructor does not take the specified arguments", ["cid"],
         ["ctor", "ctor_hidden"], False),
        ("mha", class_report.DID_NOT_RUN, ["ben"], ["book", "dropout", "shape", "unseen"], True),
        ("causal", class_report.CRASHED, ["ann"], ["a", "b"], True),
        ("causal", class_report.DID_NOT_RUN, ["ben"], ["a", "b"], True)]
    table = list(csv.DictReader(io.StringIO(class_report.misconceptions_csv([("ann", ann, ""), ("ben", ben, ""),
                                                                              ("cid", cid, "")]))))
    assert [(r["part"], r["misconception"], r["students"], r["who"]) for r in table] == [
        ("mha", mistake, "2", "ann;cid"),
        ("mha", "your code raised TypeError: the constructor does not take the specified arguments", "1", "cid")]
    page = class_report.class_report([("ann", ann, ""), ("ben", ben, ""), ("cid", cid, "")])
    crashes = page[page.index("<h2>Unreadable"):page.index("<h2>Slowest")]
    assert "<td>ben</td><td>mha</td><td>mha.py does not import: SyntaxError: invalid syntax (line 26: def " \
           "forward(self x):)</td>" in crashes and "<td>ben</td><td>causal</td>" in crashes
    assert "passes here" not in page and "passes here" not in "".join(r["misconception"] for r in table)


# edits to the solutions (tests/part_edits.py), each one bug that several checks of its part see differently
DIAGONAL_0 = ("causal", "diagonal=1)", "diagonal=0)")  # the mask hides each token from itself, in both places
WEIGHTS_DIM_0 = ("causal", "return torch.softmax(masked / d_k**0.5, dim=-1)", "return torch.softmax(masked / d_k**0.5, dim=0)")
SIMPLE_DIM_0 = ("simple_attention", "return torch.softmax(scores, dim=-1)", "return torch.softmax(scores, dim=0)")
CAUSAL_UNSCALED = ("causal", "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)", "torch.softmax(attn_scores, dim=-1)")
MHA_BY_D_OUT = ("mha", "attn_scores / self.head_dim**0.5", "attn_scores / self.d_out**0.5")


def test_one_bug_is_one_row_whatever_its_checks_say(engine, tmp_path):
    """Issue 31: one bug whose checks name it in different words (the softmax over dim 0 named by the
    weights' checks, "that, or the weights transposed" by the context vectors'; an off-by-one mask's
    own message, a degenerate dropout check, NaN where a column softmax meets a masked row) is one
    row per student: the part's diagnosis (runner.part_diagnosis, kept in the record), with every
    failed check of the part. A student with two mistakes in two parts is two rows. Graded for real."""
    from part_edits import grade, submission

    from autograder.reports import class_report
    from autograder.reports.results_json import results_json

    def record(name, *edits):
        result = grade(engine, submission(tmp_path / name, *edits), sorted({module for module, _, _ in edits}))
        return results_json(result)

    ann, ben, cid, dee = (record("ann", DIAGONAL_0), record("ben", WEIGHTS_DIM_0), record("cid", SIMPLE_DIM_0),
                          record("dee", CAUSAL_UNSCALED, MHA_BY_D_OUT))
    records = [("ann", ann, ""), ("ben", ben, ""), ("cid", cid, ""), ("dee", dee, ""), ("eve", ann, "")]

    def failed(results, part):
        return sorted(t["extra_data"]["check"] for t in results["tests"]
                      if t["status"] == "failed" and t["extra_data"]["part"] == part)

    def messages(results, part):  # the checks' own diagnoses: several for each of these bugs
        return {class_report.diagnosis(t["extra_data"]["message"]) for t in results["tests"]
                if t["status"] == "failed" and t["extra_data"]["part"] == part and not t["extra_data"].get("voided_by")}

    assert len(messages(ann, "causal")) >= 3 and len(messages(ben, "causal")) >= 2
    assert len(messages(cid, "simple_attention")) >= 2  # hidden checks mask their numbers (dim #): more wordings
    diagnoses = {name: r["extra_data"]["diagnoses"] for name, r, _ in records}
    assert "diagonal is off by one" in diagnoses["ann"]["causal"]
    assert "wrong dim" in diagnoses["ben"]["causal"]
    assert diagnoses["cid"]["simple_attention"].startswith("the softmax runs over dim 0")  # one cause, not "one of"
    assert "not scaled" in diagnoses["dee"]["causal"] and "1/sqrt(d_out)" in diagnoses["dee"]["mha"]
    rows = [(r["part"], r["message"], r["students"], r["checks"]) for r in class_report.misconceptions(records)]
    assert rows == sorted([
        ("causal", diagnoses["ann"]["causal"], ["ann", "eve"], failed(ann, "causal")),
        ("causal", diagnoses["ben"]["causal"], ["ben"], failed(ben, "causal")),
        ("simple_attention", diagnoses["cid"]["simple_attention"], ["cid"], failed(cid, "simple_attention")),
        ("causal", diagnoses["dee"]["causal"], ["dee"], failed(dee, "causal")),
        ("mha", diagnoses["dee"]["mha"], ["dee"], failed(dee, "mha"))],
        key=lambda row: (-len(row[2]), -len(row[3]), row[0], row[1]))
    table = list(csv.DictReader(io.StringIO(class_report.misconceptions_csv(records))))
    assert [(r["part"], r["students"], r["who"]) for r in table] == [(p, str(len(who)), ";".join(who))
                                                                    for p, _, who, _ in rows]
    assert sum(int(r["students"]) for r in table) == 6  # ann, eve, ben, cid and dee twice
