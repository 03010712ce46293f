"""Issue 13 items 2-4: pictures of the attention weights in the feedback, and the class report.

Through the real engine: a wrong softmax (and other weight mistakes of the mutant corpus) makes
the failed check carry a figure, the student's weights on the book's example next to the expected
ones, both plain numbers (the expected ones the book's printed values, the student's what the
mistake computes); the solutions carry none. The figure travels through results.json to the
per-student HTML page (two data: images per panel), Gradescope (HTML output), `grade --markdown`
(PNG files beside the report) and nbgrader's graded cell. Probes run in a session of their own
after every check (fake sandbox below). Every text of the HTML pages is escaped.
"""
import base64
import csv
import dataclasses
import io
import json
import re
import subprocess
import sys
import types

import pytest
import torch

from autograder import grading, reports, runner, selftest
from autograder.figure_data import FigureError, figure_of, validate
from autograder.reports import class_report, html_feedback, markdown_pictures, plots
from autograder.runner import CheckResult, PartRun
from autograder.suites import book as book_module
from autograder.suites import figures

ENTRIES = {e.id: e for e in selftest.corpus()}
BOOK = book_module.values()
IMG = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


@pytest.fixture(scope="module")
def graded(engine, tmp_path_factory):
    """mutant id (or 'solutions') -> its Grade in the mutant's own part (the solutions: three parts)."""
    cache = {}

    def grade(entry_id):
        if entry_id not in cache:
            if entry_id == "solutions":
                folder, parts = selftest.SOLUTIONS, ["simple_attention", "causal", "mha"]
            else:
                entry = ENTRIES[entry_id]
                folder = selftest.apply(entry, tmp_path_factory.mktemp(entry_id) / "submission")
                parts = [entry.part or entry.edits[0].module]
            cache[entry_id] = engine.grade(folder, parts=parts)
        return cache[entry_id]
    return grade


def with_figure(grade):
    return [c for c in grade.checks if c.figure is not None]


def pngs(html):
    return [base64.b64decode(data) for data in IMG.findall(html)]


# ---------------------------------------------------------------- the figure, from the engine

@pytest.mark.quick
def test_a_wrong_softmax_dim_carries_the_students_and_the_expected_weights(graded):
    grade = graded("simple-weights-softmax-dim0")
    carriers = with_figure(grade)
    assert [(c.part, c.name, c.visibility, c.passed) for c in carriers] == \
        [("simple_attention", "scores_and_weights_book_example", "visible", False)]
    figure = carriers[0].figure
    assert figure == validate(figure)
    assert figure["labels"] == ["Your", "journey", "starts", "with", "one", "step"]
    assert "dim 0" in figure["diagnosis"]
    [panel] = figure["panels"]
    got, want = torch.tensor(panel["got"], dtype=torch.float64), torch.tensor(panel["want"], dtype=torch.float64)
    assert torch.allclose(want, BOOK["attn_weights"].double(), atol=1e-5)       # the book's printed weights
    assert torch.allclose(got, torch.softmax(BOOK["attn_scores"].double(), dim=0), atol=1e-5)  # what dim=0 gives
    assert (got - want).abs().max() > 0.05
    assert torch.allclose(got.sum(0), torch.ones(6, dtype=torch.float64), atol=1e-5)  # columns, not rows, sum to 1


@pytest.mark.parametrize("entry_id, check, panels, words", [
    ("v1-softmax-dim0", "v1_book_example", ["SelfAttention_v1"], "wrong dim"),
    ("v2-unscaled", "v2_book_example", ["SelfAttention_v2"], "not scaled"),
    ("causal-softmax-dim1", "causal_attention_book_example", ["CausalAttention"], "wrong dim"),
    ("causal-mask-after-softmax", "causal_attention_book_example", ["CausalAttention"], "without renormalizing"),
    ("mha-split-without-transpose", "mha_book_example", ["head 1", "head 2"], "split without the transpose"),
])
def test_module_mistakes_draw_the_modules_weights_on_the_books_example(graded, entry_id, check, panels, words):
    grade = graded(entry_id)
    [carrier] = with_figure(grade)
    assert (carrier.name, carrier.visibility, carrier.passed) == (check, "visible", False)
    figure = carrier.figure
    assert [p["name"] for p in figure["panels"]] == panels and words in figure["diagnosis"]
    for panel in figure["panels"]:
        assert panel["got"] != panel["want"]
    if entry_id.startswith("causal"):  # the expected weights are the book's printed masked weights
        want = torch.tensor(figure["panels"][0]["want"])
        assert torch.allclose(want, BOOK["causal_attn_weights"], atol=1e-4)


