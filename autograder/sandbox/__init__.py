"""Running untrusted student code (see docs/sandbox.md).

client.py    the grader's end, the one door: Sandbox -> session(submission) -> part(limits) -> call()
room.py      the allow-list root the fork server runs in (a bubblewrap command line)
syscalls.py  the system calls student code may make (a libseccomp allow-list, compiled here)
cgroup.py    a control group per fork server: memory and processes of a whole process tree
zygote.py    inside the room: the fork server, the session leaders and the part children they fork
isolation.py inside the room: the walls a leader and a part child build before student code runs
child.py     inside the room: the request loop, the only code that touches student modules
part_reset.py inside the room: a child forgets one part and says whether it can take the next
"""
