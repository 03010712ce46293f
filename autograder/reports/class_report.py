"""The instructor's view of a class: OUT/report.html and OUT/misconceptions.csv, written by `batch`.

report.html (self-contained: the histogram is a data: image, no script, no request to anywhere):
the score distribution, per-part means, the most frequent misconceptions with the students who
had them, the submissions that could not be read or whose parts crashed or timed out, the
slowest parts, and every student's scores with a link to their feedback page. Every text is
escaped (names, messages, problems). misconceptions.csv has one row per misconception.

    records: [(student, results, problem)]: a results_json record per student, and the problem
             that kept the submission from being graded ('' when none), as the gradebook holds them
    late:    {student: lateness.Late} when the batch had a due date: a "Late work" section and the
             final score beside each student's score (nothing of it without a due date)
    moves:   gradebook.regrades(): whose score each grading run moved, every run's (appended, never
             emptied): a "Regrades" section when there are any
    records carry any overrides applied (gradebook.effective_records): a "Scores changed by hand"
    section, and "(by hand)" beside each such part's score
"""
import csv
import io
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

from autograder import text
from autograder.reports.common import fmt, printable, voided_by
from autograder.reports.html_page import bar, esc, img, page
from autograder.reports.plots import available, histogram_png
from autograder.reports.records import checks_of, diagnoses_of, not_graded_of
from autograder.reports.standing import overrides_of

TOP_MISCONCEPTIONS = 25
TOP_SLOW = 10
CSV_COLUMNS = ["part", "misconception", "students", "checks", "who"]  # misconceptions only
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
# what the suites write before the misconception itself ("<what> is wrong: <why>")
_LEADS = (" is wrong: ", " differs from the expected output: ")


def diagnosis(message):
    """The misconception a check's message names, without the call it was seen in: one mistake seen by
    several checks ("CausalAttention with known weights is wrong: the softmax runs ...") is one."""
    for lead in _LEADS:
        if lead in message:
            return message.split(lead, 1)[1]
    return message


UNFINISHED = "not implemented yet"  # what the grader says of a stub's raise (student.StudentError)
CRASHED = "crashed: raised an exception that names no mistake"
DID_NOT_RUN = "did not run: missing, does not import, timed out or was killed (the table below says which)"
# "your code raised TypeError (in mha.py)", "... an exception", "... an exception of its own class"
_RAISED = re.compile(r"your code raised (?:an exception(?: of its own class)?|\w+)(?: \(in \w+\.py\))?")


def unfinished(message, problem=""):
    """The kind of unfinished work a failed check's message says ('' for a misconception): a stub,
    a part that did not run (its problem: an import that fails, a timeout, a kill) or a crash that
    names no misconception (a bare "your code raised ...")."""
    if UNFINISHED in message:
        return UNFINISHED
    if (problem and message == problem) or message.startswith("not run: "):
        return DID_NOT_RUN
    return CRASHED if _RAISED.fullmatch(diagnosis(message)) else ""


def _key(message):
    """What groups one misconception: numbers aside, and any "your code raised X" as one."""
    return _RAISED.sub("your code raised an exception", _NUMBER.sub("#", message))


def _student_groups(checks, problems, diagnoses=None):
    """{group key: (kind or '', message, [check names])} of one student's failed checks: one student, one
    row per misconception. In a part with a diagnosis (diagnoses: {part: runner.part_diagnosis}, the
    cause most of its failed checks name, as the record keeps it) every failed check that is no
    unfinished work is that one row: one bug seen as "the softmax runs over dim 0" by some checks and
    as "that, or the weights transposed" or "contains NaN" by others is one misconception. Elsewhere
    (an older record, a part whose checks name no cause) a message that ends with another of the same
    part's ("<what>: <the diagnosis>") is that one. A voided check (grading.yml `requires`) joins the
    group of the check that voids it."""
    diagnoses = diagnoses or {}
    failed = [c for c in checks if not c.passed]
    said = {c.name: diagnosis(printable(c.message or "check failed")) for c in failed}
    kinds = {c.name: unfinished(printable(c.message or ""), problems.get(c.part, "")) for c in failed}
    groups: dict = {}
    of_check: dict = {}
    voided = []
    for c in failed:
        if voided_by(c):
            voided.append(c)
            continue
        kind = kinds[c.name]
        message = kind or diagnoses.get(c.part) or said[c.name]
        if not kind and c.part not in diagnoses:
            shorter = [said[o.name] for o in failed if o.part == c.part and o is not c and not voided_by(o)
                       and said[o.name] != message and message.endswith(": " + said[o.name])]
            message = min(shorter, key=len) if shorter else message
        key = (c.part, kind, "" if kind else _key(message))
        groups.setdefault(key, (kind, message, []))[2].append(c.name)
        of_check[c.part, c.name] = key
    for c in voided:
        found = next((of_check[c.part, n] for n in voided_by(c) if (c.part, n) in of_check), None)
        if found is None:  # what voids it is not in the record: it counts as what it says
            found = (c.part, "", _key(said[c.name]))
            groups.setdefault(found, ("", said[c.name], []))
        groups[found][2].append(c.name)
    return groups


