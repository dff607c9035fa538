#!/usr/bin/env python3
"""make labs-check: proves the labs (docs/labs.md), one lesson at a time.

First, from the data alone (labs/tasks/L*.json, labs/depends.json): a task's own tests may fail while another
task is a stub only if the task declares it (`needs`, transitively) or it belongs to an earlier lesson.

Then for each lesson: the lesson's solution blocks are replaced by the stubs `make labs LESSON=NN` writes (the same
function writes both), compiled apart from the reference and linked into test binaries of their own
(tools/labs/labs_stubbed.py: BUILD/labs-check/stubbed/bin), so the source tree and BUILD never change; the
library's test suites run there. Checked:

  - the reference passes every test (run first, in BUILD, unless --no-reference);
  - the stubbed tree builds;
  - a test passes if and only if it depends on no stubbed task (labs/depends.json, plus its own task and
    the tasks that one needs), and each stubbed task's own tests fail with `not implemented: L<NN>.<k>`.

--full also pastes back one solution at a time (all the lesson's other tasks stubbed): exactly the tests
that depend on no task still stubbed turn green. --record writes labs/depends.json from runs with one task
stubbed at a time (then review the diff: it is data every later check holds the tree to).

The suites are the library's GoogleTest binaries (test-<layer>; each runs once as one process, the multi-rank
ones under mpirun -np 2). tools/ and lessons/ (programs trained for seconds to minutes), cuda/ and backend_ops/
(the op table that holds a backend to a reference, for the GPU check) are left out: docs/labs.md says why.

Then the grader itself (tools/labs/labs_wrong.py): for each wrong solution of WRONG_SOLUTIONS, minitorch-grade's
output must say what a student needs (the whole failure block with both values and the case; the crash and its
test).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from labs_run import ENV, log, run_binary, run_suites, suite_binaries  # noqa: E402
import labs_run  # noqa: E402
from labs_stubbed import StubbedBuild  # noqa: E402
from labs_tasks import LabError, closure, deps_of, load_depends, load_tasks, own_task, undeclared_dependencies  # noqa: E402
from labs_wrong import check_grader_on_wrong_solutions, grader_command  # noqa: E402
from make_labs import marked_files, stub, tracked_files  # noqa: E402

# ---- the checks ----------------------------------------------------------------------------------------------

def expect(results, tasks, depends, stubbed):
    """Problems of one run: a test passes iff it depends on no stubbed task; a stubbed task's own tests fail
    with its (or a needed task's) NotImplemented message."""
    problems = []
    for name, r in sorted(results.items()):
        deps = deps_of(name, tasks, depends)
        hit = deps & stubbed
        own = own_task(name, tasks)
        if not hit and not r.passed:
            problems.append(f"{name} ({r.binary}) depends on no stubbed task ({', '.join(sorted(deps)) or 'none'}) "
                            f"but failed: {r.message.strip()[:300]}")
        elif hit and r.passed:
            problems.append(f"{name} ({r.binary}) depends on {', '.join(sorted(hit))} (stubbed) but passed: "
                            "labs/depends.json says more than the test needs")
        elif hit and own in stubbed and not any(f"not implemented: {t}" in r.message for t in hit):
            problems.append(f"{name} ({r.binary}) failed without its task's NotImplemented message "
                            f"(expected 'not implemented: {own}'): {r.message.strip()[:300]}")
    for task in sorted(stubbed):
        if not any(own_task(n, tasks) == task for n in results):
            problems.append(f"task {task} has no tests (suites named {tasks[task]['tests']}_...)")
    return problems


def quiet_rerun(build, work, np, timeout, results, tasks, depends, stubbed):
    """{test: Result} of the tests that failed but depend on no stubbed task, each run again alone, one after
    another: a multi-rank run that died beside others (isolate) may have met its deadline under their load.
    A real failure fails again, and expect() reports it."""
    again = sorted((r.binary, n) for n, r in results.items()
                   if not r.passed and not (deps_of(n, tasks, depends) & stubbed))
    if again:
        log(f"labs-check: {len(again)} test(s) that depend on no stubbed task failed; each runs again alone: "
            + ", ".join(n for _, n in again))
    out = {}
    for binary, name in again:
        out.update(run_binary(build, work, binary, np, timeout, [name]))
    return out


def grade(cmd, lesson=None):
    """minitorch-grade --json (`cmd`: the command that runs it) over every task, or one lesson's."""
    r = subprocess.run(cmd + ["--json"] + (["--lesson", lesson] if lesson else []), capture_output=True, text=True,
                       env={**os.environ, **ENV})
    if r.returncode != 0:
        raise LabError(f"minitorch-grade failed (exit {r.returncode}): {r.stderr.strip()[-500:]}")
    return json.loads(r.stdout)


def stubbed_texts(root, marked, tasks, chosen):
    texts = {}
    for rel, (lines, blocks) in marked.items():
        if any(chosen(t) for t, _, _ in blocks):
            texts[rel] = "".join(stub(lines, blocks, tasks, chosen))
    return texts


def compress(failing, all_tests):
    """Test name patterns for a set of tests: Suite.* where every test of the suite is in it."""
    suites = {}
    for name in all_tests:
        suites.setdefault(name.split(".")[0], []).append(name)
    out = []
    for suite, names in sorted(suites.items()):
        hit = [n for n in names if n in failing]
        if hit and len(hit) == len(names):
            out.append(f"{suite}.*")
        else:
            out += sorted(hit)
    return out


def restore_in_place_backup(root, work):
    """Files an interrupted labs-check of the past left stubbed in the tree itself (it stubbed in place then,
    keeping the originals in WORK/backup): put back, so the reference is the reference again."""
    manifest = os.path.join(work, "backup", "manifest.json")
    if not os.path.exists(manifest):
        return []
    with open(manifest) as f:
        files = json.load(f)
    for rel in files:
        with open(os.path.join(work, "backup", "files", rel), encoding="utf-8") as f:
            text = f.read()
        with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
            f.write(text)
    os.remove(manifest)
    return files


def write_depends(root, work, recorded, tasks):
    """labs/depends.json from --record's runs: {task: (tests that failed while only it was a stub, every test)}.
    A test listed under a task that builds on T (needs it) need not be listed under T too — unless T needs that
    task as well (tasks that need each other, as L06.2 and L06.3 do): dropping each one's tests for the other's
    would list them under neither."""
    with open(os.path.join(work, "recorded.json"), "w") as f:  # the raw runs, kept for a look
        json.dump({t: sorted(failing) for t, (failing, _) in recorded.items()}, f, indent=1)
    patterns = {}
    for task, (failing, all_tests) in recorded.items():
        implied = set()
        for other, (f, _) in recorded.items():
            if other != task and task in closure([other], tasks) and other not in closure([task], tasks):
                implied |= f
        patterns[task] = compress(failing - implied, all_tests)
    path = os.path.join(root, "labs", "depends.json")
    doc = {"about": "Which tests (other than a task's own, named L<NN>_T<k>_..., and the tasks that one needs) "
                    "fail while a task is a stub: written by tools/labs/labs_check.py --record, held to by "
                    "make labs-check. Patterns are GoogleTest names, * for any characters.",
           "depends": {}}
    if os.path.exists(path):
        with open(path) as f:
            doc["depends"] = json.load(f).get("depends", {})
    doc["depends"].update(patterns)
    doc["depends"] = {k: v for k, v in sorted(doc["depends"].items()) if v}
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    log(f"labs-check: wrote {path} (review the diff)")


def check_lesson(lesson, ctx, args, recorded):
    """Problems of one lesson's runs: every task stubbed (and with --full one solved at a time; with --record
    one stubbed at a time, which fills `recorded` instead)."""
    tasks, depends, stubbed_build = ctx["tasks"], ctx["depends"], ctx["stubbed"]
    ids = sorted(t for t in tasks if tasks[t]["lesson"] == lesson)
    runs = [(set(ids), "every task stubbed")]
    if args.full:
        runs += [(set(ids) - {t}, f"{t} solved, the rest stubbed") for t in ids]
    if args.record:  # first every task stubbed; then one at a time, running only what failed then
        runs += [({t}, f"only {t} stubbed") for t in ids]
    only, all_tests, problems = None, set(), []
    for stubbed, what in runs:
        t0 = time.time()
        build_s = stubbed_build.apply(stubbed_texts(ctx["root"], ctx["marked"], tasks, lambda t, s=stubbed: t in s),
                                      ctx["layers"])
        results = run_suites(stubbed_build.work, ctx["work"], ctx["layers"], args.np, args.jobs, args.timeout, only)
        failed = {n for n, r in results.items() if not r.passed}
        if args.record and only is None:
            only = {}
            for n in failed:
                only.setdefault(results[n].binary, []).append(n)
            log(f"labs-check L{lesson} ({what}): {len(failed)} tests fail ({time.time() - t0:.0f} s)")
            all_tests = set(results)
            continue
        if args.record:
            (task,) = stubbed
            own = {n for n in failed if task in deps_of(n, tasks, {})}
            recorded[task] = (failed - own, all_tests)
            log(f"labs-check L{lesson} ({what}): {len(failed)} tests fail, {len(own)} of them the task's own; "
                f"built in {build_s:.0f} s, {time.time() - t0:.0f} s in all")
            continue
        results.update(quiet_rerun(stubbed_build.work, ctx["work"], args.np, args.timeout, results, tasks, depends,
                                   stubbed))
        failed = {n for n, r in results.items() if not r.passed}
        found = expect(results, tasks, depends, stubbed)
        if stubbed == set(ids):  # the grader gives a lesson of stubs nothing
            g = grade(grader_command(stubbed_build.work, ctx["root"]), lesson)
            found += [f"minitorch-grade gives stubbed task {t['id']} {t['points']} points"
                      for t in g["tasks"] if t["points"] != 0]
        own_failed = sum(1 for n in failed if own_task(n, tasks) in stubbed)
        log(f"labs-check L{lesson} ({what}): built in {build_s:.0f} s; {len(results)} tests, {len(failed)} fail as "
            f"they should ({own_failed} of them the stubbed tasks' own), {len(found)} problems ({time.time() - t0:.0f} s)")
        problems += [f"L{lesson} ({what}): {p}" for p in found]
    return problems


def check_reference(ctx, args):
    t0 = time.time()
    ref = run_suites(ctx["build"], ctx["work"], ctx["layers"], args.np, args.jobs, args.timeout)
    bad = [f"{n} ({r.binary}): {r.message.strip()[:300]}" for n, r in sorted(ref.items()) if not r.passed]
    log(f"labs-check: the reference: {len(ref) - len(bad)}/{len(ref)} tests pass ({time.time() - t0:.0f} s)")
    if bad:
        raise LabError("the reference tree fails tests (fix them first):\n  " + "\n  ".join(bad))
    g = grade([os.path.join(ctx["build"], "bin", "minitorch-grade")])
    log(f"labs-check: minitorch-grade on the reference: {g['points']:g} / {g['max_points']} points")
    if g["points"] != g["max_points"]:
        raise LabError("minitorch-grade does not give the reference full marks:\n" + json.dumps(g, indent=1))


def interrupted(*_):
    raise KeyboardInterrupt()


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=".", help="the reference repository")
    ap.add_argument("--build", default="build", help="its CMake build folder (Makefile generator; never changed)")
    ap.add_argument("--work", help="scratch folder, the stubbed build in WORK/stubbed (default BUILD/labs-check)")
    ap.add_argument("--lesson", action="append", help="NN; repeat for several (default: every lesson with tasks)")
    ap.add_argument("--full", action="store_true", help="also paste back one solution at a time")
    ap.add_argument("--record", action="store_true", help="write labs/depends.json for the lessons from one-task runs")
    ap.add_argument("--no-reference", action="store_true", help="skip the run of the unmodified tree")
    ap.add_argument("--restore", action="store_true",
                    help="only put back files an interrupted labs-check of the past (which stubbed in place) left stubbed")
    ap.add_argument("--np", type=int, default=2, help="ranks for the multi-rank suites (default 2)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=int, default=600, help="seconds per test binary")
    ap.add_argument("--verbose", action="store_true", help="print each test binary's run and its time")
    return ap.parse_args()


def main():
    args = parse_args()
    labs_run.VERBOSE = args.verbose
    root, build = os.path.abspath(args.root), os.path.abspath(args.build)
    work = os.path.abspath(args.work or os.path.join(build, "labs-check"))
    signal.signal(signal.SIGTERM, interrupted)
    t_start = time.time()
    try:
        restored = restore_in_place_backup(root, work)
        if restored:
            log(f"labs-check: put back {len(restored)} file(s) an interrupted run had left stubbed: {', '.join(restored)}")
        if args.restore:
            return 0
        tasks = load_tasks(root)
        depends = load_depends(root, tasks)
        marked = marked_files(root, tracked_files(root), tasks)
        for t in sorted(set(tasks) - {t for _, blocks in marked.values() for t, _, _ in blocks}):
            raise LabError(f"task {t} ({tasks[t]['title']}) has no // BEGIN SOLUTION {t} block")
        lessons = sorted(set(args.lesson or [t["lesson"] for t in tasks.values()]))
        for lesson in lessons:
            if not any(t["lesson"] == lesson for t in tasks.values()):
                raise LabError(f"--lesson {lesson}: no tasks in labs/tasks/L{lesson}.json")
        all_problems = [] if args.record else undeclared_dependencies(tasks, depends)
        log(f"labs-check: what the tasks need (labs/tasks, labs/depends.json): {len(all_problems)} problems")
        ctx = {"root": root, "build": build, "work": work, "tasks": tasks, "depends": depends, "marked": marked,
               "layers": suite_binaries(build), "stubbed": StubbedBuild(root, build, os.path.join(work, "stubbed"))}
        if not args.no_reference:
            check_reference(ctx, args)
        recorded = {}
        for lesson in lessons:
            all_problems += check_lesson(lesson, ctx, args, recorded)
        if args.record:
            write_depends(root, work, recorded, tasks)
        else:
            all_problems += check_grader_on_wrong_solutions(ctx["stubbed"], root, marked, tasks, lessons)
        if all_problems:
            print("\n".join(["labs-check: FAILED"] + all_problems), file=sys.stderr)
            return 1
        log(f"labs-check: ok, lesson(s) {', '.join(lessons)}{' (full)' if args.full else ''} in {time.time() - t_start:.0f} s")
        return 0
    except LabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("labs-check: interrupted (the tree and the reference build were never changed)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
