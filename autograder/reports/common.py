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
    one cause             -> every failed check a cause explains is one item, led by the cause:
                             the checks that name it, name it among several possibilities, or
                             name none (runner.part_diagnosis); a check naming another cause is
                             another item; a withheld check is never folded, and a cause only
                             withheld checks name never leads

Instructor channels (the `grade` table, JUnit, the stored results JSON) show everything:
`instructor_lines`.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from autograder import causes, text

if TYPE_CHECKING:
    from autograder.grading import PartScore, ScoredCheck

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
    voided: list = field(default_factory=list)  # visible checks that pass but earn nothing because of it
    voided_hidden: int = 0                       # how many hidden checks the same
    lost: list = field(default_factory=list)     # (visible check, points) of an item that folds several messages
    lost_hidden: float = 0.0                     # the points of its hidden checks
    folded: bool = False                         # it holds checks whose own messages differ: listed in lost_note

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
    def notes(self) -> list[str]:
        """The lines said under its message, those that apply, in this order in every format: what its
        checks ran (failed_in), what else it cost (lost_note), which passing checks it voids (voided_note)."""
        return [note for note in (self.failed_in, self.lost_note, self.voided_note) if note]

    @property
    def failed_in(self):
        """'' for one check; else the line naming what each of its checks ran, "failed in: a; b; c"."""
        places = list(dict.fromkeys(place for place in self.places if place))
        if len(self.places) < 2 or not places:
            return ""
        return printable("failed in: " + "; ".join(places))


    @property
    def voided_note(self):
        """'' or the line naming the passing checks whose points this mistake also costs."""
        said = list(self.voided)
        if self.voided_hidden:
            said.append(f"{self.voided_hidden} hidden check{'s' if self.voided_hidden > 1 else ''}")
        if not said:
            return ""
        names = ", ".join(said[:-1]) + f" and {said[-1]}" if len(said) > 1 else said[0]
        one = len(self.voided) + self.voided_hidden == 1
        return printable(f"this also costs the points of {names}, which" + (VOIDED_ONE if one else VOIDED))


    @property
    def lost_note(self):
        """'' or, for an item led by its part's diagnosis that holds checks with other messages, the line
        naming each of its failed checks and what it cost (hidden ones counted, never named)."""
        if not self.folded:
            return ""
        said = [f"{name} (-{fmt(points)})" for name, points in self.lost]
        if self.hidden:
            said.append(f"{self.hidden} hidden check{'s' if self.hidden > 1 else ''} (-{fmt(self.lost_hidden)})")
        names = ", ".join(said[:-1]) + f" and {said[-1]}" if len(said) > 1 else said[0]
        return printable(f"this one mistake fails {names}")


WRONG = " is wrong: "  # the grader's "<what it ran> is wrong: <diagnosis>"


def diagnosis_and_place(message):
    """("the diagnosis", "what the check ran") of a grader's message; (message, "") when it has no place."""
    place, said, diagnosis = message.partition(WRONG)
    return (diagnosis, place) if said and diagnosis and place else (message, "")


def what_to_fix(checks: list[ScoredCheck], parts: dict[str, PartScore]) -> list[Item]:
    """[Item] for a student: part problems once, then one item per diagnosis of each part, listing
    the failed checks that said it, by the rule above. A check voided by its `requires` (it passed,
    but a check it requires failed) is no item of its own: its points go to the item of the mistake
    that voids it, which names it (Item.voided_note): one mistake, one item. Likewise the failed
    checks one cause explains, whatever each says, are one item led by it (Item.lost_note lists them).

    checks: a Grade's (or a record's, records.checks_of); parts: the same's ({part: PartScore}).
    """
    holder: dict[tuple[str, str], Item] = {}  # (part, check) -> the item that says it
    items = _problem_items(checks, parts, holder)
    failed = [c for c in checks if not c.passed and not said_with_problem(c, parts)]
    items += _diagnosis_items([c for c in failed if not voided_by(c)], holder, _leads(failed, parts))
    for c in (c for c in failed if voided_by(c)):
        item = next((holder[c.part, name] for name in voided_by(c) if (c.part, name) in holder), None)
        if item is None:  # the check that voids it is not among these (a rubric cut down): said as it is
            visible = c.visibility == "visible"
            items.append(Item(c.part, c.name if visible else "", c.max_score, student_output(c).split("\n", 1)[0],
                              hidden=int(not visible), checks=[c.name] if visible else []))
            continue
        if not _problem(parts, c.part):  # a part problem's item counts all the part lost
            item.points += c.max_score
        if c.visibility == "visible":
            item.voided.append(c.name)
        else:
            item.voided_hidden += 1
    return items


