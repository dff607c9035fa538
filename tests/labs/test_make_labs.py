#!/usr/bin/env python3
"""ctest L08_Labs.Generator: tools/labs/make_labs.py on a small reference tree made here (a git repository
with two tasks in two lessons). Checks that every chosen block becomes the NotImplemented stub with the
task's id, title and guide (the markers kept), that --lesson stubs one lesson only, that the student tree
holds the tracked files only (no .git, no untracked or ignored file, so no solution survives), that LAB.md
lists the tasks, that LAB.md's commands work pasted in order from the tree's top folder (stand-ins for make, ctest
and mpirun check the folder and the paths) with the lesson's own test filter, and that each kind of bad marker is one error naming the file and line (exit 2).
Exit 0 when all holds; 1 with "error: ..." lines otherwise."""
import json
import os
import shutil
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
    for rel, text in {"tests/zero_mpi/test_ring.cpp": "TEST(L05_T1_Ring, Sums) {}\n",
                      "tests/zero/test_part.cpp": "TEST(L06_T1_Part, Covers) {}\n", "Makefile": "lab:\n"}.items():
        os.makedirs(os.path.dirname(os.path.join(root, rel)) or root, exist_ok=True)
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)
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


# LAB.md's commands, pasted in order into one shell at the top of the student tree, with stand-ins for make, ctest
# and mpirun that check what they are given: make runs where the Makefile is, and `make lab` writes build-lab/
# (its bin/ programs, its ctest file); ctest's --test-dir is that build; mpirun's program exists. Each stand-in
# logs its folder and arguments.
FAKE_TOOLS = {
    "make": """[ -f Makefile ] || { echo "make: no Makefile in $PWD" >&2; exit 2; }
echo "make $PWD $*" >> "$LAB_LOG"
case "$*" in lab*) mkdir -p build-lab/bin && touch build-lab/CTestTestfile.cmake
  for p in minitorch-grade lesson-05 lesson-06 test-zero_mpi test-zero; do
    printf '#!/bin/sh\\necho "%s $PWD $*" >> "$LAB_LOG"\\n' "$p" > build-lab/bin/$p; chmod +x build-lab/bin/$p; done;; esac""",
    "ctest": """[ "$1" = --test-dir ] && [ -f "$2/CTestTestfile.cmake" ] || { echo "ctest: no tests in ${2:-$PWD}" >&2; exit 1; }
echo "ctest $PWD $*" >> "$LAB_LOG\"""",
    "mpirun": """for a in "$@"; do case "$a" in -*|[0-9]*) ;; *) [ -x "$a" ] || { echo "mpirun: $a not found" >&2; exit 1; }
  echo "mpirun $PWD $*" >> "$LAB_LOG"; "$@" >/dev/null 2>&1; exit 0;; esac; done; exit 1""",
}


def run_commands(tree, lab, lesson, by_hand):
    """Runs the Commands section of `lab` in `tree` with the stand-ins; checks each ran from the tree's top folder.
    by_hand: (program, arguments) of the one task's tests run by hand: the lesson's own filter."""
    section = lab.split("## Commands", 1)[1].split("\n## ", 1)[0]
    commands = [line[4:] for line in section.splitlines() if line.startswith("    ") and line.strip()]
    check(any(c.startswith(f"make lab LESSON={lesson}") for c in commands), f"LAB.md's commands lack make lab LESSON={lesson}")
    fake = os.path.join(tree, "..", "fake-tools")
    os.makedirs(fake, exist_ok=True)
    for name, body in FAKE_TOOLS.items():
        with open(os.path.join(fake, name), "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(os.path.join(fake, name), 0o755)
    log = os.path.join(tree, "..", "lab-commands.log")
    open(log, "w").close()
    shutil.rmtree(os.path.join(tree, "build-lab"), ignore_errors=True)
    r = subprocess.run(["bash", "-e", "-c", "\n".join(commands)], cwd=tree, capture_output=True, text=True,
                       env={**os.environ, "PATH": fake + os.pathsep + os.environ["PATH"], "LAB_LOG": log})
    check(r.returncode == 0, f"LAB.md's commands, pasted in order, fail (exit {r.returncode}): {r.stderr[-600:]}\n"
          + "\n".join(commands))
    ran = open(log).read().splitlines()
    top = os.path.realpath(tree)
    for want in ("make " + top + " deps", "make " + top + " data", f"make {top} lab LESSON={lesson}",
                 f"ctest {top} --test-dir build-lab -R L{lesson}_T1 --output-on-failure",
                 f"minitorch-grade {top} --lesson {lesson}", f"lesson-{lesson} {top} --auto --quick", f"{by_hand[0]} {top} {by_hand[1]}"):
        check(any(line.startswith(want) for line in ran), f"LAB.md's commands did not run `{want}`; they ran:\n" + "\n".join(ran))


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
        check("| L05.1 | ring all-reduce | dist/ring.cpp:3 | `ctest --test-dir build-lab -R L05_T1` | 3 | — |" in lab,
              "LAB.md lacks L05.1's row:\n" + lab)
        check("| L06.1 |" in lab and "`ctest --test-dir build-lab -R L06_T1`" in lab,
              "LAB.md lacks L06.1's row (default filter L06_T1):\n" + lab)
        for command in ("make deps", "make data", "make lab LESSON=05", "minitorch-grade --lesson 05",
                        "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "--oversubscribe"):
            check(command in lab, f"LAB.md does not say `{command}`:\n" + lab)
        run_commands(out, lab, "05", ("mpirun", "-np 2 --oversubscribe build-lab/bin/test-zero_mpi --gtest_filter=L05_T1_*"))
    # One lesson: the other keeps its solution.
    r = run(ref, out, "--lesson", "06")
    check(r.returncode == 0, f"--lesson 06 failed: {r.stdout}{r.stderr}")
    if r.returncode == 0:
        text = open(os.path.join(out, "dist", "ring.cpp")).read()
        check("int secret_sum" in text and "secret_partition" not in text, "--lesson 06 must stub L06.1 only:\n" + text)
        lab = open(os.path.join(out, "LAB.md"), encoding="utf-8").read()
        check("L05.1" not in lab and "L05_T" not in lab, "--lesson 06's LAB.md names lesson 05's tasks or tests:\n" + lab)
        run_commands(out, lab, "06", ("test-zero", "--gtest_filter=L06_T1_*"))
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
