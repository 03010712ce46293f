"""Student stubs made from the reference solutions: the one place that reads the solution markers.

Every function or method body in solutions/ch03 that students write sits between two comment
lines, `### BEGIN SOLUTION` and `### END SOLUTION`. `solution_regions` finds those regions (the
notebook generator uses it too); `make_stub` replaces each region, markers included, by
`raise NotImplementedError("<module>.<qualname>: <hint>")` at the region's indentation, so the
signature, the docstring and anything outside the region (such as `super().__init__()`) stay.
"""
import ast
import json
from pathlib import Path
from typing import Any

from autograder import chapter as chapter_mod
from autograder.chapter import Chapter

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"


def __getattr__(name: str) -> Any:
    """MODULES: this repository's chapter's parts (chapter.current()), read on first use, for tools and
    tests; the generator itself takes the Chapter it is given."""
    if name == "MODULES":
        return list(chapter_mod.current().parts)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# What a student sees when calling an unwritten function: one line, keyed by qualified name.
HINTS = {
    "simple_attention.softmax_naive":
        "return exp(x) divided by the sum of exp(x) over dim 0 (book 3.3.1)",
    "simple_attention.context_vector":
        "score every input against inputs[query_index] with a dot product, softmax the scores, "
        "return the weighted sum of the inputs; make the tensors you fill on inputs.device (book 3.3.1)",
    "simple_attention.attention_scores":
        "compute the dot product of every pair of tokens in one matrix product (book 3.3.2)",
    "simple_attention.attention_weights":
        "apply softmax to each row of the scores (book 3.3.2)",
    "simple_attention.context_vectors":
        "combine attention_scores and attention_weights, then weight the inputs (book 3.3.2)",
    "self_attention_v1.SelfAttention_v1.__init__":
        "create W_query, W_key, W_value as nn.Parameter(torch.rand(d_in, d_out)), in that order (book 3.4.2)",
    "self_attention_v1.SelfAttention_v1.forward":
        "project x to queries, keys and values, softmax the scaled scores, weight the values (book 3.4.2)",
    "self_attention_v1.scaling_statistics":
        "score queries against keys (divided by sqrt(d_k) when scaled), softmax each row, return the scores' "
        "std and the mean of each row's largest weight as two floats (book 3.4.2)",
    "self_attention_v2.SelfAttention_v2.__init__":
        "create W_query, W_key, W_value as nn.Linear(d_in, d_out, bias=qkv_bias), in that order (book 3.4.2)",
    "self_attention_v2.SelfAttention_v2.forward":
        "same computation as SelfAttention_v1.forward, with the nn.Linear layers (book 3.4.2)",
    "weight_transfer.transfer_v2_to_v1":
        "copy each nn.Linear weight of sa_v2, transposed, into the matching matrix of sa_v1 (Exercise 3.1)",
    "causal.causal_mask":
        "return a bool matrix that is True above the diagonal, made on the given device (book 3.5.1)",
    "causal.masked_attention_weights":
        "set the future scores to -inf (a causal_mask made on scores.device), divide by sqrt(d_k), "
        "softmax over the last dim (book 3.5.1)",
    "causal.CausalAttention.__init__":
        "create W_query, W_key, W_value (nn.Linear), a dropout layer and the 'mask' buffer (book 3.5.3)",
    "causal.CausalAttention.forward":
        "apply the causal mask (the buffer, which moves with the module) to the batched scores, softmax, "
        "dropout, then weight the values (book 3.5.3)",
    "mha.MultiHeadAttentionWrapper.__init__":
        "keep num_heads CausalAttention heads in an nn.ModuleList named heads (book 3.6.1)",
    "mha.MultiHeadAttentionWrapper.forward":
        "run every head on x and concatenate their outputs on the last dim (book 3.6.1)",
    "mha.MultiHeadAttention.__init__":
        "check that num_heads divides d_out, then create W_query, W_key, W_value, out_proj, "
        "dropout and the 'mask' buffer (book 3.6.2)",
    "mha.MultiHeadAttention.forward":
        "split the projections into heads, run causal attention per head, merge the heads, "
        "apply out_proj (book 3.6.2)",
    "exercises.two_dim_wrapper":
        "choose the d_out of each of the 2 heads so the concatenated output has 2 dims (Exercise 3.2)",
    "exercises.gpt2_small_attention":
        "build MultiHeadAttention with 768 dims in and out, 12 heads and context length 1024 (Exercise 3.3)",
    "numpy_attention.softmax":
        "subtract the max along axis before exp so large scores do not overflow",
    "numpy_attention.attention_head":
        "project with einsum, scale the scores by 1/sqrt(m), hide the future if causal, softmax, weight the values",
    "numpy_attention.multi_head":
        "concatenate the outputs of attention_head for each (wq, wk, wv) and multiply by wo when it is given",
    "numpy_attention.block_param_count":
        "count the four attention matrices and the two feed-forward matrices of one block, no biases",
}


