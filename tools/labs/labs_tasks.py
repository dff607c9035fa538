"""The lab tasks (docs/labs.md), read from labs/tasks/L<lesson>.json — one file per lesson, so that lessons
are written and handed out independently:

    {"lesson": "05",
     "tasks": [{"id": "L05.1", "title": "ring reduce-scatter", "guide": "lessons/05_ddp/README.md",
                "points": 3, "tests": "L05_T1", "needs": []}, ...]}

id L<lesson>.<n>; tests is the ctest/GoogleTest name prefix of the task's tests (default L05_T1 for L05.1);
needs lists the tasks of the same lesson this one builds on (its tests fail while those are stubs too)."""
import fnmatch
import glob
import json
import os
import re

TASK_ID = re.compile(r"^L(\d\d)\.(\d+)$")
TASK_PREFIX = re.compile(r"^(L\d\d)_T(\d+)_")  # a test of task L05.1 is named L05_T1_...


class LabError(Exception):
    pass


def default_filter(task_id):
    return task_id.replace(".", "_T")


def load_tasks(root):
    """{task id: task} over every labs/tasks/L*.json, each checked; a task gains 'tests' and 'needs' defaults."""
    tasks = {}
    files = sorted(glob.glob(os.path.join(root, "labs", "tasks", "L*.json")))
    for path in files:
        rel = os.path.relpath(path, root)
        lesson = os.path.basename(path)[1:-len(".json")]
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise LabError(f"{rel}: {e}")
        if not isinstance(doc, dict) or doc.get("lesson") != lesson:
            raise LabError(f"{rel}: expected an object with \"lesson\": \"{lesson}\" (the file's name)")
        for i, t in enumerate(doc.get("tasks", [])):
            for key in ("id", "title", "guide", "points"):
                if key not in t:
                    raise LabError(f"{rel}: tasks[{i}] has no '{key}'")
            m = TASK_ID.match(str(t["id"]))
            if not m:
                raise LabError(f"{rel}: tasks[{i}].id '{t['id']}' is not L<lesson>.<n> (e.g. L05.2)")
            if m.group(1) != lesson:
                raise LabError(f"{rel}: task {t['id']} belongs in labs/tasks/L{m.group(1)}.json")
            if t["id"] in tasks:
                raise LabError(f"{rel}: task {t['id']} appears twice")
            if not isinstance(t["points"], int) or t["points"] <= 0:
                raise LabError(f"{rel}: task {t['id']}: points must be a positive integer")
            t.setdefault("tests", default_filter(t["id"]))
            t.setdefault("needs", [])
            t["lesson"] = lesson
            tasks[t["id"]] = t
    for t in tasks.values():
        for n in t["needs"]:
            if n not in tasks or tasks[n]["lesson"] != t["lesson"] or n == t["id"]:
                raise LabError(f"labs/tasks/L{t['lesson']}.json: task {t['id']} needs '{n}', which is not another "
                               f"task of lesson {t['lesson']} (tasks build on each other only within a lesson)")
    return tasks


def load_depends(root, tasks):
    """{task id: [test name patterns]} from labs/depends.json: the tests (other than the task's own) that fail
    while that task is a stub."""
    path = os.path.join(root, "labs", "depends.json")
    if not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            doc = json.load(f)
    except ValueError as e:
        raise LabError(f"labs/depends.json: {e}")
    depends = doc.get("depends", {})
    for task, patterns in depends.items():
        if task not in tasks:
            raise LabError(f"labs/depends.json: '{task}' is not a task of labs/tasks/L*.json")
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise LabError(f"labs/depends.json: depends['{task}'] must be a list of test name patterns")
    return depends


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


def undeclared_dependencies(tasks, depends):
    """Problems of the data: a task's own tests that fail while another task is a stub (labs/depends.json) must
    either belong to a later lesson than that task or declare it (needs, transitively), so that a student who
    writes a task, with the ones it needs, sees its tests pass, and the grader can say what else it needs."""
    problems = []
    for stubbed, patterns in sorted(depends.items()):
        for p in patterns:
            if p.startswith("*"):
                problems.append(f"labs/depends.json: '{p}' under {stubbed} may match any task's tests; name the suites")
                continue
            owner = own_task(p, tasks)
            if owner is None or owner == stubbed:
                continue
            later = tasks[stubbed]["lesson"] > tasks[owner]["lesson"]
            if later or (tasks[stubbed]["lesson"] == tasks[owner]["lesson"]
                         and stubbed not in closure(tasks[owner]["needs"], tasks)):
                problems.append(f"{p} (task {owner}'s tests) fails while {stubbed} is a stub (labs/depends.json), but "
                                f"{owner} does not declare it: make the test independent of {stubbed}, or add "
                                f"\"{stubbed}\" to {owner}'s needs in labs/tasks/L{tasks[owner]['lesson']}.json"
                                + (" (a test may depend only on its own lesson and earlier ones)" if later else ""))
    return problems


def task_binaries(root, tasks):
    """{task id: [test binaries (test-<layer>) whose sources define its suites]}: tests/<layer>/*.cpp naming
    TEST(L<NN>_T<k>_...) builds into test-<layer>."""
    prefixes = {t["tests"]: tid for tid, t in tasks.items()}
    defines = re.compile(r"\bTEST(?:_F|_P)?\(\s*(" + "|".join(re.escape(p) for p in prefixes) + r")_")
    out = {}
    for path in sorted(glob.glob(os.path.join(root, "tests", "*", "*.cpp"))):
        with open(path, encoding="utf-8") as f:
            found = set(defines.findall(f.read()))
        for prefix in found:
            binary = "test-" + os.path.basename(os.path.dirname(path))
            if binary not in out.setdefault(prefixes[prefix], []):
                out[prefixes[prefix]].append(binary)
    return {t: sorted(b) for t, b in out.items()}


def lab_targets(root, lesson):
    """The CMake targets a student's build of lesson `lesson` needs (make lab): the test binaries whose sources
    hold its tasks' tests and lesson-NN."""
    tasks = {tid: t for tid, t in load_tasks(root).items() if t["lesson"] == lesson}
    if not tasks:
        raise LabError(f"lesson {lesson}: no tasks in labs/tasks/L{lesson}.json")
    targets = {b for bins in task_binaries(root, tasks).values() for b in bins}
    if glob.glob(os.path.join(root, "lessons", f"{lesson}_*")):
        targets.add(f"lesson-{lesson}")
    return sorted(targets)


def from_gtest_bytes(text):
    """GoogleTest's JSON writes each byte of a UTF-8 character as its own \\u00XX escape (an em dash comes back as
    'â\\x80\\x94'): put the bytes back together. Text that was not written that way is returned as it is."""
    if not any(127 < ord(c) < 256 for c in text) or any(ord(c) > 255 for c in text):
        return text
    try:
        return text.encode("latin-1").decode("utf-8")
    except UnicodeDecodeError:
        return text


if __name__ == "__main__":
    import argparse
    import sys
    ap = argparse.ArgumentParser(description="the lab tasks (docs/labs.md)")
    ap.add_argument("--root", default=".", help="the repository")
    ap.add_argument("--targets", metavar="NN", required=True, help="print the CMake targets `make lab LESSON=NN` builds")
    args = ap.parse_args()
    try:
        print(" ".join(lab_targets(args.root, args.targets)))
    except LabError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
