"""Round 3, class 1: what formgrader renders for the instructor. Formgrader shows the autograded
notebook: the student's Markdown has passed autograde's SanitizeMarkdown (formgrader's template
renders Markdown without nbconvert's sanitizer), and HTML outputs and raw cells go through
nbconvert's HTMLExporter with this repository's nbgrader_config.py (sanitize_html) and formgrader's
own template, exactly as nbgrader's formgrader extension builds it. No script, event handler or
javascript: link the student wrote survives, and their words still do."""
import os

import pytest
from optional import require

from autograder import PROJECT_ROOT

require("nbgrader", reason="nbgrader is not installed (pip install '.[notebooks]')")

pytestmark = pytest.mark.quick  # the whole file is in the quick subset

ATTACK = ('WORDS-OF-THE-STUDENT <script>alert("xss")</script> <img src=x onerror="alert(1)"> '
          '<a href="javascript:alert(2)">link</a> <iframe src="https://evil.example"></iframe> '
          '<svg onload="alert(3)"></svg>')


def formgrader_exporter():
    """The HTMLExporter formgrader makes: nbgrader's config (nbgrader_config.py, read as formgrader
    reads it, from the course folder) with formgrader's template settings on top."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.apps import NbGrader
    from nbgrader.server_extensions.formgrader import handlers

    cwd = os.getcwd()
    os.chdir(PROJECT_ROOT)
    try:
        app = NbGrader()
        app.load_config_file()
        config = app.config
    finally:
        os.chdir(cwd)
    assert config.HTMLExporter.sanitize_html is True
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    return HTMLExporter(config=config)


def test_student_html_in_markdown_and_outputs_is_inert_in_formgrader():
    import nbformat

    from autograder.deploy.nbgrader_exchange import SanitizeMarkdown

    markdown = nbformat.v4.new_markdown_cell(ATTACK)
    code = nbformat.v4.new_code_cell("x = 1", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/html": ATTACK, "text/plain": "x"})])
    notebook = nbformat.v4.new_notebook(cells=[markdown, code])
    SanitizeMarkdown().preprocess(notebook, {})  # what autograde did to the notebook formgrader shows
    resources = {"assignment_id": "ch03", "notebook_id": "nb", "submission_id": "s", "index": 0, "total": 1,
                 "base_url": "", "student": "mallory", "last_name": "", "first_name": "", "notebook_path": "nb"}
    body, _ = formgrader_exporter().from_notebook_node(notebook, resources=resources)
    assert "WORDS-OF-THE-STUDENT" in body
    import re

    for live in (r"<script>alert", r"<img[^>]*onerror", r"href=\"javascript:", r"<iframe", r"<svg[^>]*onload"):
        assert not re.search(live, body), live
