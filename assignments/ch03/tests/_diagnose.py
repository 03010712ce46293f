"""What a wrong answer most likely got wrong: the diagnoses behind the public tests' messages.

A test that compares your output with the right one also asks, when they differ, which common
mistake would have produced exactly your output. Each `*_mistakes` function below recomputes the
test's example the way a typical wrong version of the chapter's code would (with your module's own
weights), as a list of (output, what that version does wrong). `which_mistake` returns the
explanation of the first one your output matches, or "" when none does; the test then shows the
expected and the computed values instead.

`dropout_problem` judges where dropout acts from the statistics of many training-mode outputs;
`transfer_problem` and `Check.shape_errors` name the mistakes that end in a shape error.
`Check` holds the assertions; the public tests (conftest.py) and the notebooks' test cells (this file
is copied into ch03_tools.py) both use it, so the same code gets the same message in both.
Everything here uses the public examples only.
"""
import ast
import contextlib
import dis
import inspect
import math
import sys
import types

import numpy as np
import torch

TOLERANCE = 1e-4  # the book prints 4 decimals


def same(a, b, tol=TOLERANCE):
    """Same shape and every entry within tol (NaN and inf must sit in the same places)."""
    if tuple(a.shape) != tuple(b.shape):
        return False
    return bool(torch.isclose(a.double(), b.double(), atol=tol, rtol=0.0, equal_nan=True).all())


def which_mistake(got, expected, mistakes, tol=TOLERANCE):
    """The explanation of the first mistake whose output got matches while expected does not."""
    for output, explanation in mistakes:
        if same(got, output, tol) and not same(expected, output, tol):
            return explanation
    return ""


def above_diagonal(n, offset=1):
    """Bool (n, n), True from `offset` places right of the diagonal on (offset 1: the future)."""
    return torch.ones(n, n, dtype=torch.bool).triu(offset)


def softmax_weights(scores, d_k, causal, scale=None, dim=-1, mask="-inf", offset=1):
    """Attention weights from raw scores, right by default, or as one variant asks.

    scale: the factor on the scores (right: 1/sqrt(d_k)); dim: the softmax dim (right: -1);
    mask (causal only): "-inf" before the softmax (right), "zero" (masked scores set to 0),
    "after" (future weights zeroed after the softmax), "inverted" (the past hidden), "allowed" (the mask handed
    to scaled_dot_product_attention as a bool attn_mask: inverted, and a row with nothing to look at all 0),
    "none"; offset: where the mask starts.
    """
    factor = 1 / math.sqrt(d_k) if scale is None else scale
    hidden = above_diagonal(scores.shape[-1], offset)
    s = scores * factor
    if causal and mask == "-inf":
        s = s.masked_fill(hidden, -math.inf)
    elif causal and mask == "zero":
        s = s.masked_fill(hidden, 0.0)
    elif causal and mask in ("inverted", "allowed"):
        s = s.masked_fill(~hidden, -math.inf)
    weights = s.softmax(dim)
    if causal and mask == "allowed":
        weights = torch.nan_to_num(weights, nan=0.0)
    return weights.masked_fill(hidden, 0.0) if causal and mask == "after" else weights


SCALE_MISSING = ("the scores are not scaled: divide them by sqrt(d_k), where d_k is the keys' dimension "
                 "(keys.shape[-1]), before the softmax")
SCALE_BY_D_K = "the scores are divided by d_k: divide by sqrt(d_k) instead (d_k ** 0.5)"
WRONG_DIM = ("the softmax runs over the wrong dim (down each column): use dim=-1, so that each row of "
             "attention weights (one query) sums to 1")
NO_MASK = ("no causal mask: before the softmax, set the scores above the diagonal (the future tokens) "
           "to -inf with masked_fill")
ZERO_FILL = ("the future scores are set to 0 instead of -inf: exp(0) is not 0, so the future still gets "
             "weight; fill them with -inf")
MASK_AFTER = ("the future weights are zeroed after the softmax, so the rows no longer sum to 1: mask the "
              "scores with -inf before the softmax")
DIAGONAL = ("the mask hides too much: the diagonal (each token itself) is masked too; only the entries "
            "above the diagonal are the future (triu with diagonal=1)")
SDPA_BOOL = ("the mask is inverted for scaled_dot_product_attention: its bool attn_mask is True where a token MAY "
             "look, the opposite of masked_fill's; pass ~mask, or is_causal=True")
INVERTED = ("the mask is inverted: it marks each token and its past; it must be True above the diagonal only "
            "(the future)")
TOO_LITTLE = ("the mask hides too little: the token right after each one is not masked (triu with diagonal=1, "
              "not 2)")


def mask_problem(mask, n):
    """'' when mask is the bool (n, n) causal mask (True above the diagonal), else the mistake in words."""
    expected = above_diagonal(n)
    if torch.equal(mask, expected):
        return ""
    for wrong, why in ((above_diagonal(n, 0), DIAGONAL), (~expected, INVERTED), (above_diagonal(n, 2), TOO_LITTLE)):
        if torch.equal(mask, wrong):
            return why
    row = next(i for i in range(n) if not torch.equal(mask[i], expected[i]))
    return f"row {row} should be True from column {row + 1} on and False before it (True above the diagonal only)"


def first_difference(got, expected):
    """'at (i, j): expected a, got b (largest difference d)', where got and expected differ most: no tensor dump."""
    diff = torch.nan_to_num((got.double() - expected.double()).abs(), nan=math.inf)
    index = tuple(int(i) for i in torch.nonzero(diff == diff.max())[0]) if diff.dim() else ()
    return (f"at {index if index else 'the value'}: expected {float(expected[index]):.4f}, got {float(got[index]):.4f} "
            f"(largest difference {float(diff.max()):.4g}, tolerance {TOLERANCE:g})")


# --- Waiting for another part: one mistake fails its own part's tests only ------------------------------------------
# A test of a part that builds on another part (a class it is made of, a class it inherits, a function of another
# module it calls) waits for that part while that part does not give the book's outputs: it is skipped, naming the
# part to fix first, instead of failing with numbers that are the other part's (the grader does the same: it
# grades such a part with the course's version of the other one).

