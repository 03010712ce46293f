"""Round 3, class 3, at the runner: once a child has seen a hidden input, a check's message keeps
only numbers the grader wrote (in the suites' source); any other number (a width, a count of
parameters, num_heads=..., how far off an output is: the child could pick each) becomes '#'.
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
    assert hidden.message == ("gpt2_small_attention() is built with num_heads=#: GPT-2 small has 12 heads of "
                              "head_dim 64 (off by up to #, tolerance 1e-4)")
    visible = runner.run_check("exercises", "x", built_with_heads, FakeStudent(False), {})
    assert "num_heads=73519" in visible.message and "0.03125" in visible.message
