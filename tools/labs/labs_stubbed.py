"""The stubbed build of `make labs-check` (docs/labs.md): the reference build's test binaries, relinked in a
folder of their own with stubbed files in place of the reference's, so that neither the source tree nor the
reference build (build/) ever changes — anything run from build/bin meanwhile runs the reference.

For a stubbed file F (compiled on its own, not in a unity source: MINITORCH_LAB_FILES_APART, which `make build`
sets), its text is written to WORK/src/F and compiled with the reference's own command for F (the Makefile
generator's dry run: the same flags, the same per-file options) into WORK/obj/; each static library that holds
F's object is copied to WORK/lib/ with that object replaced (ar); each test binary is linked with the
reference's link command, those libraries swapped for WORK/lib's, into WORK/bin/, and so is each program the
tests run (a binary none of whose libraries changed is a link to the reference's; the tests find the programs
there through MINITORCH_TEST_BIN_DIR). Only the stubbed files compile: a lesson costs what stubbing
in place did, and ccache serves a stub compiled before.
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import time

from labs_tasks import LabError


def _run(cmd, cwd, what):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        text = (r.stdout + r.stderr).strip()
        errors = [line for line in text.splitlines() if "error" in line][:20]
        raise LabError(f"{what} failed:\n" + "\n".join(errors if len(errors) > 1 else text.splitlines()[-30:]))
    return r.stdout


class StubbedBuild:
    """WORK/bin holds test-<layer> for every layer: the reference's binaries with the stubbed files linked in."""

    def __init__(self, root, build, work):
        self.root, self.build, self.work = root, build, work
        if os.path.exists(os.path.join(build, "build.ninja")) or not os.path.exists(os.path.join(build, "Makefile")):
            raise LabError(f"{build}: labs-check reads the Makefile generator's commands; configure it with "
                           "`make build` (a Ninja build folder will not do)")
        self.stubbed = {}  # rel -> the text compiled last (unchanged text: no new compile)

    # ---- one stubbed file: its object and the libraries that hold it ----

    def _objects(self, rel):
        """[(target, object path)] of the reference's objects compiled from `rel` (library targets mt_*)."""
        found = glob.glob(os.path.join(self.build, "CMakeFiles", "mt_*.dir", rel + ".o"))
        if not found:
            raise LabError(f"{rel}: no object of its own in {self.build} (is it compiled inside a unity source? "
                           "`make build` configures MINITORCH_LAB_FILES_APART=ON, which compiles it apart)")
        return [(os.path.basename(o[:-len(rel) - 3])[:-len(".dir")], o) for o in found]

    def _compile(self, rel, target):
        """Compiles WORK/src/rel with the reference's command for it into WORK/obj/<target>/rel.o; returns that path."""
        dry = _run(["make", "-n", "-B", "-f", f"CMakeFiles/{target}.dir/build.make", f"CMakeFiles/{target}.dir/{rel}.o"],
                   self.build, f"make -n for {rel}")
        lines = [line for line in dry.splitlines() if f" -c {os.path.join(self.root, rel)}" in line]
        if len(lines) != 1:
            raise LabError(f"the reference build's command for {rel} not found in:\n{dry[-1000:]}")
        src = os.path.join(self.work, "src", rel)
        obj = os.path.join(self.work, "obj", target, rel + ".o")
        os.makedirs(os.path.dirname(obj), exist_ok=True)
        args, out = shlex.split(lines[0]), []
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("-o", "-MF", "-MT") and i + 1 < len(args):
                out += [a, {"-o": obj, "-MF": obj + ".d", "-MT": obj}[a]]
                i += 2
                continue
            if a == "-c":  # the stub, with its own folder first for its quoted includes
                out += ["-iquote", os.path.dirname(os.path.join(self.root, rel)), "-c", src]
                i += 2
                continue
            out.append(a)
            i += 1
        _run(out, self.build, f"compiling the stubbed {rel}")
        return obj

    def _library(self, target):
        libs = glob.glob(os.path.join(self.build, f"lib{target}.a"))
        if len(libs) != 1:
            raise LabError(f"lib{target}.a not found in {self.build}")
        return libs[0]

    # ---- the whole stubbed build ----

    def apply(self, texts, layers):
        """Builds WORK/bin/test-<layer> for `layers` with {rel: stubbed text} in place of those files; returns
        the seconds it took. The libraries are the reference's but for the stubbed objects."""
        t0 = time.time()
        objects = {}  # target -> [object]
        for rel, text in sorted(texts.items()):
            src = os.path.join(self.work, "src", rel)
            os.makedirs(os.path.dirname(src), exist_ok=True)
            for target, _ in self._objects(rel):
                obj = os.path.join(self.work, "obj", target, rel + ".o")
                if self.stubbed.get((rel, target)) != text or not os.path.exists(obj):
                    with open(src, "w", encoding="utf-8") as f:
                        f.write(text)
                    self._compile(rel, target)
                    self.stubbed[(rel, target)] = text
                objects.setdefault(target, []).append(obj)
        libs = {}  # the reference's archive path -> WORK's copy
        lib_dir = os.path.join(self.work, "lib")
        shutil.rmtree(lib_dir, ignore_errors=True)
        os.makedirs(lib_dir)
        for target, objs in sorted(objects.items()):
            ref = self._library(target)
            mine = os.path.join(lib_dir, os.path.basename(ref))
            shutil.copyfile(ref, mine)
            members = _run(["ar", "t", mine], lib_dir, f"ar t {mine}").split()
            for obj in objs:
                if members.count(os.path.basename(obj)) != 1:
                    raise LabError(f"{ref} holds {members.count(os.path.basename(obj))} members named "
                                   f"{os.path.basename(obj)}; labs-check replaces exactly one")
            _run(["ar", "r", mine, *objs], lib_dir, f"ar r {mine}")
            libs[os.path.realpath(ref)] = mine
        bin_dir = os.path.join(self.work, "bin")  # only this build's binaries: none left from another one
        shutil.rmtree(bin_dir, ignore_errors=True)
        os.makedirs(bin_dir)
        for name in [f"test-{layer}" for layer in layers] + self._programs(layers):
            self._link(name, libs, bin_dir)
        return time.time() - t0

    def _programs(self, layers):
        """The programs of build/bin the layers' test sources name (a rank-failure test runs mt-rank-stalls): they
        are linked with the stubs too, and the tests run them from WORK/bin (MINITORCH_TEST_BIN_DIR, tests/test_util.h)."""
        text = ""
        for layer in layers:
            for path in glob.glob(os.path.join(self.root, "tests", layer, "*.[ch]*")):
                with open(path, encoding="utf-8", errors="replace") as f:
                    text += f.read()
        names = [n for n in sorted(os.listdir(os.path.join(self.build, "bin"))) if not n.startswith("test-")]
        return [n for n in names if re.search(r"[^A-Za-z0-9_-]" + re.escape(n) + r"[^A-Za-z0-9_-]", text)]

    def _link(self, name, libs, bin_dir):
        """WORK/bin/<name>: the reference's link command with the stubbed libraries, or a link to the reference's
        binary when it uses none of them."""
        exe = os.path.join(bin_dir, name)
        found = glob.glob(os.path.join(self.build, "CMakeFiles", f"{name}.dir", "link.txt")) + \
            glob.glob(os.path.join(self.build, "*", "CMakeFiles", f"{name}.dir", "link.txt"))
        if len(found) != 1:
            raise LabError(f"{name}: no link.txt in {self.build} (build the reference first: make build)")
        cwd = os.path.dirname(os.path.dirname(os.path.dirname(found[0])))
        with open(found[0]) as f:
            args = shlex.split(f.read())
        missing = [a for a in args if a.endswith((".o", ".a")) and not os.path.exists(os.path.join(cwd, a))]
        if missing:
            raise LabError(f"{name}: the reference build lacks {', '.join(missing[:3])}"
                           f"{' ...' if len(missing) > 3 else ''}: build the reference first (make build)")
        swapped = [libs.get(os.path.realpath(os.path.join(cwd, a)), a) for a in args]
        if swapped == args:
            os.symlink(os.path.join(self.build, "bin", name), exe)
            return
        o = swapped.index("-o")
        swapped[o + 1] = exe
        _run(swapped, cwd, f"linking the stubbed {name}")
