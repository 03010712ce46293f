"""benchmarks/bench_mha.py, the speed lab (issue 14 item 3), at tiny shapes: five implementations of one
function, checked equal before timing, a table with ratios to SDPA and a plot. No timing is asserted."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_mha  # noqa: E402

NAMES = ["wrapper", "efficient", "combined_qkv", "sdpa", "nn_mha"]


def test_the_script_prints_the_comparison_and_a_plot(tmp_path):
    plot = tmp_path / "mha.png"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_mha.py"), "--device", "cpu", "--batch", "1",
                           "--tokens", "8", "--d-model", "16", "--heads", "4", "--repeats", "2", "--warmup", "1",
                           "--plot", str(plot)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("b=1, T=8, d=16, 4 heads, float32, CPU")
    assert "all outputs agree" in lines[1]
    rows = [line.split() for line in lines[3:8]]
    assert [r[0] for r in rows] == NAMES
    assert rows[3][2] == rows[3][4] == "1.00x"  # sdpa against itself
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture()
def models(monkeypatch):
    for name in ("mha", "causal"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield bench_mha.build(ROOT / "solutions" / "ch03", 16, 8, 4)
    for name in ("mha", "causal"):
        sys.modules.pop(name, None)


def test_the_five_compute_one_function_and_a_difference_is_refused(models):
    x = torch.rand(2, 8, 16)
    assert set(bench_mha.same_function(models, x, 1e-5)) == set(NAMES)
    with torch.no_grad():
        models["wrapper"].wrapper.heads[1].W_key.weight.mul_(2)
    with pytest.raises(SystemExit, match="wrapper"):
        bench_mha.same_function(models, x, 1e-5)


@pytest.mark.quick
def test_the_table_gives_ratios_to_sdpa():
    results = {"efficient": {"forward": 3.0, "backward": None}, "sdpa": {"forward": 1.5, "backward": None}}
    text = bench_mha.table(results)
    assert "efficient" in text and "2.00x" in text and "1.00x" in text


def test_one_dated_set_of_figures_in_the_readme_and_the_notebook():
    # issue 22: the notebook, the README and the benchmark disagreed; now one file holds the figures
    from autograder.authoring import notebooks

    said = notebooks.speed_lab_figures()
    assert said.startswith("CPU, measured 20") and "2-core machine" in said
    assert said in (ROOT / "README.md").read_text()
    lab = json.loads((ROOT / "source" / "ch03" / "04_speed_lab.ipynb").read_text())
    assert any(said in "".join(cell["source"]) for cell in lab["cells"] if cell["cell_type"] == "markdown")
