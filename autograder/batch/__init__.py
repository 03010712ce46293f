"""Grade a whole class: every subfolder, .zip or notebook folder of DIR is one student.

    python -m autograder batch DIR --out OUT [--jobs N] [--force]
        [--due ISO-8601 [--submitted-at TIMES.csv] [--extensions EXT.csv] [--late-penalty PERCENT] [--late-days N]]

Workers are processes forked from the batch (torch imported once, here) that share one fork
server in the sandbox's room (torch imported once there), each through a door of its own; the parent
alone writes the gradebook (OUT/gradebook.db), the per-student files and OUT/grades.csv.

Nothing a student hands in stops the batch: a submission that cannot be staged is recorded with
its problem (and 0), an exception while grading one is recorded as an internal error (graded
again on the next run), and a worker that dies is replaced: the rest is then graded one at a
time, so a submission that kills its worker again is recorded as such. grades.csv (one row per
student found in DIR, with a `problem` column) is written whatever happens; then a summary.
A rerun grades only what changed: the submission (its fingerprint: `digest`) or the grader (the
rubric, suites, reference or versions: envcheck.grader_fingerprint); every grade is kept in the
gradebook's history, and OUT/regrades.csv lists whose score the latest grading run moved. With a
due date (lateness.LatePolicy) grades.csv adds each student's lateness and final score.

The path, top-down (each module names what it is):
    run.py       run_batch: one batch run, from the class folder to the summary
    plan.py      what to grade: find_submissions (one safe name each), digest (the fingerprint),
                 why_grade / to_grade, and how a grading is kept for the next run (settle: RETRY, MACHINE)
    workers.py   the environment check on the batch's fork server, the forked workers (_grade_one:
                 the grade and its pictures) and their pool (grade_all); the fork server, its doors
                 and the forking are autograder/pool.py's (shared with selftest --jobs N)
    outputs.py   what is written: store (results, feedback, gradebook row), grades.csv, regrades.csv,
                 the run's late rows, the feedback of every changed grade of record
    summary.py   what the instructor reads at the end
    rewrite.py   rewrite_outputs: the outputs again after an override (commands/override.py)
"""
from autograder.batch.outputs import (
    REGRADES_COLUMNS,
    Stamp,
    atomic_write,
    describe_overrides,
    describe_parts,
    judge_lateness,
    store,
    write_csv,
    write_feedback,
    write_regrades,
)
from autograder.batch.plan import (
    MACHINE,
    NAME_LIMIT,
    NOT_GRADED_RUNS,
    OTHER_GRADER,
    RETRY,
    SAFE,
    Results,
    Todo,
    charged_after_not_graded,
    digest,
    find_submissions,
    other_grader_reason,
    settle,
    to_grade,
    why_grade,
)
from autograder.batch.rewrite import rewrite_outputs
from autograder.batch.run import run_batch
from autograder.batch.summary import Outcome, summary_text
from autograder.batch.workers import (
    INTERNAL,
    Graded,
    Grading,
    check_environment,
    grade_all,
)
from autograder.pool import start_fork_servers, stop_fork_servers

__all__ = [
    "INTERNAL", "MACHINE", "NAME_LIMIT", "NOT_GRADED_RUNS", "OTHER_GRADER", "REGRADES_COLUMNS", "RETRY", "SAFE",
    "Graded", "Grading", "Outcome", "Results", "Stamp", "Todo", "atomic_write", "charged_after_not_graded", "check_environment",
    "describe_overrides", "describe_parts", "digest", "find_submissions", "grade_all", "judge_lateness",
    "other_grader_reason", "rewrite_outputs", "run_batch", "settle", "start_fork_servers", "stop_fork_servers",
    "store", "summary_text", "to_grade", "why_grade", "write_csv", "write_feedback", "write_regrades",
]
