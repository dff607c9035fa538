"""make labs-check's runs of the test suites (docs/labs.md): each GoogleTest binary of a build as one process
(the multi-rank ones under mpirun), a run that dies again suite by suite and test by test, the sleepy suites of
test-dist in parts of their own beside the rest."""
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import time

from labs_tasks import LabError, from_gtest_bytes

SKIPPED_LAYERS = ("tools", "lessons", "cuda", "backend_ops")
ENV = {"MINITORCH_NUM_THREADS": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
       "OMPI_MCA_rmaps_base_oversubscribe": "1",
       # A stub that throws on one rank leaves the others waiting: end such a job in seconds
       # (dist/mpi_group.cpp). No wait in the multi-rank suites is longer than a peer's milliseconds of
       # compute: the reference run, first, with the same cap and load, proves 5 s is no false timeout.
       "MINITORCH_COMM_TIMEOUT_CAP_S": "5"}


def test_env(exe):
    """The environment of a test binary's run: ENV, and its own bin/ for the programs it runs (tests/test_util.h's
    bin(): the stubbed build's programs hold the stubs too)."""
    return {**os.environ, **ENV, "MINITORCH_TEST_BIN_DIR": os.path.dirname(os.path.abspath(exe))}


def log(msg):
    print(msg, flush=True)


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
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=test_env(exe), start_new_session=True)
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

