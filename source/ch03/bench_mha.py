# A copy of benchmarks/bench_mha.py, made by `python -m autograder notebooks`: do not edit.
# The speed-lab notebook imports it; grading never reads it.
"""The multi-head attention speed lab (book 3.6): five ways to compute the same causal attention.

    .venv/bin/python benchmarks/bench_mha.py                       # CPU: b=2, T=256, d=768, 12 heads
    .venv/bin/python benchmarks/bench_mha.py --device cuda         # GPU: GPT-2 small, b=8, T=1024
    .venv/bin/python benchmarks/bench_mha.py --modules ../mine --plot mha.png

wrapper        MultiHeadAttentionWrapper: one CausalAttention per head, in a Python loop (3.6.1)
efficient      MultiHeadAttention: one projection each for Q, K, V, heads batched by view/transpose (3.6.2)
combined_qkv   one Linear(d, 3d) for Q, K and V together, then the same batched attention
sdpa           combined QKV with torch.nn.functional.scaled_dot_product_attention(is_causal=True)
nn_mha         torch.nn.MultiheadAttention(batch_first=True) with a causal mask, need_weights=False

The wrapper and the efficient class come from --modules (default: the reference solutions), so a
student can time their own. All five get the same weights and are checked to give the same output
before anything is timed. Each time is the median of --repeats runs after --warmup runs, forward
(under torch.no_grad) and forward + backward (the gradient of the output's sum), dropout 0, fp32
unless --dtype says otherwise; on a GPU every run is closed by torch.cuda.synchronize().
Timings are for learning only: the grader never reads a clock (it counts operations instead).
The speed-lab notebook (04_speed_lab) times the student's own classes with lab(); `python -m autograder
notebooks` releases a copy of this file beside the notebooks for it.
"""
import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
CPU_SHAPES = {"batch": 2, "tokens": 256, "d_model": 768, "heads": 12}
GPU_SHAPES = {"batch": 8, "tokens": 1024, "d_model": 768, "heads": 12}  # GPT-2 small, full context
FIVE = ("wrapper", "efficient", "combined_qkv", "sdpa", "nn_mha")


class CombinedQKV(nn.Module):
    """Queries, keys and values from one (d, 3d) projection; attention written out as in 3.6.2."""

    def __init__(self, d, context_length, num_heads):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d // num_heads
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out_proj = nn.Linear(d, d)
        self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).triu(1))

    def heads(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        return q, k, v, b, t

    def forward(self, x):
        q, k, v, b, t = self.heads(x)
        scores = (q @ k.transpose(-2, -1)).masked_fill(self.mask[:t, :t], float("-inf"))
        context = torch.softmax(scores / self.head_dim ** 0.5, dim=-1) @ v
        return self.out_proj(context.transpose(1, 2).reshape(b, t, -1))


class SDPA(CombinedQKV):
    """The same projections; the attention itself by PyTorch's fused kernel."""

    def forward(self, x):
        q, k, v, b, t = self.heads(x)
        context = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out_proj(context.transpose(1, 2).reshape(b, t, -1))


class TorchMHA(nn.Module):
    """nn.MultiheadAttention on x as query, key and value, with the causal mask."""

    def __init__(self, d, context_length, num_heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, num_heads, bias=True, batch_first=True)
        self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).triu(1))

    def forward(self, x):
        t = x.shape[1]
        return self.attn(x, x, x, attn_mask=self.mask[:t, :t], need_weights=False)[0]


class WrapperWithProjection(nn.Module):
    """The wrapper's heads (d // num_heads wide each) followed by the same out_proj as the others,
    so that all five compute one function."""

    def __init__(self, wrapper, d):
        super().__init__()
        self.wrapper, self.out_proj = wrapper, nn.Linear(d, d)

    def forward(self, x):
        return self.out_proj(self.wrapper(x))


def import_mha(folder):
    """The module mha (and the causal it imports) from the .py files in folder."""
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module("mha")
    finally:
        sys.path.pop(0)


