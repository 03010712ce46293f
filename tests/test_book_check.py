"""Issue 11 item 11: the project checks the reference against the book's printed values itself.

`python -m autograder book-check [FOLDER]` computes every value of
assignments/ch03/tests/book_examples.json from the modules of FOLDER (default solutions/ch03) and
compares it with the printed 4 decimals: the reference matches all 21; a copy with one known bug
misses exactly the values that bug changes; a folder that cannot compute says why once.
"""
import shutil
import subprocess
import sys

import pytest
import torch
from in_process import run_plain

from autograder import PROJECT_ROOT, selftest

SOLUTIONS = PROJECT_ROOT / "solutions" / "ch03"


def book_check(*args):
    return subprocess.run([sys.executable, "-m", "autograder", "book-check", *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.quick
def test_the_reference_matches_every_printed_value():
    """The command in this process (tests/in_process.run_plain, issue 38 item 6: a new interpreter importing
    torch is 2 s of CPU the quick subset does not need); the tests below run it on the command line. The
    book's seeds it sets are this process's: the generator's state is put back after it."""
    with torch.random.fork_rng(devices=[]):
        status, stdout, stderr = run_plain(["book-check"])
    assert (status, stdout) == (0, "book values: 21/21 match\n"), stderr[-2000:]


def test_a_known_bug_misses_exactly_its_values(tmp_path):
    entry = selftest.Entry("ff-once", "mutant", [selftest.Edit(
        "numpy_attention", "return 4 * d_model * d_model + 2 * d_model * d_ff",
        "return 4 * d_model * d_model + d_model * d_ff")])
    done = book_check(str(selftest.apply(entry, tmp_path / "buggy")))
    assert (done.returncode, done.stdout) == (1, "gpt3_175b_block_params: differs from the book\n"
                                                 "book values: 20/21 match\n")


def test_a_folder_that_cannot_compute_says_why_once(tmp_path):
    shutil.copytree(SOLUTIONS, tmp_path / "partial")
    (tmp_path / "partial" / "mha.py").unlink()
    done = book_check(str(tmp_path / "partial"))
    assert (done.returncode, done.stdout) == (1, "the modules could not compute the book's values "
                                                 "(ModuleNotFoundError: No module named 'mha')\n"
                                                 "book values: 0/21 match\n")
    missing = book_check(str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "nowhere: not a folder" in missing.stderr
