"""The book's printed values, as a snapshot the suites carry with them (suites/snapshots/book.json).

The snapshot is made from the reference solutions (`python -m autograder.suites.book --refresh
[--chapter FILE]`, default this repository's chapter.yml);
`python -m autograder book-check` (autograder/authoring/book_check.py) proves they agree with what the book
prints (assignments/ch03/tests/book_examples.json) to 1e-4.
"""
import functools
import json
from pathlib import Path

import torch

SNAPSHOT = Path(__file__).with_name("snapshots") / "book.json"


class Book(dict):
    """name -> tensor (or int); .inputs is the 6x3 'Your journey starts with one step' batch row."""

    @property
    def inputs(self):
        return self["inputs"]

    @property
    def batch(self):
        return torch.stack((self["inputs"], self["inputs"]))


@functools.lru_cache(maxsize=1)
def values():
    raw = json.loads(SNAPSHOT.read_text())
    book = Book()
    for name, value in raw.items():
        book[name] = value if isinstance(value, int) else torch.tensor(value, dtype=torch.float32)
    return book


def _forget(modules):
    import sys

    for module in modules:
        sys.modules.pop(module, None)


def compute_from_solutions(folder, parts=None):
    """Recompute every snapshot value by running the reference modules in `folder` (trusted code,
    imported afresh: nothing is kept from another folder). parts: the chapter's modules, in its
    manifest's order (the caller's chapter; None: this repository's, chapter.current())."""
    import importlib
    import sys

    if parts is None:
        from autograder.chapter import current

        parts = current().parts
    modules = tuple(parts)  # simple_attention, self_attention_v1, v2, weight_transfer, causal, mha, ...
    _forget(modules)
    sys.path.insert(0, str(folder))
    try:
        sa, v1, v2, wt, causal, mha, ex, npa = (importlib.import_module(m) for m in modules)
    finally:
        sys.path.remove(str(folder))
        _forget(modules)
    inputs = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
                           [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]])
    batch = torch.stack((inputs, inputs))

    def seeded(seed, make):
        torch.manual_seed(seed)
        return make()

    sa_v2_789 = seeded(789, lambda: v2.SelfAttention_v2(3, 2))
    scores_v2 = sa_v2_789.W_query(inputs) @ sa_v2_789.W_key(inputs).T
    sa_v1 = seeded(123, lambda: v1.SelfAttention_v1(3, 2))
    sa_v2 = seeded(123, lambda: v2.SelfAttention_v2(3, 2))
    out = {
        "inputs": inputs,
        "attn_scores": sa.attention_scores(inputs),
        "attn_scores_2": sa.attention_scores(inputs)[1],
        "attn_weights": sa.attention_weights(sa.attention_scores(inputs)),
        "attn_weights_2": sa.softmax_naive(inputs @ inputs[1]),
        "context_vec_2": sa.context_vector(inputs, 1),
        "all_context_vecs": sa.context_vectors(inputs),
        "W_query_seed123": sa_v1.W_query, "W_key_seed123": sa_v1.W_key, "W_value_seed123": sa_v1.W_value,
        "sa_v1_seed123": sa_v1(inputs),
        "sa_v2_seed789": sa_v2_789(inputs),
        "attn_scores_sa_v2": scores_v2,
        "causal_attn_weights": causal.masked_attention_weights(scores_v2, 2),
        "ex31_sa_v1": wt.transfer_v2_to_v1(sa_v2, seeded(123, lambda: v1.SelfAttention_v1(3, 2)))(inputs),
        "ex31_sa_v2": sa_v2(inputs),
        "causal_attention_seed123": seeded(123, lambda: causal.CausalAttention(3, 2, 6, 0.0))(batch),
        "mha_wrapper_seed123": seeded(123, lambda: mha.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2))(batch),
        "mha_seed123": seeded(123, lambda: mha.MultiHeadAttention(3, 2, 6, 0.0, num_heads=2))(batch),
        "ex32_mha_wrapper_dout1_seed123": seeded(123, lambda: ex.two_dim_wrapper(3, 6))(batch),
        "ex33_param_count": sum(p.numel() for p in ex.gpt2_small_attention().parameters()),
        "gpt3_175b_block_params": 96 * npa.block_param_count(12288, 4 * 12288),
    }
    return {k: v if isinstance(v, int) else torch.round(v.detach().double(), decimals=6).tolist() for k, v in out.items()}


def refresh(manifest=None, path=None):
    """Write the snapshot (path: default SNAPSHOT) from the chapter's reference solutions (manifest: a
    chapter.Chapter; None: this repository's) -> the path written."""
    if manifest is None:
        from autograder.chapter import current

        manifest = current()
    path = SNAPSHOT if path is None else Path(path)
    path.write_text(json.dumps(compute_from_solutions(manifest.solutions, manifest.parts), indent=None) + "\n")
    return path


def main(command_line=None):
    """`python -m autograder.suites.book --refresh [--chapter FILE]` (default: this repository's chapter.yml)."""
    import argparse

    from autograder import chapter

    parser = argparse.ArgumentParser(prog="python -m autograder.suites.book")
    parser.add_argument("--refresh", action="store_true", required=True,
                        help="rewrite suites/snapshots/book.json from the chapter's reference solutions")
    parser.add_argument("--chapter", metavar="FILE", default=None,
                        help="the chapter manifest (chapter.yml) to work on (default: this repository's)")
    args = parser.parse_args(command_line)
    try:
        manifest = chapter.load(args.chapter) if args.chapter else chapter.current()
    except chapter.ManifestError as e:
        parser.error(str(e))
    print(f"wrote {refresh(manifest)}")
    return 0


if __name__ == "__main__":
    main()