def build(modules, d, context_length, num_heads):
    """The five implementations, all holding the weights of one seeded efficient MHA.

    modules: the module mha itself (a notebook passes the student's), or a folder holding mha.py."""
    mha = import_mha(modules) if isinstance(modules, (str, Path)) else modules
    torch.manual_seed(123)
    efficient = mha.MultiHeadAttention(d, d, context_length, 0.0, num_heads)
    hd = d // num_heads
    wq, wk, wv = (getattr(efficient, n).weight.detach() for n in ("W_query", "W_key", "W_value"))
    wo, bo = efficient.out_proj.weight.detach(), efficient.out_proj.bias.detach()
    wrapper = WrapperWithProjection(mha.MultiHeadAttentionWrapper(d, hd, context_length, 0.0, num_heads), d)
    combined, sdpa, torch_mha = CombinedQKV(d, context_length, num_heads), SDPA(d, context_length, num_heads), \
        TorchMHA(d, context_length, num_heads)
    with torch.no_grad():
        for i, head in enumerate(wrapper.wrapper.heads):
            rows = slice(i * hd, (i + 1) * hd)
            head.W_query.weight.copy_(wq[rows])
            head.W_key.weight.copy_(wk[rows])
            head.W_value.weight.copy_(wv[rows])
        for model in (combined, sdpa):
            model.qkv.weight.copy_(torch.cat([wq, wk, wv]))
        torch_mha.attn.in_proj_weight.copy_(torch.cat([wq, wk, wv]))
        torch_mha.attn.in_proj_bias.zero_()
        for proj in (wrapper.out_proj, combined.out_proj, sdpa.out_proj, torch_mha.attn.out_proj):
            proj.weight.copy_(wo)
            proj.bias.copy_(bo)
    return {"wrapper": wrapper, "efficient": efficient, "combined_qkv": combined, "sdpa": sdpa,
            "nn_mha": torch_mha}


def same_function(models, x, atol):
    """Every model's output against the efficient MHA's -> {name: max abs difference}; raises if off."""
    with torch.no_grad():
        want = models["efficient"](x).double()
        diffs = {name: (m(x).double() - want).abs().max().item() for name, m in models.items()}
    off = {k: v for k, v in diffs.items() if v > atol}
    if off:
        raise SystemExit(f"the implementations disagree (max abs difference above {atol:g}): {off}")
    return diffs


def timed(function, device, warmup, repeats):
    """Median wall time of function() in milliseconds."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(warmup):
        function()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def measure(models, x, device, warmup, repeats, backward=True):
    """{name: {"forward": ms, "backward": ms or None}}."""
    results = {}
    for name, model in models.items():
        def forward(model=model):
            with torch.no_grad():
                model(x)

        def forward_backward(model=model):
            model.zero_grad(set_to_none=True)
            model(x).sum().backward()

        results[name] = {"forward": timed(forward, device, warmup, repeats),
                         "backward": timed(forward_backward, device, warmup, repeats) if backward else None}
    return results


def table(results):
    base = results["sdpa"]
    lines = [f"{'implementation':<14} {'forward ms':>11} {'x sdpa':>7} {'fwd+bwd ms':>11} {'x sdpa':>7}"]
    for name, r in results.items():
        row = f"{name:<14} {r['forward']:>11.2f} {r['forward'] / base['forward']:>6.2f}x"
        if r["backward"] is not None:
            row += f" {r['backward']:>11.2f} {r['backward'] / base['backward']:>6.2f}x"
        lines.append(row)
    return "\n".join(lines)


def figure(results, title):
    """A bar chart of the median times, forward and forward + backward (matplotlib; the caller shows or saves it)."""
    import matplotlib.pyplot as plt

    names = list(results)
    phases = [p for p in ("forward", "backward") if all(results[n][p] is not None for n in names)]
    fig, ax = plt.subplots(figsize=(7.5, 3.5))
    width = 0.8 / len(phases)
    for j, phase in enumerate(phases):
        ax.bar([i + j * width for i in range(len(names))], [results[n][phase] for n in names], width,
               label="forward" if phase == "forward" else "forward + backward")
    ax.set_xticks([i + width * (len(phases) - 1) / 2 for i in range(len(names))], names)
    ax.set_ylabel("median time (ms)")
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    return fig


def plot(results, path, title):
    """figure() written to path, with the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = figure(results, title)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def load_fused(model, reference):
    """Copy reference's weights (a CombinedQKV or SDPA) into model, which must have the same layout: qkv, an
    nn.Linear(d, 3 * d) whose rows are the query, key and value projections in that order, and out_proj."""
    for name in ("qkv", "out_proj"):
        mine, theirs = getattr(model, name, None), getattr(reference, name)
        if not isinstance(mine, nn.Linear) or mine.weight.shape != theirs.weight.shape:
            shape = tuple(theirs.weight.shape[::-1])
            raise ValueError(f"{type(model).__name__}.{name} should be an nn.Linear{shape}, got {mine!r}")
    with torch.no_grad():
        model.qkv.weight.copy_(reference.qkv.weight)
        if model.qkv.bias is not None:
            model.qkv.bias.zero_()
        model.out_proj.weight.copy_(reference.out_proj.weight)
        model.out_proj.bias.copy_(reference.out_proj.bias)
    return model


