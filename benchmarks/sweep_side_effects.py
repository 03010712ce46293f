"""Side effects an honest learner's module may have, each graded: which parts lose points to it.

    .venv/bin/python benchmarks/sweep_side_effects.py import|forward [CASE,CASE,...]

Each case is the reference (solutions/ch03) with one statement added to causal.py, at import or first
in CausalAttention.forward (the checks call it; mha's probe and wrapper checks run it in mha's child),
graded with the tests' engine on simple_attention, causal, mha and numpy_attention. Prints, per case,
the checks each part lost (a part that keeps full marks is not printed). Expected since part_reset.restore
(tests/test_side_effects.py): no part but causal ever loses a check, except the cases left (docs/sandbox.md).
"""
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from shared_engine import open_engine

from autograder import PROJECT_ROOT
from autograder.engine import one_thread

PRELUDE = ("import sys, os, time, warnings, gc, signal, threading, atexit\n"
           "import numpy as np\nimport torch.nn.functional as F\n")

CASES = {
    "grad_off": "torch.set_grad_enabled(False)",
    "inference_mode_open": "torch.inference_mode().__enter__()",
    "no_grad_open": "torch.no_grad().__enter__()",
    "default_dtype_f64": "torch.set_default_dtype(torch.float64)",
    "default_device_cpu": 'torch.set_default_device("cpu")',
    "default_device_cuda_guarded": 'torch.set_default_device("cuda" if torch.cuda.is_available() else "cpu")',
    "default_device_cuda": 'torch.set_default_device("cuda")',
    "default_tensor_type": "torch.set_default_tensor_type(torch.DoubleTensor)",
    "deterministic": "torch.use_deterministic_algorithms(True)",
    "anomaly": "torch.autograd.set_detect_anomaly(True)",
    "num_threads": "torch.set_num_threads(3)",
    "matmul_precision": 'torch.set_float32_matmul_precision("medium")',
    "flush_denormal": "torch.set_flush_denormal(True)",
    "backends": ("torch.backends.cudnn.benchmark = True\ntorch.backends.cuda.matmul.allow_tf32 = True\n"
                 "torch.backends.cudnn.allow_tf32 = False\ntorch.backends.mkldnn.enabled = False\n"
                 "torch.backends.cuda.enable_flash_sdp(False)\ntorch.backends.opt_einsum.enabled = False"),
    "manual_seed": "torch.manual_seed(123)",
    "np_seterr": 'np.seterr(all="raise")',
    "np_printoptions": "np.set_printoptions(precision=2, suppress=True)",
    "np_seed": "np.random.seed(0)",
    "warnings_error": 'warnings.simplefilter("error")',
    "warnings_ignore": 'warnings.simplefilter("ignore")',
    "recursion_limit": "sys.setrecursionlimit(50)",
    "settrace": "sys.settrace(lambda *a: None)",
    "setprofile": "sys.setprofile(lambda *a: None)",
    "environ": 'os.environ["OMP_NUM_THREADS"] = "1"\nos.environ["CUDA_VISIBLE_DEVICES"] = ""',
    "chdir": 'os.chdir("/")',
    "sys_path": 'sys.path.insert(0, "/tmp")\nsys.path.insert(0, "..")',
    "torch_softmax": "torch.softmax = lambda x, dim=-1, **k: torch.zeros_like(x)",
    "F_softmax": "F.softmax = lambda x, dim=-1, **k: torch.zeros_like(x)",
    "Tensor_softmax": "torch.Tensor.softmax = lambda self, dim=-1, **k: torch.zeros_like(self)",
    "Module_call": "nn.Module.__call__ = lambda self, *a, **k: self.forward(*a, **k) * 0",
    "Linear_forward": "nn.Linear.forward = lambda self, x: torch.zeros(*x.shape[:-1], self.out_features)",
    "matplotlib_show": "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()",
    "training_loop": ("_w = torch.randn(16, 16, requires_grad=True)\n_opt = torch.optim.SGD([_w], lr=0.01)\n"
                      "for _ in range(200):\n    _opt.zero_grad()\n"
                      "    (_w @ torch.randn(16, 16)).pow(2).mean().backward()\n    _opt.step()"),
    "sleep": "time.sleep(5)",
    "thread": "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()",
    "multiprocessing": ("import multiprocessing as mp\n_p = mp.Process(target=time.sleep, args=(30,), daemon=True)\n_p.start()"),
    "atexit": 'atexit.register(print, "bye")',
    "signal_handler": "signal.signal(signal.SIGINT, lambda *a: None)\nsignal.signal(signal.SIGTERM, lambda *a: None)",
    "alarm": "signal.alarm(4)",
    "huge_global": "globals()['_KEEP'] = torch.ones(150_000_000)",
    "gc_disable": "gc.disable()",
    "torch_printoptions": "torch.set_printoptions(precision=2, sci_mode=False)",
    "function_mode": ("from torch.overrides import TorchFunctionMode\n"
                      "class _Zero(TorchFunctionMode):\n"
                      "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
                      "        out = func(*args, **(kwargs or {}))\n"
                      "        return out * 0 if func in (torch.softmax, torch.Tensor.softmax, F.softmax) else out\n"
                      "_Zero().__enter__()"),
    "dispatch_mode": ("from torch.utils._python_dispatch import TorchDispatchMode\n"
                      "class _ZeroD(TorchDispatchMode):\n"
                      "    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
                      "        out = func(*args, **(kwargs or {}))\n"
                      "        return out * 0 if 'softmax' in str(func) else out\n"
                      "_ZeroD().__enter__()"),
}
# method only: what forward returns
SUBCLASS = ("class _MyTensor(torch.Tensor):\n    pass\n")
CASES.update({
    "itimer_real_0.4": "signal.setitimer(signal.ITIMER_REAL, 0.4)",
    "itimer_real_1.0": "signal.setitimer(signal.ITIMER_REAL, 1.0)",
    "itimer_prof_0.5": "signal.setitimer(signal.ITIMER_PROF, 0.5)",
})
CASES.update({
    "inference_mode_kept": "_INF = torch.inference_mode()\n_INF.__enter__()",
    "no_grad_kept": "_NG = torch.no_grad()\n_NG.__enter__()",
})

