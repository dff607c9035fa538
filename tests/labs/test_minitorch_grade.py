#!/usr/bin/env python3
"""ctest Labs.Grade: minitorch-grade (tools/labs/minitorch_grade.py) checks its arguments, leaves nothing
running and reports what a student needs. --np takes rank counts from 2 to 16 only (0, -2, 1, 1000 and "abc"
are usage errors, exit 2, one line, no traceback); a test run that times out takes every process it started
with it (its own process group); a binary that crashes in one test is reported as a crash in that test and
the tests after it still run; failure messages keep their Unicode (GoogleTest's JSON escapes it byte by byte);
a failing task shows its first failure's whole block (both values, the case) and the tasks it needs that fail too. No build needed (fake test binaries). Exit 0 when all
holds; 1 with "error: ..." lines otherwise."""
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GRADE = os.path.join(HERE, "..", "..", "tools", "labs", "minitorch_grade.py")
sys.path.insert(0, os.path.dirname(GRADE))
import minitorch_grade as mg  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


# --np: what it takes, and one usage error for anything else
check(mg.rank_counts("2,4") == [2, 4], "2,4 are two rank counts")
check(mg.rank_counts(" 4, 2,4") == [2, 4], "spaces and repeats are fine")
for bad in ["0", "-2", "1", "1000", "abc", "", "2,,4", "2.5"]:
    r = subprocess.run([sys.executable, GRADE, "--np", bad, "--build", "/nonexistent"], capture_output=True, text=True)
    check(r.returncode == 2, f"--np {bad!r}: exit {r.returncode}, expected 2")
    check("Traceback" not in r.stderr, f"--np {bad!r}: a traceback: {r.stderr[-300:]}")
    check("expected rank counts from 2 to 16" in r.stderr, f"--np {bad!r}: says what it takes: {r.stderr[-300:]}")

