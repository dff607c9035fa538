#!/usr/bin/env python3
"""A pipeline run's trace page in a real browser (ctest L09_TraceBrowser.PipelineFourRanks).

Opens DIR/trace.html (written by `minitorch-train --trace DIR` on a pipeline run) in headless Chromium
at 1280x800 through tests/trace/browser_check.py's DevTools driver, and checks, against DIR/trace.json
read here independently of the page's script:

  - the predicted timeline has one cell per forward and backward of every stage (2·M per stage);
  - the measured step shown (the second) has one cell per F<m> / B<m> slice each rank recorded in it,
    with the slice's rank, kind and micro-batch;
  - at the step's start no micro-batch is alive; the page's own end button moves the cursor to the
    step's end, where every rank has backwarded all it forwarded (alive 0); at the middle of the
    step (the slider's hook: the play button, paused after a moment) some rank holds one or more;
  - the next-step button moves to the next step; no console error or exception;
  - a screenshot of the step at its middle (--screenshot).

Exit 0 when all holds; 1 with "error: ..." lines otherwise; no chromium fails with "run `make deps`".
"""
import argparse
import base64
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_check import Browser, die, find_chromium  # noqa: E402


def measured_slices(trace, step):
    """[(rank, kind, micro)] of the F<m>/B<m> slices of `step` on each rank, from trace.json: after the
    rank's step_end of step - 1, up to its step_end of `step`."""
    ends = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "i" and e.get("name") == "step_end":
            ends[(e["pid"], e["args"]["step"])] = e["ts"]
    out = []
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e.get("tid") == 0 and re.fullmatch(r"[FB]\d+", e["name"]):
            prev, end = ends.get((e["pid"], step - 1)), ends[(e["pid"], step)]
            if (prev is None or e["ts"] > prev) and e["ts"] <= end:
                out.append((e["pid"], e["name"][0], int(e["name"][1:])))
    return sorted(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="the --trace DIR of a pipeline run (trace.json, trace.html)")
    ap.add_argument("--screenshot", required=True, help="where to save the PNG")
    args = ap.parse_args()
    exe = find_chromium()
    if not exe:
        die("chromium not found (the trace page's browser test needs Debian's chromium): run `make deps`")
    with open(os.path.join(args.dir, "trace.json")) as fh:
        trace = json.load(fh)
    about = trace["otherData"]
    P, M, W = about["pipeline_stages"], about["micro_batches"], about["world_size"]
    want = measured_slices(trace, 1)
    page = os.path.abspath(os.path.join(args.dir, "trace.html"))

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

        def text(id_):
            return b.js(f"document.getElementById('{id_}').textContent")

        def click(id_):
            r = b.js(f"(() => {{ const r = document.getElementById('{id_}').getBoundingClientRect();"
                     " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
            b.click(r[0], r[1])

        def alive():
            return [int(n) for n in re.findall(r"rank \d+: (-?\d+)", text("alive"))]

        predicted = b.js("document.querySelectorAll('rect.pcell').length")
        if predicted != 2 * M * P:
            failures.append(f"{predicted} predicted cells, expected 2·M·P = {2 * M * P}")
        if text("step-index").replace(" ", "") != f"2/{about['steps']}":
            failures.append(f"the page opens at step {text('step-index')!r}, expected the second")
        cells = b.js("[...document.querySelectorAll('rect.cell')].map(c => [+c.dataset.rank, c.dataset.kind,"
                     " +c.dataset.micro])")
        got = sorted(tuple(c) for c in cells)
        if got != want:
            failures.append(f"measured cells {got} differ from trace.json's slices of step 2 {want}")
        if len(want) != 2 * M * W:
            failures.append(f"trace.json holds {len(want)} slices in step 2, expected 2·M per rank = {2 * M * W}")
        if alive() != [0] * W:
            failures.append(f"at the step's start: {text('alive')!r}, expected nothing alive")
        click("btn-play")
        time.sleep(2.5)  # a step plays in 6 s
        click("btn-play")
        middle = alive()
        if len(middle) != W or max(middle) < 1 or min(middle) < 0:
            failures.append(f"mid-step: {text('alive')!r} ({text('time')}), expected some rank holding micro-batches")
        shot = b.call("Page.captureScreenshot", {"format": "png"})
        os.makedirs(os.path.dirname(os.path.abspath(args.screenshot)), exist_ok=True)
        with open(args.screenshot, "wb") as out:
            out.write(base64.b64decode(shot["data"]))
        click("btn-end")
        if alive() != [0] * W:
            failures.append(f"at the step's end: {text('alive')!r}, expected every micro-batch backwarded")
        click("btn-next-step")
        if text("step-index").replace(" ", "") != f"3/{about['steps']}":
            failures.append(f"next step shows {text('step-index')!r}")
        b.js("0")  # collect the events that came meanwhile
        failures += b.console_errors()
    except (RuntimeError, TimeoutError, OSError) as e:
        failures.append(str(e))
    finally:
        b.close()
    if failures:
        for f in failures:
            print("error: " + f)
        sys.exit(1)
    print(f"pipeline trace page ok: {2 * M * P} predicted cells, {len(want)} measured cells of step 2 as in "
          f"trace.json, alive 0 at the start and the end, {middle} mid-step; screenshot {args.screenshot}")


if __name__ == "__main__":
    main()
