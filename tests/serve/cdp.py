"""A small Chromium driver over the DevTools protocol, stdlib only, for the tests of `harnessctl serve` and
bench/run.

Chromium runs headless with `--remote-debugging-pipe`: it reads commands on its fd 3 and writes answers and
events on its fd 4, each message one JSON text ended by a NUL byte.  A pipe needs no port (nothing to race
for, nothing another user on the machine can reach) and ends with us: when this process dies, Chromium reads
end-of-file and exits.  The pipe ends are put on fds 3 and 4 by os.posix_spawn's file actions, since
subprocess.Popen can keep fds open (pass_fds) but not renumber them without a preexec_fn.

It imports nothing from pytest, so the bench can use it too."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import signal
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional

START_SECONDS = 30.0  # Chromium's first start on a cold disk takes a few seconds
COMMAND_SECONDS = 30.0
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--remote-debugging-pipe"]  # no scrollbar in the pictures
CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> Optional[str]:
    """$HARNESSCTL_CHROMIUM, else the first of chromium, chromium-browser, google-chrome on PATH; None when
    there is none."""
    named = os.environ.get("HARNESSCTL_CHROMIUM")
    if named:
        return shutil.which(named)
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def missing() -> Optional[str]:
    """Why no Chromium can start here, or None when one can."""
    named = os.environ.get("HARNESSCTL_CHROMIUM")
    if named and not shutil.which(named):
        return "$HARNESSCTL_CHROMIUM (%s) not found" % named
    if not find_chromium():
        return "no Chromium: none of %s on PATH (the distribution's chromium package)" % ", ".join(CANDIDATES)
    return None


class CdpError(Exception):
    """Chromium refused a command (its error answer), or it is gone."""


class PageError(Exception):
    """The page threw while evaluating an expression; the message is the exception's text."""


