"""Staging (issue 11 items 4, 6, 7, 8): what a student hands in becomes a staged folder of modules,
or a SubmissionError whose message says why, naming files relative to the submission.

No sandbox here: every case calls autograder.submission.stage (or submitted_notebooks.comment_out_magics)
and states the modules staged, the note written or the message of the error. Hostile archives
(a file and a folder of one name, encrypted members, a bad CRC, bombs, absurd member counts,
links, paths that climb out) never raise anything but SubmissionError.
"""
import ast
import json
import shutil
import struct
import zipfile

import pytest

from autograder import PARTS, PROJECT_ROOT, submission, submitted_notebooks
from autograder.submission import SubmissionError, stage

pytestmark = pytest.mark.quick  # the whole file is in the quick subset

SOLUTIONS = PROJECT_ROOT / "solutions" / "ch03"
ALL = sorted(PARTS)


def modules(folder):
    folder.mkdir(parents=True, exist_ok=True)
    for module in SOLUTIONS.glob("*.py"):
        shutil.copyfile(module, folder / module.name)
    return folder


def make_zip(path, entries, compression=zipfile.ZIP_STORED):
    """entries: [(name, bytes or str)]; a name ending in / is a folder entry."""
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return path


def solution_entries(prefix="ch03/"):
    return [(prefix + p.name, p.read_text()) for p in sorted(SOLUTIONS.glob("*.py"))]


def staging_error(path, tmp_path):
    with pytest.raises(SubmissionError) as caught:
        stage(path, tmp_path / "staged")
    message = str(caught.value)
    assert str(tmp_path) not in message, message  # never the grader's own paths
    return message


def patch(data, signature, offset, value, fmt):
    """data with the field at `offset` of every record starting with `signature` set to value."""
    data = bytearray(data)
    at = data.find(signature)
    while at >= 0:
        struct.pack_into(fmt, data, at + offset, value)
        at = data.find(signature, at + 1)
    return bytes(data)


LOCAL, CENTRAL, END = b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06"


# ---------------------------------------------------------------- hostile zips

def test_a_zip_of_the_solutions_stages_every_module(tmp_path):
    staged = stage(make_zip(tmp_path / "hw.zip", solution_entries()), tmp_path / "staged")
    assert staged.found == ALL and staged.notes == []
    assert (tmp_path / "staged" / "causal.py").read_text() == (SOLUTIONS / "causal.py").read_text()


def test_a_file_and_a_folder_of_one_name(tmp_path):
    archive = make_zip(tmp_path / "hw.zip", solution_entries() + [("ch03/notes", "a file"), ("ch03/notes/a.py", "x")])
    assert staging_error(archive, tmp_path) == "ch03/notes is both a file and a folder in the zip"


def test_a_file_and_a_folder_entry_of_one_name(tmp_path):
    archive = make_zip(tmp_path / "hw.zip", [("ch03/causal.py/", ""), ("ch03/causal.py", "x = 1\n")])
    assert staging_error(archive, tmp_path) == "ch03/causal.py is both a file and a folder in the zip"


def test_a_name_twice(tmp_path):
    with pytest.warns(UserWarning, match="Duplicate name"):
        archive = make_zip(tmp_path / "hw.zip", solution_entries() + [("ch03/causal.py", "x = 1\n")])
    assert staging_error(archive, tmp_path) == "ch03/causal.py is in the zip twice: which one to grade is not clear"


def test_an_encrypted_member(tmp_path):
    """zipfile cannot write encrypted members: the encryption flag is set in the headers, as a
    password-protected zip has it."""
    plain = make_zip(tmp_path / "plain.zip", [("ch03/causal.py", "x = 1\n")]).read_bytes()
    flagged = patch(patch(plain, LOCAL, 6, 0x1, "<H"), CENTRAL, 8, 0x1, "<H")
    (tmp_path / "hw.zip").write_bytes(flagged)
    assert staging_error(tmp_path / "hw.zip", tmp_path) == (
        "ch03/causal.py is encrypted (password-protected): hand in a zip without a password")


def test_a_bad_crc(tmp_path):
    plain = make_zip(tmp_path / "plain.zip", [("ch03/causal.py", "x = 1\n" * 50)]).read_bytes()
    at = plain.find(b"x = 1")
    (tmp_path / "hw.zip").write_bytes(plain[:at] + b"y" + plain[at + 1:])
    message = staging_error(tmp_path / "hw.zip", tmp_path)
    assert message.startswith("ch03/causal.py cannot be unpacked (Bad CRC-32"), message