def solution_regions(source, filename="<source>"):
    """The solution regions of `source`, as (start_line, end_line, indent) tuples.

    start_line and end_line are the 1-based lines of the BEGIN and END markers; indent is the
    whitespace in front of the BEGIN marker. Raises ValueError naming `filename` and the line for
    an END without BEGIN, a BEGIN inside a region, a region never closed, an END indented
    differently from its BEGIN, or a line that mentions a marker without being exactly one.
    """
    regions = []
    open_line = open_indent = None
    for number, line in enumerate(source.splitlines(), start=1):
        text = line.strip()
        indent = line[: len(line) - len(line.lstrip())]
        if text == BEGIN:
            if open_line is not None:
                raise ValueError(f"{filename}, line {number}: BEGIN SOLUTION inside the region opened on line {open_line}")
            open_line, open_indent = number, indent
        elif text == END:
            if open_line is None:
                raise ValueError(f"{filename}, line {number}: END SOLUTION without a BEGIN SOLUTION before it")
            if indent != open_indent:
                raise ValueError(f"{filename}, line {number}: END SOLUTION indented differently from "
                                 f"its BEGIN SOLUTION on line {open_line}")
            regions.append((open_line, number, open_indent))
            open_line = None
        elif "BEGIN SOLUTION" in text.upper() or "END SOLUTION" in text.upper():
            raise ValueError(f"{filename}, line {number}: looks like a solution marker but is not exactly "
                             f"{BEGIN!r} or {END!r}")
    if open_line is not None:
        raise ValueError(f"{filename}, line {open_line}: BEGIN SOLUTION is never closed by an END SOLUTION")
    return regions


def _functions(tree):
    """(qualified name without module, def node, enclosing class node or None) for every def in tree."""
    found = []

    def visit(node, prefix, cls):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((prefix + child.name, child, cls))
                visit(child, prefix + child.name + ".", None)
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".", child)

    visit(tree, "", None)
    return found


def _is_super_init(stmt):
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "__init__"
            and isinstance(call.func.value, ast.Call) and isinstance(call.func.value.func, ast.Name)
            and call.func.value.func.id == "super")


def make_stub(source, module_name, filename=None):
    """`source` with every solution region replaced by a one-line NotImplementedError naming what to write.

    Each region must be the end of a function or method body; its hint comes from HINTS under
    '<module_name>.<qualified name>'. A missing hint, a region outside any def, code after a
    region, or an `__init__` region with no `super().__init__()` call above it is a ValueError
    naming the file (filename, default '<module_name>.py') and line.
    """
    filename = filename or f"{module_name}.py"
    regions = solution_regions(source, filename)
    functions = _functions(ast.parse(source, filename))
    lines = source.splitlines(keepends=True)
    # replace from the bottom up so earlier line numbers stay valid
    for start, end, indent in reversed(regions):
        enclosing = [(name, node, cls) for name, node, cls in functions if node.lineno < start <= node.end_lineno]
        if not enclosing:
            raise ValueError(f"{filename}, line {start}: solution region outside any function or method")
        name, node, cls = max(enclosing, key=lambda found: found[1].lineno)
        qualname = f"{module_name}.{name}"
        if any(stmt.lineno > end for stmt in node.body):
            raise ValueError(f"{filename}, line {end}: code after END SOLUTION in {qualname} "
                             "would be unreachable in the stub")
        if cls is not None and node.name == "__init__" and not any(
                _is_super_init(stmt) for stmt in node.body if stmt.lineno < start):
            raise ValueError(f"{filename}, line {start}: {qualname} must call super().__init__() "
                             "above BEGIN SOLUTION so the stub keeps it")
        if qualname not in HINTS:
            raise ValueError(f"{filename}, line {start}: no hint for {qualname}: add one to HINTS in {__name__}")
        message = json.dumps(f"{qualname}: {HINTS[qualname]}")
        lines[start - 1:end] = [f"{indent}raise NotImplementedError({message})\n"]
    return "".join(lines)


def stub_texts(solutions_dir, chapter: Chapter | None = None):
    """{file name: text} of the assignment folder: the stub of each of the chapter's modules in
    solutions_dir, and the released copy of the chapter manifest (tests/chapter.json: the public
    tests read the chapter's parts there). chapter: None: this repository's (chapter.current())."""
    chapter = chapter or chapter_mod.current()
    paths = {name: Path(solutions_dir) / f"{name}.py" for name in chapter.parts}
    texts = {path.name: make_stub(path.read_text(), name, str(path)) for name, path in paths.items()}
    texts[chapter_mod.RELEASED_COPY] = json.dumps(chapter.released_copy(), indent=1) + "\n"
    return texts


def generate(solutions_dir, out_dir, chapter: Chapter | None = None):
    """Write the stub of every module of solutions_dir into out_dir; return the paths written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for filename, text in stub_texts(solutions_dir, chapter).items():
        path = out_dir / filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def drifted(solutions_dir, out_dir, chapter: Chapter | None = None):
    """File names in out_dir that are missing or differ from the stubs solutions_dir makes now."""
    out_dir = Path(out_dir)
    return [filename for filename, text in stub_texts(solutions_dir, chapter).items()
            if not (out_dir / filename).is_file() or (out_dir / filename).read_text() != text]