CHAPTER_MODULES = ("simple_attention", "self_attention_v1", "self_attention_v2", "weight_transfer", "causal", "mha",
                   "exercises", "numpy_attention")
# the functions of a part another part may call (uses() looks for these, _function_examples judges them); a helper of
# the student's own in that module, under another name, is that module's code, not one of these
CALLED_BY_OTHERS = {"simple_attention": ("softmax_naive", "context_vector", "attention_scores", "attention_weights",
                                         "context_vectors"),
                    "causal": ("causal_mask", "masked_attention_weights")}
CLASS_FIRST = ("not checked yet: {what} builds on your {name}, which does not give the book's output yet ({example}): "
               "fix {module}.py first, its own tests say what is wrong")
FUNCTION_FIRST = ("not checked yet: {what} uses your {name} from {module}.py, which is not right yet: fix {module}.py "
                  "first, its own tests say what is wrong")
HEADS_FIRST = ("not checked yet: {what} builds on your MultiHeadAttention, which is not right yet ({problem}): fix "
               "mha.py first, its own tests say what is wrong")


def _book_example(module, name):
    """The book's example of a class another part builds on: (what is run, its seed, make, the inputs' key in the
    book's values, the output's key)."""
    return {("self_attention_v1", "SelfAttention_v1"):
            ("torch.manual_seed(123); SelfAttention_v1(3, 2)(inputs)", 123, lambda: module.SelfAttention_v1(3, 2),
             "inputs", "sa_v1_seed123"),
            ("self_attention_v2", "SelfAttention_v2"):
            ("torch.manual_seed(789); SelfAttention_v2(3, 2)(inputs)", 789, lambda: module.SelfAttention_v2(3, 2),
             "inputs", "sa_v2_seed789"),
            ("causal", "CausalAttention"):
            ("torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0)(batch)", 123,
             lambda: module.CausalAttention(3, 2, 6, 0.0), "batch", "causal_attention_seed123"),
            ("mha", "MultiHeadAttentionWrapper"):
            ("torch.manual_seed(123); MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)", 123,
             lambda: module.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2), "batch", "mha_wrapper_seed123"),
            ("mha", "MultiHeadAttention"):
            ("torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch)", 123,
             lambda: module.MultiHeadAttention(3, 2, 6, 0.0, num_heads=2), "batch", "mha_seed123"),
            }[module.__name__, name]


def _gives_the_book_s_output(book, module, name):
    """'' when the class `name` of `module`, made right after the book's seed, gives the book's output on its
    inputs, else the example it does not give. Code not implemented yet counts as giving it: the test then says
    what is missing, as every test does."""
    example, book_seed, make, inputs, key = _book_example(module, name)
    try:
        torch.manual_seed(book_seed)
        with torch.no_grad():
            out = make()(book[inputs])
        return "" if isinstance(out, torch.Tensor) and same(out.detach(), book[key]) else example
    except NotImplementedError:
        return ""
    except Exception:  # whatever it raises: the other part's own tests say what
        return example


def _function_examples(book, module):
    """{function name: [(call, expected)]}: the book's examples of the functions of `module` another part may call
    (masked_attention_weights also on a batch of heads, as a multi-head forward gives them)."""
    if module.__name__ == "causal":
        printed = book["attn_scores_sa_v2"]  # the book's (6, 6) scores, then as 2 x 3 heads of them
        return {"causal_mask": [(lambda n=n: module.causal_mask(n), torch.ones(n, n, dtype=torch.bool).triu(1))
                                for n in (1, 5)],
                "masked_attention_weights": [
                    (lambda: module.masked_attention_weights(printed, 2), book["causal_attn_weights"]),
                    (lambda: module.masked_attention_weights(printed.expand(2, 3, 6, 6).clone(), 2),
                     book["causal_attn_weights"].expand(2, 3, 6, 6))]}
    if module.__name__ == "simple_attention":
        return {"softmax_naive": [(lambda: module.softmax_naive(book["attn_scores_2"]), book["attn_weights_2"])],
                "context_vector": [(lambda: module.context_vector(book["inputs"], 1), book["context_vec_2"])],
                "attention_scores": [(lambda: module.attention_scores(book["inputs"]), book["attn_scores"])],
                "attention_weights": [(lambda: module.attention_weights(book["attn_scores"]), book["attn_weights"])],
                "context_vectors": [(lambda: module.context_vectors(book["inputs"]), book["all_context_vecs"])]}
    return {}


def _function_right(book, module, name):
    """Does the function `name` of `module` give the book's outputs? Code not implemented yet counts as right."""
    try:
        for call, expected in _function_examples(book, module)[name]:
            got = call()
            if expected.dtype == torch.bool:  # a mask: exactly it, as a bool tensor
                right = isinstance(got, torch.Tensor) and got.dtype == torch.bool and torch.equal(got, expected)
            else:
                right = isinstance(got, torch.Tensor) and got.dtype != torch.bool and same(got.detach(), expected)
            if not right:
                return False
        return True
    except NotImplementedError:
        return True
    except Exception:  # whatever it raises: the function's own tests say what
        return False


def _code_of(built):
    """[(code, globals)] of a function, or of the methods of a class and of the classes of the chapter it inherits."""
    if isinstance(built, type):
        values = [v for c in built.__mro__ if c.__module__ in (*CHAPTER_MODULES, "__main__") for v in vars(c).values()]
    else:
        values = [built]
    found = []
    for value in values:
        for function in (getattr(value, "__func__", None), getattr(value, "fget", None), value):
            try:
                function = inspect.unwrap(function) if function is not None else None
            except ValueError:  # a chain of __wrapped__ that loops
                continue
            if isinstance(getattr(function, "__code__", None), types.CodeType) and \
                    isinstance(getattr(function, "__globals__", None), dict):
                found.append((function.__code__, function.__globals__))
                break
    return found