def _problem_items(checks, parts, holder):
    """One Item per part problem (the parts it stopped named together), holding every failed check of them."""
    problems: dict[str, list[str]] = {}
    for part, p in parts.items():
        if p.problem:
            problems.setdefault(p.problem, []).append(part)
    items = []
    for problem, names in problems.items():
        # a part the machine kept from running (its `not_graded` flag, set by the grader) costs nothing
        lost = 0 if any(parts[n].not_graded for n in names) else sum(_lost(checks, n) for n in names)
        items.append(Item(", ".join(names), points=lost, message=printable(problem)))
        holder.update({(c.part, c.name): items[-1] for c in checks if c.part in names and not c.passed})
    return items


def _leads(failed, parts):
    """{part: (its diagnosis, the causes named alone by its failed checks a student may read)} for each
    part without a problem (runner.part_diagnosis; a cause only withheld checks name is never said)."""
    leads = {}
    for part, p in parts.items():
        named = [printable(c.cause) for c in failed if c.part == part and not _withheld(c)
                 and c.cause and not c.cause.startswith(causes.SEVERAL)]
        if named and not p.problem:
            leads[part] = (printable(p.diagnosis), list(dict.fromkeys(named)))
    return leads


def _explained(check, leads):
    """The cause that explains this failed check and leads its item ('' for none): the one cause it
    names; of the several it names, the part's diagnosis or else the first a check names alone; for
    wrong numbers without a cause, the part's diagnosis (causes.explains). A withheld check says only
    that it failed: never why."""
    diagnosis, named = leads.get(check.part, ("", []))
    if not named or _withheld(check):
        return ""
    cause, unexplained = printable(check.cause), check.unexplained
    for lead in ([diagnosis] if diagnosis in named else []) + named:
        if causes.explains(lead, cause, unexplained and lead == diagnosis):
            return lead
    return ""


def _diagnosis_items(failed, holder, leads=None):
    """One Item per (part, diagnosis) of the failed checks, each check's name, place and points in it;
    every check its part's diagnosis explains (leads: _leads) in one item led by that diagnosis."""
    items: list[Item] = []
    by_diagnosis: dict[tuple[str, str, bool], Item] = {}
    first: dict[tuple[str, str, bool], str] = {}  # first: the diagnosis of each item's first check
    for c in failed:
        visible = c.visibility == "visible"
        if visible and _withheld(c):
            items.append(Item(c.part, c.name, c.max_score, "check failed", checks=[c.name]))
            holder[c.part, c.name] = items[-1]
            continue
        said = printable(c.message or "check failed") if visible else hidden_diagnosis(c)
        diagnosis, place = diagnosis_and_place(said)
        lead = _explained(c, leads or {})
        key = (c.part, lead or diagnosis, bool(lead))
        item = by_diagnosis.get(key)
        if item is None:
            item = by_diagnosis[key] = Item(c.part, message=said)
            items.append(item)
            first[key] = diagnosis
        else:  # a second check said it (or its part's diagnosis explains it): the place goes to the list
            item.message = key[1]
            item.folded = item.folded or bool(lead) and {diagnosis, first[key]} != {lead}
        holder[c.part, c.name] = item
        item.points += c.max_score
        item.places.append(f"{c.name} ({place})" if visible and place else c.name if visible else place)
        if visible:
            item.checks.append(c.name)
            item.lost.append((c.name, c.max_score))
            item.check = item.check or c.name
            if c.student_text and not item.own_text:
                item.own_text = text.excerpt(c.student_text)
        else:
            item.hidden += 1
            item.lost_hidden += c.max_score
    return items


def said_with_problem(check, parts):
    """A failed check that only repeats its part's problem ("the causal process timed out", or "not
    run: " and the problem, for the checks after it): said once, with the problem."""
    problem = _problem(parts, check.part)
    return bool(problem and check.message in (problem, f"not run: {problem}"))


GATED_START = "passes here, but "  # grading.GATED, the message of a voided check
VOIDED = " pass, but earn their points only together with the checks this mistake fails"
VOIDED_ONE = " passes, but earns its points only together with the checks this mistake fails"


def voided_by(check):
    """The failed checks that void a passed check's points (grading.yml `requires`), () when none: the
    check's own record, or for an older record the instructor detail beside the fixed message."""
    found = tuple(check.voided_by)
    if found or check.passed or not str(check.message or "").startswith(GATED_START):
        return found
    detail = str(check.detail)
    return tuple(n.strip() for n in detail.partition("required: ")[2].split(",") if n.strip())


def hidden_diagnosis(check):
    """What a student may see of a failed hidden check: its diagnosis, or WITHHELD."""
    return WITHHELD if _withheld(check) else printable(check.message or "check failed")


def _withheld(check):
    return check.diagnosis == "withheld"


def _problem(parts, part):
    """The problem of a part ('' for none, or for a part these parts do not hold)."""
    found = parts.get(part)
    return found.problem if found is not None else ""


def _lost(checks, part):
    return sum(c.max_score - c.score for c in checks if c.part == part)


def anonymous_names(checks):
    """{id(check): "part: hidden check k"} for every check that is not visible (k counts per part,
    in rubric order, passed or not: the same numbering in every channel)."""
    names: dict[int, str] = {}
    counters: dict[str, int] = {}
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
