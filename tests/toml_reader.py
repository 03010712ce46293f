"""tomllib for the tests on every Python the grader supports: the standard library's from 3.11, and on
3.10 (Gradescope's default image) tomli, the same parser under its own name, which pytest itself
requires there."""
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

__all__ = ["tomllib"]
