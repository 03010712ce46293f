"""The run's secret behind the unseen inputs, and each check's seed drawn from it (no torch here:
the command line draws the secret before anything imports torch)."""
import hashlib
import secrets


def draw_secret() -> int:
    """A fresh secret for one grading run (instructors may pass it back with --seed to regrade)."""
    return secrets.randbits(63)


def check_seed(secret: object, key: object, part: str, name: str) -> int:
    """The seed of one check's unseen inputs: from the run's secret, the submission and the check."""
    digest = hashlib.sha256(f"{secret}|{key}|{part}|{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1
