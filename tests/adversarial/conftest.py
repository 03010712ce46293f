# The corpus under cases/ holds hostile files (conftest.py, pytest.py, json.py, torch.py, ...):
# pytest must never collect or import them. tests/test_adversarial.py builds submissions from them.
collect_ignore = ["cases"]