def test_not_a_zip_and_an_empty_zip_file(tmp_path):
    (tmp_path / "junk.zip").write_bytes(b"PK\x03\x04 this is not really a zip archive" * 10)
    assert staging_error(tmp_path / "junk.zip", tmp_path) == "not a valid zip file (no end record)"
    (tmp_path / "empty.zip").write_bytes(b"")
    assert staging_error(tmp_path / "empty.zip", tmp_path) == "not a valid zip file (no end record)"


def test_a_zip_bomb_is_refused_by_declared_sizes(tmp_path):
    """Nine members of 8 MiB of zeros (a few KiB compressed): more than staging unpacks in all."""
    zeros = b"\0" * (8 << 20)
    archive = make_zip(tmp_path / "bomb.zip", [(f"ch03/data{i}.txt", zeros) for i in range(9)], zipfile.ZIP_DEFLATED)
    assert archive.stat().st_size < 1 << 20
    assert staging_error(archive, tmp_path) == "the zip unpacks to more than 64 MiB"


def test_a_member_larger_than_staging_reads_is_skipped(tmp_path):
    archive = make_zip(tmp_path / "big.zip", solution_entries() + [("ch03/data.json", b" " * ((8 << 20) + 1))],
                       zipfile.ZIP_DEFLATED)
    staged = stage(archive, tmp_path / "staged")
    assert staged.found == ALL
    assert staged.notes == ["skipped ch03/data.json: larger than 8 MiB"]
    assert not (tmp_path / "staged" / "data.json").exists()


def test_a_member_that_lies_about_its_size(tmp_path):
    """A member that says 100 bytes and inflates to 8 MiB: never more than 100 bytes are kept, and
    the archive is refused."""
    real = make_zip(tmp_path / "real.zip", [("ch03/causal.py", b"#" * (8 << 20))], zipfile.ZIP_DEFLATED).read_bytes()
    lying = patch(patch(real, LOCAL, 22, 100, "<I"), CENTRAL, 24, 100, "<I")
    (tmp_path / "hw.zip").write_bytes(lying)
    message = staging_error(tmp_path / "hw.zip", tmp_path)
    assert message.startswith("ch03/causal.py cannot be unpacked"), message


def test_absurd_member_counts(tmp_path):
    archive = make_zip(tmp_path / "many.zip", [(f"f{i}.txt", "") for i in range(submission.MAX_MEMBERS + 1)])
    assert staging_error(archive, tmp_path) == "too many files in the zip (more than 1000)"
    # an end record that claims the zip64 maximum is refused before zipfile reads a table of that size
    small = make_zip(tmp_path / "small.zip", solution_entries()).read_bytes()
    (tmp_path / "claims.zip").write_bytes(patch(small, END, 10, 0xFFFF, "<H"))
    assert staging_error(tmp_path / "claims.zip", tmp_path) == "too many files in the zip (more than 1000)"


def test_a_zip_larger_than_staging_reads_is_not_opened(tmp_path):
    huge = tmp_path / "huge.zip"
    with open(huge, "wb") as f:
        f.truncate(64 << 30)  # sparse: 64 GiB that take no disk
    assert staging_error(huge, tmp_path) == "the zip is larger than 64 MiB"


def test_links_and_paths_that_climb_out_are_skipped_with_a_note(tmp_path):
    archive = tmp_path / "hw.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name, data in solution_entries():
            z.writestr(name, data)
        link = zipfile.ZipInfo("ch03/passwd.txt")
        link.create_system = 3
        link.external_attr = 0o120777 << 16
        z.writestr(link, "/etc/passwd")
        z.writestr("../../escaped.py", "x = 1\n")
        z.writestr("/abs/escaped.py", "x = 1\n")
    staged = stage(archive, tmp_path / "staged")
    assert staged.found == ALL
    assert staged.notes == ["skipped ch03/passwd.txt: symbolic links are not accepted",
                            "skipped ../../escaped.py: the path leaves the submission folder",
                            "skipped /abs/escaped.py: the path leaves the submission folder"]
    assert not (tmp_path / "escaped.py").exists() and not (tmp_path / "staged" / "passwd.txt").exists()


