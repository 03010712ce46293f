"""The notebooks run as a student runs them: executed in a Jupyter kernel (nbclient), the pictures checked.

Issue 13 item 1: the three chapter notebooks, with the reference solutions in their solution cells,
run without an error, and every show cell draws (image/png) what the code computed: the data behind
each picture is read back from ch03_tools.drawn and compared with the book. A wrong softmax, typed into
a copy of the simple_attention cell at the end of the notebook, draws a different picture.
Issue 14 item 3: the speed lab runs at toy sizes (CH03_SPEED_LAB=tiny) and prints the comparison table;
no time is asserted.

One kernel per notebook, about 3 s each on 2 cores. Select with `-m notebooks`.
"""
import base64
import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from notebook_cases import BUGS, module_texts
from optional import require

from autograder.authoring import notebooks

# nbformat and nbclient are imported where a test runs a notebook (tests/optional.py: not at collection)
require("nbformat", "nbclient", "matplotlib", reason="nbformat, nbclient or matplotlib is not installed "
        "(pip install '.[notebooks]')")
from autograder.chapter import current  # noqa: E402

pytestmark = pytest.mark.notebooks

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "source" / "ch03"
BOOK = notebooks.book_values()
CHAPTER = ["01_self_attention.ipynb", "02_causal_and_multi_head.ipynb", "03_attention_in_numpy.ipynb"]
DUMP = 'import ch03_tools, json\nprint("DRAWN" + json.dumps(ch03_tools.drawn))'
FUSED = '''import torch.nn.functional as F
from torch import nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_out // num_heads
        self.qkv = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        context = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out_proj(context.transpose(1, 2).reshape(b, t, -1))'''


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory):
    """No user-level Jupyter configuration, this environment's python first on PATH (the kernel is the
    `python3` of the environment running the tests), the backend Jupyter picks (inline)."""
    base = tmp_path_factory.mktemp("jupyter")
    with pytest.MonkeyPatch.context() as patch:
        for name in ("CONFIG", "DATA", "RUNTIME"):
            (base / name).mkdir()
            patch.setenv(f"JUPYTER_{name}_DIR", str(base / name))
        patch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
        patch.setenv("PYTHONDONTWRITEBYTECODE", "1")
        patch.delenv("MPLBACKEND", raising=False)
        yield patch


def execute(path):
    """Run the notebook at path in a fresh kernel, in its folder; -> the executed notebook (a dict)."""
    import nbclient
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    return notebook


def code_cell(cell_id, source):
    import nbformat

    return nbformat.v4.new_code_cell(source, id=cell_id)


def cell(notebook, cell_id):
    return next(c for c in notebook["cells"] if c.get("id") == cell_id)


def stream(c):
    return "".join(o.get("text", "") for o in c["outputs"] if o["output_type"] == "stream")


def images(c):
    return [base64.b64decode(o["data"]["image/png"]) for o in c["outputs"] if "image/png" in o.get("data", {})]


def problems(notebook):
    """'<cell id>: <error or stderr>' for every cell that failed or wrote to stderr."""
    found = []
    for c in notebook["cells"]:
        for o in c.get("outputs", []):
            if o["output_type"] == "error":
                found.append(f"{c['id']}: {o['ename']}: {o['evalue']}")
            elif o["output_type"] == "stream" and o["name"] == "stderr":
                found.append(f"{c['id']}: stderr: {o['text'][:500]}")
    return found


def drawn(notebook):
    """ch03_tools.drawn at the end of the run (the last cell prints it)."""
    text = stream(notebook["cells"][-1])
    assert text.startswith("DRAWN"), text[:2000]
    return json.loads(text[len("DRAWN"):])


def panels(records, label):
    """The matrices (tensors) of every heatmap panel with this label, in drawing order."""
    return [torch.tensor(p["matrix"]) for r in records if r["kind"] == "heatmaps" for p in r["panels"]
            if p["label"] == label]


def close(got, expected, atol=1e-4):
    return got.shape == expected.shape and torch.allclose(got.double(), expected.double(), atol=atol)


