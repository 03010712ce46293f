"""The hidden suites' own quality: a corpus of student-style bugs (mutants) and of correct
alternatives (variants), each graded through the real engine.

    mutants.yml   bugs: each must lose points in its own part (and only in the parts it names),
                  with a failed check of that part saying the expected words
    variants.yml  correct alternatives: each must keep full marks everywhere

An entry is applied to a fresh copy of the chapter's reference solutions (solutions/ch03) by exact
find/replace (the text must occur exactly once), then graded by the engine (engine.Engine, one per
process, without the environment check; with jobs, one fork server for the workers, forked from
a process that runs one thread: autograder/pool.py, as a batch's). The chapter is the one given (run_all's, the engine's,
`selftest --chapter FILE`); none given: this repository's, chapter.current(), read on call.
`python -m autograder selftest` and tests/test_suites.py both run the corpus through run_all.
"""
import ast
import multiprocessing
import re
import shutil
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from autograder import PACKAGE_DIR, chapter, scratch
from autograder import settings as settings_mod

HERE = Path(__file__).resolve().parent
MUTANTS = HERE / "mutants.yml"
VARIANTS = HERE / "variants.yml"
ENTRY_KEYS = {"id", "module", "find", "replace", "edits", "part", "parts_losing", "message", "note", "why"}


def __getattr__(name):
    """SOLUTIONS: the reference solutions the corpus edits (this repository's chapter's), read on first use."""
    if name == "SOLUTIONS":
        return chapter.current().solutions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _parts(parts=None):
    """The chapter's parts: the given ones, else this repository's (chapter.current(), read on call)."""
    return tuple(chapter.current().parts if parts is None else parts)


class CorpusError(ValueError):
    """A malformed corpus entry, or a find text that does not occur exactly once."""


@dataclass
class Edit:
    module: str
    find: str
    replace: str


@dataclass
class Entry:
    id: str
    kind: str                      # "mutant" or "variant"
    edits: list
    part: str = ""
    parts_losing: list = field(default_factory=list)
    message: str = ""
    note: str = ""                 # text (case-insensitive) one of the grade's notes must say (any kind)
    why: str = ""
    source: str = ""               # file:line, for error messages


@dataclass
class Outcome:
    id: str
    kind: str
    ok: bool                       # mutant: caught as expected; variant: full marks
    detail: str                    # why not, or what it scored
    losing: list = field(default_factory=list)
    scores: dict = field(default_factory=dict)
    failed: list = field(default_factory=list)   # (part, check, message) of every failed check
    graded: list = field(default_factory=list)   # the parts graded (the others cannot be affected)
    seconds: float = 0.0


def load(path, kind, parts=None):
    """Read and validate one corpus file -> [Entry]. parts: the chapter's (None: this repository's)."""
    path = Path(path)
    parts = _parts(parts)
    entries, seen = [], set()
    for where, data in _entry_data(path):
        if not isinstance(data, dict):
            raise CorpusError(f"{where}: an entry must be a mapping")
        unknown = sorted(set(data) - ENTRY_KEYS)
        if unknown:
            raise CorpusError(f"{where}: unknown key(s) {', '.join(unknown)}")
        entry_id = data.get("id")
        if not isinstance(entry_id, str) or not entry_id:
            raise CorpusError(f"{where}: every entry needs an id")
        if entry_id in seen:
            raise CorpusError(f"{where}: duplicate id {entry_id}")
        seen.add(entry_id)
        if "edits" in data:
            if any(k in data for k in ("find", "replace")) or not isinstance(data["edits"], list) or not data["edits"]:
                raise CorpusError(f"{where}: {entry_id}: give either edits (a non-empty list) or find/replace")
            raw_edits = data["edits"]
        else:
            raw_edits = [{k: data.get(k) for k in ("module", "find", "replace")}]
        edits = []
        for raw in raw_edits:
            if not isinstance(raw, dict) or set(raw) != {"module", "find", "replace"}:
                raise CorpusError(f"{where}: {entry_id}: each edit needs exactly module, find and replace")
            if raw["module"] not in parts:
                raise CorpusError(f"{where}: {entry_id}: unknown module {raw['module']!r}")
            if not isinstance(raw["find"], str) or not raw["find"] or not isinstance(raw["replace"], str):
                raise CorpusError(f"{where}: {entry_id}: find must be non-empty text and replace text")
            edits.append(Edit(raw["module"], raw["find"], raw["replace"]))
        entry = Entry(entry_id, kind, edits, why=str(data.get("why", "")), source=where)
        entry.note = data.get("note") or ""
        if not isinstance(entry.note, str):
            raise CorpusError(f"{where}: {entry_id}: note must be text")
        if kind == "mutant":
            entry.part = data.get("part") or edits[0].module
            entry.parts_losing = list(data.get("parts_losing") or [entry.part])
            entry.message = data.get("message") or ""
            if entry.part not in parts or any(p not in parts for p in entry.parts_losing) \
                    or entry.part not in entry.parts_losing:
                raise CorpusError(f"{where}: {entry_id}: part and parts_losing must be parts, the part among them")
            if not isinstance(entry.message, str) or not entry.message:
                raise CorpusError(f"{where}: {entry_id}: a mutant needs the message its part must show")
        elif any(k in data for k in ("part", "parts_losing", "message")):
            raise CorpusError(f"{where}: {entry_id}: variants keep full marks; part, parts_losing and message are for mutants")
        entries.append(entry)
    return entries


