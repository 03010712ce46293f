"""Attack: end the grading run by calling sys.exit(0) while the module is imported."""
import sys

sys.exit(0)
