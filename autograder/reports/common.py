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
from dataclasses import dataclass, field

from autograder import text
from autograder.sandbox.death import NOT_GRADED

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
    """One entry of "what to fix" as a student may see it: one diagnosis, and every check of its part
    that failed with it (one bug, one paragraph)."""
    part: str           # the part ("causal"), or every part one problem stopped ("causal, mha")
    check: str = ""     # the first visible check's name; "" for hidden checks only and problems
    points: float = 0.0  # the points it cost
    message: str = ""   # the grader's diagnosis, a problem, or WITHHELD (one line, capped)
    own_text: str = ""  # an excerpt of what the student's own code raised (the first visible check)
    hidden: int = 0     # how many hidden checks of the part said this (0: not hidden checks)
    checks: list = field(default_factory=list)  # the visible checks' names, in order
    places: list = field(default_factory=list)  # what each check ran ("MultiHeadAttention with 2 heads")

    @property
    def label(self):
        """What it is about within its part: "book_example", "3 hidden checks", "book_example and
        2 hidden checks", or "problem"."""
        said = list(self.checks or ([self.check] if self.check else []))
        if self.hidden:
            said.append(f"{self.hidden} hidden check{'s' if self.hidden > 1 else ''}")
        return ", ".join(said[:-1]) + f" and {said[-1]}" if len(said) > 1 else (said[0] if said else "problem")

    @property
    def title(self):
        """"causal / book_example", "causal: 3 hidden checks", "causal: book_example and 2 hidden
        checks", "causal, mha"."""
        if self.hidden or len(self.checks) > 1:
            return f"{self.part}: {self.label}"
        return f"{self.part} / {self.check}" if self.check else self.part

    @property
    def failed_in(self):
        """'' for one check; else the line naming what each of its checks ran, "failed in: a; b; c"."""
        places = list(dict.fromkeys(place for place in self.places if place))
        if len(self.places) < 2 or not places:
            return ""
        return printable("failed in: " + "; ".join(places))


WRONG = " is wrong: "  # the grader's "<what it ran> is wrong: <diagnosis>"


def diagnosis_and_place(message):
    """("the diagnosis", "what the check ran") of a grader's message; (message, "") when it has no place."""
    place, said, diagnosis = message.partition(WRONG)
    return (diagnosis, place) if said and diagnosis and place else (message, "")


def what_to_fix(checks, parts):
    """[Item] for a student: part problems once, then one item per diagnosis of each part, listing
    the failed checks that said it, by the rule above.

    checks: ScoredChecks (anything with part, name, passed, score, max_score, visibility, message,
    student_text and optionally diagnosis); parts: {part: {"problem", ...}}.
    """
    problems, by_diagnosis = {}, {}
    for part, p in parts.items():
        if p.get("problem"):
            problems.setdefault(p["problem"], []).append(part)
    # a part the machine kept from running (runner.NOT_GRADED) costs nothing: no score stands
    items = [Item(", ".join(names), points=0 if problem.startswith(NOT_GRADED) else sum(_lost(checks, n) for n in names),
                  message=printable(problem)) for problem, names in problems.items()]
    for c in checks:
        if c.passed or (c.message and c.message == (parts.get(c.part) or {}).get("problem")):
            continue  # said once, with the part's problem
        visible = c.visibility == "visible"
        if visible and _withheld(c):
            items.append(Item(c.part, c.name, c.max_score, "check failed", checks=[c.name]))
            continue
        said = printable(c.message or "check failed") if visible else hidden_diagnosis(c)
        diagnosis, place = diagnosis_and_place(said)
        item = by_diagnosis.get((c.part, diagnosis))
        if item is None:
            item = by_diagnosis[c.part, diagnosis] = Item(c.part, message=said)
            items.append(item)
        elif item.message != diagnosis:  # a second check said it: the place goes to the list
            item.message = diagnosis
        item.points += c.max_score
        item.places.append(f"{c.name} ({place})" if visible and place else c.name if visible else place)
        if visible:
            item.checks.append(c.name)
            item.check = item.check or c.name
            if c.student_text and not item.own_text:
                item.own_text = text.excerpt(c.student_text)
        else:
            item.hidden += 1
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