def uses(built):
    """What `built` (a class or a function of a part) uses of the other parts, read from its code: [(module, name)],
    the functions of causal.py and simple_attention.py it calls (imported under any name, through the module, or
    defined in a notebook cell above; also inside the functions of the chapter it calls) and the classes of
    self_attention_v2.py it inherits. A name of its own (self.causal_mask, a buffer) is not the function."""
    modules = [sys.modules[m] for m in (*CALLED_BY_OTHERS, "self_attention_v2") if m in sys.modules]
    own = [m for m in modules if getattr(m, getattr(built, "__name__", ""), None) is built]
    modules = [m for m in modules if m not in own]
    found = []
    if isinstance(built, type):
        v2 = [m for m in modules if m.__name__ == "self_attention_v2"]
        if v2 and isinstance(getattr(v2[0], "SelfAttention_v2", None), type) and issubclass(built, v2[0].SelfAttention_v2):
            found.append((v2[0], "SelfAttention_v2"))
    functions = {id(getattr(m, name)): (m, name) for m in modules for name in CALLED_BY_OTHERS.get(m.__name__, ())
                 if callable(getattr(m, name, None))}
    todo, seen = _code_of(built), set()
    while todo:
        code, space = todo.pop()
        if id(code) in seen:
            continue
        seen.add(id(code))
        instructions = list(dis.get_instructions(code))
        for instruction in instructions:
            if instruction.opname not in ("LOAD_GLOBAL", "LOAD_NAME"):
                continue
            value = space.get(instruction.argval)
            if id(value) in functions and functions[id(value)] not in found:
                found.append(functions[id(value)])
            elif any(value is m for m in modules):  # causal.causal_mask: the attributes this code reads
                read = {i.argval for i in instructions if i.opname in ("LOAD_ATTR", "LOAD_METHOD")}
                found += [(value, name) for name in sorted(read) if id(getattr(value, name, None)) in functions
                          and (value, name) not in found]
            elif isinstance(value, types.FunctionType) and value.__module__ in (*CHAPTER_MODULES, "__main__"):
                todo.append((value.__code__, value.__globals__))  # a function of the chapter's it calls
        todo += [(c, space) for c in code.co_consts if isinstance(c, types.CodeType)]
    return found


def _heads_problem(book, module):
    """'' when MultiHeadAttention looks right from outside (the book's example, inputs shorter than its context
    that see no future token, the parameters of its four layers), else the run that is not."""
    example = _gives_the_book_s_output(book, module, "MultiHeadAttention")
    if example:
        return example
    try:
        heads = module.MultiHeadAttention(4, 6, 8, 0.0, num_heads=3)
        x = torch.rand(2, 5, 4)
        later = torch.cat([x[:, :3], torch.rand(2, 2, 4)], dim=1)
        with torch.no_grad():
            out, other = heads(x), heads(later)
        if tuple(out.shape) != (2, 5, 6) or not same(out[:, :3], other[:, :3]):
            return "MultiHeadAttention(4, 6, 8, 0.0, num_heads=3) on 5 tokens"
        if sum(p.numel() for p in heads.parameters()) != 3 * 4 * 6 + 6 * 6 + 6:
            return "the parameters of MultiHeadAttention(4, 6, 8, 0.0, num_heads=3)"
        return ""
    except NotImplementedError:
        return ""
    except Exception:  # whatever it raises: mha's own tests say what
        return "MultiHeadAttention(4, 6, 8, 0.0, num_heads=3) on 5 tokens"


def waits_for(book, what, built=None, causal=None, mha=None, v1=None, v2=None, heads=None):
    """'' when what `what` builds on is right, else why its test waits: one mistake fails its own part's tests only.
    built: the class or function tested: it waits for what it uses of other parts (uses: functions it calls, a
    class it inherits); causal / mha / v1 / v2: the modules whose CausalAttention / MultiHeadAttentionWrapper /
    SelfAttention_v1 / SelfAttention_v2 it is made of; heads: the module whose MultiHeadAttention it is made of.
    The random numbers the test draws next are those it drew without this look (the examples' seeds are set,
    then the generator's state is put back)."""
    generator = torch.get_rng_state()
    try:
        return _waits_for(book, what, built, causal, mha, v1, v2, heads)
    finally:
        torch.set_rng_state(generator)


def _waits_for(book, what, built, causal, mha, v1, v2, heads):
    try:
        used = uses(built) if built is not None else []
    except Exception:  # code this reading cannot follow: the test goes on, and says what it finds
        used = []
    for module, name in used:
        if isinstance(getattr(module, name), type):
            example = _gives_the_book_s_output(book, module, name)
            if example:
                return CLASS_FIRST.format(what=what, name=name, example=example, module=module.__name__)
        elif not _function_right(book, module, name):
            return FUNCTION_FIRST.format(what=what, name=name, module=module.__name__)
    for module, name in ((v1, "SelfAttention_v1"), (v2, "SelfAttention_v2"), (causal, "CausalAttention"),
                         (mha, "MultiHeadAttentionWrapper")):
        example = _gives_the_book_s_output(book, module, name) if module is not None else ""
        if example:
            return CLASS_FIRST.format(what=what, name=name, example=example, module=module.__name__)
    problem = _heads_problem(book, heads) if heads is not None else ""
    return HEADS_FIRST.format(what=what, problem=problem) if problem else ""


TOKENS_BY_DIMS = ("these are the dot products of the embedding dimensions with each other (inputs.T @ inputs, "
                  "d_in x d_in), not of the tokens: each row of inputs is one token, so the scores are "
                  "inputs @ inputs.T (num_tokens x num_tokens)")


def score_mistakes(inputs):
    """The usual wrong way to all the scores at once (3.3.2): the transpose on the wrong side."""
    return [(inputs.T @ inputs, TOKENS_BY_DIMS)]


KEEPDIMS = ("the softmax's maxima or sums lose their axis: np.max(z, axis=-1) and np.sum(e, axis=-1) have shape "
            "(..., num_tokens), and broadcasting lines them up with the columns instead of the rows; keep the "
            "axis with keepdims=True")


def keepdims_mistakes(x, wq, wk, wv):
    """A NumPy attention head (causal=False) whose softmax drops the reduced axis of its max, its sum or both:
    on square scores nothing raises, the rows are normalised by other rows' numbers."""
    q, k, v = x @ wq, x @ wk, x @ wv
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(wq.shape[-1])
    found = []
    for max_kept, sum_kept in ((False, True), (True, False), (False, False)):
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=max_kept))
        found.append((torch.as_tensor(e / np.sum(e, axis=-1, keepdims=sum_kept) @ v), KEEPDIMS))
    return found


