"""make labs-check's check of what the grader tells a student (docs/labs.md): wrong solutions pasted in place of
a task's block, built into the stubbed build, graded; minitorch-grade's text must say what a student needs to act
on — for a wrong value, GoogleTest's whole failure block (both values, the expression, the case the test was in),
for a crash, the signal and the test it happened in."""
import os
import subprocess
import sys
import time

from labs_run import ENV, list_tests, log, suite_binaries
from labs_tasks import LabError

HERE = os.path.dirname(os.path.abspath(__file__))

# Each is (what, a function of the reference block's text giving the wrong one, substrings the grader's text output
# must hold). A ring that stops one step early, as lesson 05's guide's own example; one that writes through a wild
# pointer, so the test binary dies of a segmentation fault; ZeRO-Offload's host bytes without the gradient staging
# (12Ψ/N instead of 16Ψ/N), which the formula test catches in its first case, stage 1 in f32.
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
    "L10.2": [
        ("host bytes without the gradient staging",
         lambda block: must_replace(block, "b.G * shard, 12 * shard}", "0, 12 * shard}"),
         ["L10.2", "L10_T2_OffloadFormulas.DeviceHostAndTransfersPerStage", "Expected equality of these values:",
          "e.host.total()", "Which is: 3000000", "16 * psi / n", "Which is: 4000000", "16Ψ/N in either precision",
          "Google Test trace:", "stage 1 f32"]),
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


def grader_command(stubbed_dir, root, *args):
    """minitorch-grade over the stubbed build (its binaries are in STUBBED/bin)."""
    return [sys.executable, os.path.join(HERE, "minitorch_grade.py"), "--build", stubbed_dir, "--root", root, *args]


def check_grader_on_wrong_solutions(stubbed, root, marked, tasks, lessons):
    """Problems with what minitorch-grade prints for the wrong solutions of WRONG_SOLUTIONS (tasks of `lessons`):
    its text output must name the task, hold every expected piece (the whole failure block: the expression, both
    values, the case; or the crash and its test), and never fall back on a bare "no result"."""
    problems = []
    for task, cases in sorted(WRONG_SOLUTIONS.items()):
        if task not in tasks or tasks[task]["lesson"] not in lessons:
            continue
        prefix = tasks[task]["tests"] + "_"
        layers = [layer for layer in suite_binaries(stubbed.build)
                  if any(n.startswith(prefix) for n in list_tests(os.path.join(stubbed.build, "bin", f"test-{layer}")))]
        for what, make, want in cases:
            t0 = time.time()
            stubbed.apply(with_block_replaced(marked, task, make), layers)
            r = subprocess.run(grader_command(stubbed.work, root, "--task", task, "--np", "2"), capture_output=True,
                               text=True, encoding="utf-8", errors="replace", env={**os.environ, **ENV})
            out = r.stdout
            missing = [w for w in want if w not in out]
            found = []
            if r.returncode != 0:
                found.append(f"minitorch-grade exited {r.returncode}: {r.stderr.strip()[-300:]}")
            if missing:
                found.append("its output lacks " + ", ".join(repr(w) for w in missing))
            if "no result (" in out:
                found.append("it reports 'no result' instead of what happened")
            log(f"labs-check: minitorch-grade on {task} with {what}: {len(found)} problems ({time.time() - t0:.0f} s)\n  "
                + "\n  ".join(out.strip().splitlines()))
            problems += [f"minitorch-grade on {task} with {what}: {p}\n{out}" for p in found]
    return problems
