# Attack (appended to a correct simple_attention.py): leave files on the grader's machine, for
# later students to read or to plant code: every world-writable place, the project, $HOME,
# the other submissions and the OUT folder (all passed in by the test).
import os

_written = []
for _folder in ("/run/lock", "/var/tmp", "/tmp", "/dev/shm", "/var/lock", "/run", "/var/crash", "/",
                "@@PROJECT@@", "@@OUTSIDE@@", "@@OUTSIDE@@/class", "@@OUTSIDE@@/out", os.path.expanduser("~"),
                "/root", "/work", "/srv", "/opt"):
    _path = os.path.join(_folder, "ch03-adversarial-@@TOKEN@@")
    try:
        with open(_path, "w") as _f:
            _f.write("planted\n")
        _written.append(_path)
    except OSError:
        pass
print("written:", _written, flush=True)
