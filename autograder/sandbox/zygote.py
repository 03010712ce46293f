"""The fork server: imports torch once, then forks one isolated child per part it is asked for.

Started by client.Sandbox as `python -I -c ...` with a scrubbed environment and one end of a
socket pair (the control channel). Per "open" request:

    zygote --fork--> intermediate (new PID namespace) --fork--> child (PID 1 there, runs student code)

The child's request/reply pipes go straight to the grader (sent over the control socket), so the
grader times every answer itself and kills the child on its own clock. When the child is gone,
the zygote reports how it ended and what it printed (first 64 KiB) on the control channel.
"""
import json
import os
import shutil
import socket
import sys
import tempfile

import numpy as np  # noqa: F401  (imported once here, inherited by every child)
import torch

from autograder import protocol
from autograder.sandbox import cgroup, child, isolation

OUTPUT_CAP = 64 << 10
GROUP = None  # this server's control group (cgroup.Group), when the machine gives one


def intermediate(request, requests_r, replies_w, output_fd, status_w, zygote_pid):
    """Runs between the zygote and the child: enters a PID namespace, forks, reports, reaps."""
    isolation.die_with_parent(zygote_pid)
    in_namespace = isolation.new_pid_namespace()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            workspace, protections = isolation.enter(request, output_fd, {requests_r, replies_w}, in_namespace)
            protocol.send(replies_w, {"ready": True, "protections": protections})
            child.serve(requests_r, replies_w, workspace)
            code = 0
        except BaseException as exc:  # report the setup failure through the output capture
            try:
                os.write(2, f"sandbox setup failed: {type(exc).__name__}: {exc}\n".encode())
            except OSError:
                pass
        os._exit(code)
    os.close(requests_r)
    os.close(replies_w)
    os.write(status_w, f"{pid}\n".encode())
    _, status = os.waitpid(pid, 0)
    os.write(status_w, f"{status}\n".encode())
    os._exit(0)


def read_output(fd):
    size = os.fstat(fd).st_size
    os.lseek(fd, 0, os.SEEK_SET)
    data = os.read(fd, OUTPUT_CAP) if size else b""
    return data.decode("utf-8", "replace"), size


def open_session(control, request):
    requests_r, requests_w = os.pipe()
    replies_r, replies_w = os.pipe()
    status_r, status_w = os.pipe()
    output_fd = os.memfd_create("student-output")
    request["scratch"] = tempfile.mkdtemp(prefix="sandbox-")
    if GROUP:
        request["group"] = GROUP.set_memory(int(request["memory_mb"]) << 20)
    os.chmod(request["scratch"], 0o755)
    zygote_pid = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            control.close()
            for fd in (requests_w, replies_r, status_r):
                os.close(fd)
            intermediate(request, requests_r, replies_w, output_fd, status_w, zygote_pid)
        finally:
            os._exit(1)
    for fd in (requests_r, replies_w, status_w):
        os.close(fd)
    with os.fdopen(status_r) as status:
        child_pid = int(status.readline() or 0)
        opened = protocol.pack({"opened": True, "pid": child_pid})
        socket.send_fds(control, [opened], [requests_w, replies_r])
        os.close(requests_w)
        os.close(replies_r)
        os.waitpid(pid, 0)
        line = status.readline().strip()
    wait_status = int(line) if line else None
    output, size = read_output(output_fd)
    os.close(output_fd)
    shutil.rmtree(request["scratch"], ignore_errors=True)
    end = {"ended": True, "output": output, "output_bytes": size}
    if wait_status is not None:
        end["exitcode"] = os.waitstatus_to_exitcode(wait_status)
    protocol.send(control.fileno(), end)


def warm_up():
    """Run once here what every child's first calls would otherwise pay for again: the lazy
    imports and first-use set-up inside torch and NumPy (modules, dropout, autograd, state
    dicts, einsum). Forked children inherit the result. Touches nothing of the project."""
    nn = torch.nn
    layer = nn.Sequential(nn.Linear(4, 4, bias=False), nn.Dropout(0.5), nn.Linear(4, 4))
    layer.register_buffer("mask", torch.triu(torch.ones(3, 3), diagonal=1))
    x = torch.rand(2, 3, 4, dtype=torch.float64).float()
    scores = (x @ x.transpose(1, 2)).masked_fill(layer.mask.bool(), -torch.inf)
    weights = torch.softmax(scores / 2**0.5, dim=-1)
    out = layer(weights @ x).view(2, 3, 2, 2).transpose(1, 2).contiguous().reshape(2, 3, 4)
    out = out + torch.einsum("btd,bsd->bts", x, x).sum() + nn.functional.scaled_dot_product_attention(x, x, x)
    out.sum().backward()
    layer.load_state_dict(layer.state_dict())
    layer.eval()
    with torch.no_grad():
        layer(x)
    array = np.random.rand(3, 4)
    np.einsum("ij,kj->ik", array, array).max(axis=-1, keepdims=True)
    np.testing.assert_allclose(array, array)
    torch.manual_seed(0)


def join_group():
    """This fork server joins a control group of its own, once: every child is then born inside it
    (moving a process between groups costs ~10 ms, too much for every part). The grader removes it."""
    global GROUP
    # 1 GiB until the first part sets its own; 16 processes more for this server's threads
    group = cgroup.make(f"{cgroup.PREFIX}{os.getpid()}", 1 << 30, isolation.PROCESSES + 16)
    try:
        if group:
            group.join()
            GROUP = group
    except OSError:
        pass
    return group.folders if group else []


def main(control_fd, grader_pid):
    isolation.die_with_parent(grader_pid)
    torch.set_num_threads(1)
    warm_up()
    control = socket.socket(fileno=control_fd)
    protocol.send(control_fd, {"ready": True, "torch": torch.__version__, "python": sys.version.split()[0],
                               "groups": join_group()})
    while True:
        try:
            request, _ = protocol.receive(control_fd)
        except protocol.ProtocolError:
            return
        if request.get("op") == "open":
            open_session(control, request)
        elif request.get("op") == "quit":
            return
        else:
            protocol.send(control_fd, {"error": f"unknown request {json.dumps(request)[:100]}"})
