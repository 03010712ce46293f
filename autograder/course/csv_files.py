"""The course records' CSV inputs (lateness's TIMES.csv and extensions, lms_export's roster): one way to
open, decode and check a header, so every such file is read the same and fails the same way."""
from __future__ import annotations

import csv
from pathlib import Path


def read_header_and_rows(path: Path, needed: tuple[str, ...], error_type: type[Exception], *,
                         joiner: str) -> tuple[list[str], list[list[str]]]:
    """(header, rows after it) of a UTF-8 CSV (a spreadsheet's byte-order mark allowed): the header's
    names stripped and lower-cased, the rows as read. A file that cannot be read, an empty file or a
    header without one of `needed` is `error_type` naming the file (and line 1), the missing names
    joined by `joiner`."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:  # utf-8-sig: a spreadsheet's byte-order mark
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise error_type(f"{path}: cannot be read as a UTF-8 CSV ({e})") from None
    if not rows:
        raise error_type(f"{path}: empty (expected a header line: {','.join(needed)})")
    header = [name.strip().lower() for name in rows[0]]
    missing = [name for name in needed if name not in header]
    if missing:
        raise error_type(f"{path}, line 1: no column {joiner.join(missing)} in the header "
                         f"(expected {','.join(needed)}; found {','.join(rows[0])})")
    return header, rows[1:]
