#!/usr/bin/env python3
"""minitorch-grade: points per lab task (docs/labs.md) from the task's tests in this build.

A task's tests are the GoogleTest suites named L<NN>_T<k>_... in every test binary of the build (build/bin/test-*,
the grader's hidden ones too: cmake -DMINITORCH_HIDDEN_TESTS=DIR); the multi-rank binaries run under mpirun
with each of --np's rank counts, and a test counts as passed only if it passed at every one. A task earns
points × passed / total. The text output is a table and the total, each failing task's first failure whole (the
test, GoogleTest's whole failure block: the expression, both values, the case a looping test was in) and the tasks
it needs whose tests fail too; --json is for an autograder:

  {"tasks": [{"id": "L05.1", "title": ..., "tests_passed": 3, "tests_total": 4, "points": 2.25, "max_points": 3,
              "needs": [...], "needs_failing": [...], "first_failure": "L05_T1_Ring.X (2 ranks): ..."}, ...],
   "points": ..., "max_points": ...}

Build first (`cmake --build build`): the binaries are graded as they were last built.
Exit 0 when grading ran (whatever the score), 2 on an error (no build, unknown task).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from labs_tasks import LabError, closure, from_gtest_bytes, load_tasks  # noqa: E402

ENV = {"MINITORCH_NUM_THREADS": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
       "OMPI_MCA_rmaps_base_oversubscribe": "1",
       # a stub that throws on one rank leaves the others waiting: end such a job in seconds (dist/mpi_group.cpp)
       "MINITORCH_COMM_TIMEOUT_CAP_S": "60"}
TASK_SUITE = re.compile(r"^(L\d\d)_T(\d+)_\w*$")


def list_task_tests(exe):
    """{task id: [full test names]} of one binary (--gtest_list_tests)."""
    r = subprocess.run([exe, "--gtest_list_tests"], capture_output=True, text=True, env={**os.environ, **ENV}, timeout=120)
    if r.returncode != 0:
        raise LabError(f"{exe} --gtest_list_tests failed (exit {r.returncode}): {r.stderr.strip()[-300:]}")
    out, suite = {}, None
    for line in r.stdout.splitlines():
        if not line.strip() or line.startswith(" "):
            if suite and line.strip():
                m = TASK_SUITE.match(suite)
                if m:
                    out.setdefault(f"{m.group(1)}.{m.group(2)}", []).append(f"{suite}.{line.split()[0]}")
            continue
        suite = line.split()[0].rstrip(".")
    return out


SIGNALS = {4: "illegal instruction", 6: "aborted", 7: "bus error", 8: "floating-point exception", 9: "killed",
           11: "segmentation fault", 15: "terminated"}


def crash_signal(returncode, output):
    """The signal that ended a run, or None: a negative exit status (the binary itself), or mpirun's report of a
    rank "exited on signal N"."""
    if returncode is not None and returncode < 0:
        return -returncode
    m = re.search(r"exited on signal (\d+)", output)
    return int(m.group(1)) if m else None


def describe_signal(sig):
    return f"{SIGNALS.get(sig, 'signal')}, signal {sig}" if sig in SIGNALS else f"signal {sig}"


def console_results(output, names):
    """What GoogleTest's console output says of `names` when its JSON never came (the binary crashed):
    {test: None (passed) | failure text | "started" (a rank began it and never finished it)}; tests that
    never started are left out. Every rank prints its own lines: a test counts once per rank."""
    out = {}
    for name in names:
        q = re.escape(name)
        runs = [m.end() for m in re.finditer(rf"^\[ RUN      \] {q}$", output, re.M)]
        if not runs:
            continue
        oks = len(re.findall(rf"^\[       OK \] {q} \(", output, re.M))
        failed = [m.start() for m in re.finditer(rf"^\[  FAILED  \] {q} \(", output, re.M)]
        if oks + len(failed) < len(runs):
            out[name] = "started"
        elif failed:
            begin = max(r for r in runs if r < failed[0])
            out[name] = output[begin:failed[0]].strip() or "failed"
        else:
            out[name] = None
    return out


def run_tests(exe, names, np, timeout, _depth=0):
    """{test: first failure message or None} of one run of `names` (under mpirun -np np if np). A run that
    crashes names the test it crashed in ("crashed (segmentation fault, signal 11) in this test") and runs the
    tests it never reached again, without it."""
    with tempfile.TemporaryDirectory(prefix="mt-grade-") as tmp:
        filt = "--gtest_filter=" + ":".join(names)
        if np:
            cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(np), "sh", "-c",
                   f'exec "$0" --gtest_output=json:{tmp}/rank$OMPI_COMM_WORLD_RANK.json "$@"', exe, filt]
        else:
            cmd = [exe, f"--gtest_output=json:{tmp}/rank0.json", filt]
        # Its own process group: on a timeout, Ctrl-C or SIGTERM every rank goes with mpirun, none is left behind.
        # The programs a test runs (tests/test_util.h's bin()) are the ones built beside it.
        env = {**os.environ, **ENV, "MINITORCH_TEST_BIN_DIR": os.path.dirname(os.path.abspath(exe))}
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, encoding="utf-8",
                                errors="replace", env=env, start_new_session=True)
        timed_out = False
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            out = ""
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if timed_out:
            ended = f"timed out after {timeout} s"
        else:
            last = [line for line in out.strip().splitlines() if line.strip()][-3:]
            ended = f"exit {proc.returncode}" + (": " + " / ".join(last) if last else "")
        results = {n: f"no result ({ended})" for n in names}
        seen = set()
        for f in sorted(os.listdir(tmp)):
            try:
                with open(os.path.join(tmp, f), encoding="utf-8") as fh:
                    doc = json.load(fh)
            except ValueError:
                continue
            for suite in doc.get("testsuites", []):
                for t in suite.get("testsuite", []):
                    name = f"{suite['name']}.{t['name']}"
                    fails = [from_gtest_bytes(x.get("failure", "")) for x in t.get("failures", [])]
                    if name not in seen:
                        seen.add(name)
                        results[name] = None
                    if fails and results.get(name) is None:
                        results[name] = fails[0].strip()
        sig = None if timed_out else crash_signal(proc.returncode, out)
        missing = [n for n in names if n not in seen]
        if sig is not None and missing:
            console = console_results(out, missing)
            for name, status in console.items():
                results[name] = (f"crashed ({describe_signal(sig)}) in this test" if status == "started" else status)
            rest = [n for n in missing if n not in console]
            if rest and len(rest) < len(names) and _depth < len(names):  # the crash cut the run short: the others again
                results.update(run_tests(exe, rest, np, timeout, _depth + 1))
        return results


def task_rows(tasks, chosen, per_task, bin_dir):
    """One row per task: its tests passed, points, the first failure whole (GoogleTest's failure block: the
    expression, both values, the case a looping test was in) and the tasks it needs whose own tests fail too."""
    rows = []
    for t in chosen:
        tests = per_task[t]
        passed = sum(1 for f in tests.values() if f is None)
        failures = [f for _, f in sorted(tests.items()) if f is not None]
        needs = sorted(closure(tasks[t]["needs"], tasks) - {t})
        rows.append({"id": t, "title": tasks[t]["title"], "tests_passed": passed, "tests_total": len(tests),
                     "points": round(tasks[t]["points"] * passed / len(tests), 2) if tests else 0.0,
                     "max_points": tasks[t]["points"], "needs": needs,
                     "needs_failing": [n for n in needs if any(f is not None for f in per_task.get(n, {}).values())],
                     "first_failure": (failures[0] if failures else None) if tests else
                     f"no tests named {tasks[t]['tests']}_... in {bin_dir}"})
    return rows


def print_table(rows, total, max_total):
    """The table a student reads: per task its line, then its first failure whole, then what it needs."""
    print(f"{'task':7} {'tests':>7} {'points':>11}  title")
    for r in rows:
        print(f"{r['id']:7} {r['tests_passed']:>3}/{r['tests_total']:<3} {r['points']:>5g} / {r['max_points']:<3}  {r['title']}")
        if not r["first_failure"]:
            continue
        lines = [line.rstrip() for line in r["first_failure"].strip().splitlines()]
        print("        first failure: " + "\n                       ".join(lines))
        if r["needs_failing"]:
            print(f"        needs {', '.join(r['needs_failing'])}, whose own tests fail too: this task's tests call "
                  "that code, so make those pass first")
        elif r["needs"]:
            print(f"        needs {', '.join(r['needs'])}: this task's tests call that code too")
    print(f"total {total:g} / {max_total}")


# The multi-rank tests need a peer; more ranks than this only oversubscribe the machine further.
MIN_NP, MAX_NP = 2, 16


def rank_counts(text):
    """--np's value: rank counts from MIN_NP to MAX_NP, comma-separated; anything else is a usage error (exit 2)."""
    parts = [x.strip() for x in text.split(",")]
    if not parts or any(not x.isdigit() or not MIN_NP <= int(x) <= MAX_NP for x in parts):
        raise argparse.ArgumentTypeError(f"expected rank counts from {MIN_NP} to {MAX_NP} separated by commas "
                                         f"(e.g. 2,4), got '{text}'")
    return sorted(set(int(x) for x in parts))


