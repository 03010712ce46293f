"""JUnit XML, for CI test-report readers."""
import xml.etree.ElementTree as ET

from autograder.reports.common import fmt


def junit_xml(grade):
    suites = ET.Element("testsuites", name="ch03", tests=str(len(grade.checks)),
                        failures=str(sum(not c.passed for c in grade.checks)))
    for part, p in grade.parts.items():
        checks = [c for c in grade.checks if c.part == part]
        suite = ET.SubElement(suites, "testsuite", name=part, tests=str(len(checks)),
                              failures=str(sum(not c.passed for c in checks)), time=str(p.get("seconds", 0)))
        for c in checks:
            case = ET.SubElement(suite, "testcase", classname=f"ch03.{part}", name=c.name)
            ET.SubElement(case, "properties").extend([
                ET.Element("property", name="score", value=fmt(c.score)),
                ET.Element("property", name="max_score", value=fmt(c.max_score)),
                ET.Element("property", name="visibility", value=c.visibility),
            ])
            if not c.passed:
                ET.SubElement(case, "failure", message=c.message[:500]).text = c.message
    return ET.tostring(suites, encoding="unicode", xml_declaration=True)