def test_the_solutions_carry_no_picture(graded):
    grade = graded("solutions")
    assert grade.score == grade.max_score and with_figure(grade) == []
    page = html_feedback.feedback_html("alice", reports.results_json(grade))
    assert "<img" not in page and "Every check passed." in page


def test_the_feedback_page_shows_the_two_heatmaps_and_escapes_every_text(graded):
    results = reports.results_json(graded("simple-weights-softmax-dim0"))
    test = next(t for t in results["tests"] if figure_of(t))
    assert test["name"] == "simple_attention: scores_and_weights_book_example"
    page = html_feedback.feedback_html("bob", results)
    images = pngs(page)
    assert len(images) == 2 and images[0] != images[1] and all(p.startswith(b"\x89PNG\r\n\x1a\n") for p in images)
    assert 'alt="your attention weights (attention_weights)"' in page and "the softmax runs over dim 0" in page
    hostile = json.loads(json.dumps(results))
    test = next(t for t in hostile["tests"] if figure_of(t))
    test["extra_data"]["message"] = HOSTILE
    test["extra_data"]["figure"]["title"] = HOSTILE
    hostile["extra_data"]["notes"] = [HOSTILE]
    page = html_feedback.feedback_html(HOSTILE, hostile, problem="")
    assert "<script" not in page and "<img src=x" not in page and "&lt;script&gt;" in page
    assert len(pngs(page)) == 2


# ---------------------------------------------------------------- the probe's session

class FakeChild:
    def __init__(self, session, clean=True):
        self.session, self.died, self.closed, self.clean, self.parts = session, "", False, clean, []

    def next_part(self, timeout, memory_mb):
        self.parts.append(timeout)
        return self

    def finish(self):
        self.parts.append("reset")
        if not self.clean:
            self.close()
        return {"output": "what the probes printed", "output_bytes": 23, "reusable": self.clean}

    def close(self):
        self.closed = True


class FakeSession:
    def __init__(self, number):
        self.number, self.died, self.closed, self.children = number, "", False, []

    def part(self, timeout, memory_mb, budget=None):
        child = FakeChild(self)
        self.children.append((child, timeout))
        return child

    def close(self):
        self.closed = True


class FakeSandbox:
    def __init__(self):
        self.sessions = []

    def session(self, folder, key=None):
        self.sessions.append(FakeSession(len(self.sessions)))
        return self.sessions[-1]


def test_a_batch_worker_draws_the_pictures_and_the_parent_only_writes_them(graded, monkeypatch):
    """issue 38.7: the pictures are drawn in the worker that made the grade (batch.workers._pictures) and handed
    to the parent as bytes (plots.remember); the parent's feedback page draws none of them itself."""
    from autograder import batch

    results = reports.results_json(graded("simple-weights-softmax-dim0"))
    drawn = batch.workers._pictures(results)
    assert len(drawn) == 1, drawn
    [[(name, got, want)]] = drawn.values()
    assert name == "attention_weights" and got.startswith(b"\x89PNG") and got != want
    plots._DRAWN.clear()  # the parent: nothing drawn here

    def no_drawing(*args, **kwargs):
        raise AssertionError("the parent drew a picture")

    monkeypatch.setattr(plots, "heatmap_png", no_drawing)
    with pytest.raises(AssertionError, match="the parent drew"):
        html_feedback.feedback_html("bob", results)
    plots.remember(drawn)
    assert pngs(html_feedback.feedback_html("bob", results)) == [got, want]


def _context():
    return runner.SubmissionContext("folder", "key", {})