def interrupted(*_):
    raise KeyboardInterrupt()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print JSON for an autograder")
    ap.add_argument("--lesson", action="append", help="grade only this lesson's tasks (NN; repeatable)")
    ap.add_argument("--task", action="append", help="grade only this task (L05.1; repeatable)")
    ap.add_argument("--np", default=[2, 4], type=rank_counts,
                    help=f"rank counts for the multi-rank tests, {MIN_NP} to {MAX_NP}, comma-separated (default 2,4)")
    ap.add_argument("--build", default=os.environ.get("MINITORCH_BUILD"), help="the build folder (set by CMake)")
    ap.add_argument("--root", default=os.path.normpath(os.path.join(HERE, "..", "..")), help="the source tree")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per test run")
    args = ap.parse_args()
    if hasattr(sys.stdout, "reconfigure"):  # the messages are UTF-8 whatever the locale (a C locale would garble them)
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    signal.signal(signal.SIGTERM, interrupted)  # a killed grader ends its test runs too (run_tests)
    try:
        if not args.build or not os.path.isdir(os.path.join(args.build, "bin")):
            raise LabError(f"no build at '{args.build}' (run cmake --build build, then build/bin/minitorch-grade)")
        tasks = load_tasks(args.root)
        chosen = sorted(tasks)
        if args.lesson:
            chosen = [t for t in chosen if tasks[t]["lesson"] in args.lesson]
        if args.task:
            for t in args.task:
                if t not in tasks:
                    raise LabError(f"--task {t}: no such task (labs/tasks/L*.json lists {', '.join(sorted(tasks))})")
            chosen = [t for t in chosen if t in args.task]
        if not chosen:
            raise LabError("no tasks to grade")
        nps = args.np
        if shutil.which("mpirun") is None:
            raise LabError("mpirun not found (the multi-rank tests need Open MPI: make deps)")
        bin_dir = os.path.join(args.build, "bin")
        per_task = {t: {} for t in chosen}  # task -> {test: failure or None}
        for name in sorted(os.listdir(bin_dir)):
            if not name.startswith("test-") or name == "test-cuda":
                continue
            exe = os.path.join(bin_dir, name)
            listed = {t: n for t, n in list_task_tests(exe).items() if t in per_task}
            names = [n for ns in listed.values() for n in ns]
            if not names:
                continue
            runs = [(np, f" ({np} ranks)") for np in nps] if name.endswith("_mpi") else [(0, "")]
            for np, where in runs:
                results = run_tests(exe, names, np, args.timeout)
                for task, ns in listed.items():
                    for n in ns:
                        prev = per_task[task].get(n)
                        failure = results.get(n)
                        if n not in per_task[task] or (prev is None and failure is not None):
                            per_task[task][n] = None if failure is None else f"{n}{where}: {failure}"
        rows = task_rows(tasks, chosen, per_task, bin_dir)
        total, max_total = round(sum(r["points"] for r in rows), 2), sum(r["max_points"] for r in rows)
        if args.json:
            print(json.dumps({"tasks": rows, "points": total, "max_points": max_total}, indent=1))
        else:
            print_table(rows, total, max_total)
        return 0
    except LabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("minitorch-grade: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