def softmax_dim_mistakes(scores):
    """The one usual mistake of attention weights without scaling (3.3): the softmax down the columns."""
    return [(torch.softmax(scores, dim=0), WRONG_DIM)]


def context_mistakes(inputs):
    """The same mistake seen in the context vectors of 3.3 (the inputs are queries, keys and values)."""
    return [(weights @ inputs, why) for weights, why in softmax_dim_mistakes(inputs @ inputs.T)]


OTHER_TOKEN = ("the context vector belongs to another token ({other}): the query is inputs[query_index], the "
               "token whose context vector is asked for")


def other_token_mistakes(contexts, query_index):
    """A context vector of 3.3.1 computed for another token than query_index (its query hard-wired)."""
    return [(c, OTHER_TOKEN.format(other=f"query_index={i}")) for i, c in enumerate(contexts) if i != query_index]


# --- what a function or module must leave as it found it, and what training needs ------------------------

IN_PLACE = ("{what} changed its input in place: use out-of-place operations (masked_fill, not masked_fill_; "
            "z - m, not z -= m) on tensors or arrays you were given; the caller still needs them")
BOOL_INDEX = ("a 2-D bool mask used as an index (scores[mask] = ...) applies to the first two dims of batched "
              "scores, not the last two: write scores[..., mask] = -inf, or scores.masked_fill(mask, -inf)")
GLOBAL_MAX = ("it subtracts the max of the whole array: subtract the max of each slice along axis "
              "(np.max(z, axis=axis, keepdims=True)), or a slice of very negative scores underflows to 0 / 0")
FLOAT_CAST = ("float32 and float64 tensors meet in forward: a tensor cast or created there (x.float(), or torch.tensor "
              "and torch.ones without dtype=) stays float32 while the inputs and the .double() weights are float64; "
              "keep every tensor forward makes in the inputs' dtype")
MODULE_LIST = ("PyTorch sees none of its heads: a plain Python list does not register them, so parameters(), .eval() "
               "and .to() miss them; keep the heads in an nn.ModuleList")
DROPOUT_IGNORED = "it ignores its dropout argument: pass it on to MultiHeadAttentionWrapper"
GRADIENTS_OFF = ("your code switched gradients off and left them off (torch.set_grad_enabled(False), or torch.no_grad() "
                 "entered and never left, in forward?): leave torch's global settings as they are in forward")


def gradient_problem(module, out):
    """'' when out (the module's output, not yet backpropagated) lets a gradient reach every parameter of
    module; else why not. Puts gradients back on where the module's forward switched them off."""
    if not torch.is_grad_enabled():
        torch.set_grad_enabled(True)  # for the tests after this one
        return GRADIENTS_OFF
    frozen = [name for name, p in module.named_parameters() if not p.requires_grad]
    if frozen:
        return (f"no gradient can flow back to {', '.join(frozen)}: they do not require gradients "
                "(nn.Parameter(..., requires_grad=False)?); a layer's weights must be trainable")
    if not out.requires_grad:
        cut = [name for name, _ in module.named_parameters()]
    else:
        out.sum().backward()
        cut = [name for name, p in module.named_parameters() if p.grad is None]
    if cut:
        return (f"no gradient reached {', '.join(cut[:3])}: the forward pass is cut off from autograd there (.detach(), "
                ".data, torch.no_grad() or a NumPy round trip in forward), so training could never change it")
    return ""


def weight_mistakes(scores, d_k, causal):
    """The usual wrong ways from scores to weights, as (weights, explanation)."""
    found = [(softmax_weights(scores, d_k, causal, scale=1.0), SCALE_MISSING)]
    if d_k != 1:
        found.append((softmax_weights(scores, d_k, causal, scale=1 / d_k), SCALE_BY_D_K))
    found.append((softmax_weights(scores, d_k, causal, dim=-2), WRONG_DIM))
    if causal:
        found += [(softmax_weights(scores, d_k, causal, mask="none"), NO_MASK),
                  (softmax_weights(scores, d_k, causal, mask="zero"), ZERO_FILL),
                  (softmax_weights(scores, d_k, causal, mask="after"), MASK_AFTER),
                  (softmax_weights(scores, d_k, causal, offset=0), DIAGONAL),
                  (softmax_weights(scores, d_k, causal, mask="allowed"), SDPA_BOOL)]
    return found


def head_mistakes(queries, keys, values, causal):
    """The same mistakes, seen in the context vectors: each variant's weights times the values. A variant
    that computes what the right math gives with these projections is left out: a module whose only
    fault is its weights (drawn in another order) must not be told a mistake of its math."""
    scores = queries @ keys.transpose(-2, -1)
    right = softmax_weights(scores, keys.shape[-1], causal) @ values
    return [(w @ values, why) for w, why in weight_mistakes(scores, keys.shape[-1], causal)
            if not same(w @ values, right)]


DISCARDED_MASKED_FILL = ("the result of masked_fill is discarded: masked_fill returns a new tensor and leaves the "
                         "scores as they were; use masked_fill_ (in place) or assign it (scores = scores.masked_fill(...))")


def discards_masked_fill(module):
    """Does the module's class have a statement calling masked_fill whose result nobody uses?"""
    try:
        tree = ast.parse(inspect.getsource(type(module)).strip() + "\n")
    except (OSError, TypeError, SyntaxError, IndentationError):
        return False
    return any(isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
               and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "masked_fill"
               for node in ast.walk(tree))


def no_mask_named(mistakes, module):
    """The mistakes, with "no causal mask" said as the discarded masked_fill where the module's code shows it."""
    if not discards_masked_fill(module):
        return mistakes
    return [(output, DISCARDED_MASKED_FILL if why.startswith("no causal mask") else why) for output, why in mistakes]


MASK_OVERWRITTEN = ("after one call, the (context_length, context_length) mask is gone: forward overwrites the "
                    "mask buffer with the slice it needed (self.mask = self.mask[:num_tokens, :num_tokens]), so a "
                    "longer input later finds a mask too small; leave the buffer as __init__ made it and keep the "
                    "slice in a local variable (mask = self.mask[:num_tokens, :num_tokens])")


