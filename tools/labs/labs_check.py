#!/usr/bin/env python3
"""make labs-check: proves the labs (docs/labs.md), one lesson at a time.

For each lesson: the lesson's solution blocks are replaced by the stubs `make labs LESSON=NN` writes (the same
function writes both), IN PLACE in the reference tree, whose build is then brought up to date (only the
stubbed files recompile); the library's test suites run; the files are put back byte for byte. Checked:

  - the reference passes every test (run first, unless --no-reference);
  - the stubbed tree builds;
  - a test passes if and only if it depends on no stubbed task (labs/depends.json, plus its own task and
    the tasks that one needs), and each stubbed task's own tests fail with `not implemented: L<NN>.<k>`.

--full also pastes back one solution at a time (all the lesson's other tasks stubbed): exactly the tests
that depend on no task still stubbed turn green. --record writes labs/depends.json from runs with one task
stubbed at a time (then review the diff: it is data every later check holds the tree to).

The suites are the library's GoogleTest binaries (build/bin/test-<layer>; each runs once as one process,
the multi-rank ones under mpirun -np 2). tools/ and lessons/ (programs trained for seconds to minutes),
cuda/ and backend_ops/ (the op table that holds a backend to a reference, for the GPU check) are left out:
docs/labs.md says why.

Then the grader itself: for the wrong solutions in WRONG_SOLUTIONS (a ring that stops one step early, one
that crashes), minitorch-grade's output must say what a student needs (the case, rank, expected and actual
value; the crash and its test), in whole lines.

If a run is interrupted, the stubbed files are restored from WORK/backup the next time this runs (and a
message says so); `--restore` does only that.
"""
import argparse
import concurrent.futures
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from labs_tasks import LabError, from_gtest_bytes, load_depends, load_tasks  # noqa: E402
from make_labs import marked_files, stub, tracked_files  # noqa: E402

SKIPPED_LAYERS = ("tools", "lessons", "cuda", "backend_ops")
TASK_PREFIX = re.compile(r"^(L\d\d)_T(\d+)_")
ENV = {"MINITORCH_NUM_THREADS": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
       "OMPI_MCA_rmaps_base_oversubscribe": "1",
       # A stub that throws on one rank leaves the others waiting: end such a job in seconds
       # (dist/mpi_group.cpp). No wait in the multi-rank suites is longer than a peer's milliseconds of
       # compute: the reference run, first, with the same cap and load, proves 5 s is no false timeout.
       "MINITORCH_COMM_TIMEOUT_CAP_S": "5"}


def log(msg):
    print(msg, flush=True)


# ---- what each test depends on ------------------------------------------------------------------------------

def own_task(test, tasks):
    m = TASK_PREFIX.match(test)
    if not m:
        return None
    task = f"{m.group(1)}.{m.group(2)}"
    return task if task in tasks else None


def closure(start, tasks):
    """The tasks in `start` and every task they build on (needs), transitively."""
    out, todo = set(), list(start)
    while todo:
        t = todo.pop()
        if t not in out:
            out.add(t)
            todo += tasks[t]["needs"]
    return out


def deps_of(test, tasks, depends):
    """The tasks the test needs: its own (from its name), labs/depends.json's, and what those build on."""
    own = own_task(test, tasks)
    listed = [task for task, patterns in depends.items() if any(fnmatch.fnmatchcase(test, p) for p in patterns)]
    return closure(([own] if own else []) + listed, tasks)


# ---- running the suites ---------------------------------------------------------------------------------------

class Result:
    def __init__(self, passed, message="", binary=""):
        self.passed, self.message, self.binary = passed, message, binary


def suite_binaries(build):
    bins = []
    for name in sorted(os.listdir(os.path.join(build, "bin"))):
        m = re.fullmatch(r"test-(\w+)", name)
        if m and m.group(1) not in SKIPPED_LAYERS:
            bins.append(m.group(1))
    return bins


