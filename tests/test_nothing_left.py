"""Issue 28: after a part's checks, nothing of the grader's is within the submission's reach (with
namespaces, as on a machine the grader owns; container mode: test_container_mode.py, the same search
under a Docker-like restriction).

A submission copies every input its CausalAttention is given, with a token of this test, into /tmp,
/var/tmp and /dev/shm and leaves a process behind (tests/leftovers.py); causal.py is also wrong, so
mha's checks run with the grader's stand-in heads. Then a new session of the same submission
searches, as the submission's uid, every file it may read and every process it may see for the
token and for a line of the reference solutions that the submission does not have: nothing.
"""
import inspect
import secrets

import leftovers
import pytest
from part_edits import grade, scores, submission

from autograder import selftest
from autograder.student import Student

pytestmark = pytest.mark.quick  # the whole file is in the quick subset

SCAN = ("import os\nimport stat\n\nMAX_FILE = {max_file}\nREFERENCE_TEXT = {reference!r}[::-1]  # not itself a hit\n"
        "NOT_SEARCHED = {skip!r}\n\n\n")


def scanner():
    """The search of tests/leftovers.py as a module of the submission (it runs as the submission's uid)."""
    head = SCAN.format(max_file=leftovers.MAX_FILE, reference=leftovers.REFERENCE_TEXT[::-1], skip=leftovers.NOT_SEARCHED)
    return head + inspect.getsource(leftovers._search) + "\n\n" + inspect.getsource(leftovers._read) + '''

def search(needles):
    return _search([n.encode() for n in needles], ["/"])
'''


def test_after_the_checks_the_submission_finds_nothing_of_the_grader(engine, tmp_path):
    token = secrets.token_hex(12)
    folder = submission(tmp_path, ("causal", "keys.shape[-1] ** 0.5", "keys.shape[-1]"))
    causal = folder / "causal.py"
    causal.write_text(leftovers.leaking_causal(causal.read_text(), token))
    (folder / "scan.py").write_text(scanner())
    result = grade(engine, folder, ["causal", "mha"])
    assert scores(result)["mha"] == 22 and scores(result)["causal"] < 22  # mha graded with the grader's heads
    _, _, sandbox = engine
    session = sandbox.session(folder)
    part = session.part(60, 1024)
    try:
        found = Student(part).module("scan").search([token])
    finally:
        part.close()
        session.close()
    assert found["files"] > 10 and found["hits"] == [], found["hits"][:10]
    assert leftovers.REFERENCE_TEXT in (selftest.SOLUTIONS / "causal.py").read_text()  # a text worth looking for
