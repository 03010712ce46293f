"""The command line's commands, one module each (see autograder/cli.py)."""


def open_engine(args, check=True, rubric_path=None):
    """engine.Engine.open with the run's settings (cli.settings_of), its chapter (cli.chapter_of) and
    --rubric (or rubric_path; default: the chapter's): a malformed rubric is the caller's mistake
    (UsageError, exit 2); EnvironmentFailed goes on up."""
    from autograder.cli import UsageError, chapter_of, settings_of
    from autograder.engine import Engine
    from autograder.rubric import RubricError

    try:
        return Engine.open(settings_of(args), rubric_path or getattr(args, "rubric", None), check=check,
                           chapter=chapter_of(args))
    except RubricError as e:
        raise UsageError(str(e)) from None
