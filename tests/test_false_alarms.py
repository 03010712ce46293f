"""Issue 30 item 3 (and item 4's first bullet): correct code named or typed the learner's way keeps
its points; a wrapper under another name is charged in mha only, and the exercises say what is wrong
with the student's own run, not the grader's stand-in's.

Each case grades a copy of the solutions with edits and states every affected part's score.
"""
import pytest
from part_edits import failed, grade, scores, submission

RENAMED_BUFFER = [("mha", 'self.register_buffer("mask",', 'self.register_buffer("causal_mask",'),
                  ("mha", "self.mask.bool()", "self.causal_mask.bool()")]
RENAMED_CAUSAL_BUFFER = [("causal", 'self.register_buffer("mask",', 'self.register_buffer("future",'),
                         ("causal", "self.mask.bool()", "self.future.bool()")]
BOOK_LOOPS = [  # float32 buffers made as in the book's loops, no dtype given
    ("simple_attention", "torch.empty(inputs.shape[0], dtype=inputs.dtype, device=inputs.device)", "torch.empty(inputs.shape[0])"),
    ("simple_attention", "torch.zeros(query.shape, dtype=inputs.dtype, device=inputs.device)", "torch.zeros(query.shape)"),
    ("simple_attention", "    return attention_weights(attention_scores(inputs)) @ inputs\n",
     "    n = inputs.shape[0]\n    scores = torch.empty(n, n)\n    for i, x_i in enumerate(inputs):\n"
     "        for j, x_j in enumerate(inputs):\n            scores[i, j] = torch.dot(x_i, x_j)\n"
     "    return torch.softmax(scores, dim=-1) @ inputs\n"),
]
RENAMED_WRAPPER = [("mha", "class MultiHeadAttentionWrapper(", "class MultiHeadCausalAttentionWrapper("),
                   ("exercises", "from mha import MultiHeadAttention, MultiHeadAttentionWrapper",
                    "from mha import MultiHeadAttention, MultiHeadCausalAttentionWrapper"),
                   ("exercises", "return MultiHeadAttentionWrapper(", "return MultiHeadCausalAttentionWrapper(")]
WRAPPER_POINTS = 5  # wrapper_book_example 2, _builds_its_heads 1, _concatenates_its_heads 1, _unseen_seed 1


@pytest.mark.quick
def test_the_mha_mask_buffer_may_have_any_name(engine, tmp_path):
    result = grade(engine, submission(tmp_path, *RENAMED_BUFFER), ["mha"])
    assert scores(result) == {"mha": 22}, failed(result, "mha")


def test_the_causal_mask_buffer_may_have_any_name(engine, tmp_path):
    result = grade(engine, submission(tmp_path, *RENAMED_CAUSAL_BUFFER), ["causal"])
    assert scores(result) == {"causal": 22}, failed(result, "causal")


def test_a_plain_attribute_mask_still_loses_the_buffer_points(engine, tmp_path):
    edits = [("mha", 'self.register_buffer("mask", torch.triu', "self.mask = (torch.triu")]
    folder = submission(tmp_path, *edits)
    path = folder / "mha.py"
    path.write_text(path.read_text().replace("self.mask = (torch.triu(torch.ones(context_length, context_length), "
                                             "diagonal=1))", "self.mask = torch.triu(torch.ones(context_length, "
                                                             "context_length), diagonal=1)"))
    result = grade(engine, folder, ["mha"])
    lost = failed(result, "mha")
    assert "mha_structure" in lost and "register its (context_length, context_length) causal mask" in \
        lost["mha_structure"], lost


def test_simple_attention_with_the_book_s_float32_buffers_keeps_full_marks(engine, tmp_path):
    result = grade(engine, submission(tmp_path, *BOOK_LOOPS), ["simple_attention"])
    assert scores(result) == {"simple_attention": 10}, failed(result, "simple_attention")


@pytest.mark.quick
def test_a_wrapper_under_another_name_is_charged_in_mha_only(engine, tmp_path):
    result = grade(engine, submission(tmp_path, *RENAMED_WRAPPER), ["mha", "exercises"])
    assert scores(result) == {"mha": 22 - WRAPPER_POINTS, "exercises": 8}, (failed(result, "mha"),
                                                                           failed(result, "exercises"))


def test_the_student_s_own_run_is_diagnosed_not_the_stand_in_s(engine, tmp_path):
    """The same renamed wrapper, and two_dim_wrapper fixes dropout at 0.2: the exercise's checks say so
    (the stand-in mha has no MultiHeadCausalAttentionWrapper to import; that is not the student's news)."""
    edits = RENAMED_WRAPPER + [("exercises", "MultiHeadCausalAttentionWrapper(d_in, 1, context_length, dropout,",
                                "MultiHeadCausalAttentionWrapper(d_in, 1, context_length, 0.2,")]
    result = grade(engine, submission(tmp_path, *edits), ["mha", "exercises"])
    lost = failed(result, "exercises")
    assert scores(result)["exercises"] == 4 and set(lost) == {"ex32_book_example", "ex32_two_heads_of_width_one"}
    for message in lost.values():
        assert "cannot import" not in message and "dropout" in message, message
