"""Issue 12 item 6: a passed check can carry a note for the student (autograder.suites.expect.Note).

The book's own Exercise 3.1 answer, nn.Parameter(sa_v2.W_query.weight.T), shares storage with
sa_v2: it keeps full marks, and the grade says so in a visible note (grade.notes, printed by every
report). The solutions, which copy the weights, get no note.
"""

import pytest
from rubric_points import PART

from autograder import reports, runner, selftest
from autograder.runner import CheckResult
from autograder.suites import expect

ENTRIES = {e.id: e for e in selftest.corpus()}
# transfer_returns_v1_and_keeps_v2 is a hidden check: its note names the part only
NOTE_START = "weight_transfer: Note (no points taken): after the transfer"


def grade(engine, folder):
    return engine.grade(folder, parts=["weight_transfer"])


def test_a_check_raising_note_passes_with_its_message():
    def check():
        raise expect.Note("worth knowing")

    assert runner.run_check("p", "n", check, None, {}) == CheckResult("p", "n", True, "worth knowing")


def test_the_books_exercise_3_1_answer_keeps_full_marks_with_a_visible_note(engine, tmp_path):
    entry = ENTRIES["transfer-book-answer-shares-storage"]
    result = grade(engine, selftest.apply(entry, tmp_path / "submission"))
    assert result.parts["weight_transfer"].score == PART["weight_transfer"] == result.parts["weight_transfer"].max_score
    assert all(check.passed for check in result.checks)
    notes = [note for note in result.notes if note.startswith(NOTE_START)]
    assert len(notes) == 1, result.notes
    assert "share storage with sa_v2's weights" in notes[0] and "training or changing one module changes the other" \
        in notes[0] and "nn.Parameter(weight.T.clone())" in notes[0]
    assert f"note: {notes[0]}" in reports.table(result)
    assert notes[0] in reports.results_json(result)["output"]


@pytest.mark.quick
def test_the_solutions_get_no_note(engine):
    result = grade(engine, selftest.SOLUTIONS)
    assert result.parts["weight_transfer"].score == PART["weight_transfer"]
    assert not [note for note in result.notes if "share storage" in note], result.notes