def misconceptions(records):
    """[{part, message, checks, students, unfinished}] of every failed check, grouped by part and
    misconception (numbers aside; in a part with a diagnosis: the diagnosis), ranked by the number of
    students (then of checks), each student once per row; staging failures are not misconceptions.
    Unfinished work (a stub, a part that did not run, a crash that names no misconception) is one row
    per part and kind, after every real misconception; a check voided by `requires` counts with the
    mistake that voids it."""
    groups: dict = {}
    for student, results, problem in records:
        if problem:
            continue
        problems = (results.get("extra_data") or {}).get("problems") or {}
        groups_of = _student_groups(checks_of(results), problems, diagnoses_of(results))
        for (part, kind, key), (_, message, checks) in groups_of.items():
            group = groups.setdefault((bool(kind), (part, kind or key)),
                                      {"messages": Counter(), "checks": set(), "students": set()})
            group["messages"][kind or message] += 1
            group["checks"].update(checks)
            group["students"].add(student)
    rows = [{"part": part, "message": g["messages"].most_common(1)[0][0], "checks": sorted(g["checks"]),
             "students": sorted(g["students"]), "unfinished": kind}
            for (kind, (part, _)), g in groups.items()]
    return sorted(rows, key=lambda r: (bool(r["unfinished"]), -len(r["students"]), -len(r["checks"]), r["part"],
                                       r["message"]))


