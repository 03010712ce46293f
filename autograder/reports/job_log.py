"""What `ci` prints to a GitHub Actions job log: the student's table, one grader-prefixed line each.

The runner reads a line of a step's output as a workflow command when, after leading white space,
it starts with "::" (::warning::, ::add-mask::, ::stop-commands::, ...), and wherever "##[" occurs
in it (the older form). So no text of a submission may begin a line: every line is printed behind
the grader's prefix "  | ", any "::" or "##[" inside it is broken up, and the line is printable()
(no carriage return, escape sequence or control character; capped).
"""
import re

from autograder.reports.common import printable
from autograder.reports.table import table

PREFIX = "  | "
LINE = 6000  # the most one line of the log holds


def log_line(value):
    """One line of the job log, without the prefix: inert for the runner and the terminal."""
    line = printable(value, LINE)
    line = re.sub(r":(?=:)", ": ", line)
    return line.replace("##[", "# #[")


def job_log(grade):
    """The student's score table (reports.table, show_hidden=False) as job-log lines."""
    return "\n".join(PREFIX + log_line(line) for line in table(grade, show_hidden=False).split("\n"))
