"""What a student reads of a check that ran after a hidden input: a fixed vocabulary of the grader's own
messages, chosen by the grader, with nothing the child chose in it (issue 37.6).

Once a child has seen an input only the grader knows, anything it chooses (a name, a dtype, a type
name, a number of its output, which of the stubs' names it raises) could spell that input out. So
the message of a failed check is not the text the check formatted but one of these, chosen from
evidence the grader owns:

    a named misconception      the cause the grader's comparison matched (misconceptions.py), each
                               of its options a string written in the suites
    a kind of failure          expect.Mismatch.kind, set by the grader's helpers (KINDS: wrong
                               values, NaN, wrong shape, not a tensor), with the check's hint when
                               the hint is a string written in the suites
    the raising line           for any other failure of a suite's own check: the message as written in
                               the call or statement that raised it, its strings in order and "..."
                               where it formats a value in, found from the traceback of the grader's
                               own frames and the suite's source (ast); never the formatted message
    the child's own ending      StudentError and SessionDied: fixed phrases (RAISED, NOT_IMPLEMENTED,
                               death()), from the child's recorded flags, never its text or numbers

Every one of them is a string written in the grader's source, so the grader's own numbers stay as
written ("-inf times 0 is NaN", ".transpose(1, 2)", "dropout=0.5") and no digit is masked. The
instructor keeps the full message in the check's detail.
"""
from __future__ import annotations

import ast
import functools
import traceback
from pathlib import Path
from typing import Any

SUITES = Path(__file__).resolve().parent
GENERIC = "this check failed on inputs only the grader knows"
RAISED = "your code raised an exception"
NOT_IMPLEMENTED = "not implemented yet"
KINDS = {
    "values": "the output is wrong on inputs only the grader knows",
    "nan": ("the output contains NaN or Inf values: a softmax over a row whose scores are all -inf gives NaN (is a whole row "
            "masked?), and so does -inf times 0"),
    "shape": "the output has the wrong shape on inputs only the grader knows",
    "type": "the output is not a tensor of the kind the specification gives",
}
IDLE = "timed out: it waited or slept for more than {seconds:g} s after an input only the grader knows (look for code that waits or sleeps)"
CPU = "timed out: it used all of the part's CPU time (the part's time limit): look for a loop that never ends"
ENDED = ("stopped before it answered: it was killed, ran out of memory (the part's limit) or exited (sys.exit/os._exit "
         "in the code?)")
SHORTEST = 12  # a string of the raising line shorter than this says nothing: GENERIC instead
KINDS["raised"] = RAISED
_MADE: set[str] = set()  # diagnoses the grader composed of its own pieces only (fixed): see fixed()


def fixed(said: str) -> str:
    """Mark a diagnosis the grader composed only of its own words and values (a specified signature) as
    part of the vocabulary -> said. Never called with anything the child chose."""
    _MADE.add(said)
    return said


def known(said: str) -> bool:
    """A string of the vocabulary: written in the suites, or composed by the grader alone (fixed)."""
    return said in literals() or said in _MADE


@functools.cache
def _tree(path: str) -> ast.Module | None:
    try:
        return ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None


@functools.cache
def _nodes(path: str) -> tuple[ast.AST, ...]:
    """Every node of the suite module's tree (ast.walk's order), walked once per process."""
    tree = _tree(path)
    return tuple(ast.walk(tree)) if tree is not None else ()


@functools.cache
def _raising(path: str) -> tuple[ast.Call | ast.Assert, ...]:
    """The suite module's raising calls and asserts that hold a message (_message_expression), in
    ast.walk's order: what raising_line looks among for the one covering a line."""
    return tuple(n for n in _nodes(path) if isinstance(n, (ast.Call, ast.Assert))
                 and _message_expression(n) is not None)


