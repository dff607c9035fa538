#!/usr/bin/env python3
"""ctest Labs.Grade: minitorch-grade (tools/labs/minitorch_grade.py) checks its arguments and leaves nothing
running. --np takes rank counts from 2 to 16 only (0, -2, 1, 1000 and "abc" are usage errors, exit 2, one
line, no traceback); a test run that times out takes every process it started with it (its own process
group). No build needed. Exit 0 when all holds; 1 with "error: ..." lines otherwise."""
import os
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

for f in failures:
    print(f"error: {f}")
sys.exit(1 if failures else 0)