def parse_json(path, binary, results):
    with open(path) as f:
        doc = json.load(f)
    for suite in doc.get("testsuites", []):
        for t in suite.get("testsuite", []):
            name = f"{suite['name']}.{t['name']}"
            failures = [from_gtest_bytes(x.get("failure", "")) for x in t.get("failures", [])]
            passed = not failures and t.get("result", "COMPLETED") in ("COMPLETED", "SKIPPED")
            prev = results.get(name)
            if prev is None or (prev.passed and not passed):  # failed on any rank = failed
                results[name] = Result(passed, failures[0][:400] if failures else "", binary)


def parse_stdout(text, binary, results):
    """What a crashed or killed run printed: the tests it finished (a failure's message is what the test
    printed), and the one that was running, returned."""
    running, printed = None, []
    for line in text.splitlines():
        m = re.match(r"^\[\s*(RUN|OK|FAILED)\s*\] (\S+)", line)
        if not m:
            printed.append(line)
            continue
        kind, name = m.group(1), m.group(2)
        if kind == "RUN":
            running, printed = name, []
        elif name == running:
            results.setdefault(name, Result(kind == "OK", "" if kind == "OK" else "\n".join(printed)[:400], binary))
            running = None
    return running


VERBOSE = False
# Runs of one dying multi-rank binary side by side (isolate); each is NP ranks.
ISOLATION_JOBS = 4


def run_once(exe, layer, np, args, out_dir, timeout):
    """One run of a test binary: (the output, its exit status or None on a timeout, the JSON files)."""
    start = time.monotonic()
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    args = [*args, "--gtest_color=no"]  # the output is parsed when a run dies
    if layer.endswith("_mpi"):
        cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(np), "sh", "-c",
               f'exec "$0" --gtest_output=json:{out_dir}/rank$OMPI_COMM_WORLD_RANK.json "$@"', exe, *args]
    else:
        cmd = [exe, f"--gtest_output=json:{out_dir}/rank0.json", *args]
    # The output goes to a file, not a pipe: a process the test started in a session of its own (an MPI
    # singleton's orted) can outlive it holding the pipe open, and reading to its end would never return.
    log_path = os.path.join(out_dir, "output.txt")
    with open(log_path, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **ENV},
                                start_new_session=True)
    try:
        status = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        status = None
    with open(log_path, errors="replace") as out:
        text = out.read()
    os.remove(log_path)
    files = [os.path.join(out_dir, f) for f in sorted(os.listdir(out_dir))]
    complete = status in (0, 1) and len(files) == (np if layer.endswith("_mpi") else 1)
    if VERBOSE:
        log(f"  test-{layer} {args[0][:80]}: exit {status}, {time.monotonic() - start:.1f} s")
    return text, status, files if complete else None


def list_tests(exe):
    r = subprocess.run([exe, "--gtest_list_tests"], capture_output=True, text=True, env={**os.environ, **ENV}, timeout=120)
    names, suite = [], None
    for line in r.stdout.splitlines():
        if line.startswith(" ") and suite:
            names.append(f"{suite}.{line.split()[0]}")
        elif line.strip():
            suite = line.split()[0].rstrip(".")
    return names


# Suites that mostly sleep, in the deadlines of their stopped ranks (45 s of test-dist's run, one test after another):
# they run in SLEEPY_PARTS parts of their own, all at once and beside everything else, instead of adding their
# sleep to every lesson's run (docs/labs.md).
SLEEPY = {"dist": ("L05_CollectivesTimeout.", "L05_StartAndExitTimeout.", "L05_CollectivesFailure.")}
SLEEPY_PARTS = 4