def _entry_data(path: Path) -> Iterator[tuple[str, Any]]:
    """('file:line', data) of each entry of a corpus file, one at a time (libyaml's loader where PyYAML
    has it; each entry's node is made data by the loader that composed it)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(path.read_text(encoding="utf-8"))
    try:
        try:
            root = loader.get_single_node()
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            raise CorpusError(f"{path}{f':{mark.line + 1}' if mark else ''}: not valid YAML "
                              f"({getattr(e, 'problem', None) or e})") from None
        if root is None or not isinstance(root, yaml.SequenceNode):
            raise CorpusError(f"{path}: expected a list of entries")
        for node in root.value:
            yield f"{path.name}:{node.start_mark.line + 1}", loader.construct_document(node)
    finally:
        loader.dispose()


def corpus(parts=None):
    """Every entry (mutants, then variants), checked against the chapter's parts (None: this repository's)."""
    return load(MUTANTS, "mutant", parts) + load(VARIANTS, "variant", parts)


def apply(entry, folder, solutions=None):
    """Write the solutions with the entry's edits into `folder` (created)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    solutions = chapter.current().solutions if solutions is None else solutions
    for module in sorted(Path(solutions).glob("*.py")):
        shutil.copyfile(module, folder / module.name)
    for edit in entry.edits:
        target = folder / f"{edit.module}.py"
        text = target.read_text(encoding="utf-8")
        count = text.count(edit.find)
        if count != 1:
            raise CorpusError(f"{entry.source}: {entry.id}: the find text occurs {count} times in {edit.module}.py "
                              f"(it must occur exactly once): {edit.find[:80]!r}")
        target.write_text(text.replace(edit.find, edit.replace), encoding="utf-8")
    return folder


def suite_modules(part, parts=None):
    """The chapter modules a part's checks ask the child for: student.module(PART) and student.module("x")."""
    source = (PACKAGE_DIR / "suites" / f"test_{part}.py").read_text(encoding="utf-8")
    named = set(re.findall(r'student\.module\(\s*"(\w+)"\s*\)', source)) & set(_parts(parts))
    return named | ({part} if re.search(r"student\.module\(\s*PART\s*\)", source) else set())


def module_imports(folder, parts=None):
    """module -> the chapter modules it imports (static imports only); None if any module of the
    folder imports in a way this cannot see (importlib, __import__, exec, eval). parts: the chapter's."""
    parts = _parts(parts)
    found = {}
    for part in parts:
        path = Path(folder) / f"{part}.py"
        if not path.is_file():
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
            elif isinstance(node, ast.Name) and node.id in ("__import__", "exec", "eval", "importlib"):
                return None
        if names & {"importlib", "builtins", "runpy"}:
            return None
        found[part] = names & set(parts)
    return found


