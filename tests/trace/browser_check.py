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
  - at every frame, that #step-bytes' data-bytes is the running total of the step's collectives' bytes;
    at the last frame of every step, that it is their sum and that this sum is the strategy's formula
    plus the extras docs/frames.md names (padding, persistent parameters, the norm's all-reduce),
    exactly (fractions computed here from the run's fields and the frames), as #formula says;
  - at a backward release frame (ZeRO-3: "release <unit>" in phase backward, which must exist), that
    every rank holds of the unit's parameters only its own shard and that its gradient shard is drawn
    with data-state "reducing" (its reduce-scatter in flight);
  - that the phase strip has one labelled run per run of frames of one phase;
  - that a version-1 file (no `version`: tests/trace/data/zero3_4ranks) still plays, and that a page whose
    frames are of a newer version shows one error instead;
  - fails on any console error or uncaught exception;
  - saves a screenshot of the chosen frame (--screenshot, build/trace-screenshot.png under ctest) and
    one of the backward release frame beside it (-release.png).

Exit 0 when all holds; 1 with "error: ..." lines otherwise, "error: chromium not found ... run `make deps`"
when there is no browser: this test never skips.
"""
import argparse
import base64
from fractions import Fraction
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


def expected_traffic(doc, step):
    """The step's bytes per rank by docs/frames.md ("What a step sends"), from the run's fields and the
    frames: the formula over Ψ and its extras, as exact fractions."""
    run, frames = doc["run"], [f for f in doc["frames"] if f["step"] == step]
    n, stage = run["world_size"], run.get("zero_stage", 0)
    g = run.get("gradient_accumulation_steps") or 1 + max(f.get("micro", 0) for f in frames)
    psi, numel = run["num_parameters"], doc["space"]["numel"]
    b = 4 if stage == 0 else {"f32": 4, "bf16": 2, "f16": 2}[run["dtype"]]  # DDP reduces in f32 buffers
    k = 0 if n == 1 else 2 if stage <= 1 else g + 1 if stage == 2 else 3 * g
    persistent = sum(bk["end"] - bk["begin"] for bk in doc["space"]["buckets"] if bk.get("persistent"))

    def ring(x):  # one ring pass over x elements
        return Fraction((n - 1) * x * b, n)
    # Gemini: a chunk spanning two blocks is gathered once per block, beyond ZeRO-3's two gathers per micro-step
    regather = Fraction(0)
    if run.get("strategy") == "Gemini" and n > 1:
        for i, bk in enumerate(doc["space"]["buckets"]):
            gathers = sum(1 for f in frames if (f.get("collective") or {}).get("op") == "all_gather"
                          and f["collective"].get("bucket") == i)
            if not bk.get("persistent") and gathers > 2 * g:
                regather += (gathers - 2 * g) * ring(bk["end"] - bk["begin"])
    return {"formula": k * ring(psi), "padding": k * ring(numel - psi), "regather": regather,
            "persistent": (g + 1 - 3 * g) * ring(persistent) if stage == 3 else Fraction(0),
            "norm": Fraction(sum(f["collective"]["bytes"] for f in frames
                                 if f["phase"] == "optimizer_step" and f.get("collective")))}


def check_chunks(b, doc, frame):
    """Gemini (frames version 4): one rect.chunk per rank and chunk with the unit, shard place and tensor states
    frames.json gives, an arrow (text.move) per chunk move, and #chunk-moves counting rank 0's moves."""
    f, problems = doc["frames"][frame], []
    drawn = b.js("""[...document.querySelectorAll('rect.chunk')].map(e => [+e.dataset.rank, +e.dataset.chunk,
        e.dataset.unit, e.dataset.shard, e.dataset.tensors])""")
    want = []
    for rs in f["ranks"]:
        for c, ch in enumerate(rs.get("chunks", [])):
            want.append([rs["rank"], c, ch["unit"], ch["shard"], ",".join(f"{k}:{v}" for k, v in ch["tensors"].items())])
    if sorted(drawn) != sorted(want):
        problems.append(f"rect.chunk drawn {sorted(drawn)[:3]}... ({len(drawn)}), frames.json says {sorted(want)[:3]}... "
                        f"({len(want)})")
    arrows = b.js("""[...document.querySelectorAll('text.move')].map(e => [+e.dataset.rank, +e.dataset.chunk,
        e.dataset.move])""")
    moves = [[rs["rank"], m["chunk"], m["move"]] for rs in f["ranks"] for m in rs.get("chunk_moves", [])]
    if sorted(arrows) != sorted(moves):
        problems.append(f"text.move drawn {sorted(arrows)}, frames.json's chunk_moves {sorted(moves)}")
    count = b.js("+document.getElementById('chunk-moves').dataset.count")
    rank0 = next(rs for rs in f["ranks"] if rs["rank"] == 0)
    if count != len(rank0.get("chunk_moves", [])):
        problems.append(f"#chunk-moves data-count {count}, rank 0 has {len(rank0.get('chunk_moves', []))} moves")
    return problems


def phase_runs(doc):
    """(phase, first, last) per run of frames of one phase within one step."""
    runs = []
    for i, f in enumerate(doc["frames"]):
        if runs and runs[-1][0] == f["phase"] and doc["frames"][runs[-1][2]]["step"] == f["step"]:
            runs[-1] = (runs[-1][0], runs[-1][1], i)
        else:
            runs.append((f["phase"], i, i))
    return runs


def go(b, frame):
    """Shows frame `frame` (0-based) with the scrub slider's own input event."""
    b.js(f"(() => {{ const s = document.getElementById('scrub'); s.value = '{frame}';"
         " s.dispatchEvent(new Event('input')); })()")


def check_release(b, doc, frame):
    """At a backward `release <unit>` frame: each rank's params in the unit are its own shard only, and
    its gradient shard there is drawn 'reducing'."""
    unit = doc["frames"][frame]["label"][len("release "):]
    bk = next((x for x in doc["space"]["buckets"] if x["name"] == unit), None)
    if bk is None:
        return [f"no bucket named {unit!r}"]
    n, size, problems = doc["run"]["world_size"], bk["end"] - bk["begin"], []
    segs = b.js("""[...document.querySelectorAll('rect.seg')].map(e => ({rank: +e.dataset.rank, kind: e.dataset.kind,
        begin: +e.dataset.begin, end: +e.dataset.end, owner: +e.dataset.owner, state: e.dataset.state}))""")
    for r in range(n):
        own = (bk["begin"] + r * size // n, bk["begin"] + (r + 1) * size // n)
        for kind, state in (("params", "shard"), ("grads", "reducing")):
            drawn = sorted((s["begin"], s["end"], s["state"], s["owner"]) for s in segs if s["rank"] == r and
                           s["kind"] == kind and s["end"] > bk["begin"] and s["begin"] < bk["end"])
            if drawn != [(own[0], own[1], state, r)]:
                problems.append(f"{unit}: rank {r} {kind} drawn {drawn}, expected its own shard {own} {state!r}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace-bin", required=True, help="build/bin/minitorch-trace")
    ap.add_argument("--frames", required=True, help="the frames.json to show")
    ap.add_argument("--work", required=True, help="a directory for frames.json and trace.html (recreated)")
    ap.add_argument("--screenshot", required=True, help="where to save the PNG of the chosen frame")
    ap.add_argument("--frame", type=int, default=None, help="the frame (0-based) to check and shoot; default: "
                    "the first all-gather of a block")
    ap.add_argument("--frame-label", default=None, help="instead of --frame: the first frame whose label starts with "
                    "this (\"tile 2/\": a tile of ZeRO-Infinity's step on NVMe, its staged ranges checked)")
    ap.add_argument("--v1-frames", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                                                        "zero3_4ranks", "frames.json"),
                    help="a version-1 frames.json (no `version`) the page must still play")
    args = ap.parse_args()
    started = time.time()

    exe = find_chromium()
    if not exe:
        die("chromium not found (the trace page's browser test needs Debian's chromium): run `make deps`")
    with open(args.frames) as fh:
        doc = json.load(fh)
    n_frames = len(doc["frames"])
    chosen = args.frame
    if args.frame_label is not None:
        chosen = next((i for i, f in enumerate(doc["frames"]) if f.get("label", "").startswith(args.frame_label)), None)
        if chosen is None:
            die(f"no frame's label starts with {args.frame_label!r}")
        staged = [r for rk in doc["frames"][chosen]["ranks"] for r in rk["optim"] if r["state"] == "staged"]
        if not staged:
            die(f"frame {chosen} ({doc['frames'][chosen]['label']}) stages no tile on any rank")
    if chosen is None:
        chosen = next((i for i, f in enumerate(doc["frames"]) if f.get("collective") and f["collective"]["op"] ==
                       "all_gather" and f["collective"].get("bucket") not in (None, 0)), n_frames // 2)

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    shutil.copyfile(args.frames, os.path.join(args.work, "frames.json"))
    r = subprocess.run([args.trace_bin, args.work, "--html"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        die(f"minitorch-trace --html failed ({r.returncode}): {r.stdout}{r.stderr}")
    page = os.path.abspath(os.path.join(args.work, "trace.html"))
    # the same page over a version-1 file, and over frames claiming a newer version than the page reads
    for sub in ("v1", "newer"):
        os.makedirs(os.path.join(args.work, sub))
    shutil.copyfile(args.v1_frames, os.path.join(args.work, "v1", "frames.json"))
    r = subprocess.run([args.trace_bin, os.path.join(args.work, "v1"), "--html"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        die(f"minitorch-trace --html of the version-1 sample failed ({r.returncode}): {r.stdout}{r.stderr}")
    v1_doc = json.load(open(args.v1_frames))
    with open(page) as fh:
        html = fh.read()
    at = html.find('<script type="application/json" id="frames">{')
    end = html.find("}</script>", at)
    if at < 0 or end < 0:
        die("trace.html has no embedded frames object")
    with open(os.path.join(args.work, "newer", "trace.html"), "w") as fh:  # a newer recorder's file: the last
        fh.write(html[:end] + ',"version":99' + html[end:])               # "version" is the one JSON.parse keeps

    release = next((i for i, f in enumerate(doc["frames"]) if f["phase"] == "backward" and
                    f["label"].startswith("release ")), None)
    running, step_totals = [], {}  # per frame, per step: bytes of the step's collectives
    for i, f in enumerate(doc["frames"]):
        before = running[-1] if i > 0 and doc["frames"][i - 1]["step"] == f["step"] else 0
        running.append(before + (f["collective"]["bytes"] if f.get("collective") else 0))
        step_totals[f["step"]] = (i, running[-1])

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
        if index() != 0 or shown.replace(" ", "") != f"1/{n_frames}":
            failures.append(f"the page opens at {shown!r}, expected frame 1 / {n_frames}")
        rect = b.js("(() => { const r = document.getElementById('btn-next').getBoundingClientRect();"
                    " return [r.x + r.width / 2, r.y + r.height / 2, r.width, r.height]; })()")
        if rect[2] <= 0 or rect[3] <= 0 or not (0 <= rect[0] <= 1280 and 0 <= rect[1] <= 800):
            failures.append(f"the next button is not visible in 1280x800: {rect}")
        for i in range(1, n_frames):
            b.click(rect[0], rect[1])
            if index() != i:
                failures.append(f"after {i} clicks on next the page shows frame index {index()}, expected {i}")
                break
            got = b.js("+document.getElementById('step-bytes').dataset.bytes")
            if got != running[i]:
                failures.append(f"frame index {i}: #step-bytes data-bytes {got}, the step's collectives so far "
                                f"add up to {running[i]}")
            norm = doc["frames"][i].get("collective")
            if norm and norm["begin"] == norm["end"]:  # the gradient norm's all-reduce: named, no "[0, 0)"
                words = b.js("document.getElementById('collective').textContent")
                if "gradient norm" not in words or "[" in words:
                    failures.append(f"frame index {i}: #collective says {words!r} for the norm's all-reduce")
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
        if index() != n_frames - 1:
            failures.append(f"next at the last frame moved to {index()}")
        b.key("Home", "Home", 36)
        if index() != 0:
            failures.append(f"Home shows frame index {index()}, expected 0")
        b.key("End", "End", 35)
        if index() != n_frames - 1:
            failures.append(f"End shows frame index {index()}, expected {n_frames - 1}")
        b.key("ArrowLeft", "ArrowLeft", 37)
        if index() != n_frames - 2:
            failures.append(f"ArrowLeft shows frame index {index()}, expected {n_frames - 2}")
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
        if not 1 <= played <= n_frames - 1 or index() != played:
            failures.append(f"play at 4x for 1 s then pause: frame index {played}, then {index()} (expected 2-3, then still)")
        # the step's total at its last frame: the sum of its collectives = the formula + the named extras
        if not step_totals:
            failures.append("no steps")
        for step, (last, want) in step_totals.items():
            go(b, last)
            page_bytes = b.js("+document.getElementById('step-bytes').dataset.bytes")
            shown = b.js("Object.fromEntries(Object.entries(document.getElementById('formula').dataset)"
                         ".map(([k, v]) => [k, +v]))")
            parts = expected_traffic(doc, step)
            if page_bytes != want or shown.get("total") != want:
                failures.append(f"step {step}: the page's total {page_bytes} (#formula {shown.get('total')}), "
                                f"the step's collectives sum to {want}")
            if sum(parts.values()) != want:
                failures.append(f"step {step}: {want} B sent, but formula + extras = "
                                + " + ".join(f"{k} {v}" for k, v in parts.items()) + f" = {sum(parts.values())}")
            for k, v in parts.items():
                if abs(shown.get(k, float("nan")) - float(v)) > 1e-6 * max(1.0, abs(float(v))):
                    failures.append(f"step {step}: #formula data-{k} {shown.get(k)}, expected {float(v)}")
            if shown.get("other") != 0:
                failures.append(f"step {step}: the page leaves {shown.get('other')} B unexplained")
        # Gemini: the chunks at the chosen frame and at the first frame with an eviction (which must exist)
        if any("chunks" in rs for f in doc["frames"] for rs in f["ranks"]):
            evict = next((i for i, f in enumerate(doc["frames"]) if any(m["move"] == "evict" for rs in f["ranks"]
                                                                        for m in rs.get("chunk_moves", []))), None)
            if evict is None:
                failures.append("a Gemini trace with no eviction: record one at a capacity that needs them")
            for i in sorted({chosen} | ({evict} if evict is not None else set())):
                go(b, i)
                failures += [f"frame index {i} ({doc['frames'][i]['label']}): {p}" for p in check_chunks(b, doc, i)]
            if evict is not None:
                time.sleep(0.8)
                with open(os.path.splitext(args.screenshot)[0] + "-evict.png", "wb") as out:
                    out.write(base64.b64decode(b.call("Page.captureScreenshot", {"format": "png"})["data"]))
        # a backward release frame: the unit back to its own shard, its reduce-scatter in flight
        if release is None:
            failures.append("no backward release frame ('release <unit>' in phase backward)")
        else:
            go(b, release)
            failures += [f"frame index {release} ({doc['frames'][release]['label']}): {p}"
                         for p in check_owners(b, doc, release) + check_release(b, doc, release)]
            time.sleep(0.8)
            shot = b.call("Page.captureScreenshot", {"format": "png"})
            with open(os.path.splitext(args.screenshot)[0] + "-release.png", "wb") as out:
                out.write(base64.b64decode(shot["data"]))
        # the phase strip: one run per run of frames of one phase, named in its tooltip
        runs = b.js("""[...document.querySelectorAll('#phases .phase-run')].map(e => [e.dataset.phase, +e.dataset.first,
            +e.dataset.last, e.dataset.shown, e.textContent, e.title])""")
        if [tuple(r[:3]) for r in runs] != phase_runs(doc):
            failures.append(f"phase strip runs {[tuple(r[:3]) for r in runs][:6]}..., frames.json has "
                            f"{phase_runs(doc)[:6]}...")
        for phase, first, last, how, text, title in runs:
            if how not in ("full", "short", "none") or (how == "none") != (text == "") or not title:
                failures.append(f"phase run {phase} [{first}, {last}]: shown {how!r}, text {text!r}, title {title!r}")
        longest = max(runs, key=lambda r: r[2] - r[1], default=None)
        if longest and longest[3] != "full":
            failures.append(f"the longest phase run ({longest[0]}, {longest[2] - longest[1] + 1} frames) is not "
                            f"labelled in full at 1280 px: {longest[3]!r}")
        b.js("0")  # collect the events that came meanwhile
        failures += b.console_errors()

        # a version-1 file plays as before (its running totals from its collectives); a newer one is refused
        b.events.clear()
        b.call("Page.navigate", {"url": "file://" + os.path.abspath(os.path.join(args.work, "v1", "trace.html"))})
        b.wait_event("Page.loadEventFired")
        if b.js("document.getElementById('frame-index').textContent").replace(" ", "") != f"1/{len(v1_doc['frames'])}":
            failures.append("the version-1 sample's page does not open at its first frame")
        b.key("End", "End", 35)
        v1_total = sum(f["collective"]["bytes"] for f in v1_doc["frames"] if f.get("collective")
                       and f["step"] == v1_doc["frames"][-1]["step"])
        if b.js("+document.getElementById('step-bytes').dataset.bytes") != v1_total:
            failures.append(f"version 1: the last frame's total is not the step's {v1_total} B")
        failures += ["version 1: " + e for e in b.console_errors()]
        b.call("Page.navigate", {"url": "file://" + os.path.abspath(os.path.join(args.work, "newer", "trace.html"))})
        b.wait_event("Page.loadEventFired")
        error = b.js("(() => { const e = document.getElementById('error'); "
                     "return getComputedStyle(e).display === 'none' ? '' : e.textContent; })()")
        if "version 99, newer than this page reads" not in error:
            failures.append(f"a page of version-99 frames says {error!r}, not that it is too new")
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
    print(f"trace page ok: {n_frames} frames stepped with the page's next button, owners checked at frame "
          f"{chosen + 1} ({doc['frames'][chosen]['label']}), the backward release at frame {release + 1} "
          f"({doc['frames'][release]['label']}), step totals = formula + extras for {len(step_totals)} steps, "
          f"version-1 and newer pages; no console errors; screenshot {args.screenshot} ({elapsed:.1f} s)")


if __name__ == "__main__":
    main()