def test_probes_run_in_fresh_children_and_picture_the_visible_check_first(monkeypatch):
    """With no child left by the visible turns, each part with a probe is pictured in a fresh child
    (runner.take_pictures), ended after the probes when it is not kept; the picture goes to its first
    failed weight check, a visible one first (runner.attach_figures)."""
    rubric, _ = grading.load_rubric()
    seen = []

    def take(probe, student, book):
        seen.append((probe.__name__, student.session))
        return {"probe": probe.__name__}
    monkeypatch.setattr(figures, "take", take)
    runs = {
        "simple_attention": PartRun("simple_attention", [  # a hidden failure first, then a visible one
            CheckResult("simple_attention", "attention_weights_on_unseen_scores", False, "wrong"),
            CheckResult("simple_attention", "scores_and_weights_book_example", False, "wrong")]),
        "causal": PartRun("causal", [CheckResult("causal", "causal_mask_marks_the_future", False, "inverted")]),
        "mha": PartRun("mha", [CheckResult("mha", "mha_book_example", False, "x")], problem="the mha process timed out"),
        "self_attention_v2": PartRun("self_attention_v2", [CheckResult("self_attention_v2", "v2_qkv_bias", False, "x")]),
    }
    sandbox = FakeSandbox()
    place = runner.Place(sandbox, _context())
    pictures = runner.take_pictures(place, runs, rubric, runner.default_fixtures(1, "key"), keep=False)
    session = place.session
    assert sandbox.sessions == [session] and place.child is None and all(child.closed for child, _ in session.children)
    assert [name for name, _ in seen] == ["probe_simple_attention", "probe_causal", "probe_self_attention_v2"]
    assert all(child.session is session for _, child in seen)
    assert all(timeout <= runner.FIGURE_SECONDS for _, timeout in session.children)
    runner.attach_figures(runs, rubric, pictures)
    simple = runs["simple_attention"].results
    assert (simple[0].figure, simple[1].figure) == (None, {"probe": "probe_simple_attention"})  # the visible one
    assert runs["self_attention_v2"].results[0].figure == {"probe": "probe_self_attention_v2"}  # hidden only: it
    assert runs["causal"].results[0].figure is None      # the mask check is not about the weights' math
    assert runs["mha"].results[0].figure is None         # a part that crashed or timed out: no probe


@pytest.mark.parametrize("clean", [True, False])
def test_the_probes_run_in_the_child_the_visible_turns_left(monkeypatch, clean):
    """Issue 38.7: the child that took the visible turns (kept: it forgot its last part cleanly) takes the
    probes on clocks of their own (next_part with FIGURE_SECONDS), no session or child is opened for
    them, and it goes on to the hidden turns only when it forgets the probes cleanly too; otherwise it
    is ended and the place has none (the hidden turns get a fresh one)."""
    rubric, _ = grading.load_rubric()
    seen = []
    monkeypatch.setattr(figures, "take", lambda probe, student, book: seen.append(student.session) or {"probe": 1})
    runs = {"simple_attention": PartRun("simple_attention", [
        CheckResult("simple_attention", "scores_and_weights_book_example", False, "wrong")])}
    sandbox = FakeSandbox()
    session = FakeSession(0)
    kept = FakeChild(session, clean=clean)
    place = runner.Place(sandbox, _context(), session=session, child=kept)
    pictures = runner.take_pictures(place, runs, rubric, runner.default_fixtures(1, "key"))
    assert pictures == {"simple_attention": {"probe": 1}} and seen == [kept]
    assert sandbox.sessions == [] and session.children == [], "a child was opened for the probes"
    assert kept.parts == [runner.FIGURE_SECONDS, "reset"], kept.parts
    assert (place.child is kept and not kept.closed) if clean else (place.child is None and kept.closed)


def test_a_check_whose_diagnosis_is_withheld_gets_no_picture(monkeypatch):
    """grading.yml's `diagnosis: withheld` keeps a hidden check's diagnosis from students: a picture
    of the mistake would say it, so the probe goes to another failed check of the part, or nowhere."""
    rubric, _ = grading.load_rubric()
    checks = rubric.parts["causal"].checks
    rubric.parts["causal"].checks = {**checks, "causal_attention_unseen_seeds": dataclasses.replace(
        checks["causal_attention_unseen_seeds"], diagnosis="withheld")}
    withheld = CheckResult("causal", "causal_attention_unseen_seeds", False, "wrong")
    shown = CheckResult("causal", "causal_qkv_bias", False, "wrong")
    runner.attach_figures({"causal": PartRun("causal", [withheld])}, rubric, {"causal": {"probe": "probe_causal"}})
    assert withheld.figure is None
    runner.attach_figures({"causal": PartRun("causal", [withheld, shown])}, rubric, {"causal": {"probe": "probe_causal"}})
    assert withheld.figure is None and shown.figure == {"probe": "probe_causal"}


