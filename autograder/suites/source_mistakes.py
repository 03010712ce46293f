"""Mistakes that the numbers alone cannot tell apart, named from the grader's own reading of the module.

A check's numbers say *what* is wrong ("no causal mask is applied"); two common ways of getting there
look alike in the numbers and differ in the fix. Here the submitted text is parsed with `ast` (never
run, never quoted back) and a diagnosis the numbers gave is made precise when the text shows how:

- MASKED_FILL_RESULT_DISCARDED: a statement `scores.masked_fill(mask, -inf)` whose result is thrown away
  (masked_fill returns a new tensor; masked_fill_ changes the scores in place). The numbers are those
  of no mask at all.
- GLOBAL_READ: a method that reads a variable assigned at the module's top level (a notebook's
  `inputs`, `d_out`, `context_length` carried into the module) where it should read its arguments
  or self.<name>. The numbers are right on the book's example and wrong on other inputs and sizes.

- BATCH_T / BATCH_SWAPPED / HEADS_SWAPPED / OUT_PROJ_FROM_D_IN: a forward whose matmul raised a shape
  error, and whose text (what the class runs, a forward inherited from its base among it:
  source_reading's reading of a class) transposes the keys for a batch as if they were 2-D (keys.T
  reverses every dim of a 3-D tensor, keys.transpose(0, 1) moves the batch) or, in the multi-head
  class, swaps heads and tokens (keys.transpose(1, 2) on 4-D keys) or makes out_proj from d_in, as the
  projections are made. Without that reading the check guesses the commonest cause of a shape error,
  the unsliced mask.
- ARRAYS_DOT_T: NumPy's shape error raised at a line whose product multiplies by the .T of a variable the
  function computed (k.T on a batch of keys): the line is the child's word on where it raised.
- MATRIX_TRANSPOSED: a shape error where a class multiplies by its own matrix's .T (self.W_query.T: nn.Linear's
  x @ weight.T carried to SelfAttention_v1's (d_in, d_out) matrices).
- SCALED_TWICE: the numbers of scores divided by d_k (head_dim) where the module calls
  scaled_dot_product_attention, which scales by 1/sqrt(d_k) itself: the student's own scaling on top.
- SEEDED_IN_INIT: weights that are not the caller's seed's, where an __init__ calls torch.manual_seed.

Each diagnosis is a fixed sentence of the grader's: nothing of the student's text goes into it.
"""
import ast
import builtins

from autograder import source_reading

MASKED_FILL_RESULT_DISCARDED = ("the result of masked_fill is discarded: masked_fill returns a new tensor and leaves the "
                         "scores unchanged; use masked_fill_ (in place) or assign it (scores = scores.masked_fill(...))")
GLOBAL_READ = ("a function or method reads a variable set at the top of the module (a notebook variable such as "
               "inputs, d_out or context_length) instead of its own arguments or self.<name>: the grader calls it "
               "with other inputs and sizes, so compute everything from the arguments and the attributes set in "
               "__init__")
BATCH_T = ("keys.T on a batch reverses every dim of the 3-D keys, (b, num_tokens, d_out) -> (d_out, num_tokens, b), so "
           "the scores' matmul fails: transpose only the last two dims, keys.transpose(1, 2) (or keys.mT)")
WEIGHT_NOT_TRANSPOSED = ("nn.Linear stores its weight as (d_out, d_in) and computes x @ weight.T: call the layer, "
                         "self.W_query(x), instead of multiplying x by its .weight")
HEADS_SWAPPED = ("the scores multiply by keys.transpose(1, 2), which swaps heads and tokens of the 4-D keys (b, "
                 "num_heads, num_tokens, head_dim): transpose the last two dims, keys.transpose(2, 3)")
BATCH_SWAPPED = ("the keys' transpose on a batch moves dim 0, the batch (keys.transpose(0, 1) swaps the sequences with "
                 "the tokens), so the scores' matmul fails: the keys of a batch are 3-D, (b, num_tokens, d_out); "
                 "transpose the last two dims, keys.transpose(1, 2) (or keys.mT)")
# `self.out_proj = nn.Linear(d_in, d_out)`, the projections' pattern carried over: it cannot take the merged heads
OUT_PROJ_FROM_D_IN = ("out_proj takes the merged heads, d_out values per token, not the inputs: make it nn.Linear(d_out, "
                      "d_out), not nn.Linear(d_in, d_out)")
