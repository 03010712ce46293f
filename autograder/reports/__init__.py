"""What a Grade looks like to people and platforms, one module per format.

    table          the terminal score table
    results_json   Gradescope's results.json (plus parts, extra_data): what batch stores
    junit          JUnit XML
    markdown       Markdown (step summary, pull-request comment, grade --markdown)
"""
import json

from autograder.reports.junit import junit_xml
from autograder.reports.markdown import markdown
from autograder.reports.results_json import results_json
from autograder.reports.table import table

__all__ = ["table", "results_json", "junit_xml", "markdown", "write"]


def write(grade, json_path=None, junit_path=None, markdown_path=None):
    if json_path:
        with open(json_path, "w") as f:
            json.dump(results_json(grade), f, indent=1)
    if junit_path:
        with open(junit_path, "w") as f:
            f.write(junit_xml(grade))
    if markdown_path:
        from autograder.reports.markdown_pictures import markdown_pictures

        with open(markdown_path, "w") as f:
            f.write(markdown(grade) + markdown_pictures(grade, markdown_path))  # PNGs beside the file
