"""nbgrader preprocessors for the chapter; nbgrader_config.py puts them in place. Needs nbgrader 0.9.6.

generate_assignment
    ClearSolutionsWithHints takes the place of nbgrader's ClearSolutions. A code solution cell whose
    grade_id is one of the chapter's modules becomes `autograder.authoring.stubs.make_stub` of its code, exactly
    the stub in assignments/ch03/<module>.py: each region turns into
    `raise NotImplementedError("<module>.<function>: <hint>")`. Any other cell is left to
    ClearSolutions (whose code_stub nbgrader_config.py sets). A module cell without any solution
    region is refused rather than released whole.

autograde (nothing of the student's notebook runs in a kernel, nor in the nbgrader process)
    RestoreCellRoles (sanitizing, before DeduplicateIds and OverwriteCells) gives every cell whose
    grade_id the gradebook knows the role it has there (solution, graded, task; points) and turns
    cells with an unknown or missing grade_id into plain cells, so OverwriteCells can always restore
    the locked and test cells and a stray cell can neither be graded nor be read as a module.
    GradeInSandbox takes the place of Execute. It reads the code of the notebook's solution cells
    by grade_id (autograder.authoring.notebooks, as `python -m autograder grade` does for notebooks), grades
    the notebook's parts with the hidden suites in the sandbox (autograder.grading, one fork server
    per nbgrader process), puts back a graded cell the student deleted, and writes into each graded
    cell `score_<part>` two outputs: what to fix as text (autograder.reports.common's rule: visible
    checks with the student's own error, hidden ones by their diagnosis only), and the part's score
    scaled to the cell's points as an execute_result, which nbgrader's SaveAutoGrades records as
    partial credit.

generate_feedback
    ScrubHiddenTests removes every `### BEGIN HIDDEN TESTS` ... `### END HIDDEN TESTS` region and,
    in a cell that had one, every output GradeInSandbox did not write (a traceback of the hidden
    tests, or what student code printed while they ran, if Execute ever ran them).
"""
import atexit
import functools
from pathlib import Path

from nbformat.notebooknode import from_dict
from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions, NbGraderPreprocessor, OverwriteCells
from traitlets import Bool, Unicode

from autograder import scratch
from autograder.authoring.stubs import make_stub, solution_regions

SCORE_PREFIX = "score_"          # the graded cell of part P has the grade_id score_P (autograder.authoring.notebooks)
ENGINE_MARK = "ch03_autograder"  # metadata key of the outputs GradeInSandbox writes


@functools.lru_cache(maxsize=4)
def course_chapter(manifest: str = ""):
    """The chapter nbgrader's course is: the manifest a plugin's `chapter` setting names (nbgrader_config.py
    or `--GradeInSandbox.chapter=FILE`), else this repository's chapter.yml (read on call: an nbgrader
    plugin is an entry point, and nothing here reads the chapter at import)."""
    from autograder import chapter

    return chapter.load(manifest) if manifest else chapter.current()


def chapter_parts(manifest: str = "") -> tuple[str, ...]:
    """The parts of the course's chapter (course_chapter)."""
    return course_chapter(manifest).parts


CHAPTER_HELP = "the chapter manifest (chapter.yml) of the course (default: this repository's)"


class ClearSolutionsWithHints(ClearSolutions):
    """ClearSolutions, with the per-function hints of autograder.authoring.stubs for the chapter's modules."""

    chapter = Unicode("", help=CHAPTER_HELP).tag(config=True)

    def preprocess_cell(self, cell, resources, cell_index):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type != "code" or not utils.is_solution(cell) or grade_id not in chapter_parts(self.chapter):
            return super().preprocess_cell(cell, resources, cell_index)
        notebook = resources.get("nbgrader", {}).get("notebook", "?")
        where = f"{notebook}.ipynb, cell {cell_index} ({grade_id})"
        source = cell.source if cell.source.endswith("\n") else cell.source + "\n"
        if not solution_regions(source, where):
            raise ValueError(f"{where}: solution cell without a ### BEGIN SOLUTION region; refusing to release it")
        stub = make_stub(source, grade_id, where)
        cell.source = stub[:-1] if stub.endswith("\n") else stub
        return cell, resources