@functools.lru_cache(maxsize=1)
def literals() -> frozenset[str]:
    """Every string written in the suites' source (implicit concatenations whole; the fixed pieces of
    f-strings too): the only text a message after a hidden input may carry."""
    found = set()
    for path in sorted(SUITES.glob("*.py")):
        for node in _nodes(str(path)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.add(node.value)
    return frozenset(found)


def fixed_cause(cause: str) -> bool:
    """A cause every option of which is a string written in the suites (causes.options)."""
    from autograder import causes

    options = causes.options(cause)
    return bool(options) and all(known(option) for option in options)


RAISING = {"fail": 0, "true": 1, "AssertionError": 0, "Mismatch": 0}  # a call that raises: its message argument
HOLE = "..."  # where the template formats a value: the value itself is never shown
GAP = "\x00"  # a hole while templates are read and matched (no text of the suites holds it)


def _message_expression(node: ast.AST) -> ast.AST | None:
    """The part of a raising call or statement that holds its message."""
    if isinstance(node, ast.Assert):
        return node.msg
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        index = RAISING.get(name)
        return node.args[index] if index is not None and len(node.args) > index else None
    return None


@functools.lru_cache(maxsize=1)
def constants() -> dict[str, str]:
    """{NAME: text} of the suites' module-level names bound once to a string written there (SLICE_HINT,
    GPT2_CALL, ...): a message that formats one in says it as written."""
    found: dict[str, list[str]] = {}
    for path in sorted(SUITES.glob("*.py")):
        tree = _tree(str(path))
        for node in tree.body if tree is not None else ():
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = node.value
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found.setdefault(node.targets[0].id, []).append(value.value)
    return {name: values[0] for name, values in found.items() if len(set(values)) == 1}


def template(expression: ast.AST) -> str:
    """The message as written in the source: its strings in order (a module-level string constant of the
    suites as written), HOLE where any other value is formatted in (or the text is chosen at run time)."""
    if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
        return expression.value
    if isinstance(expression, ast.Name) and expression.id in constants():
        return constants()[expression.id]
    if isinstance(expression, ast.FormattedValue):
        return template(expression.value) if isinstance(expression.value, ast.Name) and \
            expression.value.id in constants() and expression.conversion == -1 and expression.format_spec is None \
            else GAP
    if isinstance(expression, ast.JoinedStr):
        return "".join(template(part) for part in expression.values)
    if isinstance(expression, ast.BinOp) and isinstance(expression.op, ast.Add):
        return template(expression.left) + template(expression.right)
    return GAP


def raising_line(error: BaseException) -> str:
    """The longest string written in the message of the suite's call or statement that raised `error`
    (the innermost frame of the grader's suites, expect.py aside), stripped of its joining punctuation;
    '' when there is none."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if Path(f.filename).resolve().parent == SUITES and Path(f.filename).name != "expect.py"]
    if not frames:
        return ""
    frame = frames[-1]
    path = str(Path(frame.filename).resolve())
    if _tree(path) is None or frame.lineno is None:
        return ""
    line = frame.lineno
    covering = [n for n in _raising(path) if n.lineno <= line <= (n.end_lineno or n.lineno)]
    if not covering:
        return ""
    node = min(covering, key=lambda n: ((n.end_lineno or n.lineno) - n.lineno, -n.col_offset))
    expression = _message_expression(node)
    written = template(expression) if expression is not None else ""
    while GAP + GAP in written:
        written = written.replace(GAP + GAP, GAP)
    if len(written.replace(GAP, "").strip(" :;,.()")) < SHORTEST:
        return ""
    return written.replace(GAP, HOLE).strip()


@functools.lru_cache(maxsize=1)
def templates() -> tuple[tuple[str, ...], ...]:
    """Every message the suites write (each string and f-string of their source, as template() reads
    it), split at its holes, with at least SHORTEST letters of its own: what a message built elsewhere
    (a helper returning the words, a check raising them) may be recognised as."""
    found = set()
    for path in sorted(SUITES.glob("*.py")):
        for node in _nodes(str(path)):
            if isinstance(node, ast.JoinedStr) or isinstance(node, ast.Constant) and isinstance(node.value, str):
                written = template(node)
                while GAP + GAP in written:
                    written = written.replace(GAP + GAP, GAP)
                if len(written.replace(GAP, "").strip(" :;,.()")) >= SHORTEST:
                    found.add(tuple(written.split(GAP)))
    return tuple(sorted(found))


def _fits(pieces: tuple[str, ...], message: str, anchored: bool) -> bool:
    """Whether message is pieces with anything in each hole (a glob with holes only); anchored=False:
    anything may come before it too."""
    if len(pieces) == 1:
        return message == pieces[0] if anchored else message.endswith(pieces[0])
    first, *middle, last = pieces
    if anchored and not message.startswith(first):
        return False
    at = len(first) if anchored else message.find(first)
    if at < 0:
        return False
    at += 0 if anchored else len(first)
    for piece in middle:
        found = message.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return message.endswith(last) and len(message) - len(last) >= at


def recognised(message: str) -> str:
    """The template of the suites this formatted message is (the whole message, else its end), as
    written: of those that fit, the one with the most words of its own (a hint a longer message ends
    with fits too); '' when none fits or two fit equally (then nothing of it is said)."""
    fits = sorted((p for p in templates() if _fits(p, message, False)), key=lambda p: (-len("".join(p)), -len(p)))
    # an f-string's own words are also a string of the suites: the same words twice are one template
    if len(fits) == 1 or len(fits) > 1 and (len("".join(fits[0])) > len("".join(fits[1]))
                                            or "".join(fits[0]) == "".join(fits[1])):
        return HOLE.join(fits[0]).strip()
    return ""


def after_hidden(error: BaseException) -> tuple[str, str]:
    """(message, cause) a student may read of a check that failed with `error` after a hidden input."""
    cause = str(getattr(error, "cause", "") or "")
    if cause and fixed_cause(cause):
        return cause, cause
    kind = getattr(error, "kind", "")
    if kind in KINDS:
        hint = str(getattr(error, "hint", "") or "")
        joined = ": " if kind == "raised" else ". "
        return KINDS[kind] + (f"{joined}{hint}" if hint and known(hint) else ""), ""
    return raising_line(error) or recognised(str(error)) or GENERIC, ""


def note_after_hidden(message: str) -> str:
    """A passed check's note after a hidden input: kept only when it is a string written in the suites."""
    return message if known(message) else ""


def death(child: Any) -> str:
    """How a child that has seen a hidden input ended, from its recorded flags only (client.PartChild):
    its idle bound, its CPU-time limit, or any other end."""
    if getattr(child, "idle_out", False):
        return IDLE.format(seconds=getattr(child, "IDLE_AFTER_HIDDEN", 2.0))
    if getattr(child, "cpu_out", False):
        return CPU
    return ENDED
