"""Fixtures shared by the tests that grade through the real engine."""
import pytest

from autograder import grading
from autograder.sandbox.client import Sandbox


@pytest.fixture(scope="module")
def engine():
    """(rubric, suites, sandbox): the real rubric and one fork server for the test module.
    (test_adversarial.py defines its own, with hidden folders and a secret in the environment.)"""
    rubric, suites = grading.load_rubric()
    with Sandbox() as sandbox:
        sandbox.ready()
        yield rubric, suites, sandbox
