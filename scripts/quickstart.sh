#!/usr/bin/env bash
# Set up, then grade the reference solutions and the untouched student stubs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo
echo "== Grading the reference solutions (solutions/ch03) =="
.venv/bin/python -m autograder grade solutions/ch03
echo
echo "== Grading the student stubs as handed out (assignments/ch03) =="
.venv/bin/python -m autograder grade assignments/ch03 | sed -n '1,20p'
echo "  ... (the stubs score 0: every check says which function is not implemented yet and what it"
echo "  should compute; the full table: .venv/bin/python -m autograder grade assignments/ch03)"