# --- autograde --------------------------------------------------------------------------------------

def _gradebook_notebook(resources):
    """What the gradebook says about the notebook being converted:
    {"source": {grade_id: SourceCell fields}, "grade": {grade_id: max_score}, "solution": set, "task": set}."""
    info = resources["nbgrader"]
    with Gradebook(info["db_url"]) as gb:
        notebook = gb.find_notebook(info["notebook"], info["assignment"])
        return {
            "source": {c.name: {"source": c.source, "cell_type": c.cell_type, "locked": c.locked,
                                "checksum": c.checksum} for c in notebook.source_cells},
            "grade": {c.name: float(c.max_score) for c in notebook.grade_cells},
            "solution": {c.name for c in notebook.solution_cells},
            "task": {c.name for c in notebook.task_cells},
        }


class RestoreCellRoles(NbGraderPreprocessor):
    """Sanitizing step: each cell's nbgrader role comes from the gradebook, never from the submission.

    nbgrader 0.9.6 takes the solution/grade/task flags from the student's copy: a test cell whose
    grade flag was switched off cannot have its checksum restored (autograde stops for the notebook),
    a grade/solution/locked cell without a grade_id stops DeduplicateIds with a KeyError, and a cell
    with an unknown grade_id keeps its flags without an id. Here a cell whose grade_id the gradebook
    knows gets that cell's flags and points back (OverwriteCells then restores its source, type and
    lock), and a cell with nbgrader metadata but an unknown or missing grade_id becomes a plain cell.
    """

    def preprocess(self, nb, resources):
        self.known = _gradebook_notebook(resources)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        meta = cell.metadata.get("nbgrader")
        if meta is None:
            return cell, resources
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if grade_id not in self.known["source"]:
            self.log.warning("Cell %d has nbgrader metadata with grade_id %r, which the gradebook does not know: "
                             "treated as a plain cell", cell_index, grade_id)
            del cell.metadata["nbgrader"]
            return cell, resources
        for flag in ("grade", "solution", "task"):
            if bool(meta.get(flag, False)) != (grade_id in self.known[flag]):
                self.log.warning("Cell %s: '%s' was %s in the submission; restored", grade_id, flag, meta.get(flag))
            meta[flag] = grade_id in self.known[flag]
        if grade_id in self.known["grade"]:
            meta["points"] = self.known["grade"][grade_id]
        else:
            meta.pop("points", None)
        return cell, resources


class OverwriteCellsQuietly(OverwriteCells):
    """nbgrader's OverwriteCells, without its false alarm: the gradebook keeps each graded cell's source
    (and checksum) with its hidden tests, the released cell has them cleared, so every untouched graded
    cell used to be reported as "checksum ... has changed!" (8 per submission). A locked cell whose
    source is the released one (the gradebook's source with the hidden test regions cleared, as
    generate_assignment cleared them) gets the gradebook's source back silently; a cell the student
    really changed is still reported and restored by OverwriteCells."""

    def preprocess_cell(self, cell, resources, cell_index):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id is not None and utils.is_locked(cell):
            try:
                source = self.gradebook.find_source_cell(grade_id, self.notebook_id, self.assignment_id)
            except MissingEntry:
                source = None
            if source is not None and source.locked and cell.source == released_source(source.source, self.config):
                cell.source = source.source
        return super().preprocess_cell(cell, resources, cell_index)


def released_source(source, config=None):
    """A cell's source as generate_assignment releases it: its hidden test regions cleared."""
    cell = from_dict({"cell_type": "code", "source": source, "metadata": {}})
    ClearHiddenTests(config=config)._remove_hidden_test_region(cell)
    return cell.source


_engine = None  # this process's engine (shared_engine): nbgrader autogrades many notebooks in one process


def shared_engine(rubric_path=None, settings=None, chapter=None):
    """The engine (engine.Engine) of this process: made on first use (its fork server stopped at
    exit; the rubric read and the environment checked once: a failure stops autograde, nobody
    scored), then the same for every notebook. The course folder, the gradebook and the exchange
    are outside the room (docs/sandbox.md, "What each mode hides"). chapter: the course's (course_chapter;
    None: this repository's)."""
    global _engine
    if _engine is None:
        from autograder.engine import Engine
        from autograder.sandbox import container
        from autograder.sandbox.client import SandboxUnavailable
        from autograder.settings import from_environment

        refused = container.refuse_many((settings or from_environment()).sandbox.container, "nbgrader's autograde")
        if refused:
            raise SandboxUnavailable(refused)

        engine = Engine.open(settings, rubric_path, chapter=chapter)
        atexit.register(engine.close)
        _engine = engine
    return _engine


