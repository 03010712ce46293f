"""Issue 30 item 4 (bullets 2, 3 and 5): the student is told the real cause, once.

- a constructor that takes the contract's names in another order is called again with keywords,
  so the class's other mistake (here: keys from the query weights) is still diagnosed, and the
  order is named as the mistake it is;
- `assert (cond, "msg")` is read from the source (by the grader, with ast) and explained;
- the wrapper's missing qkv_bias is explained with the wrapper's own signature.
Each case states the scores of the parts it touches and the words of their messages.
"""
import pytest
from part_edits import failed, grade, scores, submission

from autograder import source_reading

REORDERED = ("causal", "def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):",
             "def __init__(self, d_in, d_out, dropout, context_length, qkv_bias=False):")
ORDER = ("CausalAttention.__init__ takes (d_in, d_out, dropout, context_length, qkv_bias) where the specification "
         "is (d_in, d_out, context_length, dropout, qkv_bias), so a call in the specified order breaks")


def test_a_reordered_constructor_is_called_with_keywords_and_keeps_diagnosing(engine, tmp_path):
    result = grade(engine, submission(tmp_path, REORDERED, ("causal", "keys = self.W_key(x)", "keys = self.W_query(x)")),
                   ["causal"])
    lost = failed(result, "causal")
    assert scores(result)["causal"] < 22 and "causal_mask_marks_the_future" not in lost  # a function: no class built
    assert all(ORDER in m for name, m in lost.items() if name not in ("masked_weights_book_example",
                                                                      "masked_weights_unseen_scores")), lost
    assert any("the keys are computed with the query weights" in m for m in lost.values()), lost


def test_a_reordered_constructor_alone_is_named_as_the_order(engine, tmp_path):
    result = grade(engine, submission(tmp_path, REORDERED), ["causal"])
    lost = failed(result, "causal")
    assert lost and all(ORDER in m for m in lost.values()), lost
    assert any("called with keywords it passes this check" in m for m in lost.values()), lost


@pytest.mark.quick
def test_a_tuple_assert_is_explained(engine, tmp_path):
    edit = ("mha", '        if d_out % num_heads != 0:\n            raise ValueError(f"d_out ({d_out}) must be divisible '
                   'by num_heads ({num_heads})")\n',
            '        assert (d_out % num_heads == 0, "d_out must be divisible by num_heads")\n')
    result = grade(engine, submission(tmp_path, edit), ["mha"])
    lost = failed(result, "mha")
    assert scores(result) == {"mha": 21} and list(lost) == ["mha_rejects_indivisible_d_out"], lost
    assert "a tuple is always true, so your check never fires" in lost["mha_rejects_indivisible_d_out"]
    assert "(mha.py, line " in lost["mha_rejects_indivisible_d_out"]


@pytest.mark.quick
def test_a_plain_assert_is_not_a_tuple():
    source = "class MultiHeadAttention:\n    def __init__(self, d_out, h):\n        assert d_out % h == 0, 'no'\n" \
             "        assert (d_out % h == 0)\n"
    assert source_reading.tuple_asserts(source, "MultiHeadAttention") == []
    assert source_reading.tuple_asserts(source.replace("assert (d_out % h == 0)", "assert (d_out, 'x')"),
                                        "MultiHeadAttention") == [4]


def test_the_wrapper_s_missing_qkv_bias_is_explained_with_the_wrapper_s_signature(engine, tmp_path):
    edits = [("mha", "    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):\n"
                     "        \"\"\"Keep num_heads",
              "    def __init__(self, d_in, d_out, context_length, dropout, num_heads):\n        \"\"\"Keep num_heads"),
             ("mha", "[CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]",
              "[CausalAttention(d_in, d_out, context_length, dropout) for _ in range(num_heads)]")]
    result = grade(engine, submission(tmp_path, *edits), ["mha"])
    lost = failed(result, "mha")
    said = [m for m in lost.values() if "no qkv_bias argument" in m]
    assert said and all("MultiHeadAttentionWrapper(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)"
                        in m and "MultiHeadAttention(" not in m.replace("MultiHeadAttentionWrapper(", "") for m in said)
    assert all(name.startswith("wrapper_") for name in lost), lost
