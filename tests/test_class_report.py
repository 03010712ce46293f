"""`batch` writes a feedback page per student and the class report, and both render in a browser.

A class of four, graded with --jobs 1: alice (the solutions), bob (attention_weights with the
softmax over dim 0), carol (a zip with simple_attention.py only and a member named like markup
that leaves the folder: a note quotes the name) and dave (a file that is not a zip). Checked:
bob's page holds his weights and the expected ones as two images, alice's none, carol's note is
escaped; report.html names the whole class, bob's misconception with him, dave as unreadable, the
per-part means of the stored results and the parts' times; misconceptions.csv agrees.
Then headless Chromium (Debian's `chromium`; skipped, saying why, where it is missing) opens a
feedback page and report.html: no console message (the pages run no script and load nothing, so
any message is an error or a blocked load), and every image decodes.
"""
import csv
import html
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile

import pytest

from autograder import PROJECT_ROOT, selftest

HOSTILE_MEMBER = "../<img src=x onerror=alert(1)>.py"
IMG = re.compile(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]+"')


@pytest.fixture(scope="module")
def batch_out(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    folder = root / "submissions"
    folder.mkdir()
    shutil.copytree(selftest.SOLUTIONS, folder / "alice", ignore=shutil.ignore_patterns("__pycache__"))
    entry = next(e for e in selftest.corpus() if e.id == "simple-weights-softmax-dim0")
    selftest.apply(entry, folder / "bob")
    with zipfile.ZipFile(folder / "carol.zip", "w") as archive:
        archive.write(selftest.SOLUTIONS / "simple_attention.py", "simple_attention.py")
        archive.writestr(HOSTILE_MEMBER, "x = 1\n")
    (folder / "dave.zip").write_bytes(b"not a zip")
    out = root / "out"
    run = subprocess.run([sys.executable, "-m", "autograder", "batch", str(folder), "--out", str(out), "--jobs", "1"],
                         cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return out


def student_names(out):
    return sorted(p.stem for p in (out / "results").glob("*.json"))


def test_every_student_gets_a_feedback_page_and_only_the_wrong_softmax_has_pictures(batch_out):
    names = student_names(batch_out)
    assert names == ["alice", "bob", "carol", "dave"]
    pages = {n: (batch_out / "feedback" / f"{n}.html").read_text() for n in names}
    assert len(IMG.findall(pages["bob"])) == 2 and "the softmax runs over dim 0" in pages["bob"]
    bob = json.loads((batch_out / "results" / "bob.json").read_text())
    [carrier] = [t for t in bob["tests"] if "figure" in (t.get("extra_data") or {})]
    assert carrier["name"] == "simple_attention: scores_and_weights_book_example"
    panel = carrier["extra_data"]["figure"]["panels"][0]
    assert panel["got"] != panel["want"]
    assert "<img" not in pages["alice"] and "Every check passed." in pages["alice"]
    assert "<img" not in pages["carol"] and html.escape(HOSTILE_MEMBER) in pages["carol"]  # the note, escaped
    assert "could not be graded" in pages["dave"] and "not a valid zip file" in pages["dave"]


def test_the_class_report_names_the_whole_class_and_what_went_wrong(batch_out):
    page = (batch_out / "report.html").read_text()
    names = student_names(batch_out)
    for name in names:
        assert f">{html.escape(name)}</a>" in page, name  # every student, linked to their page
    assert "<img src=x" not in page and re.search(r"<td>dave</td><td>submission</td><td>[^<]*not a valid zip file", page)
    rows = re.findall(r'<tr><td class="num">(\d+)</td><td>([^<]*)</td><td>([^<]*)<br><span class="muted">seen by '
                      r'\d+ check\(s\): ([^<]*)</span></td><td>([^<]*)</td></tr>', page)
    softmax = [row for row in rows if row[2].startswith("the softmax runs over dim 0")]
    assert [(count, part, who) for count, part, _, _, who in softmax] == [("1", "simple_attention", "bob")]
    assert {"scores_and_weights_book_example", "attention_weights_on_unseen_scores"} <= set(softmax[0][3].split(", "))
    records = [json.loads((batch_out / "results" / f"{n}.json").read_text()) for n in names]
    mean = statistics.mean(r["parts"]["simple_attention"]["score"] for r in records)
    assert f"<td>simple_attention</td><td class=\"num\">{mean:.2f} / 10</td>" in page
    alice = json.loads((batch_out / "results" / "alice.json").read_text())
    assert set(alice["extra_data"]["seconds"]) == set(alice["parts"]) and all(
        s > 0 for s in alice["extra_data"]["seconds"].values())
    assert "Slowest runs: " in page and len(IMG.findall(page)) == 1  # the histogram
    with open(batch_out / "misconceptions.csv", newline="") as f:
        table = list(csv.DictReader(f))
    bob_rows = [r for r in table if r["who"] == "bob"]
    assert bob_rows and all(r["part"] == "simple_attention" for r in bob_rows)
    [row] = [r for r in bob_rows if r["misconception"] == softmax[0][2]]
    assert row["students"] == "1" and set(row["checks"].split(";")) == set(softmax[0][3].split(", "))


# ---------------------------------------------------------------- in a browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium (Debian's `chromium`) is not installed")


def chromium(*args, timeout=120, budget=5000):
    # a profile of its own, no GPU, no sandbox (tests may run as root): only the page under test
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        command = [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", f"--user-data-dir={profile}",
                   "--enable-logging=stderr", "--v=0", f"--virtual-time-budget={budget}", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env={**os.environ, "HOME": profile})


def console_messages(page):
    """What the page logged to the console (Chromium prints each as an INFO:CONSOLE line)."""
    done = chromium("--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    return [line for line in done.stderr.splitlines() if ":CONSOLE" in line], done.stdout


def decoded_images(page, tmp_path):
    """[width x height or 'broken'] of every image of the page, read by a test page that frames it."""
    probe = tmp_path / f"probe-{page.stem}.html"
    probe.write_text(
        '<!DOCTYPE html><html><body><pre id="out">pending</pre>'
        f'<iframe id="f" src="{page.as_uri()}" width="1000" height="800"></iframe><script>'
        'document.getElementById("f").addEventListener("load", () => {'
        '  const images = Array.from(document.getElementById("f").contentDocument.images);'
        '  Promise.all(images.map(i => i.decode().then(() => i.naturalWidth + "x" + i.naturalHeight, () => "broken")))'
        '    .then(r => { document.getElementById("out").textContent = "images:" + JSON.stringify(r); });'
        '});</script></body></html>')
    for _ in range(3):  # on a loaded machine the framed page may still be loading when the DOM is dumped
        done = chromium("--allow-file-access-from-files", "--dump-dom", probe.as_uri(), budget=30000)
        found = re.search(r"images:(\[[^<]*\])", done.stdout)
        if found:
            return json.loads(found.group(1))
    raise AssertionError(f"the probe page never reported: {done.stdout[-2000:]}")


@needs_chromium
def test_the_console_check_sees_a_blocked_load(tmp_path):
    """The check below can fail: a page with our policy that asks for a file gets a console message."""
    from autograder.reports.html_page import page

    bad = tmp_path / "bad.html"
    bad.write_text(page("bad", '<img src="missing.png" alt="">'))
    messages, _ = console_messages(bad)
    assert any("Content Security Policy" in m for m in messages), messages


@needs_chromium
@pytest.mark.parametrize("which", ["feedback/bob.html", "report.html"])
def test_the_pages_render_in_chromium_without_a_console_message(batch_out, tmp_path, which):
    page = batch_out / which
    messages, dom = console_messages(page)
    assert messages == []
    assert ("Chapter 3 feedback for bob" if "bob" in which else "Chapter 3: class report") in dom
    sizes = decoded_images(page, tmp_path)
    assert len(sizes) == (2 if "bob" in which else 1) and "broken" not in sizes
    assert all(int(w) > 100 and int(h) > 100 for w, h in (s.split("x") for s in sizes))


def _record(parts_checks):
    """A results_json-like record: {part: [(check, passed, message)]}."""
    tests = [{"name": f"{part}: {check}", "score": 1.0 if passed else 0.0, "max_score": 1.0,
              "status": "passed" if passed else "failed", "visibility": "visible", "output": message}
             for part, checks in parts_checks.items() for check, passed, message in checks]
    return {"score": 0, "max_score": 1, "tests": tests}  # a record without extra_data: the output is the message


def test_unfinished_work_is_one_row_per_part_below_the_misconceptions():
    """Issue 22: one stub submission filled the top of the list with one row per unimplemented piece
    and pushed a real misconception out of it."""
    from autograder.reports import class_report

    stub = {part: [(f"check_{i}", False, f"check {i} of {part}: not implemented yet: {part}.f{i} (in {part}.py)")
                   for i in range(12)] for part in ("causal", "mha", "exercises")}
    wrong_transfer = {"weight_transfer": [("book_example", False, "sa_v1(inputs) is wrong: the weights are not transposed")]}
    records = [("stubby", _record(stub), ""), ("ann", _record(wrong_transfer), ""), ("ben", _record(wrong_transfer), ""),
               ("cid", _record({"causal": [("mask", False, "a different mistake")]}), "")]
    rows = class_report.misconceptions(records)
    assert [(r["part"], r["message"], len(r["students"]), r["unfinished"]) for r in rows] == [
        ("weight_transfer", "the weights are not transposed", 2, False), ("causal", "a different mistake", 1, False),
        ("causal", "not implemented yet", 1, True), ("exercises", "not implemented yet", 1, True),
        ("mha", "not implemented yet", 1, True)]
    assert len(rows[2]["checks"]) == 12
    page = class_report.class_report(records)
    assert page.index("the weights are not transposed") < page.index("Unfinished work")
    assert page.count("not implemented yet</") + page.count("not implemented yet<br>") == 3


def test_sources_that_reach_into_the_grader_are_listed_for_the_instructor():
    """Issue 30 item 2: results_json's extra_data.tampering (the grader's reading of the source) reaches report.html."""
    from autograder.reports import class_report as report

    results = {"score": 19, "max_score": 22, "tests": [], "parts": {"mha": {"score": 19, "max_score": 22}},
               "extra_data": {"tampering": ["mha.py, line 87: a dispatch mode (_python_dispatch)"]}}
    clean = {**results, "extra_data": {}}
    page = report.class_report([("mallory", results, ""), ("ann", clean, "")])
    assert report.tampering([("mallory", results, ""), ("ann", clean, "")]) == [
        ("mallory", "mha.py, line 87: a dispatch mode (_python_dispatch)")]
    section = page[page.index("Tampering: sources that reach into the grader"):]
    assert "mallory" in section.split("</table>")[0] and "ann" not in section.split("</table>")[0]
    assert "mha.py, line 87: a dispatch mode (_python_dispatch)" in page
    assert "No submission&#x27;s source reaches into the grader" in report.class_report([("ann", clean, "")]) or \
        "No submission's source reaches into the grader" in report.class_report([("ann", clean, "")])
