"""The system calls student code may make: an allow-list, compiled by libseccomp into a program
the kernel runs on every call (grader side; the child only installs the compiled bytes).

The list follows what Docker's default seccomp profile lets an unprivileged container do: the
calls an ordinary program (Python, torch, NumPy, threads, pipes, files, sockets) needs. Left out,
so they fail with EPERM: keyrings (keyctl, add_key, request_key), ptrace and reading other
processes' memory, mount and every namespace call (unshare, setns, clone with a CLONE_NEW* flag),
bpf, perf_event_open, userfaultfd, io_uring, kernel modules, kexec, reboot, swap, quotas, clocks,
personality, and the new mount API. clone3 answers ENOSYS, so the C library falls back to clone,
whose flags the filter can inspect. Calls of another architecture's ABI kill the process.

Left out too, because they reach kernel state that every room shares (the read-only files of the
room are the same inodes for every student graded at once, and some counters are machine-wide):
file locks and leases (flock; fcntl is allowed only with the commands in FCNTL_COMMANDS),
directory and file watches (inotify, fanotify, fcntl F_NOTIFY), Linux AIO contexts (io_setup and
its family: aio-max-nr is machine-wide), page-cache residency probes and evictions (mincore,
fadvise64, readahead, preadv2/pwritev2 with RWF_NOWAIT), POSIX message queues, and sockets of any
family but AF_UNIX, AF_INET and AF_INET6 (in the part's own network namespace). The pseudo-terminal
multiplexer is not in the room's /dev at all (room.py).

Left out because a part could use them to make its own death or slowness look like the machine's
(sandbox/death.py): setrlimit, and prlimit64 but to read a limit (its new-limit argument must be
NULL), so a part cannot lower its CPU-time limit to have the kernel SIGKILL it; setpriority,
sched_setscheduler, sched_setattr, sched_setparam and ioprio_set, so it cannot starve itself of a
CPU or of the disk. And memory its address-space limit (RLIMIT_AS) does not see, which without a
memory control group nothing would bound: memfd_create (a memory file written with write() is
never mapped), System V shared memory (a segment attached, filled and detached keeps its pages)
and message queues (shmget, shmat, shmdt, shmctl, msgget, msgsnd, msgrcv, msgctl). Neither torch,
NumPy nor Python's own start-up calls any of these (libtorch's one setpriority call is for its
own threads' niceness, and an EPERM there is ignored).
"""
import errno
import os
import tempfile

ALLOWED = """
accept accept4 access alarm arch_prctl bind brk capget capset chdir chmod chown clock_getres
clock_gettime clock_nanosleep close close_range connect copy_file_range creat dup dup2 dup3
epoll_create epoll_create1 epoll_ctl epoll_pwait epoll_pwait2 epoll_wait eventfd eventfd2 execve
execveat exit exit_group faccessat faccessat2 fallocate fchdir fchmod fchmodat fchmodat2 fchown
fchownat fdatasync fgetxattr flistxattr fork fremovexattr fsetxattr fstat fstatfs fsync ftruncate
futex futex_waitv futimesat get_mempolicy get_robust_list getcpu getcwd getdents getdents64 getegid
geteuid getgid getgroups getitimer getpeername getpgid getpgrp getpid getppid getpriority getrandom
getresgid getresuid getrlimit getrusage getsid getsockname getsockopt gettid gettimeofday getuid
getxattr ioctl ioprio_get kill lchown lgetxattr link linkat listen listxattr llistxattr
lremovexattr lseek lsetxattr lstat madvise mbind membarrier mkdir mkdirat mknod mknodat mlock
mlock2 mlockall mmap mprotect mremap msync munlock munlockall munmap nanosleep newfstatat open
openat openat2 pause pidfd_getfd pidfd_open pidfd_send_signal pipe pipe2 pkey_alloc pkey_free
pkey_mprotect poll ppoll prctl pread64 preadv pselect6 pwrite64 pwritev read readlink readlinkat
readv recvfrom recvmmsg recvmsg remap_file_pages removexattr rename renameat renameat2
restart_syscall rmdir rseq rt_sigaction rt_sigpending rt_sigprocmask rt_sigqueueinfo rt_sigreturn
rt_sigsuspend rt_sigtimedwait rt_tgsigqueueinfo sched_get_priority_max sched_get_priority_min
sched_getaffinity sched_getattr sched_getparam sched_getscheduler sched_rr_get_interval
sched_setaffinity sched_yield seccomp select semctl semget semop semtimedop sendfile sendmmsg
sendmsg sendto set_mempolicy set_robust_list set_tid_address setfsgid setfsuid setgid setgroups
setitimer setpgid setregid setresgid setresuid setreuid setsid setsockopt setuid setxattr shutdown
sigaltstack signalfd signalfd4 splice stat statfs statx symlink symlinkat sync sync_file_range
syncfs sysinfo tee tgkill time timer_create timer_delete timer_getoverrun timer_gettime
timer_settime timerfd_create timerfd_gettime timerfd_settime times tkill truncate umask uname
unlink unlinkat utime utimensat utimes vfork vmsplice wait4 waitid write writev
""".split()

# what the CUDA driver (libcuda, in a part's child with --device cuda) calls: device files opened
# and driven by ioctl (any request number), their memory mapped and pinned, NUMA policy, its
# helper threads (clone, allowed below without namespace flags) and their wake-ups; none may be
# dropped from ALLOWED, nor ioctl narrowed for them
CUDA_DRIVER = """
openat ioctl mmap munmap mremap mprotect madvise mlock munlock get_mempolicy set_mempolicy mbind
sched_getaffinity futex eventfd2 poll ppoll pipe2 readlink fstat newfstatat getpid gettid
""".split()