PARTS = ["simple_attention", "causal", "mha", "numpy_attention"]


def submission(tmp, name, where):
    folder = Path(tmp) / f"{name}-{where}"
    shutil.copytree(PROJECT_ROOT / "solutions" / "ch03", folder, ignore=shutil.ignore_patterns("__pycache__"))
    source = (folder / "causal.py").read_text().replace("import torch.nn as nn\n", "import torch.nn as nn\n" + PRELUDE, 1)
    if name == "subclass":
        source = source.replace("class CausalAttention", SUBCLASS + "\n\nclass CausalAttention", 1)
        source = source.replace("        return attn_weights @ values\n",
                                "        return (attn_weights @ values).as_subclass(_MyTensor)\n")
    elif where == "import":
        source += "\n" + CASES[name] + "\n"
    else:
        first = "        b, num_tokens, d_in = x.shape\n"
        source = source.replace(first, "".join(f"        {line}\n" for line in CASES[name].splitlines()) + first, 1)
    (folder / "causal.py").write_text(source)
    return folder


def main():
    where = sys.argv[1]
    names = sys.argv[2].split(",") if len(sys.argv) > 2 else [*CASES, *(["subclass"] if where == "forward" else [])]
    one_thread()
    engine = open_engine()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name in names:
                grade = engine.grade(submission(tmp, name, where), parts=PARTS, figures=False)
                print(f"== {name} [{where}]", flush=True)
                for part in PARTS:
                    lost = [f"{c.name}: {(c.message or '')[:100]}" for c in grade.checks if c.part == part and not c.passed]
                    if lost:
                        print(f"   {part}: {len(lost)} lost: " + " | ".join(lost[:3]), flush=True)
    finally:
        engine.close()


if __name__ == "__main__":
    main()