@pytest.fixture(scope="module")
def chapter(kernel_env, tmp_path_factory):
    """{notebook name: executed notebook} for the three chapter notebooks as generated (the solutions in
    their cells), each ending with a cell that prints ch03_tools.drawn; notebook 01 first re-runs its
    simple_attention cells with a softmax over the wrong dimension."""
    import nbformat

    folder = tmp_path_factory.mktemp("chapter")
    for path in SOURCE.iterdir():
        if path.is_file():
            shutil.copyfile(path, folder / path.name)
    wrong = module_texts(bugs=["simple_softmax_dim0"])["simple_attention"]
    executed = {}
    for name in CHAPTER:
        notebook = nbformat.read(folder / name, as_version=4)
        if name == CHAPTER[0]:
            again = [copy.deepcopy(cell(notebook, i)) for i in ("simple_attention", "publish_simple_attention",
                                                                 "show_simple_attention")]
            again[0]["source"] = wrong.rstrip("\n")
            for c in again:
                c["id"] = f"wrong_{c['id']}"
            notebook["cells"] += again
        notebook["cells"].append(code_cell("dump_drawn", DUMP))
        nbformat.write(notebook, folder / name)
        executed[name] = execute(folder / name)
    return executed


def test_the_chapter_notebooks_run_without_an_error_and_every_show_cell_draws(chapter):
    for name, notebook in chapter.items():
        assert problems(notebook) == [], name
        shows = [c for c in notebook["cells"] if c["id"].startswith("show_")]
        assert shows, f"{name}: no show cell"
        for c in shows:
            assert images(c), f"{name}, {c['id']}: no image/png output ({stream(c)[:500]})"
            assert all(png[:8] == b"\x89PNG\r\n\x1a\n" for png in images(c))


def test_the_show_cells_print_what_the_book_prints(chapter):
    simple = stream(cell(chapter[CHAPTER[0]], "show_simple_attention"))
    for label, key in (("Attention scores of 'journey':", "attn_scores_2"), ("Its context vector:", "context_vec_2")):
        assert f"{label} {torch.tensor(BOOK[key])}" in simple, simple
    assert str(torch.tensor(BOOK["attn_weights"])).split("\n")[0] in simple
    causal = stream(cell(chapter[CHAPTER[1]], "show_causal_mask"))
    assert str(torch.tensor(BOOK["causal_attn_weights"])).split("\n")[0] in causal, causal


def test_the_pictures_hold_the_weights_the_solutions_compute(chapter):
    weights = panels(drawn(chapter[CHAPTER[0]]), "your attention_weights")
    assert len(weights) == 2  # the notebook's show cell, then the wrong softmax's
    assert close(weights[0], torch.tensor(BOOK["attn_weights"]))
    records = drawn(chapter[CHAPTER[1]])
    assert close(panels(records, "causal_mask(6): 1 = hidden")[0], torch.ones(6, 6).triu(1))
    assert close(panels(records, "your masked weights")[0], torch.tensor(BOOK["causal_attn_weights"]))
    heads = [panels(records, f"head {h}")[0] for h in range(4)]
    for head in heads:
        assert close(head.triu(1), torch.zeros(6, 6)) and close(head.sum(-1), torch.ones(6)), head
    assert not close(heads[0], heads[1], atol=1e-3), "two heads with their own projections drew the same weights"
    numpy_panels = drawn(chapter[CHAPTER[2]])[-1]["panels"]
    assert [p["label"] for p in numpy_panels] == ["causal=False", "causal=True"]
    causal = torch.tensor(numpy_panels[1]["matrix"])
    assert close(causal.triu(1), torch.zeros(6, 6)) and close(causal.sum(-1), torch.ones(6))