class Browser:
    """One headless Chromium with a fresh profile in a temporary folder, both gone after close()."""

    def __init__(self, path: Optional[str] = None, flags: Optional[List[str]] = None) -> None:
        chromium = path or find_chromium()
        if not chromium:
            raise CdpError("no Chromium found (set HARNESSCTL_CHROMIUM or put chromium on PATH)")
        self.folder = tempfile.mkdtemp(prefix="harnessctl-chromium-")
        self.log = os.path.join(self.folder, "chromium.log")
        self._lock = threading.Condition()
        self._answers: Dict[int, Dict[str, Any]] = {}
        self._events: List[Dict[str, Any]] = []
        self._next_id = 0
        self._gone = False
        self._write_lock = threading.Lock()
        self.pid = 0
        self._reader: Optional[threading.Thread] = None
        try:
            self._spawn(chromium, flags or [])
            self._reader = threading.Thread(target=self._read, name="cdp-reader", daemon=True)
            self._reader.start()
            self.version = self.send("Browser.getVersion", timeout=START_SECONDS)["product"]
        except BaseException:
            self.close()
            raise

    def _spawn(self, chromium: str, flags: List[str]) -> None:
        """Start Chromium in its own session (close() kills its whole process group: the zygote and the
        renderers too) with our pipes on its fds 3 and 4, stdout and stderr in the log."""
        to_chromium, self._out = os.pipe()
        self._in, from_chromium = os.pipe()
        # The child's ends are first moved to fds >= 5, so that neither dup2 below overwrites the other's
        # source, nor is a no-op dup2 that would leave the fd close-on-exec.
        child_in = fcntl.fcntl(to_chromium, fcntl.F_DUPFD_CLOEXEC, 5)
        child_out = fcntl.fcntl(from_chromium, fcntl.F_DUPFD_CLOEXEC, 5)
        os.close(to_chromium)
        os.close(from_chromium)
        argv = [chromium] + FLAGS + ["--user-data-dir=" + os.path.join(self.folder, "profile")] + flags
        argv.append("about:blank")
        try:
            self.pid = os.posix_spawn(chromium, argv, self._environment(), file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
                (os.POSIX_SPAWN_DUP2, 1, 2),
                (os.POSIX_SPAWN_DUP2, child_in, 3),
                (os.POSIX_SPAWN_DUP2, child_out, 4),
            ], setsid=True, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))  # Python ignores SIGPIPE; exec keeps that
        finally:
            os.close(child_in)
            os.close(child_out)

    def _environment(self) -> Dict[str, str]:
        """Ours, with HOME and TMPDIR in the browser's own folder: Chromium writes ~/.config, ~/.cache and a
        folder in the temporary directory at each start, and close() removes them all."""
        env = {name: value for name, value in os.environ.items() if not name.startswith("XDG_")}
        env["HOME"] = env["TMPDIR"] = self.folder
        return env

    def _read(self) -> None:
        """Split Chromium's output into messages: answers by id, events in arrival order."""
        pending = b""
        while True:
            try:
                chunk = os.read(self._in, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            pending += chunk
            *messages, pending = pending.split(b"\0")
            with self._lock:
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        self._answers[message["id"]] = message
                    else:
                        self._events.append(message)
                self._lock.notify_all()
        with self._lock:
            self._gone = True
            self._lock.notify_all()

    def send(self, method: str, params: Optional[Dict[str, Any]] = None, session: Optional[str] = None,
             timeout: float = COMMAND_SECONDS) -> Dict[str, Any]:
        """Send one command (to a page's session when given) and return its result; CdpError for an error
        answer, a Chromium that is gone, or no answer within `timeout` seconds."""
        with self._lock:
            self._next_id += 1
            ident = self._next_id
        message: Dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        with self._write_lock:
            try:
                while data:
                    data = data[os.write(self._out, data):]
            except OSError as e:
                raise CdpError("%s: Chromium is gone (%s)%s" % (method, e, self._log_tail())) from None
        with self._lock:
            if not self._lock.wait_for(lambda: ident in self._answers or self._gone, timeout):
                raise CdpError("%s: no answer within %s s" % (method, timeout))
            answer = self._answers.pop(ident, None)
        if answer is None:
            raise CdpError("%s: Chromium is gone%s" % (method, self._log_tail()))
        if "error" in answer:
            raise CdpError("%s: %s" % (method, answer["error"].get("message", answer["error"])))
        return answer.get("result", {})

    def mark(self) -> int:
        """A position in the event list: wait_event(..., since=mark) sees only events after it."""
        with self._lock:
            return len(self._events)

    def events(self, session: Optional[str] = None, since: int = 0) -> List[Dict[str, Any]]:
        """The events received so far (of one page's session when given)."""
        with self._lock:
            return [e for e in self._events[since:] if session is None or e.get("sessionId") == session]

    def wait_event(self, method: str, session: Optional[str] = None, since: int = 0,
                   timeout: float = COMMAND_SECONDS) -> Dict[str, Any]:
        """The first event `method` (of the session) after position `since`, waiting for it up to `timeout`."""
        def find() -> Optional[Dict[str, Any]]:
            for event in self._events[since:]:
                if event.get("method") == method and (session is None or event.get("sessionId") == session):
                    return event
            return None

        with self._lock:
            found = self._lock.wait_for(lambda: find() or self._gone, timeout)
            event = find()
        if event is None:
            raise CdpError("no %s within %s s%s" % (method, timeout, " (Chromium is gone)" if found else ""))
        return event

    def new_page(self, width: int = 1200, height: int = 800) -> Page:
        """A new tab with a viewport of width x height CSS pixels."""
        return Page(self, width, height)

    def _log_tail(self) -> str:
        try:
            with open(self.log, errors="replace") as f:
                tail = f.read()[-2000:].strip()
        except OSError:
            return ""
        return "; its log ends:\n" + tail if tail else ""

    def close(self) -> None:
        """Kill Chromium's process group, reap it, and remove the profile folder."""
        if self.pid:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            self.pid = 0
        if hasattr(self, "_out"):
            os.close(self._out)
            del self._out
        # The reader ends at the end of the file that Chromium's death makes; its fd is closed only then, so
        # that a read never lands on another file that reused the number.
        if self._reader:
            self._reader.join(5)
        if hasattr(self, "_in") and not (self._reader and self._reader.is_alive()):
            os.close(self._in)
            del self._in
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Page:
    """One tab, attached with its own session (flatten mode: every command carries the sessionId)."""

    def __init__(self, browser: Browser, width: int = 1200, height: int = 800) -> None:
        self.browser = browser
        self.target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = browser.send("Target.attachToTarget", {"targetId": self.target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(domain + ".enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def send(self, method: str, params: Optional[Dict[str, Any]] = None,
             timeout: float = COMMAND_SECONDS) -> Dict[str, Any]:
        """A command to this page's session."""
        return self.browser.send(method, params, self.session, timeout)

    def goto(self, url: str, timeout: float = COMMAND_SECONDS) -> None:
        """Navigate and return once the page's load event has fired (its scripts ran, its images loaded)."""
        since = self.browser.mark()
        result = self.send("Page.navigate", {"url": url}, timeout)
        if result.get("errorText"):
            raise CdpError("%s: %s" % (url, result["errorText"]))
        self.browser.wait_event("Page.loadEventFired", self.session, since, timeout)

    def evaluate(self, expression: str, timeout: float = COMMAND_SECONDS) -> Any:
        """The expression's value (JSON-able values only; a promise is awaited); PageError with the
        exception's text when it throws."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True, "userGesture": True}, timeout)
        if "exceptionDetails" in result:
            raise PageError(_exception_text(result["exceptionDetails"]))
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 10.0) -> Any:
        """Evaluate the expression until it is truthy and return that value; TimeoutError after `timeout`
        seconds, naming the last value or exception.  An expression that throws (its element is not there
        yet) counts as not yet."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                last: Any = self.evaluate(expression, max(deadline - time.monotonic(), 1.0))
                if last:
                    return last
            except (PageError, CdpError) as e:  # CdpError: the context went away in a navigation
                last = e
            if time.monotonic() >= deadline:
                raise TimeoutError("%s still not truthy after %s s (last: %r)" % (expression, timeout, last))
            time.sleep(0.02)

    def _element(self, selector: str, then: str) -> Any:
        """Evaluate `then` (a function body with `el`, the element matching the selector)."""
        return self.evaluate("(() => { const el = document.querySelector(%s); if (!el) throw new Error("
                             "'no element matches ' + %s); %s })()" % (json.dumps(selector), json.dumps(selector),
                                                                       then))

    def click(self, selector: str) -> None:
        """Click the element's centre with the mouse, as a person would: scrolled into view, and refused
        (PageError) when another element covers that point or the element has no size."""
        x, y = self._element(selector, """
            el.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
            const box = el.getBoundingClientRect();
            if (!box.width || !box.height) throw new Error('the element has no size (hidden?)');
            const x = box.left + box.width / 2, y = box.top + box.height / 2;
            const hit = document.elementFromPoint(x, y);
            if (!hit || !(hit === el || el.contains(hit)))
                throw new Error('another element covers its centre: ' + (hit ? hit.outerHTML.slice(0, 200) : 'none'));
            return [x, y];""")
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def type(self, selector: str, text: str) -> None:
        """Focus the element and insert the text after what it holds, as typed input (the page sees input
        events)."""
        self._element(selector, """
            el.focus();
            if (document.activeElement !== el) throw new Error('the element takes no focus');
            try { el.setSelectionRange(el.value.length, el.value.length); } catch (e) {}  // not every input has one
            return true;""")
        self.send("Input.insertText", {"text": text})

    def screenshot(self, path: str, full_page: bool = False) -> None:
        """Write a PNG of the viewport (or of the whole page) to `path`."""
        params: Dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params["captureBeyondViewport"] = True
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        data = base64.b64decode(self.send("Page.captureScreenshot", params)["data"])
        with open(path, "wb") as f:
            f.write(data)

    def console_errors(self) -> List[str]:
        """What this page reported as an error since it opened: console.error calls, uncaught exceptions,
        and the browser's error entries (a script refused by the Content-Security-Policy, a failed load)."""
        errors = []
        for event in self.browser.events(self.session):
            params = event.get("params", {})
            if event["method"] == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                errors.append(" ".join(_remote_text(arg) for arg in params.get("args", [])))
            elif event["method"] == "Runtime.exceptionThrown":
                errors.append(_exception_text(params.get("exceptionDetails", {})))
            elif event["method"] == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                errors.append(params["entry"].get("text", ""))
        return errors

    def csp_violations(self) -> List[str]:
        """The console errors that are Content-Security-Policy refusals."""
        return [text for text in self.console_errors() if "Content Security Policy" in text]

    def close(self) -> None:
        self.browser.send("Target.closeTarget", {"targetId": self.target})

    def __enter__(self) -> Page:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _remote_text(value: Dict[str, Any]) -> str:
    """A console argument (a Runtime.RemoteObject) as text."""
    if "value" in value:
        return str(value["value"])
    return str(value.get("description", value.get("type", "")))


def _exception_text(details: Dict[str, Any]) -> str:
    """Runtime.ExceptionDetails as the console shows it: `Error: message`, else the bare text."""
    exception = details.get("exception") or {}
    return str(exception.get("description") or exception.get("value") or details.get("text", "exception"))


def first_paint_ms(page: Page, contentful: bool = False, timeout: float = 10.0) -> float:
    """Milliseconds from the start of the page's navigation to its first paint (its first contentful paint
    when `contentful`), as the page's Paint Timing entries say; waits for the entry to exist."""
    name = "first-contentful-paint" if contentful else "first-paint"
    return float(page.wait_for("(performance.getEntriesByName(%s, 'paint')[0] || {}).startTime" % json.dumps(name),
                               timeout))