# clone's first argument (x86_64, arm64 and most others) carries these flags: any of them is refused
CLONE_NEW = {"CLONE_NEWTIME": 0x80, "CLONE_NEWNS": 0x20000, "CLONE_NEWCGROUP": 0x2000000,
             "CLONE_NEWUTS": 0x4000000, "CLONE_NEWIPC": 0x8000000, "CLONE_NEWUSER": 0x10000000,
             "CLONE_NEWPID": 0x20000000, "CLONE_NEWNET": 0x40000000}

# fcntl commands that touch only the caller's descriptor or its own memfd: F_DUPFD, F_GETFD,
# F_SETFD, F_GETFL, F_SETFL, F_DUPFD_CLOEXEC, F_GETPIPE_SZ, F_ADD_SEALS, F_GET_SEALS. Refused: the
# lock commands (F_GETLK, F_SETLK, F_SETLKW, F_OFD_*), leases (F_SETLEASE, F_GETLEASE), F_NOTIFY,
# owners and signals (F_SETOWN*, F_SETSIG), F_SETPIPE_SZ (a per-user page budget) and the write hints
FCNTL_COMMANDS = (0, 1, 2, 3, 4, 1030, 1032, 1033, 1034)
# socket families: AF_UNIX, AF_INET, AF_INET6 (each part has a network namespace of its own)
SOCKET_FAMILIES = (1, 2, 10)


class Unavailable(Exception):
    """libseccomp cannot be loaded here; str() says what to install."""


def missing_library(error):
    return (f"the system library libseccomp (libseccomp.so.2) cannot be loaded ({type(error).__name__}: {error}): "
            f"apt-get install libseccomp2 (Debian, Ubuntu) or dnf install libseccomp (Fedora)")


# mmap's protection and flag bits (the same on x86_64 and arm64) for file_exec=False: an executable mapping of a file
PROT_EXEC, MAP_ANONYMOUS = 0x4, 0x20


def compile_filter(file_exec=True):
    """The allow-list as a seccomp BPF program (bytes), ready for prctl(PR_SET_SECCOMP). file_exec=False (container
    mode, on the CPU): mmap of a file with PROT_EXEC refused too, so no shared object is loaded after the fork server
    started the child (the dynamic loader maps a library's code so; an anonymous executable mapping, a JIT's, and
    mprotect stay allowed). Container mode has no noexec /tmp to keep a submission from writing a Python extension or
    a library there and loading it (docs/sandbox.md, "In a throw-away container")."""
    try:
        import pyseccomp as seccomp
    except ImportError as e:
        raise Unavailable(f"libseccomp's Python binding is not installed ({e}): pip install pyseccomp") from None
    except Exception as e:  # the binding loads libseccomp.so.2 as it is imported
        raise Unavailable(missing_library(e)) from None
    try:
        rules = seccomp.SyscallFilter(defaction=seccomp.ERRNO(errno.EPERM))
    except Exception as e:
        raise Unavailable(missing_library(e)) from None
    for name in ALLOWED:
        if name == "mmap" and not file_exec:  # allowed without PROT_EXEC, or anonymous
            rules.add_rule(seccomp.ALLOW, name, seccomp.Arg(2, seccomp.MASKED_EQ, PROT_EXEC, 0))
            rules.add_rule(seccomp.ALLOW, name, seccomp.Arg(3, seccomp.MASKED_EQ, MAP_ANONYMOUS, MAP_ANONYMOUS))
            continue
        try:
            rules.add_rule(seccomp.ALLOW, name)
        except (ValueError, RuntimeError, OSError):  # not a system call of this architecture
            continue
    for command in FCNTL_COMMANDS:
        rules.add_rule(seccomp.ALLOW, "fcntl", seccomp.Arg(1, seccomp.EQ, command))
    for family in SOCKET_FAMILIES:
        rules.add_rule(seccomp.ALLOW, "socket", seccomp.Arg(0, seccomp.EQ, family))
    rules.add_rule(seccomp.ALLOW, "socketpair", seccomp.Arg(0, seccomp.EQ, 1))
    rules.add_rule(seccomp.ALLOW, "prlimit64", seccomp.Arg(2, seccomp.EQ, 0))  # reads only (getrlimit)
    namespaces = sum(CLONE_NEW.values())
    rules.add_rule(seccomp.ALLOW, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, namespaces, 0))
    try:
        rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    except (ValueError, RuntimeError, OSError):
        pass
    with tempfile.TemporaryFile() as f:
        rules.export_bpf(f)
        f.seek(0)
        program = f.read()
    if not program or len(program) % 8:
        raise Unavailable("libseccomp produced no filter program")
    return program


_CACHE: dict = {}


def program(file_exec: bool = True) -> bytes:
    """compile_filter(file_exec), once per process."""
    key = "bpf" if file_exec else "bpf-no-file-exec"
    if key not in _CACHE:
        _CACHE[key] = compile_filter(file_exec)
    return _CACHE[key]


def install(bpf):
    """Install a compiled program on the calling thread (child side, after no_new_privs)."""
    import ctypes

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(bpf, len(bpf))
    prog = SockFprog(len(bpf) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"seccomp filter not installed: {os.strerror(ctypes.get_errno())}")