def test_folders_nested_too_deep_or_too_many_entries(tmp_path):
    deep = tmp_path / "deep"
    modules(deep.joinpath(*["d"] * (submission.MAX_DEPTH + 2)))
    assert staging_error(deep, tmp_path) == "folders nested more than 32 deep (" + "/".join(["d"] * 33) + ")"
    crowded = modules(tmp_path / "crowded")
    for i in range(30):
        (crowded / f"data{i}.bin").write_bytes(b"")
    with pytest.raises(SubmissionError, match="more than 20 files and folders"):
        submission.walk(crowded, limit=20)


def test_a_huge_module_is_refused_by_its_size(tmp_path):
    folder = modules(tmp_path / "hw")
    with open(folder / "causal.py", "r+b") as f:
        f.truncate(64 << 30)  # sparse: never read
    assert staging_error(folder, tmp_path) == "more than 8 MiB of source files in the top folder"


def test_a_huge_file_staging_never_takes_is_ignored(tmp_path):
    folder = modules(tmp_path / "hw")
    with open(folder / "weights.bin", "wb") as f:
        f.truncate(64 << 30)
    staged = stage(folder, tmp_path / "staged")
    assert staged.found == ALL and sorted(p.name for p in (tmp_path / "staged").iterdir()) == sorted(
        p.name for p in SOLUTIONS.glob("*.py"))


# ---------------------------------------------------------------- what is where (items 6, 7, 8)

def test_two_sets_of_modules_name_both_folders(tmp_path):
    modules(tmp_path / "hw" / "attempt1")
    modules(tmp_path / "hw" / "final")
    assert staging_error(tmp_path / "hw", tmp_path) == (
        "the chapter's modules are in 2 folders (attempt1/, final/): hand in one set of modules "
        "(remove or rename the other folders)")
    archive = make_zip(tmp_path / "hw.zip", solution_entries("a/") + [("b/causal.py", "x = 1\n")])
    assert staging_error(archive, tmp_path) == (
        "the chapter's modules are in 2 folders (a/, b/): hand in one set of modules (remove or rename the other folders)")


def test_one_set_of_modules_nested_and_checkpoints_ignored(tmp_path):
    modules(tmp_path / "hw" / "ch03")
    modules(tmp_path / "hw" / "__pycache__")  # dunder and hidden folders are never read
    modules(tmp_path / "hw" / ".ipynb_checkpoints")
    assert stage(tmp_path / "hw", tmp_path / "staged").found == ALL


def test_a_zip_inside_the_folder_is_graded(tmp_path):
    folder = tmp_path / "submission"
    folder.mkdir()
    make_zip(folder / "my work.zip", solution_entries())
    staged = stage(folder, tmp_path / "staged")
    assert staged.found == ALL
    bad = tmp_path / "bad"
    bad.mkdir()
    make_zip(bad / "hw.zip", [("ch03/causal.py", "x = 1\n"), ("ch03/causal.py/x", "")])
    assert staging_error(bad, tmp_path) == "hw.zip: ch03/causal.py is both a file and a folder in the zip"


def test_two_zips_inside_the_folder_are_an_error_naming_both(tmp_path):
    folder = tmp_path / "submission"
    folder.mkdir()
    make_zip(folder / "a.zip", solution_entries())
    make_zip(folder / "b.zip", solution_entries())
    assert staging_error(folder, tmp_path) == (
        "2 zip files and no modules or notebooks (a.zip, b.zip): hand in one zip, or the modules themselves")


def test_a_zip_inside_a_zip_is_not_opened(tmp_path):
    inner = make_zip(tmp_path / "inner.zip", solution_entries())
    outer = make_zip(tmp_path / "outer.zip", [("inner.zip", inner.read_bytes())])
    assert staging_error(outer, tmp_path).startswith("nothing to grade: none of the chapter's modules")


def test_an_empty_submission_is_one_message(tmp_path):
    (tmp_path / "empty").mkdir()
    assert staging_error(tmp_path / "empty", tmp_path) == (
        "nothing to grade: the submission is empty (expected the chapter's modules, e.g. causal.py, or notebooks)")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "attention.py").write_text("x = 1\n")
    assert staging_error(tmp_path / "other", tmp_path).endswith("which holds 1 other file(s): attention.py")


