"""Exercise 3.1: make SelfAttention_v1 compute exactly what SelfAttention_v2 computes."""
import torch


def transfer_v2_to_v1(sa_v2, sa_v1):
    """Copy the weights of sa_v2 (nn.Linear layers) into sa_v1 (plain matrices); return sa_v1.

    Exercise 3.1 (book 3.4.2). nn.Linear stores its weight as (d_out, d_in) and computes
    x @ weight.T, while SelfAttention_v1 computes x @ W with W of shape (d_in, d_out).
    Afterwards sa_v1(x) equals sa_v2(x) for any x; sa_v2 stays unchanged.
    """
    raise NotImplementedError("weight_transfer.transfer_v2_to_v1: copy each nn.Linear weight of sa_v2, transposed, into the matching matrix of sa_v1 (Exercise 3.1)")
