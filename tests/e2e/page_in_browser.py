#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Loads pages in Debian's headless chromium and reports what a person's
browser made of them, for tests/e2e/test_metrics_page.sh. With
PAGE_SCREENSHOT=PATH:SELECTOR it also writes a PNG of the first element of
the first page that SELECTOR finds (the screenshots in docs/metrics.md;
several PATH:SELECTOR, separated by spaces, make several). With
PAGE_EVAL=EXPRESSION it evaluates EXPRESSION (JavaScript, a string its
result) in each page after its load, as a person's clicks and typing would
act, and reports the result as "eval", before the screenshots.

    page_in_browser.py USER_DATA_DIR URL...

Prints one JSON object a URL, a line each:
  {"url": ..., "errors": [...], "charts": [{"caption": ..., "bars": [...]}],
   "elements": {"b": N, ...}, "text": ...}
errors: what the console showed as errors (uncaught exceptions,
console.error, and the browser's own: CSP violations, failed loads);
charts: each <figure>'s caption and the <title> of each of its <rect>s;
elements: how many elements of each tag the document has; text: the body's
text as shown. Read from the DOM the browser built, after its load event;
errors once more after PAGE_EVAL, which may run the page's script.

The browser is driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: fd 3 in, fd 4 out, NUL-terminated JSON), so no
port and no websocket package are needed. Exits 1 when the browser does not
answer within its time."""
import base64
import json
import os
import select
import signal
import sys
import time

DEADLINE = 30  # seconds for everything

QUERY = """JSON.stringify({
  charts: [...document.querySelectorAll('figure')].map(f => ({
    caption: (f.querySelector('figcaption') || {}).textContent || '',
    bars: [...f.querySelectorAll('rect')].map(r => (r.querySelector('title') || {}).textContent || '')})),
  elements: [...document.querySelectorAll('*')].reduce(
    (n, e) => (n[e.localName] = (n[e.localName] || 0) + 1, n), {}),
  text: document.body ? document.body.innerText : ''})"""


class Browser:
    def __init__(self, user_data_dir):
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()
        args = ["chromium", "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--remote-debugging-pipe", "--user-data-dir=" + user_data_dir, "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # chromium's sandbox refuses root
        log = os.open(os.path.join(user_data_dir, "browser.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        # Its singleton socket goes below TMPDIR and outlives a SIGKILL
        # (close()): in the user data directory, the test removes it.
        env = dict(os.environ, TMPDIR=user_data_dir)
        self.pid = os.posix_spawnp("chromium", args, env, file_actions=[
            (os.POSIX_SPAWN_DUP2, to_browser_r, 3), (os.POSIX_SPAWN_DUP2, from_browser_w, 4),
            (os.POSIX_SPAWN_DUP2, log, 1), (os.POSIX_SPAWN_DUP2, log, 2)], setsid=True)
        for fd in (to_browser_r, from_browser_w, log):
            os.close(fd)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.end = time.monotonic() + DEADLINE

    def close(self):
        # The browser and its helpers are in their own session (setsid).
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)

    def message(self):
        while b"\0" not in self.buf:
            left = self.end - time.monotonic()
            if left <= 0 or not select.select([self.from_browser], [], [], left)[0]:
                raise TimeoutError("the browser did not answer in time")
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise EOFError("the browser closed its pipe")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_browser, json.dumps(msg).encode() + b"\0")
        while True:
            m = self.message()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method):
        while True:
            for i, m in enumerate(self.events):
                if m.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self.message())


def error_of(event):
    """The console error an event carries, or None."""
    method, p = event.get("method"), event.get("params", {})
    if method == "Runtime.exceptionThrown":
        d = p.get("exceptionDetails", {})
        return "exception: " + d.get("exception", {}).get("description", d.get("text", ""))
    if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
        return "console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description", "")))
                                                         for a in p.get("args", []))
    if method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
        e = p["entry"]
        return f"{e.get('source')}: {e.get('text')} {e.get('url', '')}".strip()
    return None


def load(browser, session, url):
    browser.events.clear()
    browser.call("Page.navigate", {"url": url}, session)
    browser.wait_event("Page.loadEventFired")
    # Errors reported just after the load event (late console messages).
    settle = time.monotonic() + 0.5
    while time.monotonic() < settle:
        if select.select([browser.from_browser], [], [], max(0.0, settle - time.monotonic()))[0] or \
                b"\0" in browser.buf:
            browser.events.append(browser.message())
    dom = browser.call("Runtime.evaluate", {"expression": QUERY, "returnByValue": True}, session)
    report = {"url": url, **json.loads(dom["result"]["value"])}
    act = os.environ.get("PAGE_EVAL")
    if act:
        result = browser.call("Runtime.evaluate", {"expression": act, "returnByValue": True}, session)
        report["eval"] = result.get("result", {}).get("value")
        if "exceptionDetails" in result:
            report["eval"] = "exception: " + result["exceptionDetails"].get("exception", {}).get("description", "")
    report["errors"] = [e for e in map(error_of, browser.events) if e]
    return report


def screenshot(browser, session, spec):
    """PATH:SELECTOR: a PNG of the first element SELECTOR finds, for the docs."""
    path, selector = spec.rsplit(":", 1)
    box = browser.call("Runtime.evaluate", {"expression": "JSON.stringify((r => ({x: r.x, y: r.y + scrollY, "
                       "width: r.width, height: r.height}))(document.querySelector(" + json.dumps(selector) +
                       ").getBoundingClientRect()))", "returnByValue": True}, session)
    clip = dict(json.loads(box["result"]["value"]), scale=1)
    shot = browser.call("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True},
                        session)
    with open(path, "wb") as f:
        f.write(base64.b64decode(shot["data"]))


def main():
    user_data_dir, urls = sys.argv[1], sys.argv[2:]
    shot = os.environ.get("PAGE_SCREENSHOT")  # PATH:SELECTOR ..., of the first URL
    browser = Browser(user_data_dir)
    try:
        page = next(t for t in browser.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        session = browser.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            browser.call(domain + ".enable", {}, session)
        for i, url in enumerate(urls):
            print(json.dumps(load(browser, session, url)), flush=True)
            if shot and i == 0:
                for spec in shot.split():
                    screenshot(browser, session, spec)
    except (TimeoutError, EOFError, RuntimeError, StopIteration) as e:
        print(f"page_in_browser: {e!r}", file=sys.stderr)
        return 1
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