def misconceptions_csv(records):
    """misconceptions.csv: one row per misconception (unfinished work, crashes and timeouts are in
    report.html, not here)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in misconceptions(records):
        if row["unfinished"]:
            continue
        writer.writerow([text.csv_cell(v) for v in (row["part"], row["message"], len(row["students"]),
                                                ";".join(row["checks"]), ";".join(row["students"]))])
    return out.getvalue()


def problems(records):
    """[(student, where, problem)]: submissions that could not be read, and parts that crashed or timed out."""
    found = []
    for student, results, problem in records:
        if problem:
            found.append((student, "submission", problem))
            continue
        for part, problem in ((results.get("extra_data") or {}).get("problems") or {}).items():
            found.append((student, part, problem))
    return found


def tampering(records):
    """[(student, what)]: reaches into the grader that a submission's source writes (results_json's
    extra_data.tampering, read by the grader from the source)."""
    return [(student, str(what)) for student, results, _ in records
            for what in ((results.get("extra_data") or {}).get("tampering") or [])]


def _tampering_section(found):
    if not found:
        return '<p class="ok">No submission\'s source reaches into the grader.</p>'
    rows = "".join(f"<tr><td>{esc(s)}</td><td>{esc(w)}</td></tr>" for s, w in found)
    return f'<table><tr><th scope="col">student</th><th scope="col">what the source writes</th></tr>{rows}</table>'


def seconds_of(results):
    """{part: seconds} the grading of each part took (results_json's extra_data.seconds)."""
    seconds = (results.get("extra_data") or {}).get("seconds") or {}
    return {part: float(s) for part, s in seconds.items() if isinstance(s, (int, float))}


def part_stats(records):
    """{part: {"max_score", "scores": [...], "seconds": [...]}} over the class (times: graded submissions)."""
    stats: dict = {}
    for _, results, problem in records:
        seconds = {} if problem else seconds_of(results)
        for part, p in (results.get("parts") or {}).items():
            entry = stats.setdefault(part, {"max_score": p.get("max_score", 0), "scores": [], "seconds": []})
            entry["scores"].append(float(p.get("score", 0)))
            if part in seconds:
                entry["seconds"].append(seconds[part])
    return stats


def _summary(records, late=None):
    """The distribution of the grades of record: with a late policy, the final scores (after it)."""
    scores = [float(r.get("score", 0)) for _, r, _ in records]
    what = ""
    if late:
        scores = [late[s].final_score if s in late else float(r.get("score", 0)) for s, r, _ in records]
        what = " (final scores, after the late policy; the scores the code earned are in the table of every student)"
    top = max((float(r.get("max_score", 0)) for _, r, _ in records), default=0.0)
    if not scores:
        return "<p>No submissions were graded.</p>", top
    line = (f"<p>{len(scores)} submission(s){what}; mean {statistics.mean(scores):.1f}, median "
            f"{statistics.median(scores):g}, lowest {min(scores):g}, highest {max(scores):g} (out of {fmt(top)}).</p>")
    if not available():
        return line + '<p class="muted">(no histogram: matplotlib is not installed)</p>', top
    alt = "histogram of the class's final scores" if late else "histogram of the class's scores"
    return line + img(histogram_png(scores, top), alt), top


def _parts_section(stats):
    rows = []
    for part, s in stats.items():
        mean = statistics.mean(s["scores"]) if s["scores"] else 0.0
        full = sum(1 for x in s["scores"] if x >= s["max_score"])
        rows.append(f'<tr><td>{esc(part)}</td><td class="num">{mean:.2f} / {fmt(s["max_score"])}</td>'
                    f'<td>{bar(mean, s["max_score"])}</td><td class="num">{full} of {len(s["scores"])}</td></tr>')
    return ('<table><tr><th scope="col">part</th><th scope="col" class="num">mean score</th>'
            '<th scope="col"><span class="visually-hidden">share of the points</span></th>'
            '<th scope="col" class="num">full marks</th></tr>\n'
            + "\n".join(rows) + "</table>")


def _misconception_row(row):
    return (f'<tr><td class="num">{len(row["students"])}</td><td>{esc(row["part"])}</td>'
            f'<td>{esc(row["message"])}<br><span class="muted">seen by {len(row["checks"])} check(s): '
            f'{esc(", ".join(row["checks"]))}</span></td><td>{esc(", ".join(row["students"]))}</td></tr>')


def _misconceptions_section(rows):
    if not rows:
        return '<p class="ok">No check failed.</p>'
    head = ('<table><tr><th scope="col" class="num">students</th><th scope="col">part</th>'
            '<th scope="col">misconception</th><th scope="col">who</th></tr>')
    real = [row for row in rows if not row["unfinished"]]
    unfinished = [row for row in rows if row["unfinished"]]
    lines = [head] + [_misconception_row(row) for row in real[:TOP_MISCONCEPTIONS]] + ["</table>"] if real else \
        ['<p class="ok">No misconception: every failed check was unfinished work.</p>']
    more = len(real) - TOP_MISCONCEPTIONS
    if more > 0:
        lines.append(f'<p class="muted">{more} more in misconceptions.csv.</p>')
    if unfinished:
        lines += ['<h3>Unfinished work: not implemented yet, crashed, did not run (one row per part and kind)</h3>',
                  head]
        lines += [_misconception_row(row) for row in unfinished] + ["</table>"]
    return "\n".join(lines)


def _problems_section(found):
    if not found:
        return '<p class="ok">Every submission could be read, and no part crashed or timed out.</p>'
    rows = "".join(f"<tr><td>{esc(s)}</td><td>{esc(w)}</td><td>{esc(p)}</td></tr>" for s, w, p in found)
    return (f'<table><tr><th scope="col">student</th><th scope="col">where</th><th scope="col">problem</th></tr>'
            f'{rows}</table>')


def _slow_section(stats, records):
    timed = {part: s["seconds"] for part, s in stats.items() if s["seconds"]}
    if not timed:
        return '<p class="muted">No part times were recorded.</p>'
    order = sorted(timed, key=lambda part: -statistics.mean(timed[part]))
    lines = ['<table><tr><th scope="col">part</th><th scope="col" class="num">mean seconds</th>'
             '<th scope="col" class="num">slowest</th></tr>']
    lines += [f'<tr><td>{esc(p)}</td><td class="num">{statistics.mean(timed[p]):.2f}</td>'
              f'<td class="num">{max(timed[p]):.2f}</td></tr>' for p in order]
    runs = sorted(((seconds, student, part) for student, r, problem in records if not problem
                   for part, seconds in seconds_of(r).items()), key=lambda run: (-run[0], run[1:]))[:TOP_SLOW]
    lines.append('</table><p class="muted">Slowest runs: '
                 + ", ".join(f"{esc(student)} / {esc(part)} {seconds:.2f} s" for seconds, student, part in runs) + "</p>")
    return "\n".join(lines)


def _class_table(records, stats, late=None):
    parts = list(stats)
    head = "".join(f'<th scope="col" class="num" aria-label="{esc(p)}">{breakable(p)}</th>' for p in parts)
    final_head = '<th scope="col" class="num">final (late policy)</th>' if late else ""
    rows = []
    for student, results, problem in records:
        changed = overrides_of(results)
        cells = "".join(f'<td class="num">{fmt((results.get("parts") or {}).get(p, {}).get("score", 0))}'
                        + (' <span class="note">(by hand)</span>' if p in changed else "") + "</td>" for p in parts)
        final = f'<td class="num">{_final(late.get(student))}</td>' if late else ""
        link = f'<a href="feedback/{esc(quote(student))}.html">{esc(student)}</a>'
        if not_graded_of(results):  # the machine's doing: no score stands (the grader's structured record)
            rows.append(f'<tr><td>{link}</td><td class="num"></td>' + '<td class="num"></td>' * (len(parts) + bool(late))
                        + '<td>not graded: the machine was overloaded</td></tr>')
            continue
        rows.append(f'<tr><td>{link}</td><td class="num">{fmt(results.get("score", 0))}</td>{final}{cells}'
                    f'<td>{"could not be read" if problem else ""}</td></tr>')
    return (f'<div class="wide"><table class="compact"><tr><th scope="col">student</th><th scope="col" class="num">score</th>{final_head}'
            f'{head}<th scope="col">problem</th></tr>\n' + "\n".join(rows) + "</table></div>")


def breakable(name):
    """A part's name as a column header that may wrap after each underscore ("self_attention_v1"; the
    header's aria-label keeps the name whole for a screen reader)."""
    return "_<wbr>".join(esc(piece) for piece in str(name).split("_"))


def _final(row):
    if row is None:
        return ""
    if row.cutoff:
        return f'{fmt(row.final_score)} <span class="muted">({row.late_days} d late: past the cutoff)</span>'
    days = "" if not row.late_days else f' <span class="muted">({row.late_days} d late, -{fmt(row.penalty)}%)</span>'
    return f"{fmt(row.final_score)}{days}"


def _late_section(late):
    """Every student with a late day or no known time: when, due, days, penalty, final score, why."""
    shown = {s: row for s, row in sorted(late.items()) if row.late_days or row.late_days is None or row.note}
    on_time = len(late) - len(shown)
    if not shown:
        return f'<p class="ok">All {len(late)} submission(s) on time.</p>'
    head = ('<table><tr><th scope="col">student</th><th scope="col">submitted (UTC)</th><th scope="col">due (UTC)</th>'
            '<th scope="col" class="num">days late</th>'
            '<th scope="col" class="num">penalty</th><th scope="col" class="num">final score</th><th scope="col">note</th></tr>')
    rows = [f'<tr><td>{esc(s)}</td><td>{esc(row.cells()[0] or "unknown")}</td><td>{esc(row.cells()[1])}</td>'
            f'<td class="num">{esc(row.cells()[2])}</td>'
            f'<td class="num">{"past the cutoff" if row.cutoff else fmt(row.penalty) + "%"}</td>'
            f'<td class="num">{fmt(row.final_score)}</td><td class="note">{esc(row.note)}</td></tr>'
            for s, row in shown.items()]
    return "\n".join(['<div class="wide">', head, *rows, "</table></div>",
                      f'<p class="muted">{on_time} other submission(s) on time.</p>'])


def _overrides_section(records):
    """Every part a person changed: who, the grader's score then and now, the person's score, by whom, when, why."""
    rows = [f'<tr><td>{esc(student)}</td><td>{esc(part)}</td><td class="num">{fmt(o["automatic_then"])}'
            + (f' (now {fmt(o["automatic"])})' if o["automatic"] != o["automatic_then"] else "")
            + f'</td><td class="num">{fmt(o["score"])} / {fmt(o["max_score"])}</td><td>{esc(o["by"])}</td>'
            f'<td>{esc(o["at"])}</td><td class="note">{esc(o["reason"])}</td></tr>'
            for student, results, _ in records for part, o in sorted(overrides_of(results).items())]
    if not rows:
        return ""
    head = ('<div class="wide"><table><tr><th scope="col">student</th><th scope="col">part</th>'
            '<th scope="col" class="num">grader\'s score</th><th scope="col" class="num">score by hand</th>'
            '<th scope="col">by</th><th scope="col">when (UTC)</th><th scope="col">why</th></tr>')
    return "\n".join([head, *rows, "</table></div>", '<p class="muted">A score set by hand stands over every '
                      "regrade until it is removed (python -m autograder override OUT --student NAME --part PART "
                      "--remove); the history keeps both.</p>"])


def _regrades_section(moves):
    """moves: gradebook.regrades() (every run's rows, oldest first), shown newest run first; or the older
    form [(student, before, after, {part: (before, after)})] of one run."""
    rows_of = [m if isinstance(m, dict) else {"run": "", "at": "", "student": m[0], "before": m[1], "after": m[2],
                                              "parts": m[3], "why": ""} for m in moves]
    head = ('<div class="wide"><table><tr><th scope="col">run</th><th scope="col">student</th>'
            '<th scope="col" class="num">before</th><th scope="col" class="num">after</th>'
            '<th scope="col">parts that moved</th><th scope="col">why</th></tr>')
    rows = [f'<tr><td>{esc(r["run"])} <span class="muted">{esc(r["at"])}</span></td><td>{esc(r["student"])}</td>'
            f'<td class="num">{fmt(r["before"])}</td><td class="num">{fmt(r["after"])}</td>'
            f'<td>{esc("; ".join(f"{p} {fmt(b)} -> {fmt(a)}" for p, (b, a) in r["parts"].items()))}</td>'
            f'<td class="note">{esc(r["why"])}</td></tr>'
            for r in sorted(rows_of, key=lambda r: -int(r["run"] or 0))]
    return "\n".join([head, *rows, "</table></div>", '<p class="muted">Every run\'s moves, kept (also in '
                       "regrades.csv); every grade is in the gradebook's history (python -m autograder history OUT "
                       "--student NAME).</p>"])


def class_report(records, late=None, moves=None):
    """report.html's text for records [(student, results, problem)] (every student of the gradebook)."""
    records = sorted(records, key=lambda r: r[0])
    scored = [r for r in records if not not_graded_of(r[1])]  # no score stands for the others
    stats = part_stats(scored)
    summary, _ = _summary(scored, late)
    body = ["<h1>Chapter 3: class report</h1>",
            "<h2>Score distribution</h2>", summary]
    if moves:
        body += ["<h2>Regrades: scores grading runs moved</h2>", _regrades_section(moves)]
    if late:
        body += ["<h2>Late work</h2>", _late_section(late)]
    changed = _overrides_section(scored)
    if changed:
        body += ["<h2>Scores changed by hand</h2>", changed]
    body += ["<h2>Per-part means</h2>", _parts_section(stats),
             "<h2>Most frequent misconceptions</h2>", _misconceptions_section(misconceptions(records)),
             "<h2>Unreadable submissions and parts that crashed</h2>", _problems_section(problems(records)),
             "<h2>Tampering: sources that reach into the grader</h2>", _tampering_section(tampering(records)),
             "<h2>Slowest parts</h2>", _slow_section(stats, records),
             "<h2>Every student</h2>", _class_table(records, stats, late)]
    return page("Chapter 3: class report", "\n".join(body))


def write_class_report(out: str | Path, records: list[tuple[str, dict[str, Any], str]], late: dict[str, Any] | None = None,
                       moves: list[dict[str, Any]] | None = None) -> list[Path]:
    """OUT/report.html and OUT/misconceptions.csv, each replaced whole (never half written) -> their paths."""
    from autograder import scratch

    paths = []
    for name, content in (("report.html", class_report(records, late, moves)),
                          ("misconceptions.csv", misconceptions_csv(records))):
        path = Path(out) / name
        with scratch.replaced(path, newline="") as f:
            f.write(content)
        paths.append(path)
    return paths
