#!/usr/bin/env python3
"""ctest Labs.Check: the rules tools/labs/labs_check.py holds a run to, on made-up results (no build needed):
what a test depends on (its own task, what that one needs, labs/depends.json), the verdicts of expect() for
each way a run can go wrong, the dependencies a task's tests may have (declared, or on an earlier lesson), suite
patterns, the output of a crashed binary, and the files an in-place labs-check of the past left stubbed being put
back. Exit 0 when all holds; 1 with "error: ..." lines otherwise."""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "labs"))
import labs_check as lc  # noqa: E402
import labs_run as lr  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


TASKS = {
    "L05.1": {"lesson": "05", "needs": [], "tests": "L05_T1", "title": "reduce-scatter"},
    "L05.2": {"lesson": "05", "needs": [], "tests": "L05_T2", "title": "all-gather"},
    "L05.3": {"lesson": "05", "needs": ["L05.1", "L05.2"], "tests": "L05_T3", "title": "all-reduce"},
    "L01.2": {"lesson": "01", "needs": [], "tests": "L01_T2", "title": "contiguous"},
}
DEPENDS = {"L05.3": ["L05_DDP.*"], "L01.2": ["L03_GPT.Causality*", "L05_T1_Ring.Big"]}

# what a test depends on
check(lc.deps_of("L05_T3_Ring.AllReduce", TASKS, DEPENDS) == {"L05.1", "L05.2", "L05.3"},
      "a task's test depends on the task and on what it needs")
check(lc.deps_of("L05_DDP.Averages", TASKS, DEPENDS) == {"L05.1", "L05.2", "L05.3"},
      "depends.json's suite pattern, and what that task builds on")
check(lc.deps_of("L05_T1_Ring.Big", TASKS, DEPENDS) == {"L05.1", "L01.2"}, "own task plus a listed test")
check(lc.deps_of("L03_GPT.LossAtInit", TASKS, DEPENDS) == set(), "a test nothing lists depends on nothing")
check(lc.own_task("L05_T9_Ring.X", TASKS) is None, "a prefix of no task is no task")
check(lc.own_task("L05_TrainCli.X", TASKS) is None, "L05_TrainCli is not a task suite")

R = lr.Result
NI = 'C++ exception with description "not implemented: L05.1: reduce-scatter — see lessons/05_ddp/README.md"'


def problems(results, stubbed):
    return lc.expect(results, TASKS, DEPENDS, stubbed)


good = {"L05_T1_Ring.A": R(False, NI), "L05_T2_Ring.B": R(True), "L05_T3_Ring.C": R(False, NI),
        "L05_DDP.Averages": R(False, NI), "L03_GPT.LossAtInit": R(True)}
check(problems(good, {"L05.1"}) == [], f"a run as it should be has no problems: {problems(good, {'L05.1'})}")
p = problems({**good, "L03_GPT.LossAtInit": R(False, "expected 1 got 2")}, {"L05.1"})
check(len(p) == 1 and "depends on no stubbed task" in p[0] and "expected 1 got 2" in p[0],
      f"a failing test that depends on nothing stubbed is a problem, with its message: {p}")
p = problems({**good, "L05_DDP.Averages": R(True)}, {"L05.1"})
check(len(p) == 1 and "but passed" in p[0], f"a passing test that should fail is a problem: {p}")
p = problems({**good, "L05_T1_Ring.A": R(False, "Expected equality of 3 and 4")}, {"L05.1"})
check(len(p) == 1 and "NotImplemented" in p[0], f"a stubbed task's test failing otherwise is a problem: {p}")
p = problems({"L05_T2_Ring.B": R(False, "not implemented: L05.2: all-gather"), "L03_GPT.LossAtInit": R(True)}, {"L05.1", "L05.2"})
check(any("task L05.1 has no tests" in x for x in p), f"a stubbed task without tests is a problem: {p}")