def _fmt(number):
    return f"{number:g}"


class GradeInSandbox(NbGraderPreprocessor):
    """Autograde step in place of Execute: grade the solution cells' modules with the hidden suites in
    the sandbox and write each part's score into its graded cell's outputs; nothing runs in a kernel."""

    rubric = Unicode("", help="grading.yml to grade with (default: the chapter's)").tag(config=True)
    chapter = Unicode("", help=CHAPTER_HELP).tag(config=True)
    restore_deleted_cells = Bool(True, help="put back a graded cell the submission lacks, so its score is "
                                            "recorded").tag(config=True)
    require_isolation = Bool(True, help="refuse to grade unless student code runs in the sandbox's namespaces "
                                        "(with or without root; the sandbox says what this machine lacks); "
                                        "False lets student code run without isolation where the sandbox "
                                        "cannot be built (--unsafe-no-sandbox): only for code you trust"
                             ).tag(config=True)

    NAMESPACES = "pid, mount, network, IPC and UTS namespaces"

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        self.where = f"{info['notebook']}.ipynb of {info['student']}"
        parts = self._parts_to_grade(nb, resources)
        cells: dict = {}
        modules, problem = self._solution_modules(nb, resources, parts, cells)
        grade, graded = self._grade(modules, parts, resources, cells)
        self._write_graded_cells(nb, grade, modules, problem)
        for part in graded:
            p = grade.parts[part]
            self.log.info("%s: %s %s / %s", self.where, part, _fmt(p.score), _fmt(p.max_score))
        return nb, resources

    def _parts_to_grade(self, nb, resources):
        """The parts whose graded cells the gradebook knows for this notebook (cells put back first)."""
        known = _gradebook_notebook(resources)
        parts = [grade_id[len(SCORE_PREFIX):] for grade_id in known["grade"]
                 if grade_id.startswith(SCORE_PREFIX) and grade_id[len(SCORE_PREFIX):] in chapter_parts(self.chapter)]
        if self.restore_deleted_cells:
            self._restore_graded_cells(nb, known, parts)
        return parts

    def _solution_modules(self, nb, resources, parts, cells=None):
        """({module: code} of this notebook's solution cells and of the modules it needs from the
        student's other notebooks, the problem that stopped reading this one or ''). cells (a dict, when
        given) gets {module: (its notebook's file name, its cell's number from 1)} (Staged.cells)."""
        from autograder import submitted_notebooks

        cells = {} if cells is None else cells
        indexes: dict = {}
        imports: dict = {}
        try:
            modules = submitted_notebooks.notebook_solution_sources(nb, self.where, skip_unknown=True, cells=indexes,
                                                                    imports=imports)
            problem = ""
        except ValueError as e:  # RestoreCellRoles and DeduplicateIds leave little that can fail here
            modules, problem, indexes, imports = {}, str(e), {}, {}
        cells.update({m: (f"{resources['nbgrader']['notebook']}.ipynb", i + 1) for m, i in indexes.items()})
        theirs: dict = {}
        others = self._modules_of_other_notebooks(resources, theirs)
        for module, code in others.items():
            if module not in modules and module not in parts:
                modules[module] = code
                if module in theirs:
                    cells[module] = theirs[module]
        # a cell may read what an earlier solution cell defines, or a cell above it imports, as in the kernel
        # (submitted_notebooks.py)
        return submitted_notebooks.with_earlier_cells_names(modules, chapter_parts(self.chapter), imports), problem

    def _grade(self, modules, parts, resources, cells=None):
        """Grade the modules on the parts of the rubric in the sandbox -> (grade, the parts graded);
        refuses where the sandbox could not isolate student code and isolation is required."""
        from autograder.settings import from_environment

        settings = from_environment()
        if not self.require_isolation:  # the sandbox may then run student code without isolation, warned
            settings = settings.with_sandbox(unsafe=True)
        engine = shared_engine(self.rubric or None, settings, course_chapter(self.chapter))
        graded = [part for part in parts if part in engine.rubric.parts]
        with scratch.folder("nbgrader-modules") as tmp:
            for module, code in modules.items():
                (Path(tmp) / f"{module}.py").write_text(code)
            grade = engine.grade(tmp, parts=graded, cells=cells)
        if grade.not_graded:  # the machine kept a part from running: no score, not a lower one (runner.NOT_GRADED)
            from autograder import grading

            raise RuntimeError(f"GradeInSandbox: {grading.not_graded_problem(grade)}; no score recorded for {self.where}")
        if self.require_isolation and grade.protections and self.NAMESPACES not in grade.protections:
            raise RuntimeError(f"GradeInSandbox: the sandbox could not isolate student code (it had: "
                               f"{', '.join(grade.protections)}); no score recorded for {self.where}")
        return grade, graded

    def _write_graded_cells(self, nb, grade, modules, problem):
        """Each autograded cell's outputs: its part's report and score, or NotGraded for a cell that is
        not a part of the rubric; markdown and code answers graded by hand keep nbgrader's treatment."""
        for cell in nb.cells:
            if cell.cell_type != "code" or not utils.is_grade(cell) or utils.is_solution(cell):
                continue
            grade_id = cell.metadata.nbgrader.get("grade_id", "")
            part = grade_id[len(SCORE_PREFIX):]
            if grade_id.startswith(SCORE_PREFIX) and part in grade.parts:
                missing = part not in modules
                cell.outputs = with_figures(self._outputs(cell, part, grade, missing, problem), grade, part)
            else:
                self.log.warning("%s: graded cell %s is not a part of the rubric: scored 0, grade it by hand",
                                 self.where, grade_id)
                cell.outputs = [new_output("error", ename="NotGraded", traceback=[],
                                           evalue="this cell is not a part of grading.yml and was not run: "
                                                  "grade it by hand")]
            cell.execution_count = None

    def _restore_graded_cells(self, nb, known, parts):
        """Put back each part's graded cell that the submission lacks (deleted, or its nbgrader metadata
        stripped), after the part's solution cell, or at the end; the gradebook holds its source."""
        present = {cell.metadata.nbgrader.get("grade_id") for cell in nb.cells if utils.is_grade(cell)}
        for part in parts:
            grade_id = SCORE_PREFIX + part
            if grade_id in present:
                continue
            source = known["source"][grade_id]
            self.log.warning("%s: the graded cell %s was missing; put back from the gradebook", self.where, grade_id)
            ids = {c.get("id") for c in nb.cells}
            cell = from_dict({  # nbformat 4.5: every cell has an id, unique in the notebook
                "id": grade_id if grade_id not in ids else f"{grade_id}-restored",
                "cell_type": "code", "execution_count": None, "outputs": [],
                "metadata": {"deletable": False, "editable": False, "nbgrader": {
                    "grade": True, "grade_id": grade_id, "locked": True, "points": known["grade"][grade_id],
                    "schema_version": 3, "solution": False, "task": False, "checksum": source["checksum"]}},
                "source": f"# This graded cell was missing from the submission; the grader put it back.\n"
                          f"{source['source']}",
            })
            after = [index for index, c in enumerate(nb.cells) if utils.is_solution(c)
                     and c.metadata.nbgrader.get("grade_id") == part]
            nb.cells.insert(after[0] + 1 if after else len(nb.cells), cell)

    def _modules_of_other_notebooks(self, resources, cells=None):
        """Modules whose solution cells belong (by the gradebook) to the student's other notebooks of the
        assignment, read from the submitted folder: a module may import one from another notebook.
        cells (a dict, when given) gets where each came from (notebook, cell number from 1)."""
        from autograder import submitted_notebooks

        info = resources["nbgrader"]
        coursedir = self._coursedir()
        folder = Path(coursedir.format_path(coursedir.submitted_directory, info["student"], info["assignment"]))
        found = {}
        with Gradebook(info["db_url"]) as gb:
            owners = {notebook.name: {c.name for c in notebook.solution_cells}
                      for notebook in gb.find_assignment(info["assignment"]).notebooks if notebook.name != info["notebook"]}
        for name, owned in sorted(owners.items()):
            path = folder / f"{name}.ipynb"
            indexes: dict = {}
            try:
                sources = submitted_notebooks.notebook_solution_sources(submitted_notebooks.read_notebook(path), path,
                                                                        skip_unknown=True, cells=indexes)
            except (ValueError, OSError):
                continue  # graded (and reported) when that notebook's turn comes
            taken = {m: code for m, code in sources.items() if m in owned and m not in found}
            found.update(taken)
            if cells is not None:
                cells.update({m: (f"{name}.ipynb", indexes[m] + 1) for m in taken})
        return found

    def _coursedir(self):
        converter = getattr(self.parent, "parent", None)
        coursedir = getattr(converter, "coursedir", None)
        if coursedir is None:
            from nbgrader.coursedir import CourseDirectory

            coursedir = CourseDirectory(config=self.config)
        return coursedir

    def _outputs(self, cell, part, grade, missing, problem):
        """[the report as text, the score as an execute_result]: determine_grade reads the first
        execute_result as partial credit, and no output is an error or stderr, which would mean 0."""
        from autograder.reports.common import printable

        p = grade.parts[part]
        points = float(cell.metadata.nbgrader["points"])
        value = p.score if points == p.max_score else round(p.score * points / p.max_score, 6)
        lines = [f"{part}: {_fmt(p.score)} / {_fmt(p.max_score)} points"
                 + ("" if points == p.max_score else f" (this cell is worth {_fmt(points)}: {_fmt(value)})"),
                 "Graded by the course's tests on the code of your solution cells; no cell of this notebook was run."]
        checks = [c for c in grade.checks if c.part == part]
        if missing:
            lines.append(f"No solution cell for {part} (a code cell with grade_id '{part}') in this notebook: "
                         f"the part scores 0.")
            if problem:
                lines.append(f"The notebook could not be read: {printable(problem)}")
        else:
            from autograder.reports.notebook_cells import what_to_fix_lines  # here: the reports package loads torch

            lines += what_to_fix_lines(checks, {part: p}, chapter_parts(self.chapter))
        if not missing and all(c.passed for c in checks):
            lines.append("Every check passed.")
        lines += [f"note: {printable(note)}" for note in grade.notes if note.startswith((f"{part}: ", f"{part} / "))]
        mark = {ENGINE_MARK: {"part": part}}
        return [new_output("display_data", data={"text/plain": "\n".join(lines)}, metadata=mark),
                new_output("execute_result", data={"text/plain": repr(float(value))}, metadata=mark,
                           execution_count=None)]