def lab(modules, shapes, device="cpu", dtype=torch.float32, repeats=20, warmup=3, backward=True, names=None,
        extra=None):
    """Build the implementations on device, check they compute one function, time them; print a title, the
    check and the table. -> (results, title).

    shapes: {"batch", "tokens", "d_model", "heads"}; names: which of the five to time (default all);
    extra: {name: class} of more implementations with MultiHeadAttention's signature (d_in, d_out,
    context_length, dropout, num_heads) and load_fused's layout, built with dropout 0 and timed too."""
    device = torch.device(device)
    b, t, d, h = shapes["batch"], shapes["tokens"], shapes["d_model"], shapes["heads"]
    models = build(modules, d, t, h)
    for name, cls in (extra or {}).items():
        models[name] = load_fused(cls(d, d, t, 0.0, h), models["sdpa"])
    chosen = list(names or FIVE) + [name for name in extra or {} if name not in (names or FIVE)]
    models = {name: m.to(device=device, dtype=dtype) for name, m in models.items() if name in chosen or name == "efficient"}
    x = torch.rand(b, t, d, generator=torch.Generator().manual_seed(0)).to(device=device, dtype=dtype)
    diffs = same_function(models, x, atol=1e-4 if dtype == torch.float32 else 5e-2)  # against "efficient"
    models = {name: models[name] for name in chosen}
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    title = f"b={b}, T={t}, d={d}, {h} heads, {str(dtype).replace('torch.', '')}, {where}, torch {torch.__version__}"
    print(title)
    print(f"median of {repeats} runs after {warmup} warm-up runs; all outputs agree "
          f"(max abs difference {max(diffs.values()):.1e})")
    results = measure(models, x, device, warmup, repeats, backward=backward)
    print(table(results))
    return results, title


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto (cuda when present)")
    parser.add_argument("--batch", type=int)
    parser.add_argument("--tokens", type=int)
    parser.add_argument("--d-model", type=int)
    parser.add_argument("--heads", type=int)
    parser.add_argument("--repeats", type=int, default=20, help="timed runs per measurement (median)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--forward-only", action="store_true")
    parser.add_argument("--modules", default=str(ROOT / "solutions" / "ch03"),
                        help="folder holding mha.py and causal.py (default: the reference solutions)")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads on the CPU")
    parser.add_argument("--plot", help="write a bar chart to this file (matplotlib, Agg)")
    args = parser.parse_args(argv)

    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          "cpu" if args.device == "auto" else args.device)
    shapes = dict(GPU_SHAPES if device.type == "cuda" else CPU_SHAPES)
    for key in shapes:
        if getattr(args, key) is not None:
            shapes[key] = getattr(args, key)
    if args.threads:
        torch.set_num_threads(args.threads)
    results, title = lab(Path(args.modules), shapes, device, getattr(torch, args.dtype), args.repeats, args.warmup,
                         backward=not args.forward_only)
    if args.plot:
        plot(results, args.plot, title)
        print(f"plot: {args.plot}")
    return results


if __name__ == "__main__":
    main()
