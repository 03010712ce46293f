"""One mistake, one item, when the checks it fails say different things (issue 31 item 2, issue 30 item 4).

A part's diagnosis (runner.part_diagnosis) is the one cause behind its failed checks; every failed
check it explains (the check names it, names it among several possibilities, or could name nothing)
is one item of "what to fix", led by the diagnosis and listing each failed check with its points
(reports.common.what_to_fix), in every student channel. A check whose message names another cause
stays an item of its own; a check whose diagnosis grading.yml withholds is never folded, and a
diagnosis only withheld checks name is never said.

Graded for real, in one sandbox, on simple_attention, self_attention_v2 and causal, with bugs written
here (each an edit of the solutions):
- softmax_dim0: attention_weights as `scores.softmax(0)`. The weights' checks name the softmax over
  dim 0, the context vectors' checks "one of these mistakes, which give the same numbers here: the
  softmax over dim 0; or the weight matrix transposed": one item, -5, simple_attention 5 / 10.
- diagonal0: every triu of causal.py with diagonal=0 (the function and the buffer). The mask's own
  check, the weights', the module's, the buffer check and the dropout check (which cannot judge
  dropout on degenerate weights): one item, -22, causal 0 / 22 (it was four items).
- unscaled_v2: SelfAttention_v2 without 1/sqrt(d_k): every check says the same: one item, -10,
  self_attention_v2 0 / 10, no list (nothing was folded).
- two_mistakes: softmax_naive dividing exp(x) by the sum of x, and the softmax over dim 0: two items
  in simple_attention (-2 and -5), each led by its own cause; 3 / 10.
- two_parts: softmax_dim0 and diagonal0 in one submission: one item in each part, as graded alone.
- split_and_merge (issue 34 item 5, graded on mha alone): the heads split with .view(b, num_heads,
  num_tokens, head_dim) and merged with .view(b, num_tokens, d_out), both without the transpose. Each
  half alone was named; the pair was 10 items of wrong numbers (-17). Now every failed check names
  the pair: one item, -17, mha 5 / 22 (the score it had).
The part scores are those the grader gave the same submissions before items were folded (the same
edits graded by main at e7713f7): folding changes what is said, never a score.
"""
import re
import shutil

import pytest

from autograder import grading, reports, runner, selftest
from autograder.deploy import ghactions
from autograder.reports import common
from autograder.reports.html_feedback import feedback_html
from autograder.rubric import load
from autograder.runner import CheckResult, PartRun

PARTS = ["simple_attention", "self_attention_v2", "causal"]
SOFTMAX_DIM0 = "the softmax runs over dim 0 (down the columns): use dim=-1 so that every row of weights sums to 1"
HIDES_DIAGONAL = ("the mask's diagonal is off by one: it also hides each token from itself; mask only what is "
                  "above the diagonal (triu(..., diagonal=1))")
UNSCALED = "the scores are not scaled: divide them by sqrt(d_k) (d_k = the keys' dimension) before the softmax"
EXP_OVER_SUM = "it divides exp(x) by the sum of x: divide by the sum of exp(x)"
SPLIT_AND_MERGE = ("the heads are split and merged without the transpose: view the projections as (b, num_tokens, "
                   "num_heads, head_dim) and .transpose(1, 2) them to (b, num_heads, num_tokens, head_dim); after the "
                   "attention .transpose(1, 2) the context back before the .contiguous().view(b, num_tokens, d_out)")

EDITS = {  # module -> [(find, replace)]: every occurrence is replaced, and there must be one
    "softmax_dim0": {"simple_attention": [("return torch.softmax(scores, dim=-1)", "return scores.softmax(0)")]},
    "diagonal0": {"causal": [("diagonal=1)", "diagonal=0)")]},
    "unscaled_v2": {"self_attention_v2": [("torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
                                           "torch.softmax(attn_scores, dim=-1)")]},
    "two_mistakes": {"simple_attention": [("return torch.softmax(scores, dim=-1)", "return scores.softmax(0)"),
                                          ("return torch.exp(x) / torch.exp(x).sum(dim=0)",
                                           "return torch.exp(x) / x.sum(dim=0)")]},
}
EDITS["two_parts"] = {**EDITS["softmax_dim0"], **EDITS["diagonal0"]}
# issue 34 item 5: the heads split straight to (b, num_heads, num_tokens, head_dim) and merged back by a plain view
EDITS["split_and_merge"] = {"mha": [
    (".view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)", ".view(b, self.num_heads, num_tokens, self.head_dim)"),
    ("context = (attn_weights @ values).transpose(1, 2)", "context = attn_weights @ values")]}