SLICE = ("the mask is (context_length, context_length): use its first num_tokens rows and columns, "
         "self.mask[:num_tokens, :num_tokens], whenever an input is shorter than the context")
FULL_LENGTH_FAILS = ("it raises on context_length tokens too, so it is already wrong (the module's other tests say how)")


GLOBAL_READ = ("forward reads a variable set at the top of the module ({names}: a notebook's variable?) instead of "
               "its input's size or self.<name>: for inputs shorter than the context, slice the mask with the "
               "input's num_tokens")


def _globals_read(code, namespace):
    """The names a code object (and those nested in it: comprehensions, inner functions) reads as globals that
    namespace binds to data: not a module, class or function, nor a name written in capitals (a constant)."""
    found = set()
    for instruction in dis.get_instructions(code):
        name = instruction.argval
        if instruction.opname == "LOAD_GLOBAL" and isinstance(name, str) and name in namespace \
                and not name.isupper() and not callable(namespace[name]) and not inspect.ismodule(namespace[name]):
            found.add(name)
    for const in code.co_consts:
        if inspect.iscode(const):
            found |= _globals_read(const, namespace)
    return found


@torch.no_grad()
def shorter_inputs_hint(module, d_in, context_length):
    """Why a module that raised a shape error on fewer tokens than its context did: SLICE where it takes
    context_length tokens (the mask used whole), GLOBAL_READ where its methods read a variable of the module's
    top level (a notebook's context_length), else FULL_LENGTH_FAILS (another mistake, named elsewhere)."""
    state = torch.random.get_rng_state()
    try:
        module(torch.rand(1, context_length, d_in))
    except RuntimeError:
        return FULL_LENGTH_FAILS
    finally:
        torch.random.set_rng_state(state)
    read = set()
    for cls in type(module).__mro__:
        if cls.__module__.split(".")[0] in ("torch", "builtins"):
            continue
        for value in vars(cls).values():
            if inspect.isfunction(value):
                read |= _globals_read(value.__code__, value.__globals__)
    return GLOBAL_READ.format(names=", ".join(sorted(read))) if read else SLICE


ARRAYS_DOT_T = ("k.T on a batch reverses every axis of the 3-D keys ((B, T, m) becomes (m, T, B)), and the "
                "product of the scores fails: swap the last two axes only, k.transpose(0, 2, 1) or "
                "k.swapaxes(-1, -2), or write the product with np.einsum")


def batch_transpose_hint(function):
    """ARRAYS_DOT_T where the function's code multiplies by the .T of a variable it computed (k = x @ wk; not an
    argument such as a 2-D weight), else ''."""
    try:
        tree = ast.parse(inspect.cleandoc("\n" + inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return ""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
            for product in ast.walk(node):
                right = product.right if isinstance(product, ast.BinOp) and isinstance(product.op, ast.MatMult) \
                    else product.args[1] if isinstance(product, ast.Call) and isinstance(product.func, ast.Attribute) \
                    and product.func.attr in ("matmul", "dot") and len(product.args) == 2 else None
                if isinstance(right, ast.Attribute) and right.attr == "T" and isinstance(right.value, ast.Name) \
                        and right.value.id not in arguments:
                    return ARRAYS_DOT_T
    return ""


def square_buffers(module, size):
    """How many of the module's registered buffers are (size, size) matrices (leading dims of 1 allowed)."""
    return sum(1 for b in module.buffers()
               if b.dim() >= 2 and tuple(b.shape[-2:]) == (size, size) and all(d == 1 for d in b.shape[:-2]))


def mask_buffer_problem(module, size, before):
    """MASK_OVERWRITTEN where the module held a (size, size) buffer before a forward on fewer tokens (before:
    square_buffers then) and holds none after it; '' otherwise (a module that keeps no mask buffer is not
    asked about one)."""
    return MASK_OVERWRITTEN if before and not square_buffers(module, size) else ""


@torch.no_grad()
def linear_head_mistakes(module, x, causal):
    """head_mistakes of a module with nn.Linear layers W_query, W_key, W_value (SelfAttention_v2, CausalAttention)."""
    return no_mask_named(head_mistakes(module.W_query(x), module.W_key(x), module.W_value(x), causal), module)


@torch.no_grad()
def parameter_head_mistakes(module, x):
    """head_mistakes of SelfAttention_v1, whose W_query, W_key, W_value are (d_in, d_out) matrices."""
    return head_mistakes(x @ module.W_query, x @ module.W_key, x @ module.W_value, causal=False)


# --- MultiHeadAttention ----------------------------------------------------------------------------

@torch.no_grad()
def multi_head_output(module, x, num_heads, split="transpose", merge="transpose", project=True, **weights):
    """What MultiHeadAttention computes with the module's own layers (dropout off), right by default.

    split / merge: "transpose" (right) or "reshape" (the heads cut out of the wrong axis);
    project: apply out_proj; weights: the options of softmax_weights (scale, dim, mask, offset).
    """
    batch, n, _ = x.shape
    projected = [layer(x) for layer in (module.W_query, module.W_key, module.W_value)]
    d_out = projected[0].shape[-1]
    head_dim = d_out // num_heads

    def into_heads(t):
        if split == "transpose":
            return t.unflatten(-1, (num_heads, head_dim)).permute(0, 2, 1, 3)
        return t.reshape(batch, num_heads, n, head_dim)

    q, k, v = (into_heads(t) for t in projected)
    context = softmax_weights(q @ k.transpose(-2, -1), head_dim, True, **weights) @ v
    if merge == "transpose":
        context = context.permute(0, 2, 1, 3)
    context = context.reshape(batch, n, d_out)
    return module.out_proj(context) if project else context


GPT2_HEADS = "it computes with num_heads={found}, where GPT-2 small has 12 heads (head_dim 64)"
GPT2_CONTEXT = "its mask is {size} x {size}, where GPT-2 small's context length is 1024 tokens"
GPT2_DROPOUT = "it drops attention weights (nn.Dropout with p={p}), where the exercise asks for dropout=0.0"


@torch.no_grad()
def gpt2_problem(module, mha):
    """'' when gpt2_small_attention()'s module shows GPT-2 small's heads and context and no dropout; else which is
    off. Only what the module shows against the student's own MultiHeadAttention built with GPT-2 small's
    settings is said (a dropout or a mask size that class has anyway is its own tests' to tell), and a head count
    only where the output is exactly what that many heads give with the module's own layers."""
    own = mha.MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12)
    dropping = [m.p for m in module.modules() if isinstance(m, torch.nn.Dropout) and m.p > 0]
    if dropping and not any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in own.modules()):
        return GPT2_DROPOUT.format(p=dropping[0])
    sizes = [b.shape[0] for b in module.buffers() if b.dim() == 2 and b.shape[0] == b.shape[1]]
    if sizes and sizes[0] != 1024 and [b.shape[0] for b in own.buffers() if b.dim() == 2][:1] == [1024]:
        return GPT2_CONTEXT.format(size=sizes[0])
    module.eval()
    x = torch.rand(1, 5, 768)
    try:
        out = module(x)
        if same(out, multi_head_output(module, x, 12)):
            return ""
        found = [k for k in (1, 2, 3, 4, 6, 8, 16, 24, 32) if same(out, multi_head_output(module, x, k))]
    except Exception:  # layers named otherwise, a forward that raises: the other tests say what is wrong
        return ""
    return GPT2_HEADS.format(found=found[0]) if found else ""


