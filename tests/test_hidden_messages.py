"""Round 3 class 3 and round 4 class 3, at the runner: once a child has seen a hidden input, every
number of a check's message becomes '#' (a width, a count of parameters, num_heads=..., how far off
an output is; and the grader's own numbers too, since which of them appears could be the child's
choice: 12, 768 or 7 heads), but for numbers that are part of a name (GPT-2, Exercise 3.2).
Before any hidden input the message is left as it is."""
from autograder import runner
from autograder.suites import expect, test_exercises


class FakeStudent:
    def __init__(self, saw_hidden):
        self.saw_hidden = saw_hidden


def built_with_heads(student):
    expect.fail("gpt2_small_attention() is built with num_heads=73519: GPT-2 small has 12 heads of head_dim 64 "
                "(off by up to 0.03125, tolerance 1e-4)")


built_with_heads.__module__ = test_exercises.__name__  # judged as a check of that suite


def test_a_number_the_child_could_pick_is_masked_after_a_hidden_input():
    hidden = runner.run_check("exercises", "x", built_with_heads, FakeStudent(True), {})
    assert hidden.message == ("gpt2_small_attention() is built with num_heads=#: GPT-2 small has # heads of "
                              "head_dim # (off by up to #, tolerance #)")
    visible = runner.run_check("exercises", "x", built_with_heads, FakeStudent(False), {})
    assert "num_heads=73519" in visible.message and "0.03125" in visible.message


def choose_a_suite_number(student):
    """The child's answer decides which of the suite's own numbers the message would show."""
    expect.fail(f"gpt2_small_attention() is built with num_heads={student.picked}")


choose_a_suite_number.__module__ = test_exercises.__name__


def test_which_of_the_grader_s_numbers_appears_is_not_the_child_s_choice():
    messages = set()
    for picked in (12, 768, 7):
        student = FakeStudent(True)
        student.picked = picked
        messages.add(runner.run_check("exercises", "x", choose_a_suite_number, student, {}).message)
    assert messages == {"gpt2_small_attention() is built with num_heads=#"}
    assert runner.grader_numbers_only("Exercise 3.2 asks for GPT-2's 12 heads") == "Exercise 3.2 asks for GPT-2's # heads"
