"""Issue 11 item 9: limits that cannot work are the rubric's mistake, named with the file and line.

A part's timeout must be a number of seconds, at least rubric.MIN_TIMEOUT; memory_mb a whole number
of MiB, at least rubric.MIN_MEMORY_MB (with 128 MiB the reference solutions lose two parts). Anything
else in grading.yml (in defaults or in a part) is refused by the loader and by `grade --rubric`
(exit status 2), before a student could be told to look for a loop that never ends.
"""
import pytest

from autograder import PROJECT_ROOT, cli, runner
from autograder import rubric as rubric_mod
from autograder.rubric import RubricError, load

pytestmark = pytest.mark.quick  # the whole file is in the quick subset

RUBRIC = PROJECT_ROOT / "grading.yml"


@pytest.fixture(scope="module")
def suites():
    return {part: [name for name, _ in checks] for part, checks in runner.discover().items()}


def with_line(tmp_path, find, replace):
    """grading.yml with the line starting with `find` (after indentation) replaced -> (path, its line)."""
    lines = RUBRIC.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if line.strip().startswith(find))
    lines[index] = replace
    path = tmp_path / "limits.yml"
    path.write_text("\n".join(lines) + "\n")
    return path, index + 1


BAD = [
    ("timeout: 0", "timeout must be a number of seconds, at least 1 (no part runs in less), not '0'"),
    ("timeout: -5", "timeout must be a number of seconds, at least 1 (no part runs in less), not '-5'"),
    ("timeout: 0.2", "timeout must be a number of seconds, at least 1 (no part runs in less), not '0.2'"),
    ("timeout: twenty", "timeout must be a number of seconds, at least 1 (no part runs in less), not 'twenty'"),
    ("timeout: '20'", "timeout must be a number of seconds, at least 1 (no part runs in less), not '20'"),
    ("timeout: .inf", "timeout must be a number of seconds, at least 1 (no part runs in less), not '.inf'"),
    ("timeout: .nan", "timeout must be a number of seconds, at least 1 (no part runs in less), not '.nan'"),
    ("timeout: true", "timeout must be a number of seconds, at least 1 (no part runs in less), not 'true'"),
    ("memory_mb: 0", "memory_mb must be a whole number of MiB, at least 256 (no part runs in less), not '0'"),
    ("memory_mb: 64", "memory_mb must be a whole number of MiB, at least 256 (no part runs in less), not '64'"),
    ("memory_mb: 512.5", "memory_mb must be a whole number of MiB, at least 256 (no part runs in less), not '512.5'"),
    ("memory_mb: lots", "memory_mb must be a whole number of MiB, at least 256 (no part runs in less), not 'lots'"),
]


@pytest.mark.parametrize("setting, words", BAD)
def test_a_part_limit_that_cannot_work_names_the_file_and_line(tmp_path, suites, setting, words):
    path, line = with_line(tmp_path, "simple_attention:", f"  simple_attention:\n    {setting}")
    with pytest.raises(RubricError) as error:
        load(path, suites)
    assert str(error.value) == f"{path}:{line + 1}: simple_attention.{words}"


@pytest.mark.parametrize("setting, words", BAD[:1] + BAD[8:9])
def test_a_default_limit_that_cannot_work_names_the_file_and_line(tmp_path, suites, setting, words):
    path, line = with_line(tmp_path, "defaults:", f"defaults: {{visibility: hidden, {setting}}}")
    with pytest.raises(RubricError) as error:
        load(path, suites)
    assert str(error.value) == f"{path}:{line}: defaults.{words}"


def test_grade_refuses_the_rubric_with_exit_status_2(tmp_path, suites, capsys):
    path, line = with_line(tmp_path, "simple_attention:", "  simple_attention:\n    timeout: 0")
    status = cli.main(["grade", str(PROJECT_ROOT / "solutions" / "ch03"), "--rubric", str(path)])
    assert status == 2
    assert capsys.readouterr().err.startswith(f"error: {path}:{line + 1}: simple_attention.timeout must be a number")


def test_the_least_limits_are_accepted(tmp_path, suites):
    path, _ = with_line(tmp_path, "simple_attention:", f"  simple_attention:\n    timeout: {rubric_mod.MIN_TIMEOUT:g}\n"
                                                       f"    memory_mb: {rubric_mod.MIN_MEMORY_MB}")
    part = load(path, suites).parts["simple_attention"]
    assert (part.timeout, part.memory_mb) == (1.0, 256)
    assert load(RUBRIC, suites).parts["causal"].timeout == 20.0