def affected_parts(entry, folder, parts=None):
    """The parts whose child can import a module the entry edits: every part imports only the
    modules its checks name and, transitively, what those import (afresh: a child forgets a part's
    modules before the next, or is replaced, inside/part_reset.py). The other parts run exactly
    the solutions' code, so they keep their full marks. parts: the chapter's (None: this repository's)."""
    parts = _parts(parts)
    imports = module_imports(folder, parts)
    if imports is None:
        return list(parts)
    edited = {edit.module for edit in entry.edits}
    affected = []
    for part in parts:
        reach, todo = set(), list(suite_modules(part, parts))
        while todo:
            module = todo.pop()
            if module not in reach:
                reach.add(module)
                todo.extend(imports.get(module, ()))
        if reach & edited:
            affected.append(part)
    return affected


def judge(entry, grade):
    """An Outcome from a Grade: did the mutant get caught as expected / did the variant keep full marks?"""
    scores = {part: (p.score, p.max_score) for part, p in grade.parts.items()}
    losing = sorted(part for part, (score, best) in scores.items() if score < best)
    failed = [(c.part, c.name, c.message) for c in grade.checks if not c.passed]
    outcome = Outcome(entry.id, entry.kind, False, "", losing, scores, failed)
    if entry.note and not any(entry.note.lower() in note.lower() for note in grade.notes):
        outcome.detail = f"no note says {entry.note!r}: " + " | ".join(grade.notes)
        return outcome
    if entry.kind == "variant":
        outcome.ok = not losing
        outcome.detail = "full marks" if outcome.ok else "lost points: " + "; ".join(
            f"{part}/{name}: {message}" for part, name, message in failed)
        return outcome
    # a check worth 0 points (feedback only: grading.yml gives nothing for what the child could
    # forge, e.g. its own count of operations) catches a mutant by saying the misconception
    flagged = [c.message for c in grade.checks if c.part == entry.part and not c.passed and not c.max_score
               and entry.message.lower() in c.message.lower()]
    if entry.part not in losing and not flagged:
        outcome.detail = f"survived: {entry.part} kept full marks"
        return outcome
    extra = [p for p in losing if p not in entry.parts_losing]
    if extra:
        outcome.detail = f"caught, but also cost points in {', '.join(extra)}: " + "; ".join(
            f"{part}/{name}: {message}" for part, name, message in failed if part in extra)
        return outcome
    own = [message for part, _, message in failed if part == entry.part]
    if not any(entry.message.lower() in message.lower() for message in own):
        outcome.detail = f"caught in {entry.part}, but no failed check says {entry.message!r}: " + " | ".join(own)
        return outcome
    outcome.ok = True
    outcome.detail = f"caught in {', '.join(losing)}" if losing else f"flagged in {entry.part} (feedback only, 0 points)"
    return outcome


def run_entry(entry, engine, all_parts=False):
    """Grade one entry with the engine, on the engine's chapter (its reference solutions edited, its parts).
    Unless all_parts, only the parts it can affect (affected_parts) are graded."""
    import time

    from autograder.rubric import Rubric

    started = time.monotonic()
    rubric = engine.rubric
    with scratch.folder("selftest", f"{entry.id}-") as tmp:
        folder = apply(entry, Path(tmp) / "submission", engine.chapter.solutions)
        affected = affected_parts(entry, folder, engine.chapter.parts)
        parts = list(rubric.parts) if all_parts else [p for p in rubric.parts if p in affected]
        grade = engine.grade(folder, rubric=Rubric(rubric.path, {p: rubric.parts[p] for p in parts}),
                             figures=False)  # nobody sees a picture here
    outcome = judge(entry, grade)
    outcome.graded = parts
    outcome.seconds = time.monotonic() - started
    return outcome


_worker_engine = None  # in a spawned worker process: its engine (made by _init_spawned)


def _init_spawned(slots, settings, rubric_path, manifest=None):
    from multiprocessing import util

    from autograder.engine import Engine

    global _worker_engine
    _worker_engine = Engine.open(settings, rubric_path, check=False, slot=slots.get(), chapter=manifest)
    util.Finalize(_worker_engine, _worker_engine.close, exitpriority=10)


