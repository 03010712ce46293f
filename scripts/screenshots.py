"""Render the README's pictures: a student's feedback page and the class report, from a demo class.

    .venv/bin/python scripts/screenshots.py [--out docs/images]

A demo class (the solutions and a few mutants of autograder/selftest/mutants.yml, plus one file
that is not a zip) is graded by `batch`; headless Chromium (Debian's `chromium`) photographs one
student's feedback/<student>.html and report.html; the PNGs are reduced to a 64-colour palette
to keep them small in the repository.
"""
import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder import selftest  # noqa: E402

CLASS = {"alice": None, "bob": "causal-softmax-dim1", "carol": "mha-split-without-transpose",
         "dave": "simple-weights-softmax-dim0", "erin": "v2-unscaled", "grace": "causal-softmax-dim1"}
SHOTS = (("feedback/bob.html", "feedback.png", (1000, 1350)), ("report.html", "class-report.png", (1000, 1900)))


def demo_class(folder):
    entries = {e.id: e for e in selftest.corpus()}
    for student, entry in CLASS.items():
        if entry is None:
            shutil.copytree(selftest.SOLUTIONS, folder / student, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            selftest.apply(entries[entry], folder / student)
    (folder / "frank.zip").write_bytes(b"this is not a zip archive")


def screenshot(chromium, page, png, size):
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        subprocess.run([chromium, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
                        f"--user-data-dir={profile}", "--hide-scrollbars", f"--window-size={size[0]},{size[1]}",
                        f"--screenshot={png}", page.as_uri()], check=True, capture_output=True, timeout=120)
    from PIL import Image

    Image.open(png).convert("RGB").quantize(colors=64).save(png, optimize=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "images"))
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("screenshots.py: headless Chromium is needed (apt-get install chromium)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="demo-class-") as tmp:
        folder, graded = Path(tmp) / "submissions", Path(tmp) / "graded"
        folder.mkdir()
        demo_class(folder)
        subprocess.run([sys.executable, "-m", "autograder", "batch", str(folder), "--out", str(graded), "--jobs", "1"],
                       cwd=ROOT, check=True)
        for page, name, size in SHOTS:
            screenshot(chromium, graded / page, out / name, size)
            print(f"{out / name}: {(out / name).stat().st_size >> 10} KiB")


if __name__ == "__main__":
    main()
