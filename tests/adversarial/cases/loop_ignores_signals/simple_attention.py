"""Attack: never return. Ignores (and blocks) SIGALRM, SIGTERM, SIGINT, SIGHUP, SIGXCPU, and
spins in a second thread too, so that only an uncatchable kill can stop it."""
import signal
import threading

for sig in (signal.SIGALRM, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU, signal.SIGUSR1):
    signal.signal(sig, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())


def _spin():
    while True:
        pass


threading.Thread(target=_spin, daemon=True).start()
while True:
    try:
        _spin()
    except BaseException:  # noqa: BLE001  (nothing gets it out of the loop)
        pass
