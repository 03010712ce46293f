"""The hidden suites: one module per part, test_<part>.py, each check a function test_<name>.

They run in the grader's process and reach student code only through the `student` fixture
(autograder/student.py). Each module carries its part's pytest marker, as the public tests do.
"""
import sys


def part_marker(part):
    """The module's pytest marker (`pytest -m <part>` runs one part's checks) when pytest runs them;
    None when the grader does, which then never imports pytest (about 0.25 s of every start-up)."""
    pytest = sys.modules.get("pytest")
    return getattr(pytest.mark, part) if pytest is not None else None
