"""Fixtures shared by the tests that grade through the real engine."""
import pytest

import quick_subset

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



def pytest_collection_modifyitems(config, items):
    """Mark the quick subset (`pytest -m quick`, tests/quick_subset.py)."""
    for item in items:
        if quick_subset.chosen(item.path.name, getattr(item, "originalname", item.name)):
            item.add_marker(pytest.mark.quick)