def _run_spawned(entry, all_parts):
    return run_entry(entry, _worker_engine, all_parts)


def _run_forked(entry, all_parts):
    from autograder import pool

    return run_entry(entry, pool.worker_engine(), all_parts)


def run_all(entries, jobs=1, rubric_path=None, progress=None, all_parts=False, settings=None, manifest=None):
    """Grade every entry -> [Outcome] in the entries' order. jobs > 1: that many worker processes,
    forked from here and sharing one fork server (a door each, as a batch's: autograder/pool.py) where
    this process runs one thread, else started fresh (spawn), each with its own fork server (sandbox
    slot 1..jobs). settings: the run's (default: the environment's); the corpus is graded without the
    environment check. manifest: the chapter (a chapter.Chapter; None: this repository's) whose
    reference and parts every engine grades."""
    from autograder import pool
    from autograder.engine import Engine

    manifest = manifest or chapter.current()
    settings = (settings or settings_mod.from_environment()).with_secret()  # one secret for every worker
    for entry in entries:  # fail fast on a find text that does not apply, before starting anything
        with scratch.folder("selftest", f"{entry.id}-") as tmp:
            apply(entry, tmp, manifest.solutions)
    if jobs <= 1:
        with Engine.open(settings, rubric_path, check=False, slot=1, chapter=manifest) as engine:
            return _shown((run_entry(entry, engine, all_parts) for entry in entries), progress)
    if pool.one_thread_here():
        # fork: this process runs no other thread (pool.one_thread_here), so no lock is held at the
        # fork; one fork server for every worker, and torch imported once, here, while it starts
        return _run_forked_pool(entries, jobs, rubric_path, progress, all_parts, settings, manifest)
    # spawn, not fork: the caller (pytest, for one) runs threads of its own (a queue's feeder thread, a
    # thread pool's), and a forked worker can deadlock on a lock one of them held: each worker imports
    # torch again and starts a fork server of its own
    ctx = multiprocessing.get_context("spawn")
    slots = ctx.Queue()
    for slot in range(1, jobs + 1):
        slots.put(slot)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_spawned,
                             initargs=(slots, settings, rubric_path, manifest)) as executor:
        return _shown(executor.map(_run_spawned, entries, [all_parts] * len(entries)), progress)


def _shown(outcomes, progress):
    """[Outcome], in the entries' order, each handed to progress (when given) as it comes."""
    kept = []
    for outcome in outcomes:
        kept.append(outcome)
        if progress:
            progress(outcome)
    return kept


def _run_forked_pool(entries, jobs, rubric_path, progress, all_parts, settings, manifest):
    """run_all's workers forked from this process, as a batch's (pool.fork_pool): one fork server with a
    door per worker, started before this process imports torch (the rubric's suites); each worker's
    engine (Engine.for_worker) inherits this one's rubric and suites."""
    from autograder import pool
    from autograder.engine import Engine

    if not entries:
        return []
    workers = min(jobs, len(entries))  # a worker beyond the doors would start a fork server of its own
    doors = pool.start_fork_servers(workers, settings)  # before torch is imported here
    try:
        engine = Engine(settings, rubric_path, manifest)
        engine.load_rubric()
        if doors:  # refuses at once where the fork server fails at its start (what Engine.open checks)
            doors[0].serving()
        with pool.frozen(), pool.fork_pool(workers, engine, doors) as executor:
            return _shown(executor.map(_run_forked, entries, [all_parts] * len(entries)), progress)
    finally:
        pool.stop_fork_servers(doors)


def summary(outcomes):
    mutants = [o for o in outcomes if o.kind == "mutant"]
    variants = [o for o in outcomes if o.kind == "variant"]
    killed = sum(o.ok for o in mutants)
    kept = sum(o.ok for o in variants)
    rate = killed / len(mutants) if mutants else 1.0
    return {"mutants": len(mutants), "killed": killed, "kill_rate": rate, "variants": len(variants),
            "variants_full_marks": kept, "ok": killed == len(mutants) and kept == len(variants)}
