"""The GPU in a part's child (`--device cuda`), claimed before any student code runs.

The fork server never initialises CUDA (zygote.warm_up): a process forked after that cannot use
the GPU. So each part's child initialises it itself, here, and caps its caching allocator at the
part's memory limit. The cap is the child's own setting, which student code could raise again:
what enforces the limit is the grader's watch from outside (gpu_watch.py), which kills a child
whose GPU memory, as the driver reports it, passes the limit.
"""
CONTEXT_MB = 1024  # the CUDA context, kernels and cuBLAS work space: outside the allocator's cap


def claim(memory_mb):
    """Initialise CUDA in this process and cap the allocator at memory_mb -> the protection line."""
    import torch

    torch.cuda.init()
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(fraction(memory_mb, total), 0)
    return f"GPU memory {int(memory_mb)} MiB (allocator cap in the child, watched by the grader)"


def fraction(memory_mb, total_bytes):
    """The share of a card of total_bytes that memory_mb is (at most all of it, at least a MiB's)."""
    return max(min((int(memory_mb) << 20) / total_bytes, 1.0), 1 / max(total_bytes >> 20, 1))