def binary_parts(build, layer, only=None):
    """[(part, names or None)]: one binary run whole, or for a SLEEPY layer the rest of it and its sleeping tests
    dealt into SLEEPY_PARTS parts "LAYER-sleepyK" (a part names its results folder)."""
    prefixes = SLEEPY.get(layer)
    if not prefixes:
        return [(layer, only)]
    names = sorted(only) if only is not None else list_tests(os.path.join(build, "bin", f"test-{layer}"))
    sleepy = [n for n in names if n.startswith(prefixes)]
    rest = [n for n in names if not n.startswith(prefixes)]
    groups = [(layer, rest)] + [(f"{layer}-sleepy{k}", sleepy[k::SLEEPY_PARTS]) for k in range(SLEEPY_PARTS)]
    return [(part, group) for part, group in groups if group]


def run_binary(build, work, layer, np, timeout, only=None, part=None):
    """{test: Result} of one test binary, run whole (or only the tests `only` names). When a run dies: a
    single-process binary runs again without what finished (the test that was running failed); the ranks
    of a multi-rank binary may have fallen out of step (one rank's stub threw before a send another rank
    waits for), so its suites then run one at a time, and the tests of a suite that dies too alone."""
    exe = os.path.join(build, "bin", f"test-{layer}")
    out_dir = os.path.join(work, "results", part or layer)
    positive = ":".join(sorted(only)) if only is not None else "*"
    results, excluded = {}, []
    for attempt in range(50):
        flt = [f"--gtest_filter={positive}" + (f"-{':'.join(excluded)}" if excluded else "")]
        text, status, files = run_once(exe, layer, np, flt, out_dir, timeout)
        if files:
            for path in files:
                parse_json(path, layer, results)
            return results
        why = f"timed out after {timeout} s" if status is None else f"the process ended (exit {status})"
        if layer.endswith("_mpi"):
            break
        running = parse_stdout(text, layer, results)
        if running is None:
            raise LabError(f"test-{layer} ended ({why}) outside any test:\n{text[-2000:]}")
        results[running] = Result(False, f"{why} in this test: {text[-300:]}", layer)
        excluded = sorted(results)
    else:
        raise LabError(f"test-{layer}: too many crashes")
    # A multi-rank binary whose run died: suite by suite, and the tests of a suite whose run dies too alone.
    names = sorted(only) if only is not None else list_tests(exe)
    suites = {}
    for name in names:
        suites.setdefault(name.split(".")[0], []).append(name)
    results, dying = {}, []
    for (suite, members), (got, death) in zip(sorted(suites.items()), isolate(exe, layer, np, sorted(suites.items()),
                                                                            out_dir, timeout)):
        results.update(got)
        if death and len(members) == 1:
            results[members[0]] = Result(False, death, layer)
        elif death:
            dying += [(name, [name]) for name in members]
    for (name, _), (got, death) in zip(dying, isolate(exe, layer, np, dying, out_dir, timeout)):
        results.update(got)
        if death:
            results[name] = Result(False, death, layer)
    return results


def isolate(exe, layer, np, groups, out_dir, timeout):
    """[(results, None) or ({}, why it died)] of one run of a multi-rank binary per (label, test names) group,
    ISOLATION_JOBS runs at a time: a run that dies mostly waits, on the live rank's deadline for the dead
    one, so they overlap well. A test that failed only here, under that load, gets a quiet rerun (main)."""
    def one(i):
        names = groups[i][1]
        text, status, files = run_once(exe, layer, np, [f"--gtest_filter={':'.join(names)}"],
                                       os.path.join(out_dir, f"isolated{i}"), timeout)
        if not files:
            why = f"timed out after {timeout} s" if status is None else f"the job ended (exit {status})"
            return {}, f"{why}: {text[-400:]}"
        got = {}
        for path in files:
            parse_json(path, layer, got)
        return got, None
    with concurrent.futures.ThreadPoolExecutor(max_workers=ISOLATION_JOBS) as pool:
        return list(pool.map(one, range(len(groups))))


