#!/usr/bin/env python3
"""make labs: the student tree of minitorch's lab assignments, cut from the one reference tree (docs/labs.md).

The code a student writes sits in the reference between

    // BEGIN SOLUTION L05.2
    ...the solution...
    // END SOLUTION

(task ids L<lesson>.<n>; a block is a whole function body, or statements nothing after them depends on).
This script copies the repository's tracked files (`git ls-files`: no git history, no build outputs, so no
solution survives anywhere) into OUT and replaces every block of the chosen lessons with

    throw minitorch::NotImplemented("L05.2: <title> — see <guide>");

keeping the markers' lines so the student sees where to write. The titles and guides come from
labs/tasks/L<lesson>.json. A file with a block must include "minitorch/not_implemented.h". Markers that do not pair,
nest, or name an unknown task are one error naming the file and line. OUT/LAB.md lists the tasks.

Usage: make_labs.py --root REPO --out DIR [--lesson NN] [--list]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from labs_tasks import LabError, load_depends, load_tasks, task_binaries  # noqa: E402

BEGIN = re.compile(r"^(\s*)//\s*BEGIN SOLUTION\s+(\S+)\s*$")
END = re.compile(r"^\s*//\s*END SOLUTION\s*$")
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cu", ".cuh")
INCLUDE = '#include "minitorch/not_implemented.h"'


def tracked_files(root):
    """The repository's files as git knows them (no .git, no build outputs, no untracked files)."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise LabError(f"{root}: not a git checkout ({e}); make labs copies the tracked files only")
    return sorted(p for p in out.decode().split("\0") if p)


def find_blocks(path, lines, tasks):
    """[(task id, begin line index, end line index)] of one file, checked."""
    blocks, open_ = [], None
    for i, line in enumerate(lines):
        b, e = BEGIN.match(line), END.match(line)
        if b:
            if open_:
                raise LabError(f"{path}:{i + 1}: BEGIN SOLUTION {b.group(2)} inside {open_[0]} (opened at line {open_[1] + 1})")
            if b.group(2) not in tasks:
                raise LabError(f"{path}:{i + 1}: BEGIN SOLUTION {b.group(2)}: no such task in labs/tasks/L*.json")
            open_ = (b.group(2), i)
        elif e:
            if not open_:
                raise LabError(f"{path}:{i + 1}: END SOLUTION without a BEGIN SOLUTION")
            blocks.append((open_[0], open_[1], i))
            open_ = None
        elif re.match(r"^\s*//\s*(BEGIN|END)\s*SOLUTION", line):
            raise LabError(f"{path}:{i + 1}: a malformed marker: '{line.strip()}' "
                           "(write '// BEGIN SOLUTION L05.2' or '// END SOLUTION' alone on its line)")
    if open_:
        raise LabError(f"{path}:{open_[1] + 1}: BEGIN SOLUTION {open_[0]} is never closed")
    return blocks


def marked_files(root, files, tasks):
    """{path: (lines, blocks)} of the files (relative to root) that hold solution blocks, each checked."""
    marked = {}
    for rel in files:
        if not rel.endswith(SOURCE_SUFFIXES) or rel.startswith("tools/labs/"):
            continue
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            continue  # deleted in the work tree, not yet in git
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
        blocks = find_blocks(rel, lines, tasks)
        if blocks:
            if not any(line.strip() == INCLUDE for line in lines):
                raise LabError(f"{rel}: has solution blocks but does not {INCLUDE} (its stubs throw NotImplemented)")
            marked[rel] = (lines, blocks)
    return marked


def stub(lines, blocks, tasks, chosen):
    """The file's lines with the chosen tasks' blocks replaced by their NotImplemented stubs."""
    out, last = [], 0
    for task, b, e in blocks:
        if not chosen(task):
            continue
        indent = BEGIN.match(lines[b]).group(1)
        t = tasks[task]
        message = f"{task}: {t['title']} — see {t['guide']}".replace("\\", "\\\\").replace('"', '\\"')
        out += lines[last:b + 1]
        out.append(f'{indent}throw ::minitorch::NotImplemented("{message}");\n')
        last = e
    return out + lines[last:]


def multi_rank_example(root, tasks, mine, lesson):
    """The command line that runs one task's tests by hand, the lesson's own: its first task with multi-rank tests
    under mpirun (test-*_mpi), else its first task's single-process binary; from the top of the tree."""
    where = task_binaries(root, {t: tasks[t] for t in mine})
    mine = [t for t in mine if tasks[t]["lesson"] == lesson] or mine
    for t in mine:
        for binary in where.get(t, []):
            if binary.endswith("_mpi"):
                return (f"OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 --oversubscribe "
                        f"build-lab/bin/{binary} --gtest_filter='{tasks[t]['tests']}_*'   # {t}'s tests on 2 ranks, by hand")
    for t in mine:
        if where.get(t):
            return (f"build-lab/bin/{where[t][0]} --gtest_filter='{tasks[t]['tests']}_*'   # {t}'s tests, by hand")
    return "# (no test of these tasks found under tests/)"


