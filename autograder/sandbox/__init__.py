"""Running untrusted student code (see docs/sandbox.md).

client.py    the grader's end, the one door: Sandbox -> session(submission) -> part(limits) -> call();
             it starts the fork server and hands out the doors, and re-exports the names below
session.py   one leader (one submission): starts the part children, ended with the submission
part_child.py one child's request channel (one request, one reply, counted: Sandbox.round_trips),
             its limits and CPU time, the end of a part
death.py     why a child died: the machine's only on proof (death.judge, the Gauge)
idle.py      the idle bound after a hidden input; procfs.py what /proc says of a process
errors.py    the exceptions
room.py      the allow-list root the fork server runs in (a bubblewrap command line)
syscalls.py  the system calls student code may make (a libseccomp allow-list, compiled here)
cgroup.py    a control group per fork server: memory, processes and CPU time of a whole process tree
zygote.py    inside the room: the fork server, the session leaders and the part children they fork
isolation.py inside the room: the walls a leader and a part child build before student code runs
child.py     inside the room: the request loop, the only code that touches student modules
part_reset.py inside the room: a child forgets one part and says whether it can take the next
"""
