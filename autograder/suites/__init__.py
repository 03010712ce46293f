"""The hidden suites: one module per part, test_<part>.py, each check a function test_<name>.

They run in the grader's process and reach student code only through the `student` fixture
(autograder/student.py). They can also run under plain pytest: see conftest.py here.
"""