def test_dropout_is_shown_by_its_statistics(chapter):
    text = stream(cell(chapter[CHAPTER[1]], "show_dropout"))
    found = re.search(r"dropped: (\d+)% of the nonzero weights .* kept weights multiplied by ([\d.]+) on average", text)
    assert found, text
    assert 40 <= int(found[1]) <= 60 and abs(float(found[2]) - 2.0) < 0.01, text  # p = 0.5: half dropped, kept x2
    records = drawn(chapter[CHAPTER[1]])
    calm, mean = panels(records, "eval mode")[0], panels(records, "mean of 400 runs")[0]
    assert close(mean, calm, atol=0.15), "the mean over 400 training runs should stay near the eval-mode weights"


def test_the_scaling_plot_comes_from_scaling_statistics(chapter):
    scaling = [r for r in drawn(chapter[CHAPTER[0]]) if r["kind"] == "scaling"]
    assert len(scaling) == 1 and scaling[0]["d_ks"] == [2 ** n for n in range(11)]
    scaled, raw = scaling[0]["statistics"]["scores / sqrt(d_k)"], scaling[0]["statistics"]["raw scores"]
    assert all(0.8 < spread < 1.25 for spread, _ in scaled), scaled  # unit-variance entries: std about 1
    assert raw[-1][0] > 25 and raw[-1][1] > 0.9, raw  # d_k = 1024: std about 32, softmax almost one-hot
    assert max(peak for _, peak in scaled) < 0.5, scaled


def test_a_wrong_softmax_draws_a_different_picture(chapter):
    notebook = chapter[CHAPTER[0]]
    right, wrong = panels(drawn(notebook), "your attention_weights")
    book = torch.tensor(BOOK["attn_weights"])
    assert not close(wrong, book, atol=1e-2)
    assert close(wrong.sum(0), torch.ones(6)), "softmax over dim 0: the columns sum to 1"
    assert images(cell(notebook, "show_simple_attention")) != images(cell(notebook, "wrong_show_simple_attention"))
    assert BUGS["simple_softmax_dim0"][0] == "simple_attention"


# --- the speed lab ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def speed_lab(kernel_env, tmp_path_factory):
    """The speed lab at toy sizes, with the solutions' notebook 02 beside it and a fused class typed into the
    stretch exercise; then, in the same kernel, its modules reloaded from the released (stub) notebook 02
    and the CPU cell run again."""
    import nbformat

    folder = tmp_path_factory.mktemp("speed-lab")
    for path in SOURCE.iterdir():
        if path.is_file():
            shutil.copyfile(path, folder / path.name)
    released = notebooks.student_notebook(notebooks.build_notebook(current().notebook_templates / "02_causal_and_multi_head.txt"))
    (folder / "stubs_02.ipynb").write_text(notebooks.dumps(released))
    notebook = nbformat.read(folder / "04_speed_lab.ipynb", as_version=4)
    cell(notebook, "stretch_exercise")["source"] = FUSED
    notebook["cells"] += [code_cell("load_stubs", 'mine = student_modules("stubs_02.ipynb", ["causal", "mha"])'),
                          code_cell("cpu_on_stubs", cell(notebook, "cpu")["source"])]
    nbformat.write(notebook, folder / "04_speed_lab.ipynb")
    kernel_env.setenv("CH03_SPEED_LAB", "tiny")
    try:
        return execute(folder / "04_speed_lab.ipynb")
    finally:
        kernel_env.delenv("CH03_SPEED_LAB")


def test_the_speed_lab_prints_the_comparison_and_draws_it(speed_lab):
    assert problems(speed_lab) == []
    assert stream(cell(speed_lab, "load")) == "your causal and mha, from 02_causal_and_multi_head.ipynb\n"
    text = stream(cell(speed_lab, "cpu")).splitlines()
    assert text[0].startswith("b=1, T=8, d=16, 4 heads, float32, CPU"), text
    assert "all outputs agree" in text[1] and text[2].split()[:3] == ["implementation", "forward", "ms"], text
    assert [line.split()[0] for line in text[3:]] == ["wrapper", "efficient", "combined_qkv", "sdpa", "nn_mha"]
    assert text[6].split()[2] == "1.00x", text  # sdpa against itself
    assert len(images(cell(speed_lab, "cpu"))) == 1
    if not torch.cuda.is_available():
        assert stream(cell(speed_lab, "gpu")).startswith("No CUDA GPU here")


