#!/usr/bin/env python3
"""The trace page in a real browser (ctest L07_TraceBrowser.Zero3FourRanks).

Writes trace.html for a frames.json with `minitorch-trace DIR --html`, opens it in headless Chromium
(Debian's `chromium`, which `make deps` installs) at 1280x800, and drives it over the DevTools
protocol on a pipe (--remote-debugging-pipe: fd 3 in, fd 4 out, NUL-separated JSON), so that nothing
beyond Python's standard library is needed. It:

  - clicks the page's own "next" button (a real mouse click at the button's position) through every
    frame, checking #frame-index after each click, then uses Home / End / ArrowLeft on the keyboard;
  - checks at a chosen frame that every shard bar's data-owner is the rank whose shard of its bucket
    holds it (computed here from frames.json, independently of the page's script), and that each held
    range of each rank is drawn exactly;
  - fails on any console error or uncaught exception;
  - saves a screenshot of the chosen frame (--screenshot, build/trace-screenshot.png under ctest).

Exit 0 when all holds; 1 with "error: ..." lines otherwise, "error: chromium not found ... run `make deps`"
when there is no browser: this test never skips.
"""
import argparse
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

DEADLINE_S = 60


def die(msg):
    print("error: " + msg, flush=True)
    sys.exit(1)


class Browser:
    """Chromium with its DevTools protocol on a pipe; one page target attached (flat sessions)."""

    def __init__(self, exe, width, height):
        self.profile = tempfile.mkdtemp(prefix="mt-chromium-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def child_fds():  # the child's fd 3 reads our commands, fd 4 writes its replies
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        # --no-sandbox: Chromium refuses to start as root with its sandbox, and containers often lack the
        # user namespaces it needs; the page is our own local file.
        args = [exe, "--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size={width},{height}",
                "--remote-debugging-pipe", f"--user-data-dir={self.profile}", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--mute-audio", "--hide-scrollbars", "about:blank"]
        # its chatter (dbus, GPU) goes to a file: a pipe nobody reads could fill and stall it
        self.log = open(os.path.join(self.profile, "chromium.log"), "w+b")
        self.proc = subprocess.Popen(args, preexec_fn=child_fds, pass_fds=(3, 4),
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None

    def close(self):
        try:
            self.send_raw({"id": 999999, "method": "Browser.close"})
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.to_chrome, self.from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def send_raw(self, msg):
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")

    def read_message(self, timeout):
        end = time.time() + timeout
        while b"\0" not in self.buf:
            left = end - time.time()
            if left <= 0:
                raise TimeoutError("no reply from chromium")
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if ready:
                chunk = os.read(self.from_chrome, 1 << 20)
                if not chunk:
                    self.log.seek(0)
                    err = self.log.read().decode(errors="replace")[-2000:]
                    raise RuntimeError("chromium closed its DevTools pipe" + (": " + err if err else ""))
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=True, timeout=15):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        self.send_raw(msg)
        while True:
            reply = self.read_message(timeout)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method, timeout=15):
        end = time.time() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e["method"] == method:
                    return self.events.pop(i)
            self.events.append(self.read_message(max(0.01, end - time.time())))

    def attach_page(self):
        targets = self.call("Target.getTargets", session=False)["targetInfos"]
        pages = [t for t in targets if t["type"] == "page"]
        target = pages[0]["targetId"] if pages else self.call("Target.createTarget", {"url": "about:blank"},
                                                              session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]

    def js(self, expression):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"page script failed: {expression[:80]}: {r['exceptionDetails'].get('text')} "
                               f"{r['exceptionDetails'].get('exception', {}).get('description', '')}")
        return r["result"].get("value")

    def click(self, x, y):
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            p = {"type": kind, "x": x, "y": y}
            if kind != "mouseMoved":
                p.update(button="left", clickCount=1)
            self.call("Input.dispatchMouseEvent", p)

    def key(self, key, code, keycode):
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": code,
                                                 "windowsVirtualKeyCode": keycode})

    def console_errors(self):
        """Console errors and exceptions among the events read so far."""
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description", "")))
                                                                    for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("exception: " + d.get("text", "") + " " + d.get("exception", {}).get("description", ""))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log: " + p["entry"].get("text", "") + " " + p["entry"].get("url", ""))
        return out


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def expected_owner(doc, x):
    n = doc["run"]["world_size"]
    for bk in doc["space"]["buckets"]:
        if bk["begin"] <= x < bk["end"]:
            size = bk["end"] - bk["begin"]
            for r in range(n):
                if x < bk["begin"] + (r + 1) * size // n:
                    return r
    return None


