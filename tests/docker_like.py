"""python tests/docker_like.py COMMAND...: run COMMAND as Docker runs a container's processes.

Root, but with the capabilities Docker drops by default removed from the bounding set (so
COMMAND, after execve, has only Docker's default set: no CAP_SYS_ADMIN), and a seccomp filter
that refuses what Docker's default profile refuses to such a process: unshare, setns, mount,
umount2, pivot_root, clone with any namespace flag (EPERM) and clone3 (ENOSYS, so that libc
falls back to clone). Everything else is allowed. Used by tests/test_container_mode.py.
"""
import ctypes
import errno
import os
import sys

import pyseccomp as seccomp

PR_CAPBSET_DROP = 24
# Docker's default capabilities: chown, dac_override, fowner, fsetid, kill, setgid, setuid, setpcap,
# net_bind_service, net_raw, sys_chroot, mknod, audit_write, setfcap
DOCKER_KEEPS = {0, 1, 3, 4, 5, 6, 7, 8, 10, 13, 18, 27, 29, 31}
LAST_CAP = 40
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)


def refuse_namespaces():
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    rules.set_attr(seccomp.Attr.CTL_NNP, 0)  # as Docker: no_new_privs is not forced on the container
    for name in ("unshare", "setns", "mount", "umount2", "pivot_root"):
        rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
    for flag in NAMESPACE_FLAGS:
        rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    rules.load()  # while CAP_SYS_ADMIN is still held: no no_new_privs needed


def drop_capabilities():
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(LAST_CAP + 1):
        if cap not in DOCKER_KEEPS and libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 \
                and ctypes.get_errno() != errno.EINVAL:  # EINVAL: a capability this kernel does not have
            raise OSError(ctypes.get_errno(), f"cannot drop capability {cap}")


if __name__ == "__main__":
    refuse_namespaces()
    drop_capabilities()
    os.execvp(sys.argv[1], sys.argv[1:])
