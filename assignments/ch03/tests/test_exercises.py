"""exercises.py: Exercises 3.2 and 3.3 (book 3.6)."""
import pytest
import torch

from _diagnose import waits_for

pytestmark = pytest.mark.exercises


def test_exercise_3_2_two_dimensional_output(load, book, check):
    causal, mha = load("causal"), load("mha")
    if check.waits(waits_for(book, "two_dim_wrapper", causal=causal, mha=mha)):
        return
    torch.manual_seed(123)
    wrapper = load("exercises").two_dim_wrapper(3, 6)
    check.close(wrapper(book["batch"]), book["ex32_mha_wrapper_dout1_seed123"],
                "torch.manual_seed(123); two_dim_wrapper(3, 6)(batch)")


def test_exercise_3_3_gpt2_small_parameter_count(load, book):
    mha = load("exercises").gpt2_small_attention()
    count = sum(p.numel() for p in mha.parameters())
    assert count == book["ex33_param_count"], \
        f"gpt2_small_attention() parameters: expected {book['ex33_param_count']:,}, got {count:,}"


def test_exercise_3_3_output_shape(load, check):
    mha = load("exercises").gpt2_small_attention()
    check.shape(mha(torch.rand(1, 4, 768)), (1, 4, 768), "gpt2_small_attention() on (1, 4, 768)")
