"""Which failed checks one cause explains: the words the suites and the reports share (no torch here).

A failed check may name the misconception its numbers match (its `cause`, expect.Mismatch.cause),
or several that give the same numbers (a cause starting with SEVERAL), or none (`unexplained`:
its numbers are just wrong). runner.part_diagnosis picks the part's one cause; reports.common
folds into one item every failed check that cause explains.
"""

# how a cause begins when several known mistakes give the very numbers a check saw (misconceptions.named_mistake)
SEVERAL = "one of these mistakes, which give the same numbers here: "
OR = "; or "
TIED = "one of: "  # runner.part_diagnosis's diagnosis when causes were named equally often: no one cause


def options(cause: str) -> list[str]:
    """The mistakes a cause names: one, or each of SEVERAL's."""
    return cause[len(SEVERAL):].split(OR) if cause.startswith(SEVERAL) else [cause] if cause else []


def explains(diagnosis: str, cause: str, unexplained: bool) -> bool:
    """Whether a part's diagnosis explains a failed check: the check names it, names it among
    several possibilities, or names nothing while its numbers are wrong (the diagnosis is the likely
    cause). A check that names another single cause is another mistake."""
    if not diagnosis or diagnosis.startswith(TIED):
        return False
    return cause == diagnosis or diagnosis in options(cause) or (unexplained and not cause)