def test_broken_notebooks_are_named_relative_to_the_submission(tmp_path):
    folder = tmp_path / "hw" / "ch03"
    folder.mkdir(parents=True)
    (folder / "01.ipynb").write_text("{not json")
    assert staging_error(tmp_path / "hw", tmp_path) == "ch03/01.ipynb: not valid JSON: Expecting property name " \
                                                       "enclosed in double quotes at line 1, column 2"
    shutil.copyfile(folder / "01.ipynb", tmp_path / "01.ipynb")
    archive = make_zip(tmp_path / "hw.zip", [("ch03/01.ipynb", "{not json")])
    assert staging_error(archive, tmp_path).startswith("ch03/01.ipynb: not valid JSON")
    holder = tmp_path / "holder"
    holder.mkdir()
    shutil.copyfile(archive, holder / "hw.zip")
    assert staging_error(holder, tmp_path).startswith("hw.zip: ch03/01.ipynb: not valid JSON")


def test_notebooks_json_reads_but_python_cannot_keep_are_named_too(tmp_path):
    """A notebook whose JSON parses into what the grader cannot use is refused naming the notebook (and
    the cell), never with Python's own words: a number of 5000 digits (json's int limit raised
    ValueError: "... use sys.set_int_max_str_digits() to increase the limit") and a solution cell holding a
    lone surrogate (writing the module raised UnicodeEncodeError: "'utf-8' codec can't encode ...")."""
    folder = tmp_path / "hw"
    folder.mkdir()
    (folder / "01.ipynb").write_text('{"nbformat": ' + "9" * 5000 + ', "cells": []}')
    said = staging_error(folder, tmp_path)
    assert said.startswith("01.ipynb: not valid JSON") and "set_int_max_str_digits" not in said, said
    cell = solution_cell("causal", "x = '\ud800'\n")  # a lone surrogate: json.dumps writes it as \\ud800
    (folder / "01.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert json.loads((folder / "01.ipynb").read_text())["cells"][0]["source"] == "x = '\ud800'\n"
    said = staging_error(folder, tmp_path)
    assert said.startswith("01.ipynb, cell 0: ") and "lone surrogate" in said and "codec" not in said, said


# ---------------------------------------------------------------- notebooks: magics in linear time

def solution_cell(module, source):
    return {"cell_type": "code", "execution_count": None, "outputs": [], "source": source,
            "metadata": {"nbgrader": {"grade": False, "grade_id": module, "locked": False, "solution": True}}}


def test_a_solution_cell_of_100000_magic_lines_is_staged(tmp_path):
    """comment_out_magics reads each character once (submitted_notebooks._LineScanner): 100,000 magic lines,
    some inside an open bracket or a string, become comments (those at a statement's start) and
    the module parses."""
    source = ("import torch\n" + "%time x = 1\n" * 50_000 + "total = (1\n" + "% 7\n" * 10 + ")\n"
              + "text = '''\n%kept\n'''\n" + "!pip install nothing\n" * 50_000 + "def softmax_naive(x):\n"
              "    return x.exp() / x.exp().sum()\n")
    notebook = {"cells": [solution_cell("simple_attention", source)], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "hw").mkdir()
    (tmp_path / "hw" / "01.ipynb").write_text(json.dumps(notebook))
    staged = stage(tmp_path / "hw", tmp_path / "staged")
    assert staged.found == ["simple_attention"]
    module = (tmp_path / "staged" / "simple_attention.py").read_text()
    assert module.splitlines().count("# %time x = 1") == 50_000
    assert module.splitlines().count("# !pip install nothing") == 50_000
    assert module.splitlines().count("% 7") == 10 and "\n%kept\n" in module
    ast.parse(module)


@pytest.mark.parametrize("source, expected", [
    ("x = 1\n%time y\n", "x = 1\n# %time y\n"),
    ("s = 'a\\\n%x'\n%y\n", "s = 'a\\\n%x'\n# %y\n"),             # a string continued by a backslash
    ("a = 1 + \\\n  %x\n", "a = 1 + \\\n  %x\n"),                  # a continued line
    ("a = '#'  # (\n%y\n", "a = '#'  # (\n# %y\n"),                # brackets in strings and comments
    ("a = \"unclosed\n%y\n", "a = \"unclosed\n# %y\n"),            # a one-line string ends with its line
    ("a = 'x\\\\'\n%y\n", "a = 'x\\\\'\n# %y\n"),                  # an escaped backslash ends nothing
    ("x\r\n%y\r\n", "x\r\n# %y\r\n"),
])
def test_magic_lines_at_a_statement_start_only(source, expected):
    assert submitted_notebooks.comment_out_magics(source) == expected


def test_special_files_are_never_opened(tmp_path):
    """A FIFO named like a module (opening it would block staging and the fingerprint for ever) is
    not a regular file: never read, the module counts as missing."""
    import os

    from autograder import batch

    folder = modules(tmp_path / "hw")
    (folder / "causal.py").unlink()
    os.mkfifo(folder / "causal.py")
    os.mkfifo(folder / "notes.txt")
    staged = stage(folder, tmp_path / "staged")
    assert staged.found == sorted(set(ALL) - {"causal"})
    assert len(batch.digest(folder)) == 64


# ---------------------------------------------------------------- round 3, class 5: notebooks that parse into too much

JSON_BOMBS = {
    "objects": b'{"cells": [' + b"{}," * 10_000_000 + b'{}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
    "values": b'{"cells": [{"cell_type": "code", "source": [' + b"0," * 3_000_000 + b'0]}], "nbformat": 4}',
    "depth": b'{"cells": [{"cell_type": "code", "metadata": ' + b'{"a": ' * 500 + b"0" + b"}" * 500 + b"}]}",
}


@pytest.mark.parametrize("bomb", sorted(JSON_BOMBS))
def test_a_notebook_that_parses_into_too_many_objects_is_refused_before_parsing(tmp_path, bomb):
    """A small zip (the JSON compresses a thousandfold) holding a notebook of ten million empty
    objects, three million numbers or 500 levels of nesting: refused with the notebook's name and
    the reason, before json parses a byte of it."""
    archive = tmp_path / "hw.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("ch03.ipynb", JSON_BOMBS[bomb])
    assert archive.stat().st_size < 200_000
    with pytest.raises(SubmissionError) as error:
        stage(archive, tmp_path / "staged")
    words = {"objects": "JSON objects and arrays", "values": "JSON values", "depth": "nested more than"}[bomb]
    assert "ch03.ipynb" in str(error.value) and words in str(error.value), str(error.value)


def test_staging_a_notebook_bomb_stays_within_a_small_memory_limit(tmp_path):
    """The grader's own process: staging the 60 KiB zip of ten million objects under an address-space
    limit of 512 MiB ends in the staging error, not a MemoryError (it peaked at 1 GiB before)."""
    import subprocess
    import sys

    archive = tmp_path / "hw.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("ch03.ipynb", JSON_BOMBS["objects"])
    script = ("import resource, sys\n"
              "from autograder.submission import SubmissionError, stage\n"
              "resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))\n"
              "try:\n    stage(sys.argv[1], sys.argv[2])\n"
              "except SubmissionError as e:\n    print('REFUSED', e)\n")
    run = subprocess.run([sys.executable, "-c", script, str(archive), str(tmp_path / "staged")], cwd=PROJECT_ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "REFUSED" in run.stdout, run.stderr[-2000:]


def test_real_notebooks_pass_the_json_bounds():
    for path in (PROJECT_ROOT / "source" / "ch03").glob("*.ipynb"):
        assert submission.json_shape_problem(path.read_bytes()) == "", path


def test_more_modules_than_the_grader_reads_are_refused(tmp_path):
    """The grader reads every module of a submission itself (source_reading: tampering, loops, devices) but
    read the first 64 by name, while staging copied any number and the child could import them all: mha.py
    importing its head loop, hidden from the counter with _disable_current_modes, from a 66th module sorted
    after 64 others (zz00.py ... zz64.py, zz_quiet.py) kept mha 22 of 22 with nothing listed. Staging now
    refuses more modules than the grader reads (source_reading.MAX_MODULES), saying so; as many is staged."""
    from autograder import source_reading

    folder = modules(tmp_path / "many")
    extra = source_reading.MAX_MODULES - len(list(folder.glob("*.py")))
    for i in range(extra):
        (folder / f"zz{i:02d}.py").write_text(f"X = {i}\n")
    staged = stage(folder, tmp_path / "staged")
    assert len(list(staged.folder.glob("*.py"))) == source_reading.MAX_MODULES
    (folder / "zz_quiet.py").write_text("X = 'one too many'\n")
    message = staging_error(folder, tmp_path / "second")
    assert message == (f"more than {source_reading.MAX_MODULES} Python modules ({source_reading.MAX_MODULES + 1}): "
                       f"hand in the chapter's modules and the helpers they import")
