"""Headless Chromium for the tests of the HTML pages, driven over the DevTools protocol on a pipe.

One browser per test module (a module-scoped fixture holds it): `Browser()` starts Debian's
`chromium` headless with a new empty profile, no GPU, no sandbox (the tests may run as root), no
background networking, component updates, sync or first-run pages, and `--remote-debugging-pipe`:
the protocol's JSON messages, each ended by a NUL byte, go in on the browser's file descriptor 3 and
come back on 4. Nothing listens on a port. `Browser.open(url, width)` loads a page in a new tab of
that width and returns a Tab that can evaluate JavaScript (the protocol's evaluation is not subject
to the page's Content-Security-Policy, so pages that run no script can still be measured), read
the accessibility tree (what a screen reader gets) and list what the page logged to the console
(console calls, uncaught exceptions, the browser's own log: blocked loads, CSP violations).

    CHROMIUM          the browser's path, or None (tests skip, saying so)
    SKIP_REASON       why they skip
"""
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SKIP_REASON = ("headless Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it where "
               "apt-get is available)")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
         "--remote-debugging-pipe", "about:blank")
WAIT = 120  # seconds any one reply may take on a loaded machine (nothing here is timed)


class BrowserError(RuntimeError):
    pass


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        to_browser, self._in = os.pipe()    # we write commands; the browser reads them on fd 3
        self._out, from_browser = os.pipe()  # the browser writes replies on fd 4; we read them
        to_browser, from_browser = _above_4(to_browser), _above_4(from_browser)  # so that placing them moves no other

        # bash (dash takes one-digit descriptors only) puts the two ends where the protocol expects them
        # (3 and 4), then becomes the browser
        place = f'exec 3<&{to_browser} 4>&{from_browser} {to_browser}<&- {from_browser}>&-; exec "$@"'
        try:
            self.process = subprocess.Popen(
                ["/bin/bash", "-c", place, "bash", CHROMIUM, *FLAGS[:-1], f"--user-data-dir={self.profile}", FLAGS[-1]],
                pass_fds=(to_browser, from_browser), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, env={**os.environ, "HOME": self.profile})
        except OSError:
            for fd in (to_browser, from_browser, self._in, self._out):
                os.close(fd)
            shutil.rmtree(self.profile, ignore_errors=True)
            raise
        os.close(to_browser)
        os.close(from_browser)
        self._buffer, self._next, self.events = b"", 0, []

    def send(self, method, params=None, session=None):
        """The result of one protocol command (events that arrive meanwhile are kept in self.events)."""
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._in, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method, session, timeout=WAIT):
        """The first event `method` of the session (kept or still to come)."""
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events:
                if event.get("method") == method and event.get("sessionId") == session:
                    return event
            if time.monotonic() > deadline:
                raise BrowserError(f"no {method} within {timeout} s")
            self.events.append(self._receive(deadline - time.monotonic()))

    def _receive(self, timeout=WAIT):
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._out], [], [], max(0.1, timeout))
            if not ready:
                raise BrowserError(f"Chromium said nothing for {timeout:.0f} s")
            chunk = os.read(self._out, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium closed its pipe (exit status {self.process.poll()})")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def open(self, url, width=1280, height=800):
        """A new tab of the given size with `url` loaded (its load event fired)."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        tab = Tab(self, target, session)
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                         "mobile": False}, session)
        self.send("Page.navigate", {"url": url}, session)
        self.wait_for("Page.loadEventFired", session)
        return tab

    def close(self):
        try:
            self.send("Browser.close")
        except (BrowserError, OSError):
            pass
        for fd in (self._in, self._out):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def _above_4(fd):
    """The same pipe end as a descriptor above 4 (the one given is closed)."""
    import fcntl

    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class Tab:
    def __init__(self, browser, target, session):
        self.browser, self.target, self.session = browser, target, session

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        reply = self.browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                       "awaitPromise": True}, self.session)
        if "exceptionDetails" in reply:
            raise BrowserError(f"{expression[:80]}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def console(self):
        """What the page logged: ['level: text'] of console calls, uncaught exceptions and the browser's
        own log entries (blocked loads, Content-Security-Policy violations) for this tab."""
        self.evaluate("0")  # a round trip, so that what the page logged while loading has arrived
        said = []
        for event in self.browser.events:
            if event.get("sessionId") != self.session:
                continue
            params = event.get("params", {})
            if event.get("method") == "Log.entryAdded":
                entry = params["entry"]
                said.append(f"{entry.get('level')}: {entry.get('text')}" + (f" ({entry['url']})" if entry.get("url") else ""))
            elif event.get("method") == "Runtime.consoleAPICalled":
                said.append(f"{params.get('type')}: " + " ".join(str(a.get("value", a.get("description", "")))
                                                                  for a in params.get("args", [])))
            elif event.get("method") == "Runtime.exceptionThrown":
                said.append(f"exception: {params['exceptionDetails'].get('text')}")
        return said

    def accessible(self):
        """[(role, name)] of the page's accessibility tree, in order, without nodes that say nothing."""
        nodes = self.browser.send("Accessibility.getFullAXTree", session=self.session)["nodes"]
        found = []
        for node in nodes:
            if node.get("ignored"):
                continue
            role = (node.get("role") or {}).get("value", "")
            name = (node.get("name") or {}).get("value", "")
            if name and role not in ("StaticText", "InlineTextBox"):
                found.append((role, name))
        return found

    def overflow(self):
        """How many CSS pixels the page is wider than its window (0: it fits)."""
        return self.evaluate("Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
                             " - window.innerWidth")

    def images(self):
        """[(alt, naturalWidth, naturalHeight)] of every image, once each has been decoded (or failed)."""
        return self.evaluate("Promise.all(Array.from(document.images).map(i => i.decode().then(() => 0, () => 0)"
                             ".then(() => [i.alt, i.naturalWidth, i.naturalHeight])))")

    def close(self):
        self.browser.send("Target.closeTarget", {"targetId": self.target})
