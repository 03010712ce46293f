"""What a Grade looks like to people and platforms: a terminal table, Gradescope's
results.json (plus `parts`), JUnit XML and Markdown. All four carry the same results."""
import json
import xml.etree.ElementTree as ET


def _fmt(x):
    return f"{x:g}"


def table(grade, show_hidden=True):
    """The score table printed by `grade`: one line per part, then what failed and why."""
    lines = [f"Submission: {grade.submission}", "", f"{'part':<20}{'score':>12}", "-" * 32]
    for part, p in grade.parts.items():
        lines.append(f"{part:<20}{_fmt(p['score']) + ' / ' + _fmt(p['max_score']):>12}")
    lines += ["-" * 32, f"{'total':<20}{_fmt(grade.score) + ' / ' + _fmt(grade.max_score):>12}"]
    failed = [c for c in grade.checks if not c.passed and (show_hidden or c.visibility == "visible")]
    if failed:
        lines += ["", "What went wrong:"]
        current = None
        for c in failed:
            if c.part != current:
                current = c.part
                lines.append(f"  {c.part}:")
            lines.append(f"    - {c.name} (0 / {_fmt(c.max_score)}): {c.message}")
    for note in grade.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def results_json(grade):
    """Gradescope's results.json schema, plus parts: {part: {score, max_score}}."""
    tests = [{
        "name": f"{c.part}: {c.name}",
        "score": c.score,
        "max_score": c.max_score,
        "status": "passed" if c.passed else "failed",
        "output": c.message,
        "visibility": c.visibility,
    } for c in grade.checks]
    return {
        "score": grade.score,
        "max_score": grade.max_score,
        "output": _summary_output(grade),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "parts": {part: {"score": p["score"], "max_score": p["max_score"]} for part, p in grade.parts.items()},
        "extra_data": {"protections": grade.protections, "notes": grade.notes},
    }


def _summary_output(grade):
    lines = [f"Sandbox: {', '.join(grade.protections) or 'none reported'}"]
    lines += [f"{part}: {p['problem']}" for part, p in grade.parts.items() if p["problem"]]
    return "\n".join(lines + grade.notes)


def junit_xml(grade):
    suites = ET.Element("testsuites", name="ch03", tests=str(len(grade.checks)),
                        failures=str(sum(not c.passed for c in grade.checks)))
    for part, p in grade.parts.items():
        checks = [c for c in grade.checks if c.part == part]
        suite = ET.SubElement(suites, "testsuite", name=part, tests=str(len(checks)),
                              failures=str(sum(not c.passed for c in checks)), time=str(p.get("seconds", 0)))
        for c in checks:
            case = ET.SubElement(suite, "testcase", classname=f"ch03.{part}", name=c.name)
            ET.SubElement(case, "properties").extend([
                ET.Element("property", name="score", value=_fmt(c.score)),
                ET.Element("property", name="max_score", value=_fmt(c.max_score)),
                ET.Element("property", name="visibility", value=c.visibility),
            ])
            if not c.passed:
                ET.SubElement(case, "failure", message=c.message[:500]).text = c.message
    return ET.tostring(suites, encoding="unicode", xml_declaration=True)


def markdown(grade, show_hidden=False):
    """For people: a score table per part and the failed checks a student may see."""
    lines = [f"## Chapter 3 score: {_fmt(grade.score)} / {_fmt(grade.max_score)}", "",
             "| part | score |", "| --- | ---: |"]
    lines += [f"| {part} | {_fmt(p['score'])} / {_fmt(p['max_score'])} |" for part, p in grade.parts.items()]
    failed = [c for c in grade.checks if not c.passed and (show_hidden or c.visibility == "visible")]
    hidden_failed = sum(1 for c in grade.checks if not c.passed and c.visibility != "visible")
    if failed:
        lines += ["", "### What to fix", ""]
        lines += [f"- **{c.part} / {c.name}**: {_escape(c.message)}" for c in failed]
    if hidden_failed and not show_hidden:
        lines += ["", f"{hidden_failed} hidden check(s) also failed; their details appear after grading closes."]
    return "\n".join(lines) + "\n"


def _escape(text):
    return text.replace("\n", " ").replace("|", "\\|").replace("<", "&lt;")


def write(grade, json_path=None, junit_path=None, markdown_path=None):
    if json_path:
        with open(json_path, "w") as f:
            json.dump(results_json(grade), f, indent=1)
    if junit_path:
        with open(junit_path, "w") as f:
            f.write(junit_xml(grade))
    if markdown_path:
        with open(markdown_path, "w") as f:
            f.write(markdown(grade))