GRADED = {kind: ["mha"] if kind == "split_and_merge" else PARTS for kind in EDITS}  # the parts each kind is graded on

# (part, score) before folding, and per part the items: (lead, points, the checks it lists)
SCORES = {"softmax_dim0": {"simple_attention": 5}, "diagonal0": {"causal": 0}, "unscaled_v2": {"self_attention_v2": 0},
          "two_mistakes": {"simple_attention": 3}, "two_parts": {"simple_attention": 5, "causal": 0}}
ITEMS = {
    "softmax_dim0": {"simple_attention": [(SOFTMAX_DIM0, 5, "scores_and_weights_book_example (-1), "
                                          "context_vectors_book_example (-1) and 2 hidden checks (-3)")]},
    "diagonal0": {"causal": [(HIDES_DIAGONAL, 22, "causal_mask_marks_the_future (-1), masked_weights_book_example (-1), "
                              "causal_attention_book_example (-2) and 13 hidden checks (-18)")]},
    "unscaled_v2": {"self_attention_v2": [(UNSCALED, 10, "")]},
    "two_mistakes": {"simple_attention": [(EXP_OVER_SUM, 2, ""),
                                          (SOFTMAX_DIM0, 5, "scores_and_weights_book_example (-1), "
                                           "context_vectors_book_example (-1) and 2 hidden checks (-3)")]},
}
ITEMS["two_parts"] = {**ITEMS["softmax_dim0"], **ITEMS["diagonal0"]}
SCORES["split_and_merge"] = {"mha": 5}
# every one of its checks says the pair (its hidden ones in the grader's fixed words, issue 37.6), so the item
# lists them on its own line ("mha_book_example and 9 hidden checks (-17)") with no "this one mistake fails" note
ITEMS["split_and_merge"] = {"mha": [(SPLIT_AND_MERGE, 17, "")]}


def _submission(kind, folder):
    shutil.copytree(selftest.SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for module, edits in EDITS[kind].items():
        path = folder / f"{module}.py"
        source = path.read_text()
        for find, replace in edits:
            assert find in source, (kind, find)
            source = source.replace(find, replace)
        path.write_text(source)
    return folder


class _Graded(dict):
    """kind -> its grade, each graded the first time a test asks for it (the quick subset asks for two)."""

    def __init__(self, engine, root):
        super().__init__()
        self.engine, self.root = engine, root

    def __missing__(self, kind):
        self[kind] = grade = self.engine.grade(_submission(kind, self.root / kind), parts=GRADED[kind])
        return grade


@pytest.fixture(scope="module")
def grades(engine, tmp_path_factory):
    """Each edit's grade in the parts it is graded in (GRADED), by the session's engine (Engine.grade),
    once per module, when a test first reads it."""
    return _Graded(engine, tmp_path_factory.mktemp("one-cause"))


def channels(grade, part):
    """{format: what it says to the student about `part`} (Gradescope's: its top-level output)."""
    stored = reports.results_json(grade)
    markdown = reports.markdown(grade)
    return {"table": reports.table(grade, show_hidden=False), "job log": reports.job_log(grade),
            "report.md": markdown,
            "ci comment": ghactions.comment_body(markdown, {"pr": 7, "sha": None}, grade.protections),
            "ci results.json": reports.student_results(grade)["output"],
            "gradescope results.json": reports.gradescope_results(grade)["output"],
            "feedback.md": reports.feedback("eve", stored), "feedback.html": feedback_html("eve", stored),
            "nbgrader cell": graded_cell(grade, part)}


def graded_cell(grade, part):
    pytest.importorskip("nbgrader")
    from nbformat.notebooknode import from_dict

    from autograder.deploy import nbgrader_plugins

    points = grade.parts[part].max_score
    cell = from_dict({"cell_type": "code", "metadata": {"nbgrader": {"points": points}}, "source": "", "outputs": []})
    shown, _ = nbgrader_plugins.GradeInSandbox()._outputs(cell, part, grade, False, "")
    return shown["data"]["text/plain"]


def readable(text):
    """The words a reader sees: Markdown's backslash escapes and HTML's entities taken away."""
    import html

    return html.unescape(re.sub(r"\\(.)", r"\1", text))


def items_of(text, fmt, part):
    """[(points, the item's line)] of every item about `part` (each format writes an item as one line)."""
    text = readable(text)
    if fmt == "feedback.html":
        found = re.findall(rf'<div class="check">({part}[:/ ][^<]*)</div><div>([^<]*)</div>', text)
        lines = [f"{title} {message}" for title, message in found]
    elif fmt == "nbgrader cell":  # the graded cell of the part: every item is its part's
        lines = [line for line in text.splitlines() if line.startswith("  - ")]
    else:
        lines = [line for line in text.splitlines()
                 if re.match(rf"\s*(\|\s*)?\s*- (\*\*)?{part}[:/ *]", line) and re.search(r"\(-\d", line)]
    return [(float(re.search(r"\(-(\d+(?:\.\d+)?)\)", line).group(1)), line) for line in lines]


# the quick subset (`-m quick`): one cause in one part, and one over a part's whole mask
QUICK_KINDS = ("softmax_dim0", "diagonal0")


@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.quick) if k in QUICK_KINDS else k for k in EDITS])
def test_one_item_per_cause_in_every_channel(grades, kind):
    grade = grades[kind]
    for part in GRADED[kind]:  # the scores are those before folding; a part without a bug keeps full marks
        p = grade.parts[part]
        assert p.score == SCORES[kind].get(part, p.max_score), (part, p)
    for part, expected in ITEMS[kind].items():
        lost = sum(c.max_score - c.score for c in grade.checks if c.part == part)
        assert sum(points for _, points, _ in expected) == lost  # every point lost is in exactly one item
        for fmt, text in channels(grade, part).items():
            found = items_of(text, fmt, part)
            assert [points for points, _ in found] == [points for _, points, _ in expected], (fmt, found)
            for (_, line), (lead, _, _) in zip(found, expected, strict=True):
                assert lead in line, (fmt, line)
            said = readable(text)
            for _, _, listed in expected:
                if listed:
                    assert f"this one mistake fails {listed}" in said, (fmt, said)
            assert "one of these mistakes" not in said, fmt  # the several possibilities are said by the one cause
            assert "hidden check failed" not in said, fmt


