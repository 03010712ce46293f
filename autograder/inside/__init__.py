"""What runs inside the room (the child's side): the fork server, the session leaders, the part
children and what they need, and the wire protocol both sides speak.

    zygote.py     the fork server and the session leaders it forks
    isolation.py  the walls a leader and a part's child build around themselves
    syscalls.py   the seccomp allow-list (compiled by the grader, installed by the child)
    child.py      the request loop: the only code that touches student modules
    part_reset.py a child forgets a part before it takes the next one
    counting.py   operations counted under a dispatch mode (efficiency checks)
    emulated_gpu.py  a GPU emulated on the CPU: FakeTensorMode, tensors on cuda:0 (device checks)
    stand_in.py   the grader's classes as data, their computation asked of the grader
    gpu.py        a child's own CUDA start
    uid_cleanup.py  container mode: nothing of a submission's uid outlives its part
    protocol.py   the wire format (JSON and raw array bytes, never pickle)

The room binds this package (and the package root's __init__.py, which imports nothing of the
grader) and nothing else of the grader: no module here imports from outside it
(tests/test_import_graph.py), so a module the child needs cannot be forgotten by the room, and
nothing of the host's side (suites, rubric, reports) can be pulled in.
"""
