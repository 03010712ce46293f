"""What every report format shares."""


def fmt(x):
    """A score as people read it: 8, 2.5, 0.6667."""
    return f"{x:g}"