def run_suites(build, work, layers, np, jobs, timeout, only=None):
    """{test: Result} over the suites (or only the tests `only` = {layer: names} lists): the multi-rank ones
    one after another, beside the single-process ones `jobs` at a time. The slowest single-process binary
    (test-dist) mostly sleeps, in its stopped-rank tests' deadlines: those tests run in parts of their own
    (SLEEPY), all at once, so their sleep overlaps the other binaries and the multi-rank line."""
    if only is not None:
        layers = [layer for layer in layers if only.get(layer)]
    run = lambda layer: run_binary(build, work, layer, np, timeout, only and only[layer])  # noqa: E731
    single = [layer for layer in layers if not layer.endswith("_mpi")]
    multi = [layer for layer in layers if layer.endswith("_mpi")]
    # (layer, part, names): a sleepy binary's parts run side by side, each a job of the pool
    single_parts = [(layer, part, names) for layer in single
                    for part, names in binary_parts(build, layer, only and only[layer])]
    sleepy = [job for job in single_parts if "-sleepy" in job[1]]
    busy = [job for job in single_parts if "-sleepy" not in job[1]]
    run_part = lambda job: run_binary(build, work, job[0], np, timeout, job[2], part=job[1])  # noqa: E731
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as chain, \
            concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(sleepy))) as sleepers:
        multi_results = chain.submit(lambda: [run(layer) for layer in multi])
        sleepy_results = [sleepers.submit(run_part, job) for job in sleepy]
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            for r in pool.map(run_part, busy):
                results.update(r)
        for f in sleepy_results:
            results.update(f.result())
        for r in multi_results.result():
            results.update(r)
    return results


# ---- stubbing in place, safely ------------------------------------------------------------------------------

class InPlace:
    """Writes stubbed versions of files into the reference tree, keeping the originals in WORK/backup; puts
    them back (fresh mtimes, so the build recompiles them) on exit, on Ctrl-C, or on the next run."""

    def __init__(self, root, work):
        self.root, self.backup = root, os.path.join(work, "backup")
        self.manifest = os.path.join(self.backup, "manifest.json")

    def _backed_up(self):
        if not os.path.exists(self.manifest):
            return []
        with open(self.manifest) as f:
            return json.load(f)

    def _write_manifest(self, files):
        with open(self.manifest + ".tmp", "w") as f:
            json.dump(sorted(files), f)
        os.replace(self.manifest + ".tmp", self.manifest)

    def _put(self, rel, text):
        """Writes the file only if its text changes (an unchanged file keeps its mtime: no rebuild)."""
        path = os.path.join(self.root, rel)
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def _original(self, rel):
        with open(os.path.join(self.backup, "files", rel), encoding="utf-8") as f:
            return f.read()

    def restore(self):
        files = self._backed_up()
        for rel in files:
            self._put(rel, self._original(rel))
        if files:
            os.remove(self.manifest)
        return files

    def apply(self, texts):
        """texts: {path: the stubbed text}; every other file backed up earlier is put back."""
        before = self._backed_up()
        os.makedirs(os.path.join(self.backup, "files"), exist_ok=True)
        for rel in texts:
            if rel not in before:
                dst = os.path.join(self.backup, "files", rel)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copyfile(os.path.join(self.root, rel), dst)
        self._write_manifest(set(before) | set(texts))
        for rel in before:
            if rel not in texts:
                self._put(rel, self._original(rel))
        for rel, text in texts.items():
            self._put(rel, text)
        self._write_manifest(texts)


def build_suites(build, layers, jobs):
    t0 = time.time()
    cmd = ["cmake", "--build", build, "-j", str(jobs), "--target", *[f"test-{layer}" for layer in layers]]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        text = r.stdout + r.stderr
        errors = [line for line in text.splitlines() if "error" in line][:20]
        raise LabError("the stubbed tree does not build:\n" + "\n".join(errors or text.splitlines()[-30:]))
    return time.time() - t0


# ---- the checks ---------------------------------------------------------------------------------------------

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