SPLIT_AND_MERGE = ("the heads are split and merged without a transpose: view the projections as (b, num_tokens, "
                   "num_heads, head_dim) and .transpose(1, 2) them; after the attention .transpose(1, 2) the context "
                   "back before the .contiguous().view(b, num_tokens, d_out)")


def multi_head_mistakes(module, x, num_heads):
    """The usual ways to get MultiHeadAttention wrong, as (output, explanation)."""
    d_out = module.W_query.out_features
    variants = [
        (dict(scale=1.0), "the scores are not scaled by 1/sqrt(head_dim): divide them by sqrt(head_dim) before "
                          "the softmax (head_dim = d_out // num_heads, the keys' last dim in each head)"),
        (dict(scale=1 / math.sqrt(d_out)), "the scores are divided by sqrt(d_out): each head's keys have "
                                           "head_dim = d_out // num_heads dims, so divide by sqrt(head_dim)"),
        (dict(dim=-2), WRONG_DIM),
        (dict(mask="none"), "no causal mask in the heads: before the softmax, set the scores above the diagonal "
                            "to -inf (the mask buffer cut to num_tokens x num_tokens)"),
        (dict(mask="zero"), ZERO_FILL),
        (dict(mask="after"), MASK_AFTER),
        (dict(offset=0), DIAGONAL),
        (dict(mask="inverted"), INVERTED),
        (dict(mask="allowed"), SDPA_BOOL),
        (dict(split="reshape", merge="reshape"), SPLIT_AND_MERGE),
        (dict(split="reshape"), "the heads are split without a transpose: view the projections as (b, num_tokens, "
                                "num_heads, head_dim), then .transpose(1, 2)"),
        (dict(merge="reshape"), "the heads are merged without a transpose: .transpose(1, 2) the context back to "
                                "(b, num_tokens, num_heads, head_dim) before the .view(b, num_tokens, d_out)"),
        (dict(project=False), "out_proj is not applied: the merged heads go through self.out_proj last"),
    ]
    right = multi_head_output(module, x, num_heads)  # a variant giving the right math is no mistake here (head_dim 1)
    found = [(multi_head_output(module, x, num_heads, **options), why) for options, why in variants]
    return no_mask_named([(output, why) for output, why in found if not same(output, right)], module)


# --- dropout, judged by statistics -------------------------------------------------------------------

@torch.no_grad()
def eval_and_training_outputs(attn, n, copies):
    """(the eval-mode outputs, the training-mode outputs, a second call's training-mode outputs), each
    (copies, n, 2n), of the set-up below."""
    attn.W_value.weight.copy_(torch.cat([torch.eye(n), torch.eye(n)]))
    if isinstance(getattr(attn, "out_proj", None), torch.nn.Linear):  # MultiHeadAttention with one head
        attn.out_proj.weight.copy_(torch.eye(2 * n))
        if attn.out_proj.bias is not None:
            attn.out_proj.bias.zero_()
    x = torch.eye(n).expand(copies, n, n).contiguous()
    attn.eval()
    calm = attn(x)
    attn.train()
    return calm, attn(x), attn(x)


EVAL_WEIGHTS_WRONG = ("the eval-mode attention weights are already wrong (the module's other tests say how), so where "
                      "dropout acts cannot be judged yet: make them right first")


def eval_weights_problem(calm):
    """'' when the eval-mode weights calm (n, n) hide the future only; else the mask's mistake where the
    weights show it (the diagonal hidden, the mask inverted), or EVAL_WEIGHTS_WRONG: a wrong softmax,
    scale or fill is named by the tests that compare the outputs, not guessed here."""
    n = calm.shape[-1]
    future = above_diagonal(n)
    seen = torch.nan_to_num(calm, nan=0.0) != 0
    if bool(seen[future].any()):
        return INVERTED if not bool(seen[~future].any()) else EVAL_WEIGHTS_WRONG
    nan = torch.isnan(calm)
    # token 0 sees nothing (its row NaN, the others not: NaN anywhere else is another mistake), or no token itself
    if bool(nan[0].all()) and not bool(nan[1:].any()) or not bool(nan.any()) and bool((calm.diagonal() == 0).any()):
        return DIAGONAL
    return EVAL_WEIGHTS_WRONG if bool(nan.any()) else ""


