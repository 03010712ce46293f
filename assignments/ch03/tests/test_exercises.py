"""exercises.py: Exercises 3.2 and 3.3 (book 3.6)."""
import pytest
import torch

from _diagnose import DROPOUT_IGNORED, gpt2_problem, waits_for

pytestmark = pytest.mark.exercises


def test_exercise_3_2_two_dimensional_output(load, book, check):
    causal, mha = load("causal"), load("mha")
    if check.waits(waits_for(book, "two_dim_wrapper", causal=causal, mha=mha)):
        return
    torch.manual_seed(123)
    wrapper = load("exercises").two_dim_wrapper(3, 6)
    check.close(wrapper(book["batch"]), book["ex32_mha_wrapper_dout1_seed123"],
                "torch.manual_seed(123); two_dim_wrapper(3, 6)(batch)")


def test_exercise_3_2_passes_its_dropout_on(load, book, check):
    causal, mha = load("causal"), load("mha")
    if check.waits(waits_for(book, "two_dim_wrapper", causal=causal, mha=mha)):
        return
    x = torch.rand(2, 6, 3)
    # the first token attends to itself only: in training mode its weight is dropped (0) or doubled, never as in eval
    ignored = []
    for wrapper in (mha.MultiHeadAttentionWrapper(3, 1, 6, 0.5, num_heads=2), load("exercises").two_dim_wrapper(3, 6, 0.5)):
        trained = wrapper(x)
        wrapper.eval()
        ignored.append(torch.allclose(trained, wrapper(x)))
    # where your MultiHeadAttentionWrapper's own dropout does nothing, the tests of causal.py and mha.py say why
    if ignored[1] and not ignored[0]:
        check.fail(f"two_dim_wrapper(3, 6, 0.5) gives in training mode what it gives in eval mode: {DROPOUT_IGNORED}")


def test_exercise_3_3_gpt2_small_parameter_count(load, book, check):
    mha = load("mha")
    if check.waits(waits_for(book, "gpt2_small_attention", heads=mha)):
        return
    gpt2_heads = load("exercises").gpt2_small_attention()
    count = sum(p.numel() for p in gpt2_heads.parameters())
    assert count == book["ex33_param_count"], \
        f"gpt2_small_attention() parameters: expected {book['ex33_param_count']:,}, got {count:,}"


def test_exercise_3_3_output_shape(load, book, check):
    mha = load("mha")
    if check.waits(waits_for(book, "gpt2_small_attention", heads=mha)):
        return
    mha = load("exercises").gpt2_small_attention()
    check.shape(mha(torch.rand(1, 4, 768)), (1, 4, 768), "gpt2_small_attention() on (1, 4, 768)")


def test_exercise_3_3_twelve_heads_the_whole_context_and_no_dropout(load, book, check):
    mha = load("mha")
    if check.waits(waits_for(book, "gpt2_small_attention", heads=mha)):
        return
    torch.manual_seed(0)
    check.no_problem(gpt2_problem(load("exercises").gpt2_small_attention(), load("mha")), "gpt2_small_attention()")
