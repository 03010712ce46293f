"""nbgrader preprocessors for the chapter; nbgrader_config.py puts them in place. Needs nbgrader.

ClearSolutionsWithHints takes the place of nbgrader's ClearSolutions in `generate_assignment`. A code
solution cell whose grade_id is one of the chapter's modules becomes `autograder.stubs.make_stub` of
its code, exactly the stub in assignments/ch03/<module>.py: each region turns into
`raise NotImplementedError("<module>.<function>: <hint>")`. Any other cell is left to ClearSolutions
(whose code_stub nbgrader_config.py sets). A module cell without any solution region is refused
rather than released whole.
"""
from nbgrader import utils
from nbgrader.preprocessors import ClearSolutions

from autograder.stubs import MODULES, make_stub, solution_regions


class ClearSolutionsWithHints(ClearSolutions):
    """ClearSolutions, with the per-function hints of autograder.stubs for the chapter's modules."""

    def preprocess_cell(self, cell, resources, cell_index):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type != "code" or not utils.is_solution(cell) or grade_id not in MODULES:
            return super().preprocess_cell(cell, resources, cell_index)
        notebook = resources.get("nbgrader", {}).get("notebook", "?")
        where = f"{notebook}.ipynb, cell {cell_index} ({grade_id})"
        source = cell.source if cell.source.endswith("\n") else cell.source + "\n"
        if not solution_regions(source, where):
            raise ValueError(f"{where}: solution cell without a ### BEGIN SOLUTION region; refusing to release it")
        stub = make_stub(source, grade_id, where)
        cell.source = stub[:-1] if stub.endswith("\n") else stub
        return cell, resources