def test_the_pictures_are_taken_before_the_first_hidden_input(monkeypatch):
    """Issue 37.7: whatever the hidden checks leave (in container mode, a file under /tmp that a later
    session of the same uid could read) cannot reach a picture: every probe runs before the first
    turn of hidden checks is sent to any child. Recorded in order: every probe precedes every hidden
    check, and the figure of a hidden-only failure is the one taken then."""
    rubric, suites = grading.load_rubric()
    order = []
    monkeypatch.setattr(figures, "take", lambda probe, student, book: order.append(("probe", probe.__name__)) or
                        {"probe": probe.__name__})

    def attempt(place, turn, fixtures):
        run, checks, hidden = turn.run, turn.checks, turn.hidden
        order.extend(("hidden" if hidden else "shown", run.part) for _ in checks[:1])
        run.results += [CheckResult(run.part, n, not hidden, "wrong") for n, _ in checks]
        return "", False  # (why the machine ended it, proof)
    monkeypatch.setattr(runner.attempts, "_attempt", attempt)
    staged = types.SimpleNamespace(folder="folder", missing=lambda part: "", cells={})
    monkeypatch.setattr(runner.turns, "source_attributes", lambda folder: {})
    runs = runner.run_submission(FakeSandbox(), staged, rubric, suites, runner.default_fixtures(1, "key"),
                                 ["simple_attention", "causal"], key="key")
    probes = [at for at, (kind, _) in enumerate(order) if kind == "probe"]
    hidden = [at for at, (kind, _) in enumerate(order) if kind == "hidden"]
    assert probes and hidden and max(probes) < min(hidden), order
    assert max(at for at, (kind, _) in enumerate(order) if kind == "shown") < min(probes)
    carriers = [r for run in runs.values() for r in run.results if r.figure]
    assert {r.part for r in carriers} == {"simple_attention", "causal"}
    assert all(rubric.parts[r.part].checks[r.name].visibility == "hidden" for r in carriers)


def test_no_part_to_picture_opens_no_session():
    rubric, _ = grading.load_rubric()
    sandbox = FakeSandbox()
    runs = {"exercises": PartRun("exercises", [])}
    place = runner.Place(sandbox, _context())
    assert runner.take_pictures(place, runs, rubric, {}) == {}
    assert sandbox.sessions == [] and place.session is None


@pytest.mark.quick
def test_every_check_named_for_pictures_exists_in_its_suite():
    suites = runner.discover()
    for part, names in figures.FIGURE_CHECKS.items():
        assert set(names) <= {name for name, _ in suites[part]}, part
        assert part in figures.PROBES


# ---------------------------------------------------------------- plain data, validated

@pytest.mark.parametrize("broken, words", [
    ({"panels": []}, "1 to 4 panels"),
    ({"panels": [{"got": [[0.5]], "want": [[float("nan")]]}]}, "finite"),
    ({"panels": [{"got": [["<script>"]], "want": [[0.5]]}]}, "numbers"),
    ({"panels": [{"got": [[0.5, 0.5]], "want": [[0.5]]}]}, "different shapes"),
    ({"panels": [{"got": [[0.0] * 17] * 17, "want": [[0.0] * 17] * 17}]}, "larger than 16x16"),
    ({"panels": [{"got": [[0.5], [0.5, 0.5]], "want": [[0.5]]}]}, "different lengths"),
    ({"labels": [1], "panels": [{"got": [[0.5]], "want": [[0.5]]}]}, "labels"),
])
def test_figures_that_are_not_plain_bounded_numbers_are_refused(broken, words):
    with pytest.raises(FigureError, match=words):
        validate(broken)
    assert figure_of({"extra_data": {"figure": broken}}) is None


def test_a_students_nan_becomes_a_missing_cell_and_is_still_drawn():
    figure = validate({"panels": [{"name": "x", "got": [[float("nan"), 1.0], [float("inf"), 0.0]],
                                   "want": [[0.5, 0.5], [1.0, 0.0]]}]})
    assert figure["panels"][0]["got"] == [[None, 1.0], [None, 0.0]]
    [(name, got, want)] = plots.figure_pictures(figure)
    assert name == "x" and got.startswith(b"\x89PNG") and got != want


