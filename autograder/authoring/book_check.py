"""Does a folder of chapter modules reproduce what the book prints? (`python -m autograder book-check`)

The values of assignments/ch03/tests/book_examples.json are computed from the modules of the folder
(default: the reference, solutions/ch03) as the book computes them (suites.book.compute_from_solutions,
which also makes the suites' snapshot) and compared with the printed 4 decimals (counts exactly). The
modules are imported into this process: use it on code you trust; students' code is graded in the
sandbox by `grade`.

    results = check(folder)        # [(name, ok, what went wrong)] in the file's order
"""
import json
from pathlib import Path

import torch

from autograder import chapter

ATOL = 1e-4  # the book prints 4 decimals


def same(got, want):
    if isinstance(want, int):
        return isinstance(got, int) and not isinstance(got, bool) and got == want
    if isinstance(got, int):
        return False
    got, want = torch.tensor(got, dtype=torch.float64), torch.tensor(want, dtype=torch.float64)
    return got.shape == want.shape and torch.allclose(got, want, atol=ATOL, rtol=0)


def check(folder=None, book_path=None, manifest=None):
    """[(name, ok, what went wrong)] for every book value, in the file's order. folder and book_path
    default to the chapter's reference solutions and book_examples.json (manifest: a chapter.Chapter;
    None: this repository's)."""
    manifest = manifest or chapter.current()
    folder = manifest.solutions if folder is None else folder
    book_path = manifest.book_examples if book_path is None else book_path
    from autograder.suites.book import compute_from_solutions

    values = {name: entry["value"] for name, entry in json.loads(Path(book_path).read_text())["values"].items()}
    try:
        computed = compute_from_solutions(folder, manifest.parts)
    except Exception as e:  # a module that does not import or raises: every value is a miss, the reason said once
        return [(name, False, f"the modules could not compute the book's values ({type(e).__name__}: {e})")
                for name in values]
    results = []
    for name, want in values.items():
        if name not in computed:
            results.append((name, False, "not computed by suites.book.compute_from_solutions"))
        else:
            ok = same(computed[name], want)
            results.append((name, ok, "" if ok else "differs from the book"))
    return results
