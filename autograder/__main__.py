import atexit
import os
import sys

from autograder.cli import main

code = main()
# Every file of the run is written and closed by now. With torch loaded, the interpreter's own
# teardown (finalizing thousands of modules) takes about 0.3 s and does nothing a run needs: the
# exit handlers run, the streams are flushed, and the process ends.
atexit._run_exitfuncs()
for stream in (sys.stdout, sys.stderr):
    try:
        stream.flush()
    except (OSError, ValueError):
        pass
os._exit(code if isinstance(code, int) else (0 if code is None else 1))