# A run that times out ends its whole process group: a grandchild (an MPI rank under mpirun) goes too.
with tempfile.TemporaryDirectory() as tmp:
    pid_file = os.path.join(tmp, "grandchild.pid")
    exe = os.path.join(tmp, "test-fake")
    with open(exe, "w") as f:
        f.write(f"#!/bin/sh\nsleep 300 &\necho $! > {pid_file}\nwait\n")
    os.chmod(exe, 0o755)
    start = time.monotonic()
    results = mg.run_tests(exe, ["Suite.Test"], 0, timeout=2)
    check(time.monotonic() - start < 30, "the timeout ends the run")
    check("timed out after 2 s" in (results.get("Suite.Test") or ""), f"the timeout is the result: {results}")
    with open(pid_file) as f:
        grandchild = int(f.read())
    time.sleep(0.2)
    try:
        os.kill(grandchild, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    if alive:  # a zombie of ours would also answer: only a live process counts
        with open(f"/proc/{grandchild}/stat") as f:
            alive = f.read().split(")")[-1].split()[0] != "Z"
        os.kill(grandchild, 9)
    check(not alive, "the test run's grandchild was left running after its timeout")

# A crash in one test: named as a crash in that test; the tests it cut short run again without it. The fake
# binary speaks GoogleTest's console lines and JSON (json.dumps escapes the em dash's three bytes one by one, as
# GoogleTest does).
FAKE = r'''#!/usr/bin/env python3
import json, os, signal, sys
out = [a.split(":", 1)[1] for a in sys.argv if a.startswith("--gtest_output=json:")][0]
names = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--gtest_filter=")][0].split(":")
results = []
for n in names:
    print(f"[ RUN      ] {n}", flush=True)
    if n.endswith("Crash"):
        os.kill(os.getpid(), signal.SIGSEGV)
    if n.endswith("Fail"):
        print("ring.cpp:12: Failure\nexpected 3, got 4", flush=True)
        print(f"[  FAILED  ] {n} (1 ms)", flush=True)
        results.append({"name": n.split(".")[1], "failures": [{"failure": "ring.cpp:12: Failure\nexpected 3 \u00e2\u0080\u0094 got 4"}]})
    else:
        print(f"[       OK ] {n} (1 ms)", flush=True)
        results.append({"name": n.split(".")[1]})
with open(out, "w") as f:
    f.write(json.dumps({"testsuites": [{"name": "S", "testsuite": results}]}))
'''
with tempfile.TemporaryDirectory() as tmp:
    exe = os.path.join(tmp, "test-fake")
    with open(exe, "w") as f:
        f.write(FAKE)
    os.chmod(exe, 0o755)
    results = mg.run_tests(exe, ["S.Pass1", "S.Crash", "S.Pass2", "S.Fail"], 0, timeout=60)
    check(results.get("S.Pass1") is None, f"the test before the crash passed: {results}")
    check(results.get("S.Crash") == "crashed (segmentation fault, signal 11) in this test", f"the crash is named: {results}")
    check(results.get("S.Pass2") is None, f"the test after the crash ran again and passed: {results}")
    check("expected 3 \u2014 got 4" in (results.get("S.Fail") or ""), f"the failure keeps its em dash: {results}")

# A wrong value: the table shows the test and GoogleTest's whole failure block, however many lines (both values,
# the expression, the message, the case from SCOPED_TRACE), and a failing task that needs another whose tests fail
# too says so. A fake build (bin/test-fake) and tree (labs/tasks/L10.json: L10.1 needs L10.2).
BLOCK = ("formulas_test.cpp:48: Failure\nExpected equality of these values:\n  e.host.total()\n    Which is: 3000000\n"
         "  16 * psi / n\n    Which is: 4000000\n16\u03a8/N in either precision\nGoogle Test trace:\n"
         "formulas_test.cpp:44: stage 1 f32")
GRADED = r"""#!/usr/bin/env python3
import json, sys
SUITES = {"L10_T1_Offload": ["Steps"], "L10_T2_Formulas": ["PerStage", "Throws"]}
if "--gtest_list_tests" in sys.argv:
    for suite, tests in SUITES.items():
        print(suite + ".\n" + "".join(f"  {t}\n" for t in tests), end="")
    sys.exit(0)
out = [a.split(":", 1)[1] for a in sys.argv if a.startswith("--gtest_output=json:")][0]
names = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--gtest_filter=")][0].split(":")
BLOCK = %r
doc = {"testsuites": [{"name": s, "testsuite": [
    {"name": t, "failures": [{"failure": BLOCK if t == "PerStage" else "offload.cpp:9: Failure\nL10.1 wrong"}]}
    for t in tests if f"{s}.{t}" in names and t != "Throws"] + [{"name": "Throws"}] * ("Throws" in tests)}
    for s, tests in SUITES.items()]}
open(out, "w").write(json.dumps(doc))
sys.exit(1)
""" % BLOCK
with tempfile.TemporaryDirectory() as tmp:
    os.makedirs(os.path.join(tmp, "build", "bin"))
    os.makedirs(os.path.join(tmp, "labs", "tasks"))
    exe = os.path.join(tmp, "build", "bin", "test-fake")
    with open(exe, "w") as f:
        f.write(GRADED)
    os.chmod(exe, 0o755)
    with open(os.path.join(tmp, "labs", "tasks", "L10.json"), "w") as f:
        f.write('{"lesson": "10", "tasks": [{"id": "L10.1", "title": "offload", "guide": "g", "points": 3, "needs": ["L10.2"]},'
                ' {"id": "L10.2", "title": "formulas", "guide": "g", "points": 2}]}')
    cmd = [sys.executable, GRADE, "--build", os.path.join(tmp, "build"), "--root", tmp]
    r = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8")
    check(r.returncode == 0, f"grading the fake build: exit {r.returncode}: {r.stderr[-500:]}")
    table = r.stdout
    where = table.find("L10_T2_Formulas.PerStage: " + BLOCK.splitlines()[0])
    check(where >= 0, "the table names the failing test and its file:line:\n" + table)
    shown = [line.strip() for line in table[where:].splitlines()]
    check(all(line.strip() in shown for line in BLOCK.splitlines()[1:]),
          f"the table shows every line of the failure block ({len(BLOCK.splitlines())} lines):\n" + table)
    check("needs L10.2, whose own tests fail too" in table, "L10.1's row names L10.2, which fails too:\n" + table)
    check(re.search(r"^L10\.2 +1/2 ", table, re.M) is not None, "L10.2 passes 1 of 2:\n" + table)
    r = subprocess.run(cmd + ["--json"], capture_output=True, text=True, encoding="utf-8")
    rows = {t["id"]: t for t in __import__("json").loads(r.stdout)["tasks"]} if r.returncode == 0 else {}
    check(rows.get("L10.2", {}).get("first_failure") == "L10_T2_Formulas.PerStage: " + BLOCK,
          f"--json's first_failure is the whole block: {rows.get('L10.2')}")
    check(rows.get("L10.1", {}).get("needs_failing") == ["L10.2"], f"--json's needs_failing: {rows.get('L10.1')}")

check(mg.from_gtest_bytes("\u00e2\u0080\u0094") == "\u2014", "GoogleTest's byte escapes put back together")
check(mg.from_gtest_bytes("plain \u2014") == "plain \u2014", "text that was not escaped byte by byte is left alone")
check(mg.crash_signal(1, "mpirun noticed that process rank 1 with PID 7 on node x exited on signal 11 (Segmentation fault).") == 11,
      "mpirun's report of a rank's signal")
check(mg.crash_signal(1, "[  FAILED  ] 1 test") is None, "a failing run is no crash")

for f in failures:
    print(f"error: {f}")
sys.exit(1 if failures else 0)