def grade(build, lesson=None):
    """minitorch-grade --json of the build (every task, or one lesson's)."""
    cmd = [os.path.join(build, "bin", "minitorch-grade"), "--json"] + (["--lesson", lesson] if lesson else [])
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **ENV})
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


# ---- what the grader tells a student ------------------------------------------------------------------------

# Wrong solutions pasted in place of a task's block: minitorch-grade must report each the way a student can act
# on (docs/labs.md). Each is (what, a function of the reference block's text giving the wrong one, substrings
# the grader's text output must hold). A ring that stops one step early, as the guide's own example; and one
# that writes through a wild pointer, so the test binary dies of a segmentation fault.
WRONG_SOLUTIONS = {
    "L05.1": [
        ("a ring that stops one step early",
         lambda block: must_replace(block, "step < world - 1", "step < world - 2"),
         ["L05.1", "with N=", "ranks, numel", ": rank", "expected", ", got"]),
        ("a ring that crashes",
         lambda block: "  volatile std::uintptr_t wild = 16;  // an address the compiler cannot see\n"
                       "  *reinterpret_cast<float*>(wild) = 0.f;\n",
         ["L05.1", "crashed (segmentation fault, signal 11) in this test"]),
    ],
}


def must_replace(text, old, new):
    if old not in text:
        raise LabError(f"labs-check's wrong solution expects '{old}' in the reference block; update WRONG_SOLUTIONS")
    return text.replace(old, new)


def with_block_replaced(marked, task, replace):
    """{path: text} of the files holding `task`'s blocks, each block's body replaced by replace(body)."""
    texts = {}
    for rel, (lines, blocks) in marked.items():
        mine = sorted((b for b in blocks if b[0] == task), key=lambda b: -b[1])
        if not mine:
            continue
        out = list(lines)
        for _, begin, end in mine:
            out[begin + 1:end] = [replace("".join(lines[begin + 1:end]))]
        texts[rel] = "".join(out)
    return texts


def check_grader_on_wrong_solutions(build, root, marked, tasks, lessons, inplace, jobs):
    """Problems with what minitorch-grade prints for the wrong solutions of WRONG_SOLUTIONS (tasks of `lessons`):
    its text output must name the task, say what is wrong (N, rank, expected and actual value, or the crash and
    the test it happened in), keep each first-failure line whole and at most 4 lines long, and never fall back on
    a bare "no result"."""
    problems = []
    for task, cases in sorted(WRONG_SOLUTIONS.items()):
        if task not in tasks or tasks[task]["lesson"] not in lessons:
            continue
        prefix = tasks[task]["tests"] + "_"
        layers = [layer for layer in suite_binaries(build)
                  if any(n.startswith(prefix) for n in list_tests(os.path.join(build, "bin", f"test-{layer}")))]
        for what, make, want in cases:
            t0 = time.time()
            inplace.apply(with_block_replaced(marked, task, make))
            build_suites(build, layers, jobs)
            cmd = [os.path.join(build, "bin", "minitorch-grade"), "--task", task, "--np", "2"]
            r = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace",
                               env={**os.environ, **ENV})
            out = r.stdout
            missing = [w for w in want if w not in out]
            block = out.split("first failure: ", 1)[1].split("\ntotal ", 1)[0] if "first failure: " in out else ""
            found = []
            if r.returncode != 0:
                found.append(f"minitorch-grade exited {r.returncode}: {r.stderr.strip()[-300:]}")
            if missing:
                found.append("its output lacks " + ", ".join(repr(w) for w in missing))
            if "no result (" in out:
                found.append("it reports 'no result' instead of what happened")
            if len(block.strip().splitlines()) > 4:
                found.append(f"its first failure takes {len(block.strip().splitlines())} lines (at most 4)")
            log(f"labs-check: minitorch-grade on {task} with {what}: {len(found)} problems ({time.time() - t0:.0f} s)\n  "
                + "\n  ".join(out.strip().splitlines()))
            problems += [f"minitorch-grade on {task} with {what}: {p}\n{out}" for p in found]
    return problems