def with_figures(outputs, grade, part):
    """outputs with, before the score's execute_result, one image output per panel of the part's figures:
    the student's attention weights on the book's example left, the expected ones right, in one picture
    drawn here by the grader (reports/plots.py), since a notebook (and nbgrader's feedback page) stacks
    its outputs one under the other; its alt text says what it shows. The score stays the first
    execute_result. Nothing is added where matplotlib is missing."""
    import base64

    from autograder.figure_data import FigureError, validate
    from autograder.reports.plots import available, figure_pairs

    pictures = []
    for check in (c for c in grade.checks if c.part == part and c.figure is not None and available()):
        try:
            figure = validate(check.figure)
        except FigureError:
            continue
        for name, png in figure_pairs(figure):
            said = (f"your attention weights{f' ({name})' if name else ''} (left) beside the expected ones (right): "
                    f"{figure['title']}")
            pictures.append(new_output("display_data", metadata={ENGINE_MARK: {"part": part}, "image/png": {"alt": said}},
                                        data={"image/png": base64.b64encode(png).decode("ascii"), "text/plain": said}))
    at = next((i for i, out in enumerate(outputs) if out.get("output_type") == "execute_result"), len(outputs))
    return outputs[:at] + pictures + outputs[at:]


# --- generate_feedback ------------------------------------------------------------------------------

