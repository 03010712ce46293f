"""Test modules that need an optional package skip, saying why, where it is not installed.

`require` looks the package up without importing it: `pytest.importorskip("nbgrader")` at a module's top
imported nbgrader (nbformat, jsonschema and the grammars rfc3987_syntax builds when imported) in every
test worker while it collected the suite, seconds of CPU each, whichever tests the worker then ran.
"""
from __future__ import annotations

import importlib.util

import pytest


def require(*modules: str, reason: str) -> None:
    """Skip the calling test module unless every one of modules is installed."""
    if any(importlib.util.find_spec(module) is None for module in modules):
        pytest.skip(reason, allow_module_level=True)