def interrupted(*_):
    raise KeyboardInterrupt()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=".", help="the reference repository")
    ap.add_argument("--build", default="build", help="its CMake build folder")
    ap.add_argument("--work", help="scratch folder (default BUILD/labs-check)")
    ap.add_argument("--lesson", action="append", help="NN; repeat for several (default: every lesson with tasks)")
    ap.add_argument("--full", action="store_true", help="also paste back one solution at a time")
    ap.add_argument("--record", action="store_true", help="write labs/depends.json for the lessons from one-task runs")
    ap.add_argument("--no-reference", action="store_true", help="skip the run of the unmodified tree")
    ap.add_argument("--restore", action="store_true", help="only put back files an interrupted run left stubbed")
    ap.add_argument("--np", type=int, default=2, help="ranks for the multi-rank suites (default 2)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=int, default=600, help="seconds per test binary")
    ap.add_argument("--verbose", action="store_true", help="print each test binary's run and its time")
    args = ap.parse_args()
    global VERBOSE
    VERBOSE = args.verbose
    root = os.path.abspath(args.root)
    build = os.path.abspath(args.build)
    work = os.path.abspath(args.work or os.path.join(build, "labs-check"))
    inplace = InPlace(root, work)
    signal.signal(signal.SIGTERM, interrupted)
    t_start = time.time()
    try:
        restored = inplace.restore()
        if restored:
            log(f"labs-check: put back {len(restored)} file(s) an interrupted run had left stubbed: {', '.join(restored)}")
        if args.restore:
            return 0
        tasks = load_tasks(root)
        depends = load_depends(root, tasks)
        marked = marked_files(root, tracked_files(root), tasks)
        marked_tasks = {t for _, blocks in marked.values() for t, _, _ in blocks}
        for t in sorted(set(tasks) - marked_tasks):
            raise LabError(f"task {t} ({tasks[t]['title']}) has no // BEGIN SOLUTION {t} block")
        lessons = sorted(set(args.lesson or [t["lesson"] for t in tasks.values()]))
        for lesson in lessons:
            if not any(t["lesson"] == lesson for t in tasks.values()):
                raise LabError(f"--lesson {lesson}: no tasks in labs/tasks/L{lesson}.json")
        layers = suite_binaries(build)
        build_suites(build, layers, args.jobs)
        all_problems = []
        if not args.no_reference:
            t0 = time.time()
            ref = run_suites(build, work, layers, args.np, args.jobs, args.timeout)
            bad = [f"{n} ({r.binary}): {r.message.strip()[:300]}" for n, r in sorted(ref.items()) if not r.passed]
            log(f"labs-check: the reference: {len(ref) - len(bad)}/{len(ref)} tests pass ({time.time() - t0:.0f} s)")
            if bad:
                raise LabError("the reference tree fails tests (fix them first):\n  " + "\n  ".join(bad))
            g = grade(build)
            log(f"labs-check: minitorch-grade on the reference: {g['points']:g} / {g['max_points']} points")
            if g["points"] != g["max_points"]:
                raise LabError("minitorch-grade does not give the reference full marks:\n" + json.dumps(g, indent=1))
        recorded = {}
        for lesson in lessons:
            ids = sorted(t for t in tasks if tasks[t]["lesson"] == lesson)
            runs = [(set(ids), "every task stubbed")]
            if args.full:
                runs += [(set(ids) - {t}, f"{t} solved, the rest stubbed") for t in ids]
            if args.record:  # first every task stubbed; then one at a time, running only what failed then
                runs += [({t}, f"only {t} stubbed") for t in ids]
            only = None
            for stubbed, what in runs:
                t0 = time.time()
                inplace.apply(stubbed_texts(root, marked, tasks, lambda t, s=stubbed: t in s))
                build_s = build_suites(build, layers, args.jobs)
                results = run_suites(build, work, layers, args.np, args.jobs, args.timeout, only)
                if args.record and only is None:
                    only = {}
                    for n, r in results.items():
                        if not r.passed:
                            only.setdefault(r.binary, []).append(n)
                    log(f"labs-check L{lesson} ({what}): {sum(map(len, only.values()))} tests fail "
                        f"({time.time() - t0:.0f} s)")
                    all_tests = set(results)
                    continue
                if not args.record:
                    results.update(quiet_rerun(build, work, args.np, args.timeout, results, tasks, depends, stubbed))
                failed = {n for n, r in results.items() if not r.passed}
                if args.record:
                    (task,) = stubbed
                    own = {n for n in failed if task in deps_of(n, tasks, {})}
                    recorded[task] = (failed - own, all_tests)
                    log(f"labs-check L{lesson} ({what}): {len(failed)} tests fail, {len(own)} of them the task's "
                        f"own; built in {build_s:.0f} s, {time.time() - t0:.0f} s in all")
                    continue
                problems = expect(results, tasks, depends, stubbed)
                if stubbed == set(ids):  # the grader gives a lesson of stubs nothing
                    g = grade(build, lesson)
                    problems += [f"minitorch-grade gives stubbed task {t['id']} {t['points']} points"
                                 for t in g["tasks"] if t["points"] != 0]
                own_failed = sum(1 for n in failed if own_task(n, tasks) in stubbed)
                log(f"labs-check L{lesson} ({what}): built in {build_s:.0f} s; {len(results)} tests, "
                    f"{len(failed)} fail as they should ({own_failed} of them the stubbed tasks' own), "
                    f"{len(problems)} problems ({time.time() - t0:.0f} s)")
                all_problems += [f"L{lesson} ({what}): {p}" for p in problems]
        if not args.record:
            all_problems += check_grader_on_wrong_solutions(build, root, marked, tasks, lessons, inplace, args.jobs)
        inplace.restore()
        if args.record:
            # a test listed under a task that builds on T (needs it) need not be listed under T too
            with open(os.path.join(work, "recorded.json"), "w") as f:  # the raw runs, kept for a look
                json.dump({t: sorted(failing) for t, (failing, _) in recorded.items()}, f, indent=1)
            patterns = {}
            for task, (failing, all_tests) in recorded.items():
                implied = set()
                for other, (f, _) in recorded.items():
                    if other != task and task in closure([other], tasks):
                        implied |= f
                patterns[task] = compress(failing - implied, all_tests)
            recorded = patterns
            path = os.path.join(root, "labs", "depends.json")
            doc = {"about": "Which tests (other than a task's own, named L<NN>_T<k>_..., and the tasks that one needs) "
                            "fail while a task is a stub: written by tools/labs/labs_check.py --record, held to by "
                            "make labs-check. Patterns are GoogleTest names, * for any characters.",
                   "depends": {}}
            if os.path.exists(path):
                with open(path) as f:
                    doc["depends"] = json.load(f).get("depends", {})
            doc["depends"].update(recorded)
            doc["depends"] = {k: v for k, v in sorted(doc["depends"].items()) if v}
            with open(path + ".tmp", "w") as f:
                json.dump(doc, f, indent=1)
                f.write("\n")
            os.replace(path + ".tmp", path)
            log(f"labs-check: wrote {path} (review the diff)")
        log("labs-check: rebuilding the reference")
        build_suites(build, layers, args.jobs)
        if all_problems:
            print("\n".join(["labs-check: FAILED"] + all_problems), file=sys.stderr)
            return 1
        log(f"labs-check: ok, lesson(s) {', '.join(lessons)}{' (full)' if args.full else ''} in {time.time() - t_start:.0f} s")
        return 0
    except LabError as e:
        if inplace.restore():
            e = f"{e}\n(the stubbed files are back as they were; `make` rebuilds the reference)"
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        inplace.restore()
        print("labs-check: interrupted; the stubbed files are back as they were (`make` rebuilds the reference)",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