class ScrubHiddenTests(NbGraderPreprocessor):
    """Feedback step: no hidden test source, and no output of a hidden test cell but the engine's report.

    Regions are found as nbgrader finds them (a line containing the delimiter), an unclosed region
    runs to the end of the cell, and a stray END is dropped: this never fails, so a submission
    cannot stop its own feedback from being scrubbed. In a cell that had a region, every output
    without GradeInSandbox's mark is replaced by one line with the cell's score.
    """

    begin_delimiter = Unicode("BEGIN HIDDEN TESTS").tag(config=True)
    end_delimiter = Unicode("END HIDDEN TESTS").tag(config=True)
    keep_engine_outputs = Bool(True, help="keep the outputs GradeInSandbox wrote (set False if Execute "
                                          "ran the notebook: student code could fake the mark)").tag(config=True)

    def preprocess_cell(self, cell, resources, cell_index):
        kept, inside, hidden = [], False, False
        for line in cell.source.split("\n"):
            if self.begin_delimiter in line:
                inside = hidden = True
            elif self.end_delimiter in line:
                inside, hidden = False, True
            elif not inside:
                kept.append(line)
        if not hidden:
            return cell, resources
        cell.source = "\n".join(kept).rstrip("\n")
        if cell.cell_type == "code":
            ours = [out for out in cell.get("outputs", [])
                    if self.keep_engine_outputs and ENGINE_MARK in out.get("metadata", {})]
            if len(ours) != len(cell.get("outputs", [])):
                meta = cell.metadata.get("nbgrader", {})
                score = meta.get("score")
                verdict = "(the output of the hidden tests is not shown"
                verdict += f": {_fmt(score)} / {_fmt(meta.get('points', 0))} points)" if score is not None else ")"
                ours.append(new_output("display_data", data={"text/plain": verdict}))
            cell.outputs = ours
        return cell, resources


