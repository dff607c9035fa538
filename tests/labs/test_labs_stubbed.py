#!/usr/bin/env python3
"""ctest Labs.Stubbed: the stubbed build of make labs-check (tools/labs/labs_stubbed.py) on a small CMake project
made here (a library mt_ring with a file compiled on its own, a test binary test-ring in tests/ring/ and a program
its sources name, the Makefile generator as `make build` uses). The stubbed binary and program run the stub; the reference's source, library and binary are
left as they were, byte for byte and mtime for mtime (anything run from build/bin meanwhile runs the reference);
a binary that uses no stubbed library is a link to the reference's; a Ninja build folder is one clear error.
Exit 0 when all holds; 1 with "error: ..." lines otherwise."""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "labs"))
from labs_stubbed import StubbedBuild  # noqa: E402
from labs_tasks import LabError  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


FILES = {
    "CMakeLists.txt": """cmake_minimum_required(VERSION 3.16)
project(mini CXX)
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_library(mt_ring STATIC ring/ring.cpp ring/other.cpp)
target_include_directories(mt_ring PUBLIC ${CMAKE_SOURCE_DIR})
add_subdirectory(tests)
""",
    "tests/CMakeLists.txt": """add_executable(test-ring ring/main.cpp)
target_link_libraries(test-ring mt_ring)
add_executable(mt-ring-prog ring/prog.cpp)
target_link_libraries(mt-ring-prog mt_ring)
add_executable(test-plain plain.cpp)
""",
    "ring/ring.h": "int ring();\nint other();\n",
    "ring/ring.cpp": '#include "ring/ring.h"\n#include "local.h"\nint ring() {\n  // BEGIN SOLUTION L05.1\n  return LOCAL;\n  // END SOLUTION\n}\n',
    "ring/local.h": "#define LOCAL 42\n",
    "ring/other.cpp": '#include "ring/ring.h"\nint other() { return 7; }\n',
    "tests/ring/main.cpp": '#include <cstdio>\n#include "ring/ring.h"\n// runs mt-ring-prog too\n'
                           'int main() { std::printf("%d %d\\n", ring(), other()); }\n',
    "tests/ring/prog.cpp": '#include <cstdio>\n#include "ring/ring.h"\nint main() { std::printf("%d\\n", ring()); }\n',
    "tests/plain.cpp": "int main() { return 0; }\n",
}


def run(exe):
    return subprocess.run([exe], capture_output=True, text=True).stdout.strip()


def snapshot(paths):
    return {p: (open(p, "rb").read(), os.path.getmtime(p)) for p in paths}


with tempfile.TemporaryDirectory(prefix="mt-labs-stubbed-") as tmp:
    root, build, work = os.path.join(tmp, "ref"), os.path.join(tmp, "ref", "build"), os.path.join(tmp, "work")
    for rel, text in FILES.items():
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)
    env = {**os.environ, "CCACHE_DISABLE": "1"}
    for cmd in (["cmake", "-S", root, "-B", build, "-G", "Unix Makefiles"], ["cmake", "--build", build, "-j2"]):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            print(f"error: {' '.join(cmd)} failed: {r.stdout[-1500:]}{r.stderr[-1500:]}")
            sys.exit(1)
    reference = [os.path.join(root, "ring", "ring.cpp"), os.path.join(build, "libmt_ring.a"),
                 os.path.join(build, "bin", "test-ring")]
    before = snapshot(reference)
    check(run(os.path.join(build, "bin", "test-ring")) == "42 7", "the reference prints 42 7")
    stubbed = StubbedBuild(root, build, work)
    stub = FILES["ring/ring.cpp"].replace("  return LOCAL;\n", "  return -LOCAL;  // the stub, through local.h\n")
    try:
        stubbed.apply({"ring/ring.cpp": stub}, ["ring", "plain"])
    except LabError as e:
        check(False, f"the stubbed build failed: {e}")
    got = run(os.path.join(work, "bin", "test-ring")) if os.path.exists(os.path.join(work, "bin", "test-ring")) else None
    check(got == "-42 7", f"the stubbed binary runs the stub and the library's other files: {got!r}")
    check(run(os.path.join(build, "bin", "test-ring")) == "42 7", "the reference binary still runs the reference")
    prog = os.path.join(work, "bin", "mt-ring-prog")
    check(os.path.exists(prog) and not os.path.islink(prog) and run(prog) == "-42",
          "a program the tests name (mt-ring-prog) is linked with the stub too")
    check(run(os.path.join(build, "bin", "mt-ring-prog")) == "42", "the reference program still runs the reference")
    check(snapshot(reference) == before, "the reference's source, library and binary are unchanged")
    plain = os.path.join(work, "bin", "test-plain")
    check(os.path.islink(plain) and os.path.realpath(plain) == os.path.realpath(os.path.join(build, "bin", "test-plain")),
          "a binary without a stubbed library is the reference's")
    try:
        stubbed.apply({}, ["ring"])
        check(run(os.path.join(work, "bin", "test-ring")) == "42 7", "nothing stubbed: the stubbed build is the reference again")
    except LabError as e:
        check(False, f"an empty stubbed build failed: {e}")
    shutil.rmtree(build)
    os.makedirs(build)
    open(os.path.join(build, "build.ninja"), "w").close()
    try:
        StubbedBuild(root, build, work)
        check(False, "a Ninja build folder must be refused")
    except LabError as e:
        check("Makefile generator" in str(e) and "make build" in str(e), f"the refusal says what to do: {e}")

for f in failures:
    print(f"error: {f}")
if not failures:
    print("labs_stubbed.py ok: the stub runs in its own binaries, the reference's files and binaries untouched")
sys.exit(1 if failures else 0)
