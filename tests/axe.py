"""axe-core, the field's accessibility checker, run inside a page that headless Chromium opened
(tests/chromium.py), for the audits of report.html and the feedback pages (issue 36 item 6).

Nothing of axe-core is kept in this repository: `axe_source()` returns the text of axe.min.js from
$CH03_AXE_CORE (a path to that file), else from a cache folder outside the project
(~/.cache/ch03-autograder-tests/axe-core, `.ci/run` fills it), else it installs the package there
with npm's ordinary client (`npm install axe-core`) at test time. Where neither the file nor npm
(or the registry) is there, it returns None and `SKIP_REASON` says why.

    violations = audit(tab)   # [{"id", "impact", "help", "nodes": [html, ...]}] of axe's rules that failed
    serious(violations)       # those at "serious" or "critical" impact
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ch03-autograder-tests" / "axe-core"
FILE = CACHE / "node_modules" / "axe-core" / "axe.min.js"
SKIP_REASON = ("axe-core is not available: set CH03_AXE_CORE to an axe.min.js, or let the test install it with npm "
               f"(`npm install --prefix {CACHE} axe-core`; npm and its registry were not reachable here)")
RULES = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice")


def axe_source():
    """The text of axe.min.js, installed into CACHE with npm when it is not there yet; None when it cannot be."""
    given = os.environ.get("CH03_AXE_CORE")
    if given and Path(given).is_file():
        return Path(given).read_text(encoding="utf-8")
    if not FILE.is_file() and shutil.which("npm"):
        CACHE.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(["npm", "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", "axe-core@4"],
                           capture_output=True, timeout=300, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return None
    return FILE.read_text(encoding="utf-8") if FILE.is_file() else None


def audit(tab, source):
    """axe.run over the whole page in tab (source: axe_source()) -> its violations, as plain data."""
    tab.evaluate(source + "\n;0")
    options = json.dumps({"runOnly": {"type": "tag", "values": list(RULES)}, "resultTypes": ["violations"]})
    return tab.evaluate(f"axe.run(document, {options}).then(r => r.violations.map(v => ({{id: v.id, impact: v.impact, "
                        "help: v.help, nodes: v.nodes.map(n => n.html.slice(0, 200))})))")


def serious(violations):
    return [v for v in violations if v["impact"] in ("serious", "critical")]
