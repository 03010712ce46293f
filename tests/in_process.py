"""A command of `python -m autograder` run in the test's own process, grading in the session's fork
server (issue 38 item 6), for the tests whose property is what a command writes and prints, not how
the process starts: cli.main with the same arguments, the same settings (flags and environment), the
same rubric loading, environment check and reports; only the fork server is the session engine's
(tests/conftest.py `engine`) instead of a new one, and the interpreter is not started again. Every
entry point keeps tests on the real command line (a subprocess): test_ci_command's stubs run,
test_reports' runs to a full disk, test_zip_in_folder's Gradescope run, test_envcheck, ...

run_plain: the same for a command that grades nothing (notebooks, release): cli.main here, where the
test asserts what the command writes and prints, not the start of an interpreter that imports torch
(each `python -m autograder` does: about 1.5 s of CPU). `python -m autograder`'s own start and exit
status stay tested on the command line by the tests above.
"""
from __future__ import annotations

import contextlib
import errno
import io
import os
from unittest import mock

from autograder import cli
from autograder.engine import Engine


class FullDisk(io.TextIOBase):
    """A stdout on a full disk (as /dev/full): every write fails with ENOSPC."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def run_command(engine, args, env: dict[str, str] | None = None, stdout: io.TextIOBase | None = None,
                stderr: io.TextIOBase | None = None) -> tuple[int, str, str]:
    """cli.main(args) here -> (exit status, what it printed on stdout, on stderr). env: the whole
    environment the command sees (default: this process's); stdout, stderr: the streams they are
    (default: ones that keep the text; with another, "" is returned for it); what the command raises
    goes on up. The engines the command opens grade in engine's fork server, whose sandbox settings
    must be the command's own."""
    opened = Engine.open.__func__
    used = []

    def open_in_the_session(cls, settings=None, rubric_path=None, check=True, slot=0, sandbox=None, chapter=None):
        if sandbox is None:
            assert settings is not None and settings.sandbox == engine.sandbox.settings, \
                "the command's sandbox settings differ from the session's: run it as a subprocess"
            sandbox = engine.sandbox
            used.append(sandbox)
        return opened(cls, settings, rubric_path, check=check, slot=slot, sandbox=sandbox, chapter=chapter)

    out, err = io.StringIO(), io.StringIO()
    with mock.patch.object(Engine, "open", classmethod(open_in_the_session)), \
            mock.patch.dict(os.environ, env if env is not None else dict(os.environ), clear=True), \
            contextlib.redirect_stdout(out if stdout is None else stdout), \
            contextlib.redirect_stderr(err if stderr is None else stderr):
        status = cli.main([str(a) for a in args])
    assert used, "the command opened no engine"
    return status, out.getvalue(), err.getvalue()


def run_plain(args) -> tuple[int, str, str]:
    """cli.main(args) here, for a command that opens no engine -> (exit status, stdout, stderr): a usage
    error argparse reports (its SystemExit) gives its status, as `python -m autograder` exits with it."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main([str(a) for a in args])
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return status, out.getvalue(), err.getvalue()
