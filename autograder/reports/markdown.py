"""Markdown for people: the score table and what to fix (step summary, PR comment, `grade --markdown`)."""
from autograder.reports.common import fmt


def markdown(grade, show_hidden=False):
    """For people: a score table per part and the failed checks a student may see."""
    lines = [f"## Chapter 3 score: {fmt(grade.score)} / {fmt(grade.max_score)}", "",
             "| part | score |", "| --- | ---: |"]
    lines += [f"| {part} | {fmt(p['score'])} / {fmt(p['max_score'])} |" for part, p in grade.parts.items()]
    failed = [c for c in grade.checks if not c.passed and (show_hidden or c.visibility == "visible")]
    hidden_failed = sum(1 for c in grade.checks if not c.passed and c.visibility != "visible")
    if failed:
        lines += ["", "### What to fix", ""]
        lines += [f"- **{c.part} / {c.name}**: {escape(c.message)}" for c in failed]
    if hidden_failed and not show_hidden:
        lines += ["", f"{hidden_failed} hidden check(s) also failed; their details appear after grading closes."]
    return "\n".join(lines) + "\n"


def escape(text):
    return text.replace("\n", " ").replace("|", "\\|").replace("<", "&lt;")