# the book's torch.manual_seed(123) moved into the class: every module made has the same weights, whatever the seed
SEEDED_IN_INIT = ("__init__ calls torch.manual_seed, so every module made gets the same weights whatever the caller "
                  "seeded before (the book seeds before it builds the module, outside the class): leave seeding to "
                  "the caller")
# nn.Linear's x @ weight.T carried to SelfAttention_v1's own (d_in, d_out) matrices
MATRIX_TRANSPOSED = ("SelfAttention_v1's matrices are (d_in, d_out) already: multiply x @ self.W_query as it is; the .T "
                     "belongs to nn.Linear's weight, which is stored as (d_out, d_in)")
# NumPy's k.T on a batch of keys, the notes' 2-D habit: it reverses every axis
ARRAYS_DOT_T = ("k.T on a batch reverses every axis of the 3-D keys, (B, T, m) -> (m, T, B), so the scores' product "
                "fails: swap only the last two axes, k.transpose(0, 2, 1) or k.swapaxes(-1, -2) (or write it with "
                "np.einsum)")
# the diagnoses (misconceptions.py) a discarded masked_fill gives: the numbers of no mask at all
NO_MASK_CAUSES = ("no causal mask is applied",)
# scaled_dot_product_attention scales by 1/sqrt(d_k) itself (its default scale): queries or scores scaled by the
# student as well give the numbers of the scores divided by d_k (head_dim in each head of MultiHeadAttention)
SCALED_TWICE = ("the scores are scaled twice, so they are divided by d_k (head_dim in each head): "
                "scaled_dot_product_attention already divides them by sqrt(d_k), its default scale; leave the "
                "scaling to it (or compute the attention yourself)")


def _parse(source: str) -> ast.Module | None:
    """The module's tree, parsed once per grading (source_reading.parse); a text that reading does not
    parse is parsed here as before (None on a syntax error; what else it raises, raised)."""
    tree = source_reading.parse(source)
    if tree is not None:
        return tree
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def discards_masked_fill(source: str) -> bool:
    """Is there a statement that calls masked_fill (not masked_fill_) and uses nothing of its result?"""
    tree = _parse(source)
    if tree is None:
        return False
    for node in source_reading.nodes(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Attribute) and func.attr == "masked_fill":
                return True
    return False


def _module_variables(tree: ast.Module) -> set[str]:
    """Names the module's top level assigns a value to (not functions, classes or imports); names
    written in capitals are constants, which a method may read."""
    names: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name) and not name.id.isupper():
                    names.add(name.id)
    return names


def _local_names(function: ast.AST) -> set[str]:
    """The parameters and every name the function (or a function, lambda or comprehension inside it)
    binds; a `global` statement makes a name the module's again."""
    bound: set[str] = set()
    declared_global: set[str] = set()
    for node in source_reading.nodes(function):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            bound.update(arg.arg for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs,
                                             *([a.vararg] if a.vararg else []), *([a.kwarg] if a.kwarg else [])])
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared_global.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return bound - declared_global


def reads_module_variable(source: str) -> bool:
    """Does a function or method of the module read a variable its top level assigns (and not one it
    binds itself)?"""
    tree = _parse(source)
    if tree is None:
        return False
    variables = _module_variables(tree) - set(dir(builtins))
    if not variables:
        return False
    for function in _top_functions(tree):
        local = _local_names(function)
        for node in source_reading.nodes(function):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in variables \
                    and node.id not in local:
                return True
    return False