def dropout_problem(attn, p, num_tokens, copies=400):
    """'' when CausalAttention `attn` drops attention weights as the book does, else the likely mistake.

    attn must be built with d_in = num_tokens, d_out = 2 * num_tokens, dropout p (a MultiHeadAttention
    with num_heads=1 too: its out_proj is set to the identity). Its value layer is
    set to two identity matrices side by side and its input is the identity, so each output row is
    that token's attention weights, twice. Dropout on the weights drops the same entries in both
    halves and scales the others by 1/(1 - p); about p of the weights are dropped.
    """
    n = num_tokens
    evaluated, out, again = eval_and_training_outputs(attn, n, copies)
    calm = evaluated[0, :, :n]
    if not same(evaluated, evaluated[:1].expand_as(evaluated), 1e-6):
        return ("after .eval() the same tokens get different outputs: dropout is still active in eval mode; use "
                "self.dropout (an nn.Dropout), which .eval() turns off")
    problem = eval_weights_problem(calm)
    if problem:
        return problem
    left, right = out[..., :n], out[..., n:]
    if same(out, torch.cat([calm, calm], dim=-1).expand_as(out), 1e-6):
        return ("in training mode the output is the one of eval mode: dropout is never applied; __init__ should "
                "keep an nn.Dropout layer with the given rate, and forward apply it to the attention weights")
    if not same(left, right, 1e-6):
        return ("dropout acts on the values or on the context vectors (or twice): apply it once, to the "
                "attention weights, after the softmax and before they multiply the values")
    if same(left.sum(-1), torch.ones(copies, n), 1e-5):
        return ("with dropout on, every row of attention weights still sums to 1: dropout acts before the "
                "softmax (on the scores) or the rows are renormalized; apply it to the weights after the softmax")
    if bool(torch.isnan(left).any()):  # NaN != 0: not the mask's fault when the eval-mode weights are right
        return ("with dropout on, some attention weights are NaN: dropout acts on the masked scores before the "
                "softmax (-inf times 0 is NaN); apply it to the attention weights, after the softmax")
    future = above_diagonal(n).expand_as(left)
    if (left[future] != 0).any():
        return "with dropout on, some weights of future tokens are not 0: mask the scores before the softmax and dropout"
    if copies > 1 and same(left, left[:1].expand_as(left), 0.0):
        return ("dropout drops the same positions in every sequence of the batch: it must draw a fresh random mask "
                "for each one, as nn.Dropout does (not one mask made in __init__)")
    if same(out, again, 0.0):
        return ("dropout drops the same positions on every call: it must draw a new random mask each time (do not "
                "reseed the random generator in forward)")
    allowed = ~future & (calm > 1e-6).expand_as(left)
    ratio = left[allowed] / calm.expand_as(left)[allowed]
    kept = ratio[ratio.abs() > 1e-6]
    if len(kept) and bool(torch.isclose(kept, torch.ones_like(kept), atol=1e-4).all()) and p > 0:
        return ("the weights dropout keeps are not scaled up by 1/(1 - p): nn.Dropout does that; "
                "a hand-made mask must divide by (1 - p)")
    if not bool(torch.isclose(kept, torch.full_like(kept, 1 / (1 - p)), atol=1e-4).all()):
        return ("the weights dropout keeps are not the eval-mode weights times 1/(1 - p): apply dropout once, "
                "to the attention weights, after the softmax")
    dropped = 1 - len(kept) / len(ratio)
    if abs(dropped - p) > 0.05:
        return (f"{dropped:.0%} of the attention weights are dropped in training mode, expected about {p:.0%}: "
                "pass the dropout rate to nn.Dropout(dropout)")
    return backward_problem(attn, n)


DROPOUT_IN_PLACE = ("nn.Dropout(inplace=True) overwrites the softmax's output, and the softmax's backward pass needs "
                    "it: every forward pass is right, yet training stops at its first backward pass; make it "
                    "nn.Dropout(dropout)")
CHANGED_IN_PLACE_WHEN_TRAINING = ("a backward pass works in eval mode and fails in training mode: dropout seems to "
                                  "change the softmax's output in place (x *= mask, masked_fill_, .mul_), which its "
                                  "backward pass needs; let dropout make new weights")


def backward_problem(attn, n):
    """'' when a forward and a backward run in training mode (dropout on) where they run in eval mode, else why
    not: nn.Dropout(inplace=True) passes every forward and breaks training. A backward that fails in eval mode
    too is the gradient test's to name."""
    x = torch.rand(2, n, n)
    for training in (False, True):
        attn.train(training)
        try:
            with torch.set_grad_enabled(True):
                attn(x).sum().backward()
        except RuntimeError:
            if not training:
                return ""
            if any(isinstance(m, torch.nn.Dropout) and m.inplace for m in attn.modules()):
                return DROPOUT_IN_PLACE
            return CHANGED_IN_PLACE_WHEN_TRAINING
    return ""


# --- shape errors, named as the mistakes they are -----------------------------------------------------

TRANSPOSE = ("nn.Linear keeps its weight as (d_out, d_in) and computes x @ weight.T, while SelfAttention_v1 "
             "computes x @ W with W of shape (d_in, d_out): give sa_v1 each layer's weight.T")
HEAD_DIM = ("the projections do not split into num_heads heads: head_dim must be d_out // num_heads, the split "
            ".view(b, num_tokens, num_heads, head_dim) and the merge .contiguous().view(b, num_tokens, d_out)")
SHAPE_WORDS = ("shape", "size", "mat1", "must match", "invalid for input")
HEADS_SWAPPED = ("the scores multiply by keys.transpose(1, 2), which swaps heads and tokens of the 4-D keys "
                 "(b, num_heads, num_tokens, head_dim): transpose the last two dims, keys.transpose(2, 3)")


