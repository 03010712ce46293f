"""What a Grade looks like to people and platforms, one module per format.

    common         scores, the rule of what a student may see of a failed check, printable()
    table          the terminal score table (instructor's, or a student's)
    results_json   results.json: the instructor's record (what batch stores), ci's, Gradescope's
    junit          JUnit XML (instructor)
    markdown       Markdown for students (step summary, pull-request comment, grade --markdown)
    feedback_md    the batch's per-student feedback file
    job_log        the lines `ci` prints to a GitHub Actions job log

Each format escapes text where it is written: student text is data in every one of them.
"""
from autograder.reports.common import emit
from autograder.reports.feedback_md import feedback
from autograder.reports.job_log import job_log
from autograder.reports.junit import junit_xml
from autograder.reports.markdown import markdown
from autograder.reports.results_json import (
    broken_grade,
    broken_results,
    dumps,
    environment_check,
    gradescope_results,
    not_graded_results,
    results_json,
    student_results,
)
from autograder.reports.table import table

__all__ = ["table", "results_json", "student_results", "gradescope_results", "broken_results", "broken_grade", "dumps",
           "environment_check", "not_graded_results",
           "junit_xml", "markdown", "feedback", "job_log", "emit", "write", "write_text"]


def write(grade, json_path=None, junit_path=None, markdown_path=None):
    """The instructor's files of `grade`: results JSON (with the run's secret), JUnit, Markdown."""
    if json_path:
        write_text(json_path, dumps(results_json(grade)))
    if junit_path:
        write_text(junit_path, junit_xml(grade))
    if markdown_path:
        from autograder.reports.markdown_pictures import markdown_pictures

        write_text(markdown_path, markdown(grade) + markdown_pictures(grade, markdown_path))  # PNGs beside it


def write_text(path, report):
    with open(path, "w", encoding="utf-8", errors="replace") as f:
        f.write(report)
