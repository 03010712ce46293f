"""The same student code as modules and as notebooks, for the notebook grading tests.

module_texts() gives {module: code} from the solutions or the stubs, with bugs from BUGS (each
an exact replacement that must occur once) or any other edits; write_modules() writes them as
<module>.py files, fill_notebooks() puts them into the solution cells of existing notebooks (the
source notebooks, or released ones), as a student who typed that code would.
"""
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions" / "ch03"
STUBS = ROOT / "assignments" / "ch03"
SOURCE = ROOT / "source" / "ch03"
MODULES = ("simple_attention", "self_attention_v1", "self_attention_v2", "weight_transfer",
           "causal", "mha", "exercises", "numpy_attention")

# module, exact text, replacement
BUGS = {
    # the diagonal is masked too: token 0 sees nothing at all (a row of -inf gives nan)
    "causal_diagonal": ("causal", "device=device), diagonal=1)", "device=device), diagonal=0)"),
    # softmax over the wrong dimension: columns sum to 1 instead of rows
    "simple_softmax_dim0": ("simple_attention", "return torch.softmax(scores, dim=-1)", "return torch.softmax(scores, dim=0)"),
    # softmax without subtracting the max: overflows for large scores
    "numpy_softmax_unstable": ("numpy_attention", "shifted = z - np.max(z, axis=axis, keepdims=True)", "shifted = z"),
}


def module_texts(base=SOLUTIONS, bugs=(), edits=None):
    texts = {module: (Path(base) / f"{module}.py").read_text() for module in MODULES}
    for name in bugs:
        module, old, new = BUGS[name]
        assert texts[module].count(old) == 1, f"bug {name}: {old!r} is not once in {module}"
        texts[module] = texts[module].replace(old, new)
    for module, edit in (edits or {}).items():
        texts[module] = edit(texts[module])
    return texts


def write_modules(texts, folder):
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for module, text in texts.items():
        (folder / f"{module}.py").write_text(text)
    return folder


def cells_of(path):
    return json.loads(Path(path).read_text())["cells"]


def fill_notebooks(texts, dest, notebooks=SOURCE):
    """Copy the notebooks of the folder `notebooks` into dest with texts in their solution cells,
    and the support module beside them."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(Path(notebooks).glob("*.ipynb")):
        notebook = json.loads(path.read_text())
        for cell in notebook["cells"]:
            meta = cell["metadata"].get("nbgrader", {})
            if meta.get("solution") and meta.get("grade_id") in texts:
                text = texts[meta["grade_id"]]
                cell["source"] = text[:-1] if text.endswith("\n") else text
        (dest / path.name).write_text(json.dumps(notebook, indent=1))
    for support in sorted(Path(notebooks).glob("*.py")):  # ch03_tools.py, which the first cell imports
        (dest / support.name).write_text(support.read_text())
    return dest
