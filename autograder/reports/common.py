"""What every report format shares: scores as people read them, the rule of what a student may
see of a failed check, and the last plain-text guard before anything is printed.

The rule (every student channel applies it through `what_to_fix`):

    visible check failed  -> the grader's diagnosis (`message`) and a short excerpt of what the
                             student's own code raised (`student_text`), labelled as theirs
    hidden check failed   -> the diagnosis only, without the check's name; `student_text` never
                             (that code may have seen hidden inputs)
    `diagnosis: withheld` -> (grading.yml, per check) only that the check failed: WITHHELD for a
                             hidden one, its name for a visible one; no diagnosis, no student text
    part problem          -> said once for the part (a missing module, a process that died),
                             not once per check

Instructor channels (the `grade` table, JUnit, the stored results JSON) show everything:
`instructor_lines`.
"""
import sys
from dataclasses import dataclass

from autograder import text

WITHHELD = "hidden check failed"  # a hidden check whose diagnosis grading.yml withholds
OWN_TEXT = "your error"             # the label of the text the student's own code raised
DETAIL = "instructor detail"
FIELD = text.MESSAGE                # the most any one field of a report holds


def fmt(x):
    """A score as people read it: 8, 2.5, 0.6667."""
    return f"{x:g}"


def printable(value, limit=FIELD):
    """One line of inert text of at most `limit` characters: the guard applied at print time,
    whatever text.clean already did where the text entered the grader."""
    return text.clean(value, limit=limit, newlines=False)


@dataclass
class Item:
    """One entry of "what to fix" as a student may see it."""
    part: str           # the part ("causal"), or every part one problem stopped ("causal, mha")
    check: str = ""     # a visible check's name; "" for hidden checks and problems
    points: float = 0.0  # the points it cost
    message: str = ""   # the grader's diagnosis, a problem, or WITHHELD (one line, capped)
    own_text: str = ""  # an excerpt of what the student's own code raised (visible checks only)
    hidden: int = 0     # how many hidden checks of the part said this (0: not hidden checks)

    @property
    def label(self):
        """What it is about within its part: the check, "3 hidden checks", or "problem"."""
        if self.hidden:
            return f"{self.hidden} hidden check{'s' if self.hidden > 1 else ''}"
        return self.check or "problem"

    @property
    def title(self):
        """"causal / book_example", "causal: 3 hidden checks", "causal, mha"."""
        if self.hidden:
            return f"{self.part}: {self.label}"
        return f"{self.part} / {self.check}" if self.check else self.part


def what_to_fix(checks, parts):
    """[Item] for a student: part problems once, then the failed checks by the rule above.

    checks: ScoredChecks (anything with part, name, passed, score, max_score, visibility, message,
    student_text and optionally diagnosis); parts: {part: {"problem", ...}}.
    """
    problems, hidden = {}, {}
    for part, p in parts.items():
        if p.get("problem"):
            problems.setdefault(p["problem"], []).append(part)
    items = [Item(", ".join(names), points=sum(_lost(checks, n) for n in names), message=printable(problem))
             for problem, names in problems.items()]
    for c in checks:
        if c.passed or (c.message and c.message == (parts.get(c.part) or {}).get("problem")):
            continue  # said once, with the part's problem
        if c.visibility == "visible":
            withheld = _withheld(c)
            items.append(Item(c.part, c.name, c.max_score, "check failed" if withheld else
                              printable(c.message or "check failed"),
                              "" if withheld or not c.student_text else text.excerpt(c.student_text)))
            continue
        said = hidden_diagnosis(c)
        if (c.part, said) not in hidden:
            hidden[c.part, said] = Item(c.part, message=said)
            items.append(hidden[c.part, said])
        hidden[c.part, said].points += c.max_score
        hidden[c.part, said].hidden += 1
    return items


def hidden_diagnosis(check):
    """What a student may see of a failed hidden check: its diagnosis, or WITHHELD."""
    return WITHHELD if _withheld(check) else printable(check.message or "check failed")


def _withheld(check):
    return getattr(check, "diagnosis", "shown") == "withheld"


def _lost(checks, part):
    return sum(c.max_score - c.score for c in checks if c.part == part)


def anonymous_names(checks):
    """{id(check): "part: hidden check k"} for every check that is not visible (k counts per part,
    in rubric order, passed or not: the same numbering in every channel)."""
    names, counters = {}, {}
    for c in checks:
        if c.visibility != "visible":
            counters[c.part] = counters.get(c.part, 0) + 1
            names[id(c)] = f"{c.part}: hidden check {counters[c.part]}"
    return names


def student_output(check):
    """The text a student may see for one check of a results file (its `output`)."""
    if check.passed:
        return printable(check.message) if check.visibility == "visible" and check.message else ""
    if check.visibility != "visible":
        return hidden_diagnosis(check)
    if _withheld(check):
        return "check failed"
    lines = [printable(check.message or "check failed")]
    if check.student_text:
        lines.append(f"{OWN_TEXT}: {text.excerpt(check.student_text)}")
    return "\n".join(lines)


def instructor_lines(check):
    """Everything about one failed check, one line each: diagnosis, the student's text, detail."""
    lines = [printable(check.message or "check failed")]
    if check.student_text:
        lines.append(f"{OWN_TEXT}: {printable(check.student_text)}")
    if check.detail:
        lines.append(f"{DETAIL}: {printable(check.detail)}")
    return lines


def emit(report, stream=None):
    """Print a report that may hold any character, on a stream that may not encode them all."""
    stream = stream or sys.stdout
    encoding = getattr(stream, "encoding", None) or "utf-8"
    stream.write(report.encode(encoding, "replace").decode(encoding, "replace") + "\n")
    stream.flush()