def test_each_channel_names_no_hidden_check(grades):
    grade = grades["diagonal0"]
    hidden = [c.name for c in grade.checks if c.visibility != "visible" and not c.passed]
    assert hidden
    for fmt, text in channels(grade, "causal").items():
        for name in hidden:
            assert name not in text, (fmt, name)


# ---------------------------------------------------------------- withheld diagnoses (no sandbox)

RUBRIC = """\
version: 1
parts:
  simple_attention:
    checks:
      weights_book: {points: 1, visibility: visible}
      weights_unseen: {points: 2, visibility: hidden, diagnosis: withheld}
      vectors_book: {points: 1, visibility: visible}
      vectors_unseen: {points: 1, visibility: hidden}
      naive: {points: 2, visibility: hidden}
"""
SECRET = "WITHHELD the softmax runs over dim 0"
SEVERAL = f"one of these mistakes, which give the same numbers here: {SECRET}; or the weight matrix is transposed"


def _graded(tmp_path, results):
    (tmp_path / "grading.yml").write_text(RUBRIC)
    part = load(tmp_path / "grading.yml").parts["simple_attention"]
    run = PartRun("simple_attention", results)
    runner.part_diagnosis(run)
    grade = grading.Grade("eve")
    grading.score_part(grade, part, run)
    return grade


def _said(grade):
    stored = reports.results_json(grade)
    return {"table": reports.table(grade, show_hidden=False), "report.md": reports.markdown(grade),
            "gradescope": reports.gradescope_results(grade)["output"], "ci": reports.student_results(grade)["output"],
            "feedback.md": reports.feedback("eve", stored), "feedback.html": feedback_html("eve", stored)}


def test_a_diagnosis_only_a_withheld_check_names_leads_nothing(tmp_path):
    """The weights' checks name the cause alone, but one is withheld and the visible one is not among
    the failed (it passed); the context vectors' checks name it among several. The part's diagnosis is
    the withheld check's cause: no item is led by it, the withheld check stays 'hidden check failed'."""
    grade = _graded(tmp_path, [
        CheckResult("simple_attention", "weights_book", True),
        CheckResult("simple_attention", "weights_unseen", False, f"x is wrong: {SECRET}", cause=SECRET),
        CheckResult("simple_attention", "vectors_book", False, f"v is wrong: {SEVERAL}", cause=SEVERAL),
        CheckResult("simple_attention", "vectors_unseen", False, f"w is wrong: {SEVERAL}", cause=SEVERAL),
        CheckResult("simple_attention", "naive", True)])
    assert grade.parts["simple_attention"].diagnosis == SECRET and grade.parts["simple_attention"].score == 3
    items = common.what_to_fix(grade.checks, grade.parts)
    assert [(i.message, i.points) for i in items] == [(common.WITHHELD, 2), (SEVERAL, 2)]
    for fmt, text in _said(grade).items():
        assert "this one mistake" not in readable(text), fmt
        assert not re.search(rf"\(-\d+\): {re.escape(SECRET)}", readable(text)), fmt


