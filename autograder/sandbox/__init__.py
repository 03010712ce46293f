"""Running untrusted student code: a fork server (zygote.py) that forks one isolated child per
(submission, part) (isolation.py), the child's request loop (child.py), and the grader's end
of the channel (client.py)."""
