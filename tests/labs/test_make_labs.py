#!/usr/bin/env python3
"""ctest L08_Labs.Generator: tools/labs/make_labs.py on a small reference tree made here (a git repository
with two tasks in two lessons). Checks that every chosen block becomes the NotImplemented stub with the
task's id, title and guide (the markers kept), that --lesson stubs one lesson only, that the student tree
holds the tracked files only (no .git, no untracked or ignored file, so no solution survives), that LAB.md
lists the tasks, and that each kind of bad marker is one error naming the file and line (exit 2).
Exit 0 when all holds; 1 with "error: ..." lines otherwise."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATOR = os.path.join(HERE, "..", "..", "tools", "labs", "make_labs.py")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def git(root, *args):
    subprocess.run(["git", "-C", root, *args], check=True, capture_output=True)


def make_tree(root, source):
    os.makedirs(os.path.join(root, "labs", "tasks"))
    os.makedirs(os.path.join(root, "dist"))
    with open(os.path.join(root, "labs", "tasks", "L05.json"), "w") as f:
        json.dump({"lesson": "05", "tasks": [
            {"id": "L05.1", "title": "ring all-reduce", "guide": "lessons/05_ddp/README.md", "points": 3, "tests": "L05_T1"}]}, f)
    with open(os.path.join(root, "labs", "tasks", "L06.json"), "w") as f:
        json.dump({"lesson": "06", "tasks": [
            {"id": "L06.1", "title": "the \"partition\"", "guide": "lessons/06_zero12/README.md", "points": 2}]}, f)
    with open(os.path.join(root, "dist", "ring.cpp"), "w") as f:
        f.write(source)
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write("build/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "reference")
    with open(os.path.join(root, "untracked_solution.cpp"), "w") as f:
        f.write("int secret = 42;  // SOLUTION\n")
    os.makedirs(os.path.join(root, "build"))
    with open(os.path.join(root, "build", "ring.o"), "w") as f:
        f.write("object code of the solution\n")


GOOD = '''#include "minitorch/not_implemented.h"
int ring(int x) {
  // BEGIN SOLUTION L05.1
  int secret_sum = x + 1;
  return secret_sum;
  // END SOLUTION
}
void partition() {
    // BEGIN SOLUTION L06.1
    secret_partition();
    // END SOLUTION
}
'''


def run(root, out, *extra):
    return subprocess.run([sys.executable, GENERATOR, "--root", root, "--out", out, *extra], capture_output=True, text=True)


with tempfile.TemporaryDirectory(prefix="mt-labs-") as tmp:
    ref = os.path.join(tmp, "ref")
    make_tree(ref, GOOD)
    out = os.path.join(tmp, "student")
    r = run(ref, out)
    check(r.returncode == 0, f"the generator failed: {r.stdout}{r.stderr}")
    if r.returncode == 0:
        text = open(os.path.join(out, "dist", "ring.cpp")).read()
        check("secret" not in text, "a solution line survived in the stubbed file:\n" + text)
        check('  // BEGIN SOLUTION L05.1\n  throw ::minitorch::NotImplemented("L05.1: ring all-reduce — see '
              'lessons/05_ddp/README.md");\n  // END SOLUTION\n' in text, "the L05.1 stub is not as documented:\n" + text)
        check('    throw ::minitorch::NotImplemented("L06.1: the \\"partition\\" — see lessons/06_zero12/README.md");'
              in text, "the L06.1 stub (indented, its quotes escaped) is not as documented:\n" + text)
        check(not os.path.exists(os.path.join(out, ".git")), "the student tree has a .git")
        check(not os.path.exists(os.path.join(out, "untracked_solution.cpp")), "an untracked file was copied")
        check(not os.path.exists(os.path.join(out, "build")), "build outputs were copied")
        lab = open(os.path.join(out, "LAB.md"), encoding="utf-8").read()
        check("| L05.1 | ring all-reduce | dist/ring.cpp:3 | `ctest -R L05_T1` | 3 | — |" in lab, "LAB.md lacks L05.1's row:\n" + lab)
        check("| L06.1 |" in lab and "`ctest -R L06_T1`" in lab, "LAB.md lacks L06.1's row (default filter L06_T1):\n" + lab)
        for command in ("make deps", "make data", "make lab LESSON=05", "minitorch-grade --lesson 05",
                        "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "--oversubscribe"):
            check(command in lab, f"LAB.md does not say `{command}`:\n" + lab)
    # One lesson: the other keeps its solution.
    r = run(ref, out, "--lesson", "06")
    check(r.returncode == 0, f"--lesson 06 failed: {r.stdout}{r.stderr}")
    if r.returncode == 0:
        text = open(os.path.join(out, "dist", "ring.cpp")).read()
        check("int secret_sum" in text and "secret_partition" not in text, "--lesson 06 must stub L06.1 only:\n" + text)
        check("L05.1" not in open(os.path.join(out, "LAB.md"), encoding="utf-8").read(), "--lesson 06's LAB.md lists L05.1")
    # The output may not be the reference itself (it would be deleted).
    r = run(ref, ref)
    check(r.returncode == 2 and "outside the reference tree" in r.stderr, f"--out = the reference: {r.returncode} {r.stderr}")
    # Bad markers: one error naming the file and line.
    bad = {
        "unclosed": (GOOD.replace("  // END SOLUTION\n}\nvoid", "}\nvoid", 1), "dist/ring.cpp:8: BEGIN SOLUTION L06.1 inside L05.1 (opened at line 3)"),
        "stray end": ("#include \"minitorch/not_implemented.h\"\n// END SOLUTION\n", "dist/ring.cpp:2: END SOLUTION without"),
        "unknown task": (GOOD.replace("L06.1", "L06.9"), "dist/ring.cpp:9: BEGIN SOLUTION L06.9: no such task"),
        "malformed": (GOOD.replace("// END SOLUTION\n}\nvoid", "// END SOLUTION here\n}\nvoid"), "dist/ring.cpp:6: a malformed marker"),
        "no include": (GOOD.replace('#include "minitorch/not_implemented.h"\n', ""), "dist/ring.cpp: has solution blocks but does not"),
    }
    for name, (source, message) in bad.items():
        tree = os.path.join(tmp, name.replace(" ", "_"))
        make_tree(tree, source)
        r = run(tree, os.path.join(tmp, "out_" + name.replace(" ", "_")))
        check(r.returncode == 2, f"{name}: exit {r.returncode}, expected 2")
        check(message in r.stderr and r.stderr.count("error:") == 1, f"{name}: expected one error with '{message}', got: {r.stderr}")

for f in failures:
    print("error: " + f)
if not failures:
    print("make_labs.py ok: stubs, --lesson, tracked files only, LAB.md, 5 kinds of bad marker")
sys.exit(1 if failures else 0)