def _transposes_1_2(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "transpose" \
        and len(node.args) == 2 and all(isinstance(a, ast.Constant) for a in node.args) \
        and sorted(a.value for a in node.args) == [1, 2]


OUT_PROJ = ("out_proj takes the merged heads, d_out values per token, not the inputs: make it nn.Linear(d_out, d_out), "
            "not nn.Linear(d_in, d_out)")


def head_split_hint(module):
    """The likely cause of a shape error in MultiHeadAttention: OUT_PROJ where out_proj is made from d_in (its
    weight shaped as W_query's, not (d_out, d_out)); HEADS_SWAPPED where the code of its class, or of a base
    class it inherits from (a forward written there), multiplies by something.transpose(1, 2) (right for 3-D
    keys, wrong for 4-D ones); else HEAD_DIM."""
    out_proj, query = getattr(module, "out_proj", None), getattr(module, "W_query", None)
    if isinstance(out_proj, torch.nn.Linear) and isinstance(query, torch.nn.Linear) \
            and out_proj.in_features != query.out_features and out_proj.in_features == query.in_features:
        return OUT_PROJ
    for cls in type(module).__mro__:
        if cls.__module__.split(".")[0] in ("torch", "builtins"):
            continue
        try:
            tree = ast.parse(inspect.getsource(cls).strip() + "\n")
        except (OSError, TypeError, SyntaxError, IndentationError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult) and _transposes_1_2(node.right):
                return HEADS_SWAPPED
    return HEAD_DIM


def transfer_problem(sa_v1, sa_v2):
    """'' when each matrix of sa_v1 has the shape of the matching sa_v2 layer's weight.T, else the mistake."""
    for name in ("W_query", "W_key", "W_value"):
        matrix = getattr(sa_v1, name, None)
        weight = getattr(getattr(sa_v2, name, None), "weight", None)
        if not isinstance(matrix, torch.Tensor) or not isinstance(weight, torch.Tensor):
            continue  # the comparison of the outputs says what is wrong
        layer = getattr(sa_v2, name)
        if tuple(weight.shape) != (getattr(layer, "out_features", None), getattr(layer, "in_features", None)):
            return (f"transfer_v2_to_v1 changed sa_v2: sa_v2.{name}.weight no longer has the shape (d_out, d_in) of "
                    f"an nn.Linear; only read sa_v2's weights and give sa_v1 their transpose")
        want = tuple(weight.T.shape)
        if tuple(matrix.shape) != want:
            return f"after the transfer sa_v1.{name} has shape {tuple(matrix.shape)}, expected {want}: {TRANSPOSE}"
        if weight.shape[0] == weight.shape[1] and not same(matrix.detach(), weight.detach().T) \
                and same(matrix.detach(), weight.detach()):
            return f"after the transfer sa_v1.{name} holds sa_v2.{name}.weight itself: {TRANSPOSE}"
    return ""


class Check:
    """Assertions whose messages say what was computed, what was expected and what came back; a wrong
    output that matches a common mistake is named as that mistake. fail() raises AssertionError (the
    public tests' conftest.py makes it a pytest failure without a traceback)."""

    @staticmethod
    def fail(message):
        raise AssertionError(message) from None

    def tensor(self, got, what):
        __tracebackhide__ = True
        if not isinstance(got, torch.Tensor):
            self.fail(f"{what} should return a torch.Tensor, got {type(got).__name__}")
        return got.detach()

    def shape(self, got, expected, what):
        __tracebackhide__ = True
        got = self.tensor(got, what)
        if tuple(got.shape) != tuple(expected):
            self.fail(f"{what}: expected shape {tuple(expected)}, got {tuple(got.shape)}")

    def close(self, got, expected, what, mistakes=None):
        """got matches expected to 1e-4 (the book prints 4 decimals).

        mistakes: a function returning [(wrong output, explanation)] (the *_mistakes above); when got
        differs from expected but matches one of them, the message is that explanation.
        """
        __tracebackhide__ = True
        got = self.tensor(got, what)
        if tuple(got.shape) != tuple(expected.shape):  # a known mistake of another shape is named first
            why = self.diagnosis(got.to(expected.dtype), expected, mistakes)
            if why:
                self.fail(f"{what} is wrong: {why}")
        self.shape(got, expected.shape, what)
        got = got.to(expected.dtype)
        if same(got, expected):
            return
        why = self.diagnosis(got, expected, mistakes)
        if why:
            self.fail(f"{what} is wrong: {why}")
        self.fail(f"{what} is wrong {first_difference(got, expected)}")

    @staticmethod
    def waits(reason):
        """True when a test must wait for another part (reason, from waits_for, is not ''): a notebook's check
        cell prints the reason and returns (the public tests' Check skips the test with it, conftest.py)."""
        if not reason:
            return False
        print(reason)
        return True

    def no_problem(self, problem, what):
        """Fail with '<what>: <problem>' when a diagnosis (dropout_problem, transfer_problem) found one."""
        __tracebackhide__ = True
        if problem:
            self.fail(f"{what}: {problem}")

    @contextlib.contextmanager
    def shape_errors(self, what, hint, errors=(RuntimeError,)):
        """Run the block; an error of `errors` about shapes in it (torch's RuntimeError; NumPy's ValueError where
        asked) fails as '<what> raised ...: <hint>' (hint: the words, or a function giving them, asked only
        then; where it gives none, the error is raised as it is)."""
        __tracebackhide__ = True
        try:
            yield
            return
        except errors as e:
            if not any(word in str(e) for word in SHAPE_WORDS):
                raise
            said = str(e).strip().splitlines()[0] if str(e).strip() else ""
            why = hint() if callable(hint) else hint
            if not why:
                raise
            kind = type(e).__name__
        self.fail(f"{what} raised {kind} ({said}): {why}")

    @staticmethod
    def diagnosis(got, expected, mistakes):
        """The explanation of the known mistake got matches, or '' (also when the mistakes cannot be computed)."""
        if mistakes is None:
            return ""
        try:
            return which_mistake(got, expected, mistakes())
        except Exception:  # a module too far from the specification to recompute: no diagnosis
            return ""

    def array_close(self, got, expected, what, mistakes=None):
        """The NumPy version of close: got must be an ndarray matching expected to 1e-4 (mistakes: as close's)."""
        __tracebackhide__ = True
        if not isinstance(got, np.ndarray):
            self.fail(f"{what} should return a numpy array, got {type(got).__name__}")
        expected = np.asarray(expected)
        if got.shape != expected.shape:
            self.fail(f"{what}: expected shape {expected.shape}, got {got.shape}")
        if not np.allclose(got, expected, atol=1e-4, rtol=0, equal_nan=True):  # NaN where expected has NaN: no difference
            why = self.diagnosis(torch.as_tensor(got), torch.as_tensor(expected), mistakes)
            if why:
                self.fail(f"{what} is wrong: {why}")
            self.fail(f"{what} is wrong {first_difference(torch.as_tensor(got), torch.as_tensor(expected))}")