def test_the_stretch_exercise_times_the_students_class_against_sdpa(speed_lab):
    text = stream(cell(speed_lab, "stretch_timing")).splitlines()
    assert "all outputs agree" in text[1], text
    assert [line.split()[0] for line in text[3:6]] == ["efficient", "sdpa", "yours"], text
    device = "CUDA" if torch.cuda.is_available() else "CPU"
    assert re.fullmatch(rf"yours: \d+\.\d\d times sdpa forward on the {device}, (within the goal|not yet within) "
                        r"(of )?1\.3.*", text[6]), text


def test_the_speed_lab_on_the_untouched_stubs_says_what_is_missing(speed_lab):
    text = stream(cell(speed_lab, "cpu_on_stubs"))
    assert text.startswith("the speed lab on the CPU: not implemented yet (mha.MultiHeadAttention"), text
    assert not images(cell(speed_lab, "cpu_on_stubs"))


# --- ch03_tools without a kernel (one interpreter for both tests) ---------------------------------------

HEADLESS = ("import matplotlib.pyplot as plt\n"
            "heatmaps([(book['attn_weights'], 'a'), (torch.eye(6), 'b')], title='t')\n"
            "plot_scaling([1, 2], {'s': [(1.0, 0.3), (1.0, 0.3)]})\n"
            "print(plt.get_backend(), plt.get_fignums(), len(drawn), drawn[0]['panels'][1]['matrix'][0])")
LOADS = (f"loaded = student_modules({str(ROOT / 'solutions' / 'ch03')!r}, ['causal', 'mha'])\n"
         "import mha\n"
         "print(sorted(loaded), mha is loaded['mha'], "
         "mha.MultiHeadAttention(4, 4, 3, 0.0, 2)(torch.rand(1, 3, 4)).shape)\n"
         "try:\n    student_modules('numpy.ipynb', ['causal', 'numpy_attention'])\n"
         "except ModuleNotFoundError as e:\n    print(e)\n")
SECTION = "=== next ===\n"


@pytest.fixture(scope="module")
def tools_said(tmp_path_factory):
    """What HEADLESS, then LOADS, print after the setup cell's code (`from ch03_tools import *`), run one after the other in one fresh
    interpreter (one start-up of torch and matplotlib instead of two: issue 38 item 6), in a copy of the
    support files with notebook 03 beside them as numpy.ipynb, under the Agg backend with every
    UserWarning an error: {"headless" | "loads": what it printed}. HEADLESS runs first, in the interpreter
    as it starts (LOADS draws nothing)."""
    folder = tmp_path_factory.mktemp("tools")
    for name in notebooks.support_files():
        shutil.copyfile(SOURCE / name, folder / name)
    shutil.copyfile(SOURCE / CHAPTER[2], folder / "numpy.ipynb")
    code = f"{notebooks.SETUP_CODE}\n{HEADLESS}\nprint({SECTION!r}, end='')\n{LOADS}"  # as the setup cell runs it
    done = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", code],
                          cwd=folder, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr[-3000:]
    headless, loads = done.stdout.split(SECTION)
    return {"headless": headless, "loads": loads}


def test_pictures_are_headless_safe_with_agg_and_keep_their_numbers(tools_said):
    # under Agg plt.show() shows nothing and closes nothing: the figures must be closed by ch03_tools (none
    # left open, so no "more than 20 figures" warning in a long headless run); -W error::UserWarning fails the
    # run on any matplotlib warning (some versions warn that Agg "cannot show the figure")
    assert tools_said["headless"].lower().split(" ", 1) == ["agg", "[] 2 [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]\n"]


def test_student_modules_loads_a_folder_or_a_saved_notebook_and_names_what_is_missing(tools_said):
    assert tools_said["loads"].splitlines() == ["['causal', 'mha'] True torch.Size([1, 3, 4])",
                                                "numpy.ipynb: no code for causal"]
