"""grading.yml: points, visibility and limits per part and check, validated against the suites.

    parts:
      causal:                      # a part = a student module
        timeout: 20                # seconds of wall clock for the whole part (optional)
        memory_mb: 2048            # address-space budget for the part's process (optional)
        checks:
          book_example: 2                              # points, default visibility
          future_tokens_never_matter: {points: 3, visibility: hidden}
          unseen_sizes: {points: 2, diagnosis: withheld}   # students see "hidden check failed" only
          book_example_v2: {points: 2, requires: [unseen_sizes]}  # points only when unseen_sizes passes too
        groups:                                        # optional: points shared by several checks
          dropout: {points: 4, checks: [dropout_train_values, dropout_rate]}
    submissions: {limit: 3, window_hours: 24}      # optional: Gradescope grades at most 3 per 24 hours

Every error names the file and the line.
"""
from __future__ import annotations

import math
from pathlib import Path
from dataclasses import dataclass, field

import yaml

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
DIAGNOSES = ("shown", "withheld")  # whether students see a failed check's diagnosis (its message)
TOP_KEYS = {"version", "defaults", "parts", "submissions"}
SUBMISSION_KEYS = {"limit", "window_hours"}
DEFAULT_KEYS = {"timeout", "memory_mb", "visibility"}
PART_KEYS = {"timeout", "memory_mb", "visibility", "checks", "groups"}
CHECK_KEYS = {"points", "visibility", "diagnosis", "requires"}
GROUP_KEYS = {"points", "checks", "visibility"}


class RubricError(ValueError):
    pass


@dataclass
class Check:
    part: str
    name: str
    points: float
    visibility: str
    group: str = ""
    diagnosis: str = "shown"
    # checks of the same part that must pass for this one to earn its points: a printed example
    # replayed from the book, or what the child says of itself, is worth nothing when the same
    # code fails the inputs only the grader knows (grading.score_part)
    requires: tuple = ()


@dataclass
class Part:
    name: str
    timeout: float
    memory_mb: int
    checks: dict = field(default_factory=dict)  # name -> Check
    groups: dict = field(default_factory=dict)  # name -> (points, [check names])

    @property
    def max_score(self) -> float:
        return sum(c.points for c in self.checks.values() if not c.group) + sum(p for p, _ in self.groups.values())


@dataclass(frozen=True)
class SubmissionLimit:
    """At most `limit` graded submissions in any `window_hours` (Gradescope: course/gradescope_limits.py)."""
    limit: int
    window_hours: float

    def describe(self) -> str:
        hours = f"{self.window_hours:g} hour{'s' if self.window_hours != 1 else ''}"
        return f"at most {self.limit} graded submission{'s' if self.limit != 1 else ''} in any {hours}"


@dataclass
class Rubric:
    path: str
    parts: dict  # name -> Part, in file order
    submissions: SubmissionLimit | None = None  # grading.yml's `submissions`, when it has one

    @property
    def max_score(self) -> float:
        return sum(p.max_score for p in self.parts.values())


def load(path: str | Path, suites: dict[str, list[str]] | None = None) -> Rubric:
    """Parse and validate; suites maps part -> list of check names the hidden suites define."""
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        raise RubricError(f"{path}: cannot read the rubric ({e.strerror})") from None
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise RubricError(f"{path}{where}: not valid YAML ({getattr(e, 'problem', e)})") from None
    return _Reader(path).rubric(root, suites)


def _plain_value(node):
    """An unquoted scalar's value (a quoted "3" is text, a mapping or list is nothing)."""
    return yaml.safe_load(node.value) if isinstance(node, yaml.ScalarNode) and not node.style else None


# the least a part can run under: less and parts fail whatever the student wrote (with 128 MiB the
# reference solutions lose causal and mha; a part's child needs about a second to start and run)
MIN_TIMEOUT = 1.0
MIN_MEMORY_MB = 256