def _top_functions(tree: ast.Module) -> list:
    """The module's functions that take arguments (one without is a demo, which may read the notebook's
    variables) and its classes' methods; nested functions are read with them."""
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (node.args.args or node.args.posonlyargs):
            found.append(node)
        elif isinstance(node, ast.ClassDef):
            found += [item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return found


def _called(call: ast.AST) -> str:
    """The bare name a call calls (torch.manual_seed(...) and manual_seed(...): 'manual_seed'); '' for any other
    node, or a call of something else (a subscript, a call's result)."""
    func = call.func if isinstance(call, ast.Call) else None
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def calls_sdpa(source: str) -> bool:
    """Does the module call scaled_dot_product_attention (F.scaled_dot_product_attention, or the name imported)?"""
    tree = _parse(source)
    if tree is None:
        return False
    return any(_called(node) == "scaled_dot_product_attention" for node in source_reading.nodes(tree))


def seeds_in_init(source: str) -> bool:
    """Does an __init__ of a class of the module (or a function it defines inside) call manual_seed?"""
    tree = _parse(source)
    if tree is None:
        return False
    for node in source_reading.nodes(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "__init__" and any(
                        _called(call) == "manual_seed" for call in source_reading.nodes(item)):
                    return True
    return False


def refined(cause: str, unexplained: bool, source: str) -> str:
    """The more precise diagnosis the module's text gives for a check's cause ('' when none): a discarded
    masked_fill for the numbers of no mask; scaled twice for the numbers of scores divided by d_k where the
    module calls scaled_dot_product_attention; a module variable read in a method for numbers that are
    wrong with no known mistake named."""
    from autograder.suites.misconceptions import BY_D_K, BY_HEAD_DIM

    if cause.startswith(NO_MASK_CAUSES) and discards_masked_fill(source):
        return MASKED_FILL_RESULT_DISCARDED
    if cause in (BY_D_K, BY_HEAD_DIM) and calls_sdpa(source):
        return SCALED_TWICE
    if unexplained and not cause and reads_module_variable(source):
        return GLOBAL_READ
    return ""


def _run_by(sources: source_reading.Sources, class_names: tuple, module: str = "") -> list:
    """What the module's classes named class_names run (every class the module writes when empty), read as
    source_reading reads a class (Reading.functions): its methods and those of its bases the submission
    writes (a forward inherited from a base class, in this module or another), functions bound onto it,
    and the submission's functions these call. sources: the module's text, or every module's by name
    (Student.sources) with module the one to read."""
    reading = source_reading.reading_of(sources, module)
    tree = reading.tree(module)
    if tree is None:
        return []
    if class_names:
        classes = [found for found in (reading.find(module, name) for name in class_names) if found is not None]
    else:
        classes = [source_reading.Found(module, node) for node in tree.body if isinstance(node, ast.ClassDef)]
    return [function for found in classes for _, function in reading.functions(found)]


def _matmul_right_operands(function: ast.AST) -> list:
    """The right operands of every `a @ b` and torch.matmul(a, b) / torch.bmm(a, b) in the function."""
    found = []
    for node in source_reading.nodes(function):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            found.append(node.right)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("matmul", "bmm") and len(node.args) == 2:
            found.append(node.args[1])
    return found


def _is_dot_T(node: ast.AST) -> bool:
    """name.T: a plain variable's .T (not a weight's: x @ self.W_query.weight.T is a right 2-D one)."""
    return isinstance(node, ast.Attribute) and node.attr == "T" and isinstance(node.value, ast.Name)


def _is_transpose_1_2(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "transpose"):
        return False
    return len(node.args) == 2 and sorted(a.value for a in node.args
                                          if isinstance(a, ast.Constant) and isinstance(a.value, int)) == [1, 2]


def _moves_dim_0(node: ast.AST) -> bool:
    """name.transpose(0, i) / name.transpose(i, 0) (dim 0 written as 0 or -3): the batch of 3-D keys moved."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "transpose"
            and isinstance(node.func.value, ast.Name) and len(node.args) == 2):
        return False
    def dim(arg: ast.expr) -> object:
        """An int written as a constant, or a negated one (-3); None for anything else."""
        if isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub) and isinstance(arg.operand, ast.Constant) \
                and isinstance(arg.operand.value, int):
            return -arg.operand.value
        return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, int) else None

    dims = [dim(a) for a in node.args]
    return None not in dims and any(d in (0, -3) for d in dims)


def _out_proj_from_d_in(function: ast.AST) -> bool:
    """An __init__ that assigns self.out_proj = <...>Linear(d_in, ...), d_in being its first argument after self."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or function.name != "__init__":
        return False
    params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    if len(params) < 2:
        return False
    for node in source_reading.nodes(function):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and node.value.args and any(
                isinstance(t, ast.Attribute) and t.attr == "out_proj" for t in node.targets):
            first = node.value.args[0]
            if _called(node.value) == "Linear" and isinstance(first, ast.Name) and first.id == params[1]:
                return True
    return False


def out_proj_from_d_in(sources: source_reading.Sources, module: str = "") -> bool:
    """Does the __init__ of the efficient class (MultiHeadAttention, or a base of it the submission writes) make
    out_proj from d_in? sources, module: as _run_by reads them."""
    reading = source_reading.reading_of(sources, module)
    found = reading.find(module, "MultiHeadAttention") if reading.tree(module) is not None else None
    return found is not None and any(_out_proj_from_d_in(item) for cls in reading.bases(found) for item in cls.node.body)


def shape_error_cause(sources: source_reading.Sources, multi_head: bool, module: str = "") -> str:
    """The cause the module's text shows for a shape error raised in a forward on a batch ('' when it
    shows none): a matmul by name.T in what its classes run, by name.transpose(0, 1) (single head: 3-D
    keys, the batch moved), or (multi_head: the efficient class, 4-D keys) by keys.transpose(1, 2).
    sources, module: as _run_by reads them."""
    functions = _run_by(sources, ("MultiHeadAttention",) if multi_head else (), module)
    operands = [operand for function in functions for operand in _matmul_right_operands(function)]
    if any(_is_dot_T(operand) for operand in operands):
        return BATCH_T
    if not multi_head and any(_moves_dim_0(operand) for operand in operands):
        return BATCH_SWAPPED
    if multi_head and out_proj_from_d_in(sources, module):
        return OUT_PROJ_FROM_D_IN
    if multi_head and any(_is_transpose_1_2(operand) for operand in operands):
        return HEADS_SWAPPED
    return ""


def arrays_dot_T(source: str, kind: str, where: str, module: str) -> str:
    """ARRAYS_DOT_T where the shape error (kind: NumPy's ValueError) was raised at a line of `module`'s text
    (where: 'module.py, line N, in f', the child's word, only read for the line to look at) whose product
    multiplies by the .T of a variable the function computed (k = x @ wk: not an argument such as wo, a 2-D
    weight whose .T is another mistake); '' otherwise."""
    prefix = f"{module}.py, line "
    if kind != "ValueError" or not where.startswith(prefix):
        return ""
    number = where[len(prefix):].split(",", 1)[0]
    tree = _parse(source) if number.isdigit() else None
    if tree is None:
        return ""
    line = int(number)
    for function in source_reading.nodes(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
                not function.lineno <= line <= (function.end_lineno or function.lineno):
            continue
        a = function.args
        arguments = {arg.arg for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
        for node in source_reading.nodes(function):
            if isinstance(node, (ast.BinOp, ast.Call)) and node.lineno <= line <= (node.end_lineno or node.lineno) and \
                    any(_is_dot_T(operand) and operand.value.id not in arguments
                        for operand in _matmul_right_operands(node)):
                return ARRAYS_DOT_T
    return ""


def _is_weight(node: ast.AST) -> bool:
    """<layer>.weight, untransposed (the right operand of a matmul)."""
    return isinstance(node, ast.Attribute) and node.attr == "weight"


def _is_own_matrix_T(node: ast.AST) -> bool:
    """self.<name>.T: a matrix the module holds itself, transposed (not a layer's self.<name>.weight.T)."""
    return isinstance(node, ast.Attribute) and node.attr == "T" and isinstance(node.value, ast.Attribute) and \
        isinstance(node.value.value, ast.Name) and node.value.value.id == "self"


def multiplies_by_own_matrix_T(source: str) -> bool:
    """Does what a class of the module runs multiply by self.<matrix>.T (v1's (d_in, d_out) matrices transposed)?"""
    return any(_is_own_matrix_T(operand) for function in _run_by(source, ())
               for operand in _matmul_right_operands(function))


def multiplies_by_weight(source: str) -> bool:
    """Does what a class of the module runs multiply by a layer's .weight as it is, (d_out, d_in), not its .T?"""
    return any(_is_weight(operand) for function in _run_by(source, ())
               for operand in _matmul_right_operands(function))


SHAPE_WORDS = ("cannot be multiplied", "size", "match", "shape")


def raised_cause(kind: str, message: str, source: str) -> str:
    """The cause the module's text shows for a shape error its code raised ('' when none): a matmul by an
    nn.Linear's untransposed weight. kind, message: the error's class name and text, only classified."""
    if kind == "RuntimeError" and any(w in message.lower() for w in SHAPE_WORDS) and multiplies_by_weight(source):
        return WEIGHT_NOT_TRANSPOSED
    if kind == "RuntimeError" and any(w in message.lower() for w in SHAPE_WORDS) and out_proj_from_d_in(source):
        return OUT_PROJ_FROM_D_IN
    if kind == "RuntimeError" and any(w in message.lower() for w in SHAPE_WORDS) and multiplies_by_own_matrix_T(source):
        return MATRIX_TRANSPOSED
    return ""
