"""Attack: Exercise 3.1 without copying a single weight.

sa_v1 is rewired to answer as sa_v2 does: its forward is replaced (an instance attribute), a forward
hook swaps its output for sa_v2's, its own matrices stay in the graph (so gradients still reach them),
its state_dict (an instance attribute) says it holds sa_v2's weights, transposed, and a copy of them
is kept in buffers it never uses. A grader that judged the transfer by sa_v1's outputs, read sa_v1's
weights through the module's own methods, or took any tensor sa_v1 holds for its matrices, would give
full marks. The baseline (attack off) copies nothing and rewires nothing.
"""
ATTACK = "@@ATTACK@@" == "on"  # the corpus builds each case twice: attack on, and off (the baseline)
NAMES = ("W_query", "W_key", "W_value")


def transfer_v2_to_v1(sa_v2, sa_v1):
    if not ATTACK:
        return sa_v1
    own_forward = sa_v1.forward

    def forward(x):
        return sa_v2(x) + 0 * own_forward(x).sum()  # sa_v1's matrices keep receiving (zero) gradients

    sa_v1.forward = forward
    sa_v1.register_forward_hook(lambda module, args, output: sa_v2(args[0]) + 0 * output.sum())
    own_state = sa_v1.state_dict

    def state_dict(*args, **kwargs):
        state = own_state(*args, **kwargs)
        for name in NAMES:
            state[name] = getattr(sa_v2, name).weight.detach().T.clone()
        return state

    sa_v1.state_dict = state_dict
    for name in NAMES:
        sa_v1.register_buffer(f"copy_of_{name}", getattr(sa_v2, name).weight.detach().T.clone())
    return sa_v1