def lab_md(root, tasks, chosen, per_task, lesson):
    """LAB.md of a student tree: how to build, test one task, grade, run MPI as root and make the corpus, then
    each task with its code, tests, points, what it needs and how many other tests wait on it, all from
    labs/tasks/L*.json and labs/depends.json (the data labs-check holds the tree to)."""
    depends = load_depends(root, tasks)
    mine = [t for t in sorted(tasks) if chosen(t)]
    lessons = sorted({tasks[t]["lesson"] for t in mine})
    nn = lesson or (lessons[0] if lessons else "05")
    first = mine[0] if mine else "L05.1"
    example = tasks[first]["tests"] if mine else "L05_T1"
    points = sum(tasks[t]["points"] for t in mine)
    head = f"lesson {lesson}" if lesson else "every lesson"
    mpi = multi_rank_example(root, tasks, mine, nn)
    out = [f"# Lab: {head} ({len(mine)} tasks, {points} points)", "",
           "Each task below is a function of the library whose body is a stub: it throws",
           f"`NotImplemented(\"{first}: ... see <guide>\")`, so every test of the task fails naming it. Write the body",
           "(the guide of its lesson explains it), rebuild, run its tests, and grade.", "",
           "## Commands", "",
           "Every command runs from this folder, the top of the tree (where this LAB.md is), in this order:", "",
           "    make deps                      # once, as root: compilers, Open MPI, Eigen, nlohmann-json, CLI11, GoogleTest",
           "    make data                      # once: this tree has no datasets/ folder; this writes datasets/kjv.txt",
           f"    make lab LESSON={nn}             # build only what grading lesson {nn} runs, into build-lab/ (again after each edit)",
           f"    ctest --test-dir build-lab -R {example} --output-on-failure   # one task's tests",
           f"    build-lab/bin/minitorch-grade --lesson {nn}   # points per task; --task {first} for one, --json for a machine",
           f"    build-lab/bin/lesson-{nn} --auto --quick          # the lesson itself, running your code",
           f"    {mpi}", "",
           "As root, Open MPI refuses to start unless `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1` are",
           "set (ctest and the grader set them for their own runs; the last line sets them for its own `mpirun`), and",
           "more ranks than cores need `mpirun --oversubscribe`. `make` builds everything (every tool, lesson,",
           "benchmark and test: minutes); `make lab` only what the grader needs.", "",
           "## Tasks", "",
           "| task | write | where | its tests | points | needs | other tests that fail while it is a stub |",
           "|---|---|---|---|---|---|---|"]
    for t in mine:
        task = tasks[t]
        waiting = depends.get(t, [])
        out.append(f"| {t} | {task['title']} | {', '.join(per_task.get(t, []))} | `ctest --test-dir build-lab -R {task['tests']}` "
                   f"| {task['points']} | {', '.join(task['needs']) or '—'} "
                   f"| {len(waiting)} ({', '.join(waiting[:3])}{', ...' if len(waiting) > 3 else ''}) |"
                   if waiting else
                   f"| {t} | {task['title']} | {', '.join(per_task.get(t, []))} | `ctest --test-dir build-lab -R {task['tests']}` "
                   f"| {task['points']} | {', '.join(task['needs']) or '—'} | none |")
    out += ["", "A task's points are its points × the share of its tests that pass (a multi-rank test counts only if it",
            "passes at every rank count the grader tries: 2 and 4). \"needs\": tasks of the same lesson whose code this",
            "one's tests call; write those first. The last column is labs/depends.json: tests of the library that call",
            "the task's code and so fail until it is written (docs/labs.md); `make lab` builds only the task tests,",
            "`make test` builds and runs them all.", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True, help="the reference repository (a git checkout)")
    ap.add_argument("--out", help="where to write the student tree (replaced)")
    ap.add_argument("--lesson", help="stub only this lesson's tasks (e.g. 05); earlier lessons keep their solutions")
    ap.add_argument("--list", action="store_true", help="print the marked tasks and their files, write nothing")
    args = ap.parse_args()
    try:
        if args.lesson is not None and not re.fullmatch(r"\d\d", args.lesson):
            raise LabError(f"--lesson '{args.lesson}': expected two digits, e.g. 05")
        if not args.list and not args.out:
            raise LabError("--out DIR is needed (or --list)")
        root = os.path.abspath(args.root)
        tasks = load_tasks(root)
        chosen = (lambda t: True) if args.lesson is None else (lambda t: t.startswith(f"L{args.lesson}."))
        files = tracked_files(root)
        marked = marked_files(root, files, tasks)
        per_task = {}
        for rel, (_, blocks) in marked.items():
            for task, b, _ in blocks:
                per_task.setdefault(task, []).append(f"{rel}:{b + 1}")
        if args.list:
            for task in sorted(tasks):
                print(f"{task}  {tasks[task]['title']}  ({tasks[task]['points']} points)  {', '.join(per_task.get(task, ['(no block)']))}")
            return 0
        out = os.path.abspath(args.out)
        inside = out.startswith(root + os.sep)
        if out == root or root.startswith(out + os.sep) or (inside and not os.path.relpath(out, root).startswith("build")):
            raise LabError(f"--out {out}: must be outside the reference tree, or under one of its build folders")
        if os.path.exists(out):
            shutil.rmtree(out)
        stubbed = 0
        for rel in files:
            src, dst = os.path.join(root, rel), os.path.join(out, rel)
            if not os.path.lexists(src):
                continue  # deleted in the work tree, not yet in git
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if rel in marked:
                lines, blocks = marked[rel]
                with open(dst, "w", encoding="utf-8") as f:
                    f.writelines(stub(lines, blocks, tasks, chosen))
                stubbed += sum(1 for t, _, _ in blocks if chosen(t))
            else:
                shutil.copy2(src, dst, follow_symlinks=False)
        with open(os.path.join(out, "LAB.md"), "w", encoding="utf-8") as f:
            f.write(lab_md(root, tasks, chosen, per_task, args.lesson))
        print(f"labs: wrote {out} ({len(files)} files, {stubbed} solution blocks stubbed"
              f"{'' if args.lesson is None else ' of lesson ' + args.lesson}; LAB.md lists the tasks)")
        return 0
    except LabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
