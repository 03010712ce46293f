"""Fixtures shared by the tests that grade through the real engine (autograder.engine.Engine).

What a test only reads is made once per session (issue 38 item 6): one engine and its fork server
(`engine`), the selftest corpus graded once per secret (`graded_corpus`). A module whose engine must
differ (its own settings, slot, limits, a secret in the environment, container mode) builds its own.
"""
from __future__ import annotations

import sys

# Python's bytecode cache, kept even where PYTHONDONTWRITEBYTECODE is set (issue 38 item 6): each test
# worker imports every test file to read its marks, and without the cache it compiles them and the
# grader's modules again, with pytest's assertion rewriting, on every run (`pytest --collect-only -m quick`,
# one process: 8.8 s of CPU without the cache, 3.4-3.9 s with it, 2026-11-28). Set before this file
# imports anything of the tests or of the grader; the sandbox's processes keep their own setting
# (PYTHONDONTWRITEBYTECODE=1 in the room).
sys.dont_write_bytecode = False

import pytest  # noqa: E402
import xdist_groups  # noqa: E402
from nbgrader_release import documented_exchange, make_release  # noqa: E402
from shared_engine import open_engine  # noqa: E402

from autograder import selftest  # noqa: E402
from autograder import settings as settings_mod  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def one_thread():
    """Each test process computes on one torch thread, as the grading process does (engine.one_thread):
    the tests' own tensors are as small as the grader's, and the workers beside their sandboxes keep the
    machine busy, where a pool of threads per core made every small operation wait."""
    from autograder.engine import one_thread

    one_thread()


@pytest.fixture(scope="session")
def engine():
    """One engine and fork server for the whole session, for the tests that only grade with it (a
    session that dies is replaced by the sandbox itself, issue 38.8). Unpacks as (rubric, suites,
    sandbox) for older tests (SharedEngine)."""
    shared = open_engine()
    try:
        yield shared
    finally:
        shared.close()


class GradedCorpus:
    """The selftest corpus graded once per secret: graded_corpus(secret=None, entries=None) -> {entry
    id: selftest.Outcome} for those entries (default: the whole corpus) under that secret (default:
    the session's, .secret, drawn once as a run draws its own), each graded by selftest.run_entry (the
    parts it can affect) with the session's engine under that secret: the path selftest.run_all takes
    in each of its workers, without starting new processes and fork servers for it (issue 38 item 6).
    Entries already graded under that secret are not graded again (test_suites grades the whole
    corpus, test_isolation a third of it under this secret and another, test_efficiency and test_fairness
    read some entries' grades)."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.secret = settings_mod.from_environment().with_secret().seed
        self.done: dict[int, dict[str, selftest.Outcome]] = {}

    def __call__(self, secret: int | None = None, entries: list | None = None) -> dict:
        secret = self.secret if secret is None else int(secret)
        entries = selftest.corpus() if entries is None else list(entries)
        known = self.done.setdefault(secret, {})
        missing = [e for e in entries if e.id not in known]
        if missing:
            engine = self.engine.with_seed(secret)
            known.update({e.id: selftest.run_entry(e, engine) for e in missing})
        return {e.id: known[e.id] for e in entries}


@pytest.fixture(scope="session")
def session_engines():
    """{name: engine}: an engine a test module opens with settings of its own, kept here when another
    module reads the same one (test_adversarial's, also test_adversarial_reports'): opened once by the
    first module that needs it, closed at the session's end (issue 38 item 6)."""
    opened: dict = {}
    yield opened
    for name in list(opened):
        opened.pop(name).close()


@pytest.fixture(scope="session")
def graded_corpus(engine):
    """The selftest corpus, graded once per secret for the session (GradedCorpus)."""
    return GradedCorpus(engine)


@pytest.fixture(scope="session")
def nbgrader_release(tmp_path_factory):
    """The chapter released once by the README's `.venv/bin/nbgrader generate_assignment ch03 --force` in a
    fresh copy of the project (tests/nbgrader_release.py): a reader copies its course with
    nbgrader_release.copy_course (or copy_clone), never changes it."""
    return make_release(tmp_path_factory.mktemp("nbgrader-release"))


@pytest.fixture(scope="session")
def nbgrader_exchange(nbgrader_release, tmp_path_factory):
    """(lane nbg, issue 38 item 6) The release put on an exchange and a student's documented list, fetch and
    submit, run once (nbgrader_release.documented_exchange): the student solves the notebooks with the
    reference solutions. test_nbgrader_commands reads it; the round trip collects from a copy of it."""
    from notebook_cases import fill_notebooks, module_texts

    return documented_exchange(nbgrader_release, tmp_path_factory.mktemp("nbgrader-exchange"),
                               lambda folder: fill_notebooks(module_texts(), folder, notebooks=folder))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """The unit a test worker takes (`pytest -n 3 --dist loadgroup`, as .ci/run runs the suite): a
    whole file, so its module fixtures are made once, the files of a group (xdist_groups.TOGETHER) together
    (tests/xdist_groups.py: xdist's own xdist_group marker is lost under pytest 9)."""
    return xdist_groups.scheduler(config, log, xdist_groups.TOGETHER)


def pytest_collection_modifyitems(config, items):
    """The longest units first (xdist_groups.LONGEST_FIRST), the order the workers take them in. (The quick subset,
    `-m quick`, is marked in the test files themselves: tests/quick_subset.py.)"""
    rank = {group: at for at, group in enumerate(xdist_groups.LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(xdist_groups.group_of(item.nodeid, xdist_groups.TOGETHER), len(rank)))  # stable


# --- cmds lane (issue 38 item 6): the Gradescope bundle, built once per worker -------------------------

@pytest.fixture(scope="session")
def built_bundle(tmp_path_factory):
    """(autograder.zip, the folder it is unpacked into with the modes unzip gives), built by the grader's
    own command once for the session (tests/gradescope_bundle.py) for the files that only read or copy
    it (test_gradescope, test_container_mode, test_envcheck, test_deploy_installs): a reader copies the
    folder before it runs or changes anything in it. The folder equals what `gradescope --out DIR`
    writes (test_gradescope's test_the_folder_form_matches_the_zip)."""
    import gradescope_bundle

    where = tmp_path_factory.mktemp("gradescope-bundle")
    return gradescope_bundle.build(where, where / "source"), where / "source"


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """(issue 38 item 6) What is still alive when the session ends is left to the process's exit: the
    collections Python runs while it shuts down walked a test worker's whole heap (torch, nbgrader, the
    collected tests) for 2 s or more per worker (measured: 1.9-2.6 s from the last exit handler to the
    process's end in one worker, 0.2 s frozen), and `pytest -n N` waits for each worker to end. The garbage
    there is now is collected first, as before; the sandbox's processes die with their parent, and the
    grader closes its fork servers, control groups and folders itself (close, atexit), never in a collection."""
    import gc

    gc.collect()
    gc.freeze()
