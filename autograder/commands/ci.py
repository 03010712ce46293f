"""python -m autograder ci PATH [--json FILE] [--comment FILE] [--fail-under SCORE] [--rubric FILE]

The grading step of a GitHub Actions job, in one command: grade PATH in the sandbox, write
results.json, and talk to the job through the files GitHub names in the environment:

- $GITHUB_STEP_SUMMARY: the Markdown report (score table, what to fix as a student may see it) is appended;
- $GITHUB_OUTPUT: `score=`, `max_score=` and `passed=` (true/false) lines are appended;
- $GITHUB_EVENT_PATH: the pull-request number and head commit are read for the comment.

Everything it writes may be read by the student (job logs, summaries, artifacts and comments of
their own repository), so it shows what a student may see (autograder/reports/common.py): a hidden
check keeps its points and its diagnosis under an anonymous name ("causal: hidden check 1"), never
its name, its inputs, the student's own text from it, or the run's secret. Every file is written
before anything is printed; each line printed to the job log starts with the grader's "  | ".

--comment FILE gets the body of the pull-request comment (a hidden marker first, then the
score and the feedback a student may see). The exit status is 0 when grading completed,
whatever the score: the workflow decides pass or fail from the outputs. With --fail-under S the
status is 1 when the score is below S (after every file is written). 2: the grader could not run.
3: the grader's environment failed its own check (envcheck: the reference solutions lost points
here); nobody is scored, and results.json, the summary and the comment say the submission was not graded.
"""
import os
import sys
from pathlib import Path

from autograder.cli import UsageError

HELP = "grade PATH inside a GitHub Actions job: results.json, step summary, step outputs, PR comment body"


def add_arguments(parser):
    parser.add_argument("path", help="folder of student modules (e.g. the checkout's assignment folder), "
                                     ".zip or notebooks")
    parser.add_argument("--json", metavar="FILE",
                        help="write results.json here (Gradescope schema; hidden checks keep their points and "
                             "diagnosis but lose their names, since CI artifacts are readable by the student)")
    parser.add_argument("--comment", metavar="FILE", help="write the pull-request comment body (what a student may see) here")
    parser.add_argument("--fail-under", metavar="SCORE", type=float, default=None,
                        help="exit with status 1 when the score is below SCORE (default: always 0 once graded)")
    parser.add_argument("--rubric", metavar="FILE", default=None, help="grading.yml to use (default: the chapter's)")


def run(args):
    from autograder.deploy import ghactions

    path = Path(args.path)
    if not path.exists():
        raise UsageError(f"{path}: no such file or folder")
    environ = dict(os.environ)
    outputs = [p for p in (args.json, args.comment) if p]
    for p in outputs:
        Path(p).resolve().parent.mkdir(parents=True, exist_ok=True)
    from autograder import envcheck
    from autograder.commands import open_engine
    from autograder.submission import SubmissionError

    try:  # our outputs and the runner's command files are outside the room (docs/sandbox.md)
        engine = open_engine(args)
    except envcheck.EnvironmentFailed as e:
        return not_graded(args, environ, e)
    from autograder import grading, reports  # torch: after the fork server has started (or refused)

    with engine:
        try:
            grade = engine.grade(path)
        except SubmissionError as e:
            raise UsageError(str(e)) from None

    if grade.not_graded:  # the machine kept a part from running: nobody is scored (runner.NOT_GRADED)
        return not_graded(args, environ, NotGraded(grading.not_graded_problem(grade), grade.environment_check),
                          grading.NOT_GRADED_MESSAGE)
    # every file first: a report that cannot be printed must not cost the others
    student = reports.markdown(grade)  # what a student may see: hidden checks unnamed, no secret
    if args.json:
        reports.write_text(args.json, reports.dumps(reports.student_results(grade)))
    context = ghactions.event_context(environ)
    if args.comment:
        reports.write_text(args.comment, ghactions.comment_body(student, context, grade.protections))
    ghactions.write_summary(environ, student)
    passed = grade.score >= (grade.max_score if args.fail_under is None else args.fail_under)
    ghactions.write_outputs(environ, score=f"{grade.score:g}", max_score=f"{grade.max_score:g}",
                            passed="true" if passed else "false", comment="true" if args.comment else "false")
    reports.emit(reports.job_log(grade))  # every line behind the grader's prefix: no workflow command
    if environ.get("GITHUB_ACTIONS") == "true" and not ghactions.fully_sandboxed(grade.protections):
        reports.emit(ghactions.annotation("warning", "the sandbox ran without its namespaces or without its "
                                                     "system-call filter: " + ", ".join(grade.protections)))
    if args.fail_under is not None and grade.score < args.fail_under:
        print(f"score {grade.score:g} is below --fail-under {args.fail_under:g}", file=sys.stderr)
        return 1
    return 0


class NotGraded(RuntimeError):
    """The machine kept a part from running: str() is the instructor's line, .record the environment check's."""

    def __init__(self, message, record):
        super().__init__(message)
        self.record = record


def not_graded(args, environ, failure, message=None):
    """The grader's environment failed its own check (envcheck), or the machine kept a part from
    running (message: the student's words for that): nobody is scored. The student reads that the
    submission was not graded and why it is not their doing; the job log (the instructor's) names
    the cause. Exit status 3."""
    from autograder import envcheck, reports
    from autograder.deploy import ghactions

    message = message or envcheck.STUDENT_MESSAGE
    student = f"## Not graded\n\n{message}\n"
    if args.json:
        reports.write_text(args.json, reports.dumps(reports.not_graded_results(message, failure.record)))
    if args.comment:
        reports.write_text(args.comment, ghactions.comment_body(student, ghactions.event_context(environ), graded=False))
    ghactions.write_summary(environ, student)
    ghactions.write_outputs(environ, passed="false", comment="true" if args.comment else "false")
    reports.emit(ghactions.annotation("error", str(failure)))
    print(f"error: {failure}", file=sys.stderr)
    return 3
