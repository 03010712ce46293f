"""Grading package for the Chapter 3 attention exercises.

The data path from a submission to a grade, top-down:
submission.py (stage the files) -> sandbox/ (run student code in an isolated child) ->
runner.py (run the hidden suites' checks, judged in this process) -> rubric.py (points) ->
reports.py (table, JSON, JUnit, Markdown).
"""
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parent
PARTS = (
    "simple_attention",
    "self_attention_v1",
    "self_attention_v2",
    "weight_transfer",
    "causal",
    "mha",
    "exercises",
    "numpy_attention",
)
