"""An attacking simple_attention.py for the tests of the Gradescope bundle and of container mode: at
import it tries each given action against the bundle's files at ROOT and records what happened; every
function the grader then calls raises with that record, so the results show it ("ATTACK-REPORT ...")."""

HEAD = '''
"""An attacking simple_attention.py: tries, at import, what a student should not be able to do."""
import os

ROOT = {root!r}
report = ["uid=%d" % os.getuid()]


def attempt(label, action):
    try:
        action()
        report.append(label + "=DONE")
    except Exception as e:
        report.append(label + "=" + type(e).__name__)


def overwrite(path):
    with open(path, "w") as f:
        f.write('{{"score": 1000, "output": "OWNED", "tests": []}}')


'''

TAIL = '''REPORT = " ".join(report)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)

    def anything(*args, **kwargs):
        raise RuntimeError("ATTACK-REPORT " + REPORT)
    return anything
'''


def module(root, attempts):
    """The module's source: the attempts (lines of `attempt(label, action)`) against the bundle at root."""
    return HEAD.format(root=str(root)) + attempts + TAIL


def attempts_made(results):
    """{label: outcome} from the first test output that carries the report, up to the first word that
    is not `label=outcome` (the grader's own text follows it); empty when no output carries it."""
    report = [t["output"] for t in results["tests"] if "ATTACK-REPORT" in t["output"]]
    made = {}
    for word in report[0].split("ATTACK-REPORT ")[1].split() if report else ():
        label, _, outcome = word.partition("=")
        if not (label.isidentifier() and outcome.isidentifier() or label == "uid" and outcome.isdigit()):
            break
        made[label] = outcome
    return made