def check_owners(b, doc, frame):
    """Every drawn piece has the owner frames.json implies; the pieces of each rank and kind cover
    exactly the held ranges with their states; the rank's own shards are 'shard' where ZeRO-3 keeps them."""
    segs = b.js("""[...document.querySelectorAll('rect.seg')].map(e => ({rank: +e.dataset.rank, kind: e.dataset.kind,
        begin: +e.dataset.begin, end: +e.dataset.end, owner: +e.dataset.owner, state: e.dataset.state}))""")
    problems = []
    if not segs:
        return ["no rect.seg on the page"]
    for s in segs:
        lo, hi = expected_owner(doc, s["begin"]), expected_owner(doc, s["end"] - 1)
        if lo != s["owner"] or hi != s["owner"]:
            problems.append(f"rank {s['rank']} {s['kind']} [{s['begin']}, {s['end']}): data-owner {s['owner']}, "
                            f"expected {lo}" + (f" to {hi}" if hi != lo else ""))
    f = doc["frames"][frame]
    for rs in f["ranks"]:
        for kind in ("params", "grads", "optim"):
            drawn = sorted((s["begin"], s["end"], s["state"]) for s in segs if s["rank"] == rs["rank"] and s["kind"] == kind)
            merged = []
            for a, z, st in drawn:
                if merged and merged[-1][1] == a and merged[-1][2] == st:
                    merged[-1] = (merged[-1][0], z, st)
                else:
                    merged.append((a, z, st))
            want = []
            for r in rs[kind]:
                if want and want[-1][1] == r["begin"] and want[-1][2] == r["state"]:
                    want[-1] = (want[-1][0], r["end"], r["state"])
                else:
                    want.append((r["begin"], r["end"], r["state"]))
            if merged != want:
                problems.append(f"rank {rs['rank']} {kind}: drawn {merged[:4]}..., frames.json says {want[:4]}...")
    own = [s for s in segs if s["state"] == "shard" and s["owner"] != s["rank"]]
    if own:
        problems.append(f"{len(own)} pieces in state 'shard' drawn on a rank that does not own them: {own[:2]}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace-bin", required=True, help="build/bin/minitorch-trace")
    ap.add_argument("--frames", required=True, help="the frames.json to show")
    ap.add_argument("--work", required=True, help="a directory for frames.json and trace.html (recreated)")
    ap.add_argument("--screenshot", required=True, help="where to save the PNG of the chosen frame")
    ap.add_argument("--frame", type=int, default=None, help="the frame (0-based) to check and shoot; default: "
                    "the first all-gather of a block")
    args = ap.parse_args()
    started = time.time()

    exe = find_chromium()
    if not exe:
        die("chromium not found (the trace page's browser test needs Debian's chromium): run `make deps`")
    with open(args.frames) as fh:
        doc = json.load(fh)
    total = len(doc["frames"])
    chosen = args.frame
    if chosen is None:
        chosen = next((i for i, f in enumerate(doc["frames"]) if f.get("collective") and f["collective"]["op"] ==
                       "all_gather" and f["collective"].get("bucket") not in (None, 0)), total // 2)

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    shutil.copyfile(args.frames, os.path.join(args.work, "frames.json"))
    r = subprocess.run([args.trace_bin, args.work, "--html"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        die(f"minitorch-trace --html failed ({r.returncode}): {r.stdout}{r.stderr}")
    page = os.path.abspath(os.path.join(args.work, "trace.html"))

    b = Browser(exe, 1280, 800)
    failures = []
    try:
        b.attach_page()
        for domain in ("Runtime", "Log", "Page"):
            b.call(domain + ".enable")
        b.call("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 800, "deviceScaleFactor": 1,
                                                      "mobile": False})
        b.call("Page.navigate", {"url": "file://" + page})
        b.wait_event("Page.loadEventFired")

        def index():
            return b.js("+document.getElementById('frame-index').dataset.index")

        shown = b.js("document.getElementById('frame-index').textContent")
        if index() != 0 or shown.replace(" ", "") != f"1/{total}":
            failures.append(f"the page opens at {shown!r}, expected frame 1 / {total}")
        rect = b.js("(() => { const r = document.getElementById('btn-next').getBoundingClientRect();"
                    " return [r.x + r.width / 2, r.y + r.height / 2, r.width, r.height]; })()")
        if rect[2] <= 0 or rect[3] <= 0 or not (0 <= rect[0] <= 1280 and 0 <= rect[1] <= 800):
            failures.append(f"the next button is not visible in 1280x800: {rect}")
        for i in range(1, total):
            b.click(rect[0], rect[1])
            if index() != i:
                failures.append(f"after {i} clicks on next the page shows frame index {index()}, expected {i}")
                break
            if i == chosen:
                problems = check_owners(b, doc, i)
                failures += [f"frame index {i}: {p}" for p in problems]
                label = b.js("document.getElementById('label').textContent")
                if label != doc["frames"][i]["label"]:
                    failures.append(f"frame index {i}: label {label!r}, expected {doc['frames'][i]['label']!r}")
                coll = b.js("document.getElementById('collective').textContent")
                c = doc["frames"][i].get("collective")
                if c and c["op"] not in coll:
                    failures.append(f"frame index {i}: #collective says {coll!r}, not the op {c['op']}")
                time.sleep(0.8)  # let the arrival animations finish before the picture
                shot = b.call("Page.captureScreenshot", {"format": "png"})
                os.makedirs(os.path.dirname(os.path.abspath(args.screenshot)), exist_ok=True)
                with open(args.screenshot, "wb") as out:
                    out.write(base64.b64decode(shot["data"]))
        b.click(rect[0], rect[1])  # at the last frame, next stays there
        if index() != total - 1:
            failures.append(f"next at the last frame moved to {index()}")
        b.key("Home", "Home", 36)
        if index() != 0:
            failures.append(f"Home shows frame index {index()}, expected 0")
        b.key("End", "End", 35)
        if index() != total - 1:
            failures.append(f"End shows frame index {index()}, expected {total - 1}")
        b.key("ArrowLeft", "ArrowLeft", 37)
        if index() != total - 2:
            failures.append(f"ArrowLeft shows frame index {index()}, expected {total - 2}")
        # scrubbing: the slider's own input event
        b.js(f"(() => {{ const s = document.getElementById('scrub'); s.value = '{chosen}';"
             " s.dispatchEvent(new Event('input')); })()")
        if index() != chosen:
            failures.append(f"the scrub slider set to {chosen} shows frame index {index()}")
        # play at 4x (a frame every 0.35 s) from the first frame, then pause with the same button
        b.key("Home", "Home", 36)
        b.js("(() => { const s = document.getElementById('speed'); s.value = '4';"
             " s.dispatchEvent(new Event('change')); })()")
        play = b.js("(() => { const r = document.getElementById('btn-play').getBoundingClientRect();"
                    " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        b.click(play[0], play[1])
        time.sleep(1.0)
        b.click(play[0], play[1])
        played = index()
        time.sleep(0.5)
        if not 1 <= played <= total - 1 or index() != played:
            failures.append(f"play at 4x for 1 s then pause: frame index {played}, then {index()} (expected 2-3, then still)")
        b.js("0")  # collect the events that came meanwhile
        failures += b.console_errors()
    except (RuntimeError, TimeoutError, OSError) as e:
        failures.append(str(e))
    finally:
        b.close()

    elapsed = time.time() - started
    if elapsed > DEADLINE_S:
        failures.append(f"took {elapsed:.1f} s")
    if failures:
        for f in failures:
            print("error: " + f)
        sys.exit(1)
    print(f"trace page ok: {total} frames stepped with the page's next button, owners checked at frame "
          f"{chosen + 1} ({doc['frames'][chosen]['label']}), no console errors; screenshot {args.screenshot} "
          f"({elapsed:.1f} s)")


if __name__ == "__main__":
    main()
