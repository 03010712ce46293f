"""Round 3, class 1: nbgrader's ways in trust nothing the student wrote (autograder/deploy/nbgrader_exchange.py,
configured in nbgrader_config.py).

collect runs in this process on a real exchange folder: entries are owned by two system accounts
(`daemon` stands for the student, `nobody` for a classmate), so the owner check is the kernel's.
zip_collect's plugin is given the paths zip_collect gives it."""
import datetime
import os
import pwd

import pytest
from optional import require

from autograder import PROJECT_ROOT

require("nbgrader", reason="nbgrader is not installed (pip install '.[notebooks]')")

COURSE = "ch03-attention"
STUDENT, CLASSMATE = "daemon", "nobody"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving files to other accounts needs root")


def entry(inbound, name, owner, forged_time):
    """An inbound entry as `nbgrader submit` writes it (a notebook and timestamp.txt), owned by owner,
    with the time the student chose in its name and in timestamp.txt."""
    folder = inbound / f"{name}+ch03+{forged_time}+{owner}"
    folder.mkdir()
    (folder / "01_self_attention.ipynb").write_text(f'{{"by": "{owner}"}}')
    (folder / "timestamp.txt").write_text(forged_time)
    uid = pwd.getpwnam(owner).pw_uid
    for path in (folder, *folder.iterdir()):
        os.chown(path, uid, -1)
    return folder


def collect(tmp_path, **options):
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from autograder.deploy.nbgrader_exchange import VerifiedCollect

    config = Config()
    config.CourseDirectory.root = str(tmp_path / "course")
    config.CourseDirectory.course_id = COURSE
    config.CourseDirectory.assignment_id = "ch03"
    config.Exchange.root = str(tmp_path / "exchange")
    for key, value in options.items():
        setattr(config.ExchangeCollect, key, value)
    (tmp_path / "course").mkdir(exist_ok=True)
    app = VerifiedCollect(coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config),
                          config=config)
    app.start()
    return app, tmp_path / "course" / "submitted"


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    """An empty gradebook.db of the course, made once for the file (issue 38 item 6: a new gradebook runs
    `alembic heads` in a subprocess, seconds each; a course's gradebook exists before anything is collected)."""
    import shutil
    import sys

    from nbgrader.api import Gradebook

    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    with pytest.MonkeyPatch.context() as patch:  # the gradebook runs `alembic` from PATH (nbgrader_config.py
        patch.setenv("PATH", os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
        assert shutil.which("alembic")
        with Gradebook(f"sqlite:///{path}", COURSE):
            pass
    return path


@pytest.fixture()
def inbound(tmp_path, gradebook):
    """The exchange's inbound folder, and the course folder with a copy of the course's gradebook."""
    import shutil

    (tmp_path / "course").mkdir()
    shutil.copy2(gradebook, tmp_path / "course" / "gradebook.db")
    folder = tmp_path / "exchange" / COURSE / "inbound"
    folder.mkdir(parents=True)
    return folder


@needs_root
def test_an_entry_in_another_students_name_is_refused_and_theirs_collected(tmp_path, inbound):
    """The classmate writes an entry named after the student, with a later time in its name: it is
    refused (named in the log), and the student's own entry is what collect hands in for them."""
    entry(inbound, STUDENT, STUDENT, "2026-01-01 10:00:00.000000 UTC")
    forged = entry(inbound, STUDENT, CLASSMATE, "2026-01-02 10:00:00.000000 UTC")
    app, submitted = collect(tmp_path)
    assert app.refused == [forged.name]
    assert (submitted / STUDENT / "ch03" / "01_self_attention.ipynb").read_text() == f'{{"by": "{STUDENT}"}}'
    assert not (submitted / CLASSMATE).exists()


@needs_root
def test_the_submission_time_is_the_kernels_not_the_students(tmp_path, inbound):
    """A late entry whose name and timestamp.txt say 2000-01-01: the collected timestamp.txt holds the
    time the kernel recorded (now), so the submission is as late as it really is."""
    entry(inbound, STUDENT, STUDENT, "2000-01-01 00:00:00.000000 UTC")
    before = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(seconds=5)
    _, submitted = collect(tmp_path)
    from nbgrader.utils import parse_utc

    recorded = parse_utc((submitted / STUDENT / "ch03" / "timestamp.txt").read_text())
    assert recorded >= before, recorded


@pytest.mark.quick
def test_a_file_in_one_students_zip_named_like_anothers_is_not_theirs():
    """zip_collect's plugin: Alice's own notebook is collected; a file inside her uploaded zip named
    like Bob's is not (neither as Bob's nor as hers); Bob's own file is; a second copy of Bob's
    notebook is skipped instead of stopping the class."""
    from traitlets.config import Config

    from autograder.deploy.nbgrader_exchange import OwnFilesCollector

    config = Config()
    config.FileNameCollectorPlugin.named_regexp = (
        r".*[/\\](?P<student_id>[A-Za-z0-9]+)_(?:LATE_)?\d+_\d+_(?P<file_id>[^/\\]+\.ipynb)$")
    plugin = OwnFilesCollector(config=config)
    base = "/course/downloaded/ch03/extracted/submissions"
    alice = plugin.collect(f"{base}/alice_11_21_01_self_attention.ipynb")
    assert alice and alice["student_id"] == "alice"
    assert plugin.collect(f"{base}/alice_11_22_hw/bob_12_31_02_causal_and_multi_head.ipynb") is None
    assert plugin.collect(f"{base}/alice_LATE_11_23_hw/inner/bob_12_31_01_self_attention.ipynb") is None
    own = plugin.collect(f"{base}/alice_11_22_hw/alice_11_22_02_causal_and_multi_head.ipynb")
    assert own and own["student_id"] == "alice"
    bob = plugin.collect(f"{base}/bob_12_31_02_causal_and_multi_head.ipynb")
    assert bob and bob["student_id"] == "bob"
    assert plugin.collect(f"{base}/bob_12_32_hw/bob_12_31_02_causal_and_multi_head.ipynb") is None


def test_student_markdown_html_is_inert_after_autograde():
    """The autograde preprocessor: a Markdown cell's <script>, <img onerror> and javascript: link are
    escaped or dropped; the words stay; a cell without HTML is left as it is."""
    import nbformat

    from autograder.deploy.nbgrader_exchange import SanitizeMarkdown

    attack = nbformat.v4.new_markdown_cell('WORDS <script>alert(1)</script> <img src=x onerror="alert(2)"> '
                                           '<a href="javascript:alert(3)">x</a>')
    plain = nbformat.v4.new_markdown_cell("# Title\n\nsoftmax(x) = exp(x) / sum(exp(x))")
    notebook = nbformat.v4.new_notebook(cells=[attack, plain])
    SanitizeMarkdown().preprocess(notebook, {})
    text = notebook.cells[0].source
    assert "WORDS" in text and "<script" not in text and "<img" not in text and "javascript:" not in text
    assert notebook.cells[1].source == plain.source


@pytest.mark.quick
def test_the_course_config_uses_these_classes():
    source = (PROJECT_ROOT / "nbgrader_config.py").read_text()
    for line in ('c.ExchangeFactory.collect = "autograder.deploy.nbgrader_exchange.VerifiedCollect"',
                 'c.ZipCollectApp.collector_plugin = "autograder.deploy.nbgrader_exchange.OwnFilesCollector"',
                 '"autograder.deploy.nbgrader_exchange.SanitizeMarkdown"', "c.HTMLExporter.sanitize_html = True"):
        assert line in source, line
