"""JUnit XML for CI test-report readers (instructor side: every failed check, with everything known).

xml_text keeps only what XML 1.0 allows (tab, newline and the printable planes: no other control
character, no lone surrogate, no U+FFFE/U+FFFF), so the file always parses; ElementTree then
escapes markup. Attributes are capped.
"""
import re
import xml.etree.ElementTree as ET

from autograder.reports.common import fmt, instructor_lines, printable

ATTRIBUTE = 500  # the most an attribute (a failure's message) holds
_NOT_XML = re.compile("[^\t\n\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value, limit=None):
    """value as characters XML 1.0 can hold (at most limit of them, when given)."""
    value = _NOT_XML.sub("\ufffd", value if isinstance(value, str) else str(value))
    return value[:limit] if limit else value


def junit_xml(grade):
    chapter = xml_text(grade.chapter, ATTRIBUTE)  # the graded chapter's id (grading.Grade.chapter)
    suites = ET.Element("testsuites", name=chapter, tests=str(len(grade.checks)),
                        failures=str(sum(not c.passed for c in grade.checks)))
    for part, p in grade.parts.items():
        checks = [c for c in grade.checks if c.part == part]
        suite = ET.SubElement(suites, "testsuite", name=xml_text(part, ATTRIBUTE), tests=str(len(checks)),
                              failures=str(sum(not c.passed for c in checks)))  # no time: the child can set it
        for c in checks:
            case = ET.SubElement(suite, "testcase", classname=xml_text(f"{chapter}.{part}", ATTRIBUTE),
                                 name=xml_text(c.name, ATTRIBUTE))
            ET.SubElement(case, "properties").extend([
                ET.Element("property", name="score", value=fmt(c.score)),
                ET.Element("property", name="max_score", value=fmt(c.max_score)),
                ET.Element("property", name="visibility", value=xml_text(c.visibility, ATTRIBUTE)),
            ])
            if not c.passed:
                said = "\n".join(instructor_lines(c))
                ET.SubElement(case, "failure", message=xml_text(printable(c.message, ATTRIBUTE))).text = xml_text(said)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True)