def test_drawing_never_imports_pyplot_nor_switches_the_backend():
    # (matplotlib.get_backend() itself imports pyplot: the rcParams entry is read as stored)
    code = ("import sys, matplotlib; backend = lambda: dict.__getitem__(matplotlib.rcParams, 'backend');"
            "before = backend(); from autograder.reports import plots;"
            "png = plots.histogram_png([1, 5, 9], 10) + plots.heatmap_png([[0.2, 0.8]], ['a', 'b']);"
            "assert png.startswith(bytes([137]) + b'PNG');"
            "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported';"
            "assert backend() == before, (before, backend())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------- the other channels

def test_gradescope_tests_with_a_figure_become_html_with_both_pictures(graded):
    grade = graded("simple-weights-softmax-dim0")
    hostile = dataclasses.replace(grade, checks=[
        dataclasses.replace(c, message=HOSTILE + "\nthe softmax runs over dim 0") if c.figure else c
        for c in grade.checks])
    out = reports.gradescope_results(hostile)
    [html_test] = [t for t in out["tests"] if t.get("output_format") == "html"]
    assert html_test["name"] == "simple_attention: scores_and_weights_book_example"
    assert len(pngs(html_test["output"])) == 2 and "<script" not in html_test["output"]
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html_test["output"]
    assert all("figure" not in (t.get("extra_data") or {}) for t in out["tests"])
    assert [t for t in out["tests"] if t.get("output_format", "text") != "text"] == [html_test]
    json.dumps(out)


def test_grade_markdown_writes_the_pictures_beside_the_report(graded, tmp_path):
    grade = graded("causal-softmax-dim1")
    path = tmp_path / "report.md"
    reports.write(grade, markdown_path=str(path))
    text = path.read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(links) == 2 and all((tmp_path / link).is_file() for link in links)
    assert all(link.startswith("report_pictures/") for link in links)
    assert [(tmp_path / link).read_bytes()[:4] for link in links] == [b"\x89PNG"] * 2
    assert "wrong dim" in text
    # issue 31 item 6: the picture section reads as written, in the file and where it renders: only
    # what would change the rendering is escaped (reports.markdown.md_text), as in the rest of the report
    section = text[text.index("### Your attention weights next to the expected ones"):]
    [carrier] = [c for c in grade.checks if c.figure is not None]
    title = carrier.figure["title"]
    assert re.search(r"[()_]", title) and f"**causal**: {title}" in section, section[:400]
    assert not re.search(r"\\[()_.!#+-]", section), section[:400]
    assert "![your code (CausalAttention)](report_pictures/" in section
    # issue 37.7: file names from the part's name and a count, never a check's name (hidden or not)
    assert sorted(link.split("/")[1] for link in links) == ["causal-1-1-expected.png", "causal-1-1-yours.png"]
    assert sorted(p.name for p in (tmp_path / "report_pictures").iterdir()) == ["causal-1-1-expected.png",
                                                                               "causal-1-1-yours.png"]
    assert not any(c.name in text for c in grade.checks if c.visibility != "visible")
    assert markdown_pictures.markdown_pictures(graded("solutions"), tmp_path / "other.md") == ""
    assert not (tmp_path / "other_pictures").exists()


def test_the_nbgrader_graded_cell_gets_the_pictures_before_its_score(graded):
    """Issue 31: a notebook stacks its outputs, so the student's heatmap and the expected one are one
    picture, side by side (twice as wide as one heatmap, as tall), with an alt text saying which is which."""
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbgrader")
    from autograder.deploy.nbgrader_plugins import ENGINE_MARK, with_figures
    from autograder.reports.plots import figure_pictures

    grade = graded("simple-weights-softmax-dim0")
    outputs = [nbformat.v4.new_output("display_data", data={"text/plain": "report"}),
               nbformat.v4.new_output("execute_result", data={"text/plain": "5.0"}, execution_count=None)]
    cell = nbformat.v4.new_code_cell("score", outputs=with_figures(outputs, grade, "simple_attention"))
    kinds = [o["output_type"] for o in cell.outputs]
    assert kinds == ["display_data", "display_data", "execute_result"]
    pair = base64.b64decode(cell.outputs[1]["data"]["image/png"])
    [carrier] = [c for c in grade.checks if c.part == "simple_attention" and c.figure is not None]
    [(_, one, _)] = figure_pictures(carrier.figure)
    (width, height), (one_width, one_height) = png_size(pair), png_size(one)
    assert pair.startswith(b"\x89PNG") and abs(width - 2 * one_width) <= 2 and height == one_height
    alt = cell.outputs[1]["metadata"]["image/png"]["alt"]
    assert alt.startswith("your attention weights (attention_weights) (left) beside the expected ones (right): ")
    assert ENGINE_MARK in cell.outputs[1]["metadata"]
    nbformat.validate(nbformat.v4.new_notebook(cells=[cell]))
    assert with_figures(outputs, graded("solutions"), "simple_attention") == outputs


def png_size(png):
    """(width, height) of a PNG, from its IHDR chunk."""
    import struct

    return struct.unpack(">II", png[16:24])


# ---------------------------------------------------------------- the class report, from records

def record(score, tests, parts, problems=None, seconds=0.0):
    return {"score": score, "max_score": 20, "tests": tests, "parts": parts,
            "extra_data": {"notes": [], "problems": problems or {}, "seconds": {p: seconds for p in parts}}}


def failed(name, message, visibility="visible"):
    return {"name": name, "score": 0, "max_score": 1, "status": "failed", "output": message, "visibility": visibility}


def test_the_class_report_groups_misconceptions_and_escapes_names_and_problems():
    parts = lambda a, b: {"causal": {"score": a, "max_score": 10}, "mha": {"score": b, "max_score": 10}}  # noqa: E731
    records = [
        ("ann", record(20, [], parts(10, 10), seconds=1.5), ""),
        ("ben", record(13, [failed("causal: x", "CausalAttention with known weights is wrong: the softmax runs over "
                                                "dim 0 (off by 0.25)")], parts(3, 10), seconds=4.0), ""),
        (HOSTILE, record(14, [failed("causal: z", "torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0)(batch) is wrong: "
                                                  "the softmax runs over dim 0 (off by 0.5)"),
                              failed("mha: y", "=HYPERLINK(\"http://x\")", "hidden")],
                         parts(4, 10), {"mha": "the mha process timed out"}, 2.5), ""),
        ("dee", record(0, [failed("causal: x", "could not read <b>x.zip</b>")],
                       {"causal": {"score": 0, "max_score": 10}, "mha": {"score": 0, "max_score": 10}}),
         "dee.zip: not a valid <b>zip</b> file"),
    ]
    rows = class_report.misconceptions(records)
    # one mistake seen by two checks in two students is one misconception; a broken submission is none
    assert [(r["part"], r["message"], r["checks"], r["students"]) for r in rows] == [
        ("causal", "the softmax runs over dim 0 (off by 0.25)", ["x", "z"], sorted(["ben", HOSTILE])),
        ("mha", "=HYPERLINK(\"http://x\")", ["y"], [HOSTILE])]
    page = class_report.class_report(records)
    assert "<script" not in page and "<img src=x" not in page and "<b>" not in page
    for name in ("ann", "ben", "dee", HOSTILE):
        assert html_feedback.esc(name) in page
    assert "4.25 / 10" in page and "7.50 / 10" in page  # the parts' means over the whole class
    assert "the mha process timed out" in page and "dee.zip: not a valid &lt;b&gt;zip&lt;/b&gt; file" in page
    assert len(pngs(page)) == 1  # the histogram
    # the parts' times over the graded submissions (dee's is not one), then the slowest runs
    assert '<td>causal</td><td class="num">2.67</td><td class="num">4.00</td>' in page
    assert "Slowest runs: ben / causal 4.00 s, ben / mha 4.00 s, " in page
    table = list(csv.reader(io.StringIO(class_report.misconceptions_csv(records))))
    assert table[0] == class_report.CSV_COLUMNS
    assert table[1] == ["causal", "the softmax runs over dim 0 (off by 0.25)", "2", "x;z", f"{HOSTILE};ben"]
    assert table[2] == ["mha", "'=HYPERLINK(\"http://x\")", "1", "y", HOSTILE]  # no formula in a spreadsheet


def test_figures_can_be_turned_off(engine, tmp_path):
    """selftest grades the corpus with figures=False: nobody sees its pictures, and each costs a session."""
    rubric, suites, sandbox = engine
    folder = selftest.apply(ENTRIES["simple-weights-softmax-dim0"], tmp_path / "submission")
    grade = grading.grade_submission(folder, rubric, suites, sandbox, parts=["simple_attention"], figures=False)
    assert grade.parts["simple_attention"].score < 10 and with_figure(grade) == []
