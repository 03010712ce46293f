"""What a test worker takes under `pytest -n N --dist loadgroup` (.ci/run: -n 3, the README): a whole test
file, or a group of files that read what one session fixture makes (issue 38 item 6).

Why a scheduler of our own: pytest-xdist's loadgroup reads `@pytest.mark.xdist_group` by appending
the group's name to each test's node id (`item._nodeid`), and pytest 9 keeps node ids elsewhere
(`item._id`), so with the versions pinned here (pytest 9.2, pytest-xdist 3.8) the marker is silently
ignored and every test becomes a unit of its own: each file's module fixtures (a graded class, a
released course, an engine) were made once on each worker, and the selftest corpus was graded twice.
tests/conftest.py returns `scheduler(...)` from the `pytest_xdist_make_scheduler` hook instead: the
same LoadScope scheduling, whose units are named here from the test's file, which no version change
can drop.
"""
from __future__ import annotations

# The files that read the selftest corpus's grading (tests/conftest.py's graded_corpus, a session
# fixture): one worker runs them all, so the corpus is graded once under `pytest -n N` as without workers
# (test_efficiency and test_fairness read some of its entries' grades: they graded those entries again)
TOGETHER = {name: "selftest-corpus" for name in ("test_suites.py", "test_isolation.py", "test_efficiency.py",
                                                 "test_fairness.py")}
# the files that read the chapter's nbgrader release (tests/conftest.py's nbgrader_release, made once;
# lane nbg, issue 38 item 6: test_nbgrader_commands asserts what its generate_assignment made)
# the files that grade with test_adversarial's engine (tests/conftest.py's session_engines): one fork server
TOGETHER.update({name: "adversarial" for name in ("test_adversarial.py", "test_adversarial_reports.py")})
TOGETHER.update({name: "nbgrader-release" for name in ("test_nbgrader_roundtrip.py", "test_nbgrader_validate.py",
                                                       "test_nbgrader_commands.py")})


# the longest units first (a worker that takes one late is the suite's tail): the nbgrader release's and
# the corpus readers, then the files whose tests or module fixtures take half a minute or more (per-unit
# sums of a profile of the whole suite on three workers, 2026-11-28 10:05-10:14 UTC; the corpus group and
# the deploy installs, the two largest units, first since a profile on 2026-11-29 02:55-03:09 UTC); every
# other file after them, in collection order. The order inside a file never changes. Checked against a
# per-test profile of the whole suite on 2026-11-29 10:20-10:44 UTC (tests/cpu_profile.py, load 4-15 from other
# runs): the three workers ended within 12 s of each other in 1395 s, and replaying that run's test times
# through xdist's hand-out (a unit to a worker with 2 tests or fewer left) gives 1382-1399 s in this order
# against 1388 s with every unit sorted by its length: the order is current, and the suite's length is its CPU.
LONGEST_FIRST = ("selftest-corpus", "test_deploy_installs.py", "nbgrader-release", "adversarial", "test_batch.py",
                 "test_regrades.py", "test_gradescope.py", "test_graded_under_load.py",
                 "test_container_mode.py", "test_notebook_outputs.py", "test_cuda_fork.py",
                 "test_fair_cpu.py", "test_batch_hostile.py", "test_class_report.py", "test_lint.py")


def group_of(nodeid: str, together: dict[str, str]) -> str:
    """The unit a test belongs to: its file's group in `together` (file name -> group name), else
    its file."""
    name = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    return together.get(name, name)


def scheduler(config, log, together: dict[str, str]):
    """The scheduler for `--dist loadgroup` (None for any other --dist: pytest-xdist's own): xdist's
    LoadScopeScheduling with whole files (or `together`'s groups) as units, handed out in collection
    order (tests/conftest.py puts the longest units first), not xdist's default of the units with the
    most tests first."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid, together)

    config.option.loadscopereorder = False
    return ByFile(config, log)
