"""nbgrader's ways in, made to trust nothing a student wrote (configured in nbgrader_config.py).

- VerifiedCollect (`nbgrader collect`): an inbound entry counts for the student it names only when
  that student's account owns it, and everything in it (anyone can write `alice+ch03+<time>+x` into
  the inbound folder; nbgrader only warns). Other entries are refused and listed, never collected:
  the named student keeps their own submission. The submission time is the last change the kernel
  recorded on the entry (the latest ctime of the entry and everything in it), which no owner can set
  back; the time in the entry's name and its timestamp.txt, both written by the student, are
  ignored, and the collected copy's timestamp.txt is written from the kernel's time.
- OwnFilesCollector (`nbgrader zip_collect`): a file is collected for the student its name gives
  only when no folder it was unpacked from (a student's own uploaded zip) names another student; a
  second file for the same student and notebook is skipped with a warning. So a file in Alice's zip
  named like Bob's is never handed in as Bob's, and never stops the class with a duplicate.
- SanitizeMarkdown (autograde): the HTML a student writes in Markdown cells is made inert before
  formgrader renders the autograded notebook (formgrader's template renders Markdown without
  nbconvert's sanitizer; nbgrader_config.py turns the sanitizer on for outputs and raw cells).
"""
import datetime
import glob
import os
import re

from nbconvert.filters import clean_html
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.plugins.zipcollect import FileNameCollectorPlugin
from nbgrader.preprocessors import NbGraderPreprocessor

try:
    import pwd
except ImportError:  # Windows: nbgrader's exchange is for shared Unix machines
    pwd = None


# ---------------------------------------------------------------- collect: owners and times

def owner_name(uid):
    """The account name of uid, or None when it has none."""
    try:
        return pwd.getpwuid(uid).pw_name if pwd is not None else None
    except KeyError:
        return None


def entry_facts(path, limit=10_000):
    """(uids of the entry and everything in it, its latest ctime as an aware UTC datetime). Links are
    not followed. At most `limit` paths are looked at (an entry that holds more is refused)."""
    uids, latest, seen = set(), 0.0, 0
    for root, folders, files in os.walk(path):  # every folder is a root once; links are listed, not walked
        for place in [root] + [os.path.join(root, n) for n in files + [f for f in folders
                                                                        if os.path.islink(os.path.join(root, f))]]:
            info = os.lstat(place)
            uids.add(info.st_uid)
            latest = max(latest, info.st_ctime)
            seen += 1
            if seen > limit:
                return None, None
    return uids, datetime.datetime.fromtimestamp(latest, datetime.timezone.utc)


class VerifiedCollect(ExchangeCollect):
    """nbgrader's collect, with owners checked and the time taken from the kernel (see the module)."""

    def init_src(self):
        super().init_src()
        trusted, self.refused = [], []
        pattern = os.path.join(self.inbound_path, "{}+{}+*".format(self.coursedir.student_id or "*",
                                                                   self.coursedir.assignment_id))
        records = [self._path_to_record(f) for f in glob.glob(pattern)]
        for record in records:
            path = os.path.join(self.inbound_path, record["filename"])
            uids, changed = entry_facts(path)
            names = {owner_name(uid) for uid in uids} if uids is not None else {None}
            if self.check_owner and pwd is not None and names != {record["username"]}:
                shown = ", ".join(sorted(str(n) for n in names))
                self.refused.append(record["filename"])
                self.log.error("refused %s: it names %s but is owned by %s (not collected; the student's own "
                               "entries are)", record["filename"], record["username"], shown)
                continue
            trusted.append({**record, "timestamp": changed.replace(tzinfo=None) if changed else record["timestamp"],
                            "named_time": record["timestamp"]})
        self.src_records = self._choose(trusted)

    def _choose(self, records):
        """One entry per student, as nbgrader chooses it, by the kernel's times."""
        by_student = {}
        for record in records:
            by_student.setdefault(record["username"], []).append(record)
        chosen = []
        for entries in by_student.values():
            entries = self._sort_by_timestamp(entries)
            if self.duedate is not None and self.before_duedate:
                on_time = [r for r in entries if r["timestamp"] <= self.duedate]
                entries = on_time or entries
            chosen.append(entries[0])
        return chosen

    def do_copy(self, src, dest):
        super().do_copy(src, dest)
        record = next((r for r in self.src_records if os.path.join(self.inbound_path, r["filename"]) == src), None)
        if record is not None:  # the time the kernel saw, never the student's timestamp.txt
            with open(os.path.join(dest, "timestamp.txt"), "w") as f:
                f.write(record["timestamp"].isoformat(" ") + " UTC")


# ---------------------------------------------------------------- zip_collect: whose file it is

LMS_NAME = re.compile(r"^(?P<student_id>[A-Za-z0-9]+)_(?:LATE_)?\d+_\d+_")


class OwnFilesCollector(FileNameCollectorPlugin):
    """FileNameCollectorPlugin that collects a file only for the student whose upload it came from."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._taken = {}

    def collect(self, submitted_file):
        found = super().collect(submitted_file)
        if not found:
            return found
        student = found.get("student_id")
        folders = re.split(r"[/\\]", submitted_file)[:-1]
        uploaders = {m.group("student_id") for m in map(LMS_NAME.match, folders) if m}
        if uploaders - {student}:
            self.log.error("not collected: %s names %s but was unpacked from %s's upload", submitted_file, student,
                           ", ".join(sorted(uploaders - {student})))
            return None
        key = (student, found.get("file_id"))
        if key in self._taken:
            self.log.error("not collected: %s is a second %s for %s (kept %s; check by hand)", submitted_file,
                           key[1], student, self._taken[key])
            return None
        self._taken[key] = submitted_file
        return found


# ---------------------------------------------------------------- autograde: inert Markdown

class SanitizeMarkdown(NbGraderPreprocessor):
    """Every Markdown cell's HTML made inert (tags outside a small safe set escaped, event handlers
    and javascript: links dropped), so formgrader shows a student's <script> as text."""

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "markdown" and "<" in cell.source:
            cell.source = clean_html(cell.source)
        return cell, resources
