"""Attack: a bare `raise SystemExit` at import."""
raise SystemExit
