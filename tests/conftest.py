"""Project tests (run from the project root: .venv/bin/python -m pytest)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "nbgrader: runs real nbgrader commands in a temporary course (slow, needs nbgrader)")