class _Reader:
    def __init__(self, path):
        self.path = path

    def fail(self, node, message):
        line = f":{node.start_mark.line + 1}" if node is not None else ""
        raise RubricError(f"{self.path}{line}: {message}")

    def mapping(self, node, allowed, where):
        if not isinstance(node, yaml.MappingNode):
            self.fail(node, f"{where} must be a mapping")
        out = {}
        for key, value in node.value:
            name = key.value
            if allowed is not None and name not in allowed:
                self.fail(key, f"unknown key '{name}' in {where} (allowed: {', '.join(sorted(allowed))})")
            if name in out:
                self.fail(key, f"'{name}' appears twice in {where}")
            out[name] = (key, value)
        return out

    def scalar(self, node, kind, where, choices=None):
        if not isinstance(node, yaml.ScalarNode):
            self.fail(node, f"{where} must be a single value")
        value = node.value if kind is str else yaml.safe_load(node.value)
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            self.fail(node, f"{where} must be a {kind.__name__}, not {node.value!r}")
        if kind in (float, int) and value < 0:
            self.fail(node, f"{where} must not be negative")
        if choices and value not in choices:
            self.fail(node, f"{where} must be one of {', '.join(choices)}, not {value!r}")
        return value

    def rubric(self, root, suites):
        if root is None:
            raise RubricError(f"{self.path}: the rubric is empty")
        top = self.mapping(root, TOP_KEYS, "the rubric")
        if "parts" not in top:
            self.fail(root, "the rubric has no 'parts'")
        defaults = {"timeout": 20.0, "memory_mb": 2048, "visibility": "visible"}
        if "defaults" in top:
            for name, (key, value) in self.mapping(top["defaults"][1], DEFAULT_KEYS, "defaults").items():
                defaults[name] = self.option(name, value, "defaults")
        parts = {}
        for part_name, (key, node) in self.mapping(top["parts"][1], None, "parts").items():
            if suites is not None and part_name not in suites:
                self.fail(key, f"part '{part_name}' has no hidden suite (known: {', '.join(suites)})")
            parts[part_name] = self.part(part_name, node, defaults, suites)
        if suites is not None:
            missing = [p for p in suites if p not in parts]
            if missing:
                self.fail(top["parts"][1], f"no points given for part(s) {', '.join(missing)}")
        limit = self.submissions(top["submissions"][1]) if "submissions" in top else None
        return Rubric(self.path, parts, limit)

    def submissions(self, node):
        """`submissions: {limit: N, window_hours: H}`: N a whole number >= 1, H a number of hours > 0."""
        fields = self.mapping(node, SUBMISSION_KEYS, "submissions")
        for name in sorted(SUBMISSION_KEYS - set(fields)):
            self.fail(node, f"submissions needs {name} (e.g. submissions: {{limit: 3, window_hours: 24}})")
        limit_node, hours_node = fields["limit"][1], fields["window_hours"][1]
        limit = _plain_value(limit_node)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            self.fail(limit_node, f"submissions.limit must be a whole number of submissions, at least 1, not "
                                  f"{getattr(limit_node, 'value', '?')!r}")
        hours = _plain_value(hours_node)
        if not isinstance(hours, (int, float)) or isinstance(hours, bool) or not math.isfinite(hours) or hours <= 0:
            self.fail(hours_node, f"submissions.window_hours must be a number of hours above 0, not "
                                  f"{getattr(hours_node, 'value', '?')!r}")
        return SubmissionLimit(limit, float(hours))

    def option(self, name, node, where):
        if name in ("timeout", "memory_mb"):
            return self.limit(name, node, where)
        return self.scalar(node, str, f"{where}.visibility", VISIBILITIES)

    def limit(self, name, node, where):
        """timeout (seconds, at least MIN_TIMEOUT) or memory_mb (whole MiB, at least MIN_MEMORY_MB):
        a limit no part can run under is the rubric's mistake, never the student's."""
        if not isinstance(node, yaml.ScalarNode):
            self.fail(node, f"{where}.{name} must be a single value")
        value = None if node.style in ("'", '"') else yaml.safe_load(node.value)  # a quoted "20" is text
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if name == "timeout":
            if not number or value < MIN_TIMEOUT:
                self.fail(node, f"{where}.timeout must be a number of seconds, at least {MIN_TIMEOUT:g} (no part "
                                f"runs in less), not {node.value!r}")
            return float(value)
        if not number or not isinstance(value, int) or value < MIN_MEMORY_MB:
            self.fail(node, f"{where}.memory_mb must be a whole number of MiB, at least {MIN_MEMORY_MB} (no part "
                            f"runs in less), not {node.value!r}")
        return value

    def required(self, node, part, check):
        """A check's `requires`: a non-empty list of other checks of the same part."""
        if not isinstance(node, yaml.SequenceNode) or not node.value:
            self.fail(node, f"{part.name}.checks.{check}.requires must be a non-empty list of checks of {part.name}")
        names = []
        for m in node.value:
            if not isinstance(m, yaml.ScalarNode) or m.value not in part.checks or m.value == check:
                self.fail(m, f"{part.name}.checks.{check}.requires names '{getattr(m, 'value', m)}', which is not "
                             f"another check of {part.name}")
            names.append(m.value)
        return tuple(names)

    def part(self, name, node, defaults, suites):
        fields = self.mapping(node, PART_KEYS, f"part '{name}'")
        opts = {k: self.option(k, fields[k][1], name) if k in fields else defaults[k] for k in DEFAULT_KEYS}
        part = Part(name, opts["timeout"], opts["memory_mb"])
        if "checks" not in fields:
            self.fail(node, f"part '{name}' lists no checks")
        requires = {}  # check -> its `requires` node, resolved once every check is known
        for check, (key, value) in self.mapping(fields["checks"][1], None, f"{name}.checks").items():
            where = f"{name}.checks.{check}"
            diagnosis = "shown"
            if isinstance(value, yaml.ScalarNode) and value.value in ("", "~", "null"):
                points, visibility = 0.0, opts["visibility"]  # scored through a group
            elif isinstance(value, yaml.ScalarNode):
                points, visibility = self.scalar(value, float, where), opts["visibility"]
            else:
                spec = self.mapping(value, CHECK_KEYS, where)
                points = self.scalar(spec["points"][1], float, f"{where}.points") if "points" in spec else 0.0
                visibility = self.option("visibility", spec["visibility"][1], where) if "visibility" in spec else opts["visibility"]
                if "diagnosis" in spec:
                    diagnosis = self.scalar(spec["diagnosis"][1], str, f"{where}.diagnosis", DIAGNOSES)
                if "requires" in spec:
                    requires[check] = spec["requires"][1]
            if suites is not None and check not in suites[name]:
                self.fail(key, f"check '{check}' is not in the hidden suite for {name}")
            part.checks[check] = Check(name, check, points, visibility, diagnosis=diagnosis)
        for group, (key, value) in self.mapping(fields["groups"][1], None, f"{name}.groups").items() if "groups" in fields else ():
            spec = self.mapping(value, GROUP_KEYS, f"{name}.groups.{group}")
            if "points" not in spec or "checks" not in spec:
                self.fail(value, f"group '{group}' needs both points and checks")
            points = self.scalar(spec["points"][1], float, f"{name}.groups.{group}.points")
            members = spec["checks"][1]
            if not isinstance(members, yaml.SequenceNode) or not members.value:
                self.fail(members, f"group '{group}' checks must be a non-empty list")
            names = []
            for m in members.value:
                check = part.checks.get(m.value)
                if check is None:
                    self.fail(m, f"group '{group}' names '{m.value}', which is not a check of {name}")
                if check.group:
                    self.fail(m, f"'{m.value}' is already in group '{check.group}'")
                if check.points:
                    self.fail(m, f"'{m.value}' has its own points and is in group '{group}': give points to one")
                check.group = group
                names.append(m.value)
            part.groups[group] = (points, names)
        if suites is not None:
            missing = [c for c in suites[name] if c not in part.checks]
            if missing:
                self.fail(fields["checks"][1], f"{name}: the suite has checks with no entry here: {', '.join(missing)}")
        for check, node in requires.items():
            part.checks[check].requires = self.required(node, part, check)
        return part
