"""weight_transfer.py: Exercise 3.1, SelfAttention_v1 computing what SelfAttention_v2 computes."""
import pytest
import torch

from _diagnose import TRANSPOSE, transfer_problem, waits_for

pytestmark = pytest.mark.weight_transfer


def seeded_pair(load):
    torch.manual_seed(123)
    sa_v1 = load("self_attention_v1").SelfAttention_v1(3, 2)
    torch.manual_seed(123)
    sa_v2 = load("self_attention_v2").SelfAttention_v2(3, 2)
    return sa_v1, sa_v2


def test_book_example_after_the_transfer(load, book, check):
    self_attention_v1, self_attention_v2 = load("self_attention_v1"), load("self_attention_v2")
    if check.waits(waits_for(book, "transfer_v2_to_v1", v1=self_attention_v1, v2=self_attention_v2)):
        return
    sa_v1, sa_v2 = seeded_pair(load)
    with check.shape_errors("transfer_v2_to_v1(sa_v2, sa_v1)", TRANSPOSE):
        returned = load("weight_transfer").transfer_v2_to_v1(sa_v2, sa_v1)
    assert returned is sa_v1, "transfer_v2_to_v1 should return sa_v1 (the object it was given)"
    check.no_problem(transfer_problem(sa_v1, sa_v2), "transfer_v2_to_v1(sa_v2, sa_v1)")
    check.close(sa_v1(book["inputs"]), book["ex31_sa_v1"], "sa_v1(inputs) after the transfer")
    check.close(sa_v2(book["inputs"]), book["ex31_sa_v2"], "sa_v2(inputs) after the transfer")


def test_outputs_agree_on_other_inputs_and_sa_v2_is_untouched(load, book, check):
    self_attention_v1, self_attention_v2 = load("self_attention_v1"), load("self_attention_v2")
    if check.waits(waits_for(book, "transfer_v2_to_v1", v1=self_attention_v1, v2=self_attention_v2)):
        return
    sa_v1, sa_v2 = seeded_pair(load)
    before = {name: p.detach().clone() for name, p in sa_v2.named_parameters()}
    with check.shape_errors("transfer_v2_to_v1(sa_v2, sa_v1)", TRANSPOSE):
        load("weight_transfer").transfer_v2_to_v1(sa_v2, sa_v1)
    check.no_problem(transfer_problem(sa_v1, sa_v2), "transfer_v2_to_v1(sa_v2, sa_v1)")
    for name, p in sa_v2.named_parameters():
        assert torch.equal(p, before[name]), f"transfer_v2_to_v1 changed sa_v2.{name}; only sa_v1 should change"
    x = torch.rand(5, 3, generator=torch.Generator().manual_seed(0))
    check.close(sa_v1(x), sa_v2(x).detach(), "sa_v1(x) compared with sa_v2(x) on 5 random tokens")