@pytest.mark.quick
def test_a_withheld_check_is_never_folded(tmp_path):
    """A visible check names the cause: the checks it explains fold under it, but the withheld check
    of the same cause stays its own item, 'hidden check failed', with its own points."""
    grade = _graded(tmp_path, [
        CheckResult("simple_attention", "weights_book", False, f"x is wrong: {SECRET}", cause=SECRET),
        CheckResult("simple_attention", "weights_unseen", False, f"y is wrong: {SECRET}", cause=SECRET),
        CheckResult("simple_attention", "vectors_book", False, f"v is wrong: {SEVERAL}", cause=SEVERAL),
        CheckResult("simple_attention", "vectors_unseen", False, "w is wrong", unexplained=True),
        CheckResult("simple_attention", "naive", False, "it takes exp(x) but does not divide by the sum",
                    cause="it takes exp(x) but does not divide by the sum")])
    items = common.what_to_fix(grade.checks, grade.parts)
    assert [(i.message, i.points, i.lost_note) for i in items] == [
        (SECRET, 3, "this one mistake fails weights_book (-1), vectors_book (-1) and 1 hidden check (-1)"),
        (common.WITHHELD, 2, ""),
        ("it takes exp(x) but does not divide by the sum", 2, "")]
    assert sum(i.points for i in items) == grade.max_score - grade.score == 7
    for fmt, text in _said(grade).items():
        assert "hidden check failed" in readable(text) and "weights_unseen" not in text, fmt


def test_a_wrong_number_is_not_told_a_cause_only_a_withheld_check_names(tmp_path):
    """runner.part_diagnosis tells a check that named no cause the part's diagnosis as the likely one;
    where only a withheld check names it, the check keeps its own words (the class report still has it)."""
    unseen = CheckResult("simple_attention", "weights_unseen", False, f"x is wrong: {SECRET}", cause=SECRET)
    book = CheckResult("simple_attention", "vectors_book", False, "v is wrong", unexplained=True)
    run = PartRun("simple_attention", [unseen, book])
    runner.part_diagnosis(run, {"weights_unseen"})
    assert run.diagnosis == SECRET and book.message == "v is wrong"
    run = PartRun("simple_attention", [unseen, book])
    runner.part_diagnosis(run)  # not withheld: told
    assert book.message == f"v is wrong (most likely the cause named by this part's other failed checks: {SECRET})"


def test_the_class_report_has_one_row_for_the_split_and_merge(grades):
    """Issue 34 item 5: the heads split and merged without the transpose were 10 one-student rows of the
    class report's misconceptions; now one, for the one cause."""
    from autograder.reports import class_report

    rows = class_report.misconceptions([("eve", reports.results_json(grades["split_and_merge"]), "")])
    assert [(row["part"], row["message"], len(row["students"])) for row in rows] == [("mha", SPLIT_AND_MERGE, 1)]


MASK_WORDS = ("the mask is inverted", "the mask is applied after the softmax", "the future scores are set to 0",
              "the mask's diagonal is off by one")


@pytest.mark.quick
def test_a_mask_mistake_has_one_wording_in_one_head_and_in_many():
    """One source for each message (2026-11-28): multi_head_mistakes wrote its own sentences for an inverted
    mask ("the True (or 1) entries must be above the diagonal"), a mask after the softmax without
    renormalizing (no fix), 0 instead of -inf and both diagonals, beside the constants weight_mistakes
    uses: one mistake, two causes in a part's diagnosis. Now each mask mistake is misconceptions' one
    constant in both lists, and no other sentence of either says it."""
    from autograder.suites import dependencies, helpers, misconceptions

    torch = pytest.importorskip("torch")
    state = helpers.drawn_linears(dependencies.SEED, helpers.qkv_layers(3, 4, False) + [("out_proj", 4, 4, True)])
    x, scores = torch.rand(2, 5, 3), torch.rand(2, 5, 5)
    one = {why for _, why in misconceptions.weight_mistakes(scores, 4, True)}
    many = {why for _, why in misconceptions.multi_head_mistakes(x, state, 2)}
    constants = {misconceptions.INVERTED, misconceptions.AFTER_SOFTMAX, misconceptions.AFTER_SOFTMAX_INF,
                 misconceptions.FUTURE_ZERO, misconceptions.HIDES_DIAGONAL, misconceptions.SEES_NEXT}
    assert constants <= one and constants <= many
    for words in (one, many):
        assert {why for why in words if why.startswith(MASK_WORDS)} == constants