# suite patterns
names = ["A.x", "A.y", "B.x", "B.y", "C.z"]
check(lc.compress({"A.x", "A.y", "B.y"}, names) == ["A.*", "B.y"], "whole suites become Suite.*")

# a crashed binary's output
text = """[==========] Running 3 tests
[ RUN      ] S.One
[       OK ] S.One (1 ms)
[ RUN      ] S.Two
unknown file: Failure
C++ exception with description "not implemented: L05.1: x" thrown in the test body.
[  FAILED  ] S.Two (0 ms)
[ RUN      ] S.Three
Segmentation fault"""
res = {}
running = lr.parse_stdout(text, "dist", res)
check(running == "S.Three", f"the test that was running when the binary died: {running}")
check(res["S.One"].passed and not res["S.Two"].passed and "not implemented: L05.1" in res["S.Two"].message,
      "finished tests and a failure's printed message from the output")

# a task's tests may fail while another task is a stub only where it declares it (needs) or it is of an earlier lesson
T2 = {**TASKS, "L06.1": {"lesson": "06", "needs": [], "tests": "L06_T1", "title": "partition"}}
check(lc.undeclared_dependencies(T2, {"L05.1": ["L05_T3_Ring.*", "L06_T1_Part.X"], "L01.2": ["L05_T1_Ring.Big"]}) == [],
      "declared (L05.3 needs L05.1) and earlier-lesson dependencies are fine")
p = lc.undeclared_dependencies(T2, {"L05.2": ["L05_T1_Ring.Big"]})
check(len(p) == 1 and "L05_T1_Ring.Big (task L05.1's tests) fails while L05.2 is a stub" in p[0]
      and "add \"L05.2\" to L05.1's needs in labs/tasks/L05.json" in p[0], f"an undeclared one names both tasks and the fix: {p}")
p = lc.undeclared_dependencies(T2, {"L06.1": ["L05_T2_Ring.A"]})
check(len(p) == 1 and "earlier ones" in p[0], f"a test of lesson 05 that needs a lesson-06 task is a problem: {p}")
p = lc.undeclared_dependencies(T2, {"L06.1": ["*Ring*"]})
check(len(p) == 1 and "name the suites" in p[0], f"a pattern that may match any task's tests is a problem: {p}")

# files a labs-check of the past (which stubbed in place) left stubbed are put back, once
with tempfile.TemporaryDirectory(prefix="mt-labs-check-") as tmp:
    root, work = os.path.join(tmp, "ref"), os.path.join(tmp, "work")
    os.makedirs(os.path.join(root, "dist"))
    os.makedirs(os.path.join(work, "backup", "files", "dist"))
    with open(os.path.join(root, "dist", "ring.cpp"), "w") as f:
        f.write("stub\n")
    with open(os.path.join(work, "backup", "files", "dist", "ring.cpp"), "w") as f:
        f.write("solution\n")
    with open(os.path.join(work, "backup", "manifest.json"), "w") as f:
        json.dump(["dist/ring.cpp"], f)
    restored = lc.restore_in_place_backup(root, work)
    check(restored == ["dist/ring.cpp"] and open(os.path.join(root, "dist", "ring.cpp")).read() == "solution\n",
          "the solution is put back")
    check(lc.restore_in_place_backup(root, work) == [], "restoring twice does nothing")

# the depends file is checked
with tempfile.TemporaryDirectory(prefix="mt-labs-deps-") as tmp:
    os.makedirs(os.path.join(tmp, "labs"))
    with open(os.path.join(tmp, "labs", "depends.json"), "w") as f:
        json.dump({"depends": {"L07.9": ["X.*"]}}, f)
    try:
        lc.load_depends(tmp, TASKS)
        check(False, "depends.json naming an unknown task must be an error")
    except lc.LabError as e:
        check("L07.9" in str(e), f"the error names the task: {e}")

for f in failures:
    print(f"error: {f}")
if not failures:
    print("labs_check.py ok: dependencies, verdicts, declared needs, suite patterns, crashed output, old backups restored")
sys.exit(1 if failures else 0)