# wrap at spaces only (never inside a word); a word longer than the line scrolls in its own box
WRAP_CSS = ("div.output_area pre, div.output_text pre { white-space: pre-wrap; overflow-wrap: normal; "
            "word-break: normal; overflow-x: auto; }"
            # issue 36 item 6: nbgrader's feedback template greys the links in a graded cell's blue heading
            # (#BBBBBB on #337ab7, 1.6:1) and reds the late penalty below 4.5:1: white, underlined links on
            # a darker blue, and a darker red (axe-core's contrast and link rules)
            " body div.nbgrader_cell .panel-heading { background-color: #23527c; }"
            " body div.nbgrader_cell .panel-heading a { color: #ffffff; text-decoration: underline; }"
            " body li.late-penalty { color: #a1251b; } body a { color: #1d4f7a; text-decoration: underline; }")


FEEDBACK_TEMPLATE = "ch03_feedback"  # autograder/templates/nbgrader_feedback/ch03_feedback


def configure_feedback_page(config) -> None:
    """Point generate_feedback's HTMLExporter at the course's feedback template (nbgrader's own, with
    `<html lang="en">`). Scoped to GenerateFeedback: the formgrader's exporter keeps its own template, and
    a top-level HTMLExporter.template_name (which formgrader's "generate feedback" button sets) does not
    override it. Both template searches are given whole because nbgrader fills them only when unset."""
    import nbgrader

    formgrader = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
    exporter = config.GenerateFeedback.HTMLExporter
    exporter.template_name = FEEDBACK_TEMPLATE
    exporter.extra_template_basedirs = [str(Path(__file__).parents[1] / "templates" / "nbgrader_feedback"),
                                        str(formgrader / "templates")]
    # nbgrader's bootstrap css, as nbgrader sets it, and its templates' folder, where `extends
    # 'feedback/index.html.j2'` finds the page this template changes
    exporter.extra_template_paths = [str(formgrader / "static" / "node_modules" / "bootstrap" / "dist" / "css"),
                                     str(formgrader / "templates")]


class WrapOutputLines(NbGraderPreprocessor):
    """generate_feedback, after CSSHTMLHeaderPreprocessor: the page's outputs wrap their long lines
    (a graded cell's "What to fix" is one line per diagnosis) at spaces instead of running off the page
    (issue 31: `overflow-wrap: anywhere` let a line break inside a word), and its links and late penalty
    are dark enough to read (issue 36: contrast)."""

    def preprocess(self, nb, resources):
        resources.setdefault("inlining", {}).setdefault("css", []).append(WRAP_CSS)
        return nb, resources

