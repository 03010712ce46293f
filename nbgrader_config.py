"""nbgrader configuration for the chapter 3 course (nbgrader 0.9.6; `pip install .[notebooks]`).

Run the instructor commands from this folder, e.g.
    nbgrader generate_assignment ch03 --force
    nbgrader release_assignment ch03          (Exchange.root below must exist and be writable)
    nbgrader collect ch03 / zip_collect ch03
    nbgrader autograde ch03
    nbgrader generate_feedback ch03
    nbgrader export
The source notebooks in source/ch03 are generated: edit autograder/notebook_templates/ch03 or
solutions/ch03 and run `python -m autograder notebooks`, never the .ipynb files.
Any setting can be overridden on the command line, e.g. --CourseDirectory.root=/elsewhere.
"""
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # nbgrader imports autograder.deploy.nbgrader_plugins from this repository
    sys.path.insert(0, HERE)
# nbgrader runs `alembic` (the gradebook's migrations) as a program found on PATH: put the folder of
# this interpreter first, where pip installed alembic with nbgrader, so `.venv/bin/nbgrader ...` works
# as written without activating the environment (without it: FileNotFoundError 'alembic' and a
# half-made gradebook.db)
BIN = os.path.dirname(sys.executable)
if BIN not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join(p for p in (BIN, os.environ.get("PATH", "")) if p)

c = get_config()  # noqa: F821 - provided by traitlets when it runs this file

# nbgrader 0.9.6 creates a submission's rows relying on SQLAlchemy 1.4's backref cascade, which
# SQLAlchemy 2 dropped: autograde then warns "SAWarning: Object of type <SubmittedAssignment> not in
# session, add operation along ... will not proceed" for each new submission, although nbgrader adds
# those rows to the session itself right after and every grade is saved (tests/test_nbgrader_roundtrip.py
# reads them back from gradebook.db). Only that warning, only from nbgrader's gradebook, is silenced.
warnings.filterwarnings("ignore", message=r"Object of type <Submitted\w+> not in session", module=r"nbgrader\.api")

# --- the course and its folders (all relative to CourseDirectory.root) ---------------------------
c.CourseDirectory.course_id = "ch03-attention"
c.CourseDirectory.root = HERE
c.CourseDirectory.source_directory = "source"          # source/ch03/*.ipynb, generated
c.CourseDirectory.release_directory = "release"        # student versions, made by generate_assignment
c.CourseDirectory.submitted_directory = "submitted"    # submitted/<student>/ch03, by collect / zip_collect
c.CourseDirectory.autograded_directory = "autograded"  # autograded/<student>/ch03, by autograde
c.CourseDirectory.feedback_directory = "feedback"      # feedback/<student>/ch03/*.html, by generate_feedback
# the gradebook is <root>/gradebook.db (nbgrader's default, so it follows --CourseDirectory.root)

# --- the exchange (students fetch and submit through it on a shared machine) ---------------------
c.Exchange.root = "/srv/nbgrader/exchange"
c.Exchange.path_includes_course = False
# collect takes an inbound entry only from the account of the student it names (anyone can write into
# the inbound folder), and the submission time from the kernel's record of the entry's last change,
# never from its name or timestamp.txt, which the student writes (autograder/deploy/nbgrader_exchange.py)
c.ExchangeFactory.collect = "autograder.deploy.nbgrader_exchange.VerifiedCollect"

# --- releasing: the stubs carry the same hints as assignments/ch03/*.py ----------------------------
# ClearSolutionsWithHints replaces nbgrader's ClearSolutions: a solution cell named after one of the
# chapter's modules becomes autograder.authoring.stubs.make_stub of its code. code_stub is what ClearSolutions
# itself writes for any other solution region.
c.ClearSolutions.code_stub = {
    "python": 'raise NotImplementedError("write this part: the docstring above says what it computes")',
}
c.GenerateAssignment.preprocessors = [
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "nbgrader.preprocessors.InstantiateTests",
    "nbgrader.preprocessors.LockCells",
    "autograder.deploy.nbgrader_plugins.ClearSolutionsWithHints",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.CheckCellMetadata",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.SaveCells",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbgrader.preprocessors.ClearMarkScheme",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# --- autograding: no kernel; the solution cells are graded by the hidden suites in the sandbox -------
# nbgrader's defaults, with RestoreCellRoles added before DeduplicateIds (each cell's role comes
# from the gradebook) and GradeInSandbox in place of Execute: it extracts the modules of the
# solution cells, grades them in the project's sandbox (as `python -m autograder grade` does) and
# writes each part's score into its graded cell `score_<part>`, which SaveAutoGrades records.
# Student code never runs in this process nor as this user; see docs/notebooks.md.
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "autograder.deploy.nbgrader_exchange.SanitizeMarkdown",  # formgrader renders Markdown without a sanitizer
    "autograder.deploy.nbgrader_plugins.RestoreCellRoles",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    # OverwriteCells, without warning about the graded cells whose hidden tests the release cleared
    "autograder.deploy.nbgrader_plugins.OverwriteCellsQuietly",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.Autograde.autograde_preprocessors = [
    "autograder.deploy.nbgrader_plugins.GradeInSandbox",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# c.GradeInSandbox.rubric = "/path/to/grading.yml"   # default: grading.yml next to this file
# c.GradeInSandbox.chapter = "/path/to/chapter.yml"  # default: chapter.yml next to this file (also
#                                                     # c.ClearSolutionsWithHints.chapter)
# OverwriteCells.add_missing_cells stays False: in 0.9.6 it looks up the cell before a deleted test
# cell among the solution and grade cells only, so a test cell deleted right after one of the
# read-only publish cells would stop autograde with a KeyError. GradeInSandbox puts a deleted
# graded cell back itself (after the part's solution cell) and scores it.

# --- feedback: no hidden test source, no output of hidden tests ------------------------------------
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "autograder.deploy.nbgrader_plugins.ScrubHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "autograder.deploy.nbgrader_plugins.WrapOutputLines",  # the report's long lines wrap on the page
]
# nbgrader's feedback page with its language declared (<html lang="en">), for screen readers
from autograder.deploy.nbgrader_plugins import configure_feedback_page  # noqa: E402 - after sys.path is set above

configure_feedback_page(c)

# --- what the instructor's browser renders: formgrader and generate_feedback ------------------------
# Both render students' notebooks through nbconvert's HTMLExporter, which by default passes the HTML
# of Markdown cells and outputs through as written: a student's <script> or <img onerror=...> would
# run in the instructor's formgrader session. Sanitized, it is shown as inert text or dropped.
c.HTMLExporter.sanitize_html = True

# --- zip_collect: submissions downloaded from an LMS ------------------------------------------------
# Files named like Canvas downloads: <student>_[LATE_]<user id>_<submission id>_<notebook>.ipynb,
# placed (as files or inside zips) in downloaded/ch03/archive.
# a file is collected only for the student whose upload it came from (a file in Alice's zip named like
# Bob's is refused, not handed in as Bob's), and a duplicate is skipped instead of stopping the class
c.ZipCollectApp.collector_plugin = "autograder.deploy.nbgrader_exchange.OwnFilesCollector"
c.ZipCollectApp.archive_directory = "archive"
c.ZipCollectApp.extracted_directory = "extracted"
c.FileNameCollectorPlugin.named_regexp = (
    r".*[/\\](?P<student_id>[A-Za-z0-9]+)_(?:LATE_)?\d+_\d+_(?P<file_id>[^/\\]+\.ipynb)$"
)

