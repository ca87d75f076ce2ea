"""End-to-end tests of the class-file rewriter through build/hprof-bci.

The bci_* tests of tests/test_bci.py (run on each JDK) call the bci_*
functions here:

  bci_corpus         the Java corpus (tests/bci/java: corpus, modern17,
                     modern25) compiled at every --release the JDKs offer
                     (JDK 17: 8..17, JDK 25: 8..25), with -g and with -g:none;
                     each variant runnable on this JDK is rewritten
                     (--entry-exit --newarray) and run with and without the
                     rewrite under -Xverify:all: same stdout, stderr and exit
                     code, no VerifyError, the tracker's per-thread stacks
                     balanced (every exit pops the id on top), entries ==
                     exits for every method id
  bci_structure      the rewritten class files against the originals (for the
                     variants this JDK's javac compiled, plus the hand-made
                     and huge classes): constant pool only appended, members
                     and attributes untouched, the code equal once the
                     inserted calls are taken out (branch, switch and handler
                     targets to the same instructions, goto->goto_w and
                     inverted conditionals undone), branches to a return land
                     on its methodExit, branches to offset 0 do not re-run
                     methodEntry, exception table kept in order with the
                     catch-all appended and covering every instruction that
                     can throw, LineNumberTable / LocalVariable(Type)Table /
                     StackMapTable frames at the same instructions,
                     Uninitialized(offset) remapped, zero switch padding,
                     method ids consistent with the --ids file; plus corpus
                     coverage (every branch opcode, switches at all 4
                     alignments before and after, each newarray type...)
  bci_counts         counts.Counts: exact entry counts (Counts.hot 1,000,000,
                     fib 21,891, methods leaving by exception N times, a
                     constructor throwing before super(), threads, a lambda)
                     and exact array counts per type
  bci_huge           javac-compiled huge methods (gen_huge.py): spans just
                     under 32 KiB pushed over by the insertion, javac's own
                     goto_w, >255 locals, a 65 KB method that must overflow
                     (hprof-bci exit 1, `hprof-bci: <path>: <message>`, class
                     copied unchanged, everything else still rewritten)
  bci_far_branches   hand-made spans of exactly 32767-d / -32768+d (if, goto,
                     jsr) around inserted code
  bci_limits         a 65535-byte method and a full constant pool (hprof-bci
                     exit 1, error line, copied unchanged, still runs); 34,000
                     methods in one run (ids above 32767 pushed with ldc_w)
  bci_old_versions   hand-made classes at 45.3, 46, 48, 49 (jsr/ret), 50
                     (with and without StackMapTable, with jsr), 51; a
                     50.0 class whose StackMapTable the rewriter breaks would
                     silently fall back to the old verifier: the test reads
                     -Xlog:verification to catch that
  bci_edge_cases     hand-made 50.0 / 51.0 edge cases (see classgen.py)
  bci_reinstrument   rewriting rewritten classes again (goto_w, the rewriter's
                     own frames and handlers as input): still verifies, same
                     output, both id sets balanced, Counts.hot counted twice
  bci_cli            jar in/out (resources and order kept, runs from the jar),
                     a single .class, a malformed class among good ones (exit
                     1, error line, copied unchanged), the tracker's own
                     classes in the input (left alone), --quiet, determinism,
                     dotted --tracker, usage errors (exit 2), the --ids format
  bci_object_init    --object-init on this JDK's own java/lang/Object
                     (patched into java.base with a tracker there): verifies
                     with -Xverify:all and counts allocations

Outputs: build/tests/bci/ (corpus variants, rewritten copies, ids files) and
build/tests/out/<test>-<jdk>/ (runs, problems.txt with every problem found).
"""

import concurrent.futures
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
import zipfile

sys.dont_write_bytecode = True
BCI_TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BCI_TESTS)
import classfile as C  # noqa: E402

sys.path.insert(0, os.path.dirname(BCI_TESTS))
from run import Fail, Skip, jdks as _jdks  # noqa: E402  (the suite's failures, skips and JDKs)

ROOT = os.path.dirname(os.path.dirname(BCI_TESTS))
BUILD = os.path.join(ROOT, "build")
TOOL = os.path.join(BUILD, "hprof-bci")
WORK = os.path.join(BUILD, "tests", "bci")
JAVA_SRC = os.path.join(BCI_TESTS, "java")
TRACKER = "bcitest/Tracker"
FLAGS = ["--entry-exit", "--newarray"]
TIMEOUT = 120
WORKERS = 2


def jdk_list():
    return [(n, h) for n, h in _jdks() if h]


def jdk_release(jdk_name):
    return int(re.sub(r"\D", "", jdk_name))


# ================================================================ utilities

def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def tail(text, n=3):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return " | ".join(lines[-n:]) if lines else "<empty>"


def sh(cmd, log=None, timeout=600, cwd=None, env=None):
    """Run a command; returns (rc, stdout+stderr text)."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                           cwd=cwd or ROOT, stdin=subprocess.DEVNULL, env=env)
        out = p.stdout.decode("utf-8", "replace")
        rc = p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace") + "\n*** timeout ***\n"
        rc = -1
    if log:
        with open(log, "w") as f:
            f.write(" ".join(cmd) + "\n" + out)
    return rc, out


def tree_hash(paths, extra=""):
    h = hashlib.sha256(extra.encode())
    for p in sorted(paths):
        h.update(p.encode())
        h.update(read(p, "rb"))
    return h.hexdigest()


def class_files(d):
    out = []
    for dp, _, fs in os.walk(d):
        for f in fs:
            if f.endswith(".class"):
                out.append(os.path.join(dp, f))
    return sorted(out)


def clean_env():
    env = dict(os.environ)
    for k in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH"):
        env.pop(k, None)
    return env


_once_lock = threading.RLock()
_once = {}


def once(key, fn):
    """fn() computed once per process (per key); exceptions are remembered too."""
    with _once_lock:
        if key not in _once:
            try:
                _once[key] = ("ok", fn())
            except (Fail, Skip) as e:
                _once[key] = ("err", e)
        kind, v = _once[key]
    if kind == "err":
        raise v
    return v


class Problems:
    """Problems found by a test: all written to problems.txt, the first few
    (one per kind) in the FAIL line."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.items = []
        self.lock = threading.Lock()

    def add(self, kind, where, detail=""):
        with self.lock:
            self.items.append((kind, where, detail))

    def raise_if_any(self, what=""):
        if not self.items:
            return
        path = self.ctx.path("problems.txt")
        with open(path, "w") as f:
            for kind, where, detail in self.items:
                f.write("%s: %s%s\n" % (kind, where, (": " + detail) if detail else ""))
        kinds = {}
        for kind, where, detail in self.items:
            kinds.setdefault(kind, []).append((where, detail))
        parts = []
        for kind, lst in kinds.items():
            where, detail = lst[0]
            parts.append("%s (%d): e.g. %s%s" % (kind, len(lst), where, (": " + detail[:300]) if detail else ""))
        raise Fail("%d problem(s)%s; %s; all in %s" % (len(self.items), what, " || ".join(parts[:6]), path))


# ================================================================ building

def ensure_tool():
    def build():
        os.makedirs(WORK, exist_ok=True)
        log = os.path.join(WORK, "make-hprof-bci.log")
        rc, out = sh(["make", "-C", ROOT, "build/hprof-bci"], log)
        if rc != 0 or not os.path.isfile(TOOL):
            raise Fail("`make build/hprof-bci` failed (rc %d), see %s: %s" % (rc, log, tail(out, 2)))
        return TOOL
    return once("tool", build)


def javac_of(home):
    j = os.path.join(home, "bin", "javac")
    return j if os.path.isfile(j) else None


def build_tracker():
    def build():
        jl = jdk_list()
        if not jl:
            raise Fail("no JDK found")
        out = os.path.join(WORK, "tracker")
        src = os.path.join(JAVA_SRC, "bcitest", "Tracker.java")
        stamp = os.path.join(out, ".stamp")
        h = tree_hash([src], jl[0][1])
        if os.path.isfile(stamp) and read(stamp) == h:
            return out
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        rc, text = sh([javac_of(jl[0][1]), "--release", "8", "-Xlint:-options", "-d", out, src],
                      os.path.join(WORK, "javac-tracker.log"))
        if rc != 0:
            raise Fail("javac of the tracker failed: %s" % tail(text))
        with open(stamp, "w") as f:
            f.write(h)
        return out
    return once("tracker", build)


class Variant:
    def __init__(self, name, jdk, release, debug, path, group):
        self.name, self.jdk, self.release, self.debug, self.path, self.group = \
            name, jdk, release, debug, path, group

    def __repr__(self):
        return self.name


def _sources(sub):
    return sorted(glob.glob(os.path.join(JAVA_SRC, sub, "*.java")))


def build_corpus():
    """Compiles every variant (cached: build/tests/bci/classes/<variant>,
    rebuilt when a source, a generator or a JDK changes).  Returns
    {variant name: Variant}."""
    def build():
        jl = jdk_list()
        base = os.path.join(WORK, "classes")
        hsrc = os.path.join(WORK, "huge-src")
        plan = []   # (jdk name, home, [javac args...], Variant)
        for jname, home in jl:
            if not javac_of(home):
                continue
            top = jdk_release(jname)
            for rel in range(8, top + 1):
                for debug in ("g", "nog"):
                    name = "%s-r%d-%s" % (jname, rel, debug)
                    srcs = _sources("corpus") + _sources("counts")
                    if rel >= 17:
                        srcs += _sources("modern17")
                    if rel >= 25:
                        srcs += _sources("modern25")
                    path = os.path.join(base, name)
                    plan.append((jname, home, ["--release", str(rel), "-g" if debug == "g" else "-g:none",
                                               "-Xlint:-options", "-nowarn", "-encoding", "UTF-8",
                                               "-d", path] + srcs,
                                 Variant(name, jname, rel, debug, path, "corpus")))
        hsrcs = [os.path.join(hsrc, "huge", f) for f in ("Straight.java", "FarLoop.java", "JavacFat.java",
                                                         "WideLocals.java", "Overflow.java", "HugeMain.java")]
        # Huge methods: release 8 with -g and 17 without debug information
        # on the first JDK, the newest release with -g on the last one
        # (FarTypes needs switch expressions: release 17 and later).
        hjobs = []
        if jl:
            hjobs += [(jl[0][0], jl[0][1], 8, "g"), (jl[0][0], jl[0][1], 17, "nog")]
            if len(jl) > 1:
                hjobs.append((jl[-1][0], jl[-1][1], jdk_release(jl[-1][0]), "g"))
        for jname, home, rel, debug in hjobs:
            name = "huge-%s-r%d-%s" % (jname, rel, debug)
            path = os.path.join(base, name)
            extra = [os.path.join(hsrc, "huge", "FarTypes.java")] if rel >= 17 else []
            plan.append((jname, home, ["--release", str(rel), "-g" if debug == "g" else "-g:none",
                                       "-Xlint:-options", "-nowarn", "-d", path] + hsrcs + extra,
                         Variant(name, jname, rel, debug, path, "huge")))
        allsrc = (glob.glob(os.path.join(JAVA_SRC, "**", "*.java"), recursive=True)
                  + [os.path.join(BCI_TESTS, "gen_huge.py"), os.path.join(BCI_TESTS, "BciJavac.java")])
        h = tree_hash(allsrc, repr([(j, h_) for j, h_ in jl]) + repr([p[2] for p in plan]))
        stamp = os.path.join(base, ".stamp")
        variants = {p[3].name: p[3] for p in plan}
        if os.path.isfile(stamp) and read(stamp) == h and all(os.path.isdir(v.path) for v in variants.values()):
            return variants
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(base)
        shutil.rmtree(hsrc, ignore_errors=True)
        rc, out = sh([sys.executable, os.path.join(BCI_TESTS, "gen_huge.py"), hsrc])
        if rc != 0:
            raise Fail("gen_huge.py failed: %s" % tail(out))
        # One BciJavac process per JDK, in parallel.
        procs = []
        for jname, home in jl:
            jobs = [p for p in plan if p[0] == jname]
            if not jobs:
                continue
            jobfile = os.path.join(base, "jobs-%s.txt" % jname)
            with open(jobfile, "w") as f:
                for p in jobs:
                    f.write("\t".join(p[2]) + "\n")
            log = os.path.join(base, "javac-%s.log" % jname)
            fo = open(log, "w")
            procs.append((jname, jobs, log, fo, subprocess.Popen(
                [os.path.join(home, "bin", "java"), "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                 os.path.join(BCI_TESTS, "BciJavac.java"), jobfile],
                stdout=fo, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT, env=clean_env())))
        errs = []
        for jname, jobs, log, fo, p in procs:
            try:
                rc = p.wait(timeout=600)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = -1
            fo.close()
            if rc != 0:
                errs.append("%s javac jobs failed (rc %d), see %s: %s" % (jname, rc, log, tail(read(log))))
        if errs:
            raise Fail("; ".join(errs))
        with open(stamp, "w") as f:
            f.write(h)
        return variants
    return once("corpus", build)


def build_handmade():
    def build():
        out = os.path.join(WORK, "handmade")
        gens = [os.path.join(BCI_TESTS, "classgen.py"), os.path.join(BCI_TESTS, "classfile.py")]
        h = tree_hash(gens)
        stamp = os.path.join(out, ".stamp")
        if not (os.path.isfile(stamp) and read(stamp) == h):
            shutil.rmtree(out, ignore_errors=True)
            rc, text = sh([sys.executable, gens[0], out])
            if rc != 0:
                raise Fail("classgen.py failed: %s" % tail(text))
            with open(stamp, "w") as f:
                f.write(h)
        progs = []
        for line in read(os.path.join(out, "manifest.txt")).splitlines():
            group, cls, version, flags = line.split()
            progs.append({"group": group, "main": cls, "version": version, "flags": flags,
                          "path": os.path.join(out, group)})
        return out, progs
    return once("handmade", build)


# ================================================================ hprof-bci

class Rewrite:
    def __init__(self, src, dst, ids_path, rc, output, cmd):
        self.src, self.dst, self.ids_path, self.rc, self.output, self.cmd = src, dst, ids_path, rc, output, cmd
        self._ids = None

    @property
    def ids(self):
        if self._ids is None:
            self._ids = parse_ids(self.ids_path)
        return self._ids

    def error_lines(self):
        return [l for l in self.output.splitlines() if re.match(r"^hprof-bci: .+?: ", l)
                and not re.match(r"^hprof-bci: \d+ classes? rewritten", l)]


def run_tool(args, log=None):
    ensure_tool()
    return sh([TOOL] + args, log, timeout=300)


def rewrite(src, key, flags=None, extra_args=()):
    """hprof-bci FLAGS --tracker bcitest/Tracker --ids <ids> SRC <dst>, once
    per key and process; outputs in build/tests/bci/rewritten/<key>."""
    flags = FLAGS if flags is None else flags

    def do():
        base = os.path.join(WORK, "rewritten")
        os.makedirs(base, exist_ok=True)
        dst = os.path.join(base, key)
        ids = os.path.join(base, key + ".ids")
        if os.path.isdir(dst):
            shutil.rmtree(dst)
        elif os.path.exists(dst):
            os.unlink(dst)
        for p in (ids,):
            if os.path.exists(p):
                os.unlink(p)
        cmd = [TOOL] + list(flags) + ["--tracker", TRACKER, "--ids", ids] + list(extra_args) + [src, dst]
        rc, out = run_tool(cmd[1:], os.path.join(base, key + ".log"))
        return Rewrite(src, dst, ids, rc, out, cmd)
    return once(("rewrite", key, tuple(flags), tuple(extra_args)), do)


def parse_ids(path):
    """{id: (class, method, descriptor)}; raises Fail on a malformed file."""
    if not os.path.isfile(path):
        raise Fail("--ids file %s was not written" % path)
    ids = {}
    for n, line in enumerate(read(path).splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split(" ")
        if len(parts) != 4 or not re.match(r"^-?\d+$", parts[0]):
            raise Fail("%s:%d: not `<id> <class> <method> <descriptor>`: %r" % (path, n, line))
        i = int(parts[0])
        if i in ids:
            raise Fail("%s:%d: id %d given twice (%s and %s)" % (path, n, i, ids[i], parts[1:]))
        ids[i] = (parts[1].replace(".", "/"), parts[2], parts[3])
    return ids


# ================================================================ running

class JRun:
    def __init__(self, rc, out, err, cmd, tracker=None, vlog=None):
        self.rc, self.out, self.err, self.cmd, self.tracker, self.vlog = rc, out, err, cmd, tracker, vlog


def java(ctx, cp, main, tag, args=(), jvm=(), tracker_out=None, vlog=False, timeout=TIMEOUT):
    """java -Xverify:all [-Dbcitest.out=...] -cp CP MAIN; output files in the
    test's directory under TAG.  Raises Fail on a timeout or a crash."""
    d = ctx.out
    so, se = os.path.join(d, tag + ".stdout"), os.path.join(d, tag + ".stderr")
    cmd = [ctx.java, "-Xverify:all", "-XX:ErrorFile=" + os.path.join(d, "hs_err_" + tag + "_%p.log"),
           "-Xss4m"] + list(jvm)
    tpath = None
    if tracker_out:
        tpath = os.path.join(d, tag + ".tracker")
        if os.path.exists(tpath):
            os.unlink(tpath)
        cmd.append("-Dbcitest.out=" + tpath)
    vpath = None
    if vlog:
        vpath = os.path.join(d, tag + ".vlog")
        cmd.append("-Xlog:verification=info:file=%s::filecount=0" % vpath)
    cmd += ["-cp", os.pathsep.join(cp) if isinstance(cp, (list, tuple)) else cp, main] + [str(a) for a in args]
    with open(os.path.join(d, tag + ".cmd"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    with open(so, "wb") as fo, open(se, "wb") as fe:
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, cwd=d, env=clean_env())
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise Fail("timeout after %ds: %s" % (timeout, " ".join(cmd)))
    r = JRun(rc, read(so, "rb").decode("utf-8", "replace"), read(se, "rb").decode("utf-8", "replace"), cmd)
    errs = glob.glob(os.path.join(d, "hs_err_" + tag + "_*.log"))
    if errs:
        raise Fail("JVM crashed (%s): %s" % (tag, errs[0]))
    if rc < 0 or rc >= 128:
        raise Fail("JVM died (%s) with %s" % (tag, ("signal %d" % -rc) if rc < 0 else "exit code %d" % rc))
    if tracker_out:
        r.tracker = parse_tracker(tpath) if os.path.isfile(tpath) else None
    if vpath:
        r.vlog = read(vpath) if os.path.isfile(vpath) else ""
    return r


def parallel(fn, items):
    """fn(item) for each item on WORKERS threads; returns results in order
    (exceptions are re-raised in order)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as ex:
        futs = [ex.submit(fn, it) for it in items]
        return [f.result() for f in futs]


class TrackerReport:
    def __init__(self):
        self.entries, self.exits, self.arrays = {}, {}, {}
        self.objectinit = self.maxdepth = self.threads = self.nerrors = 0
        self.unbalanced, self.errors = [], []


def parse_tracker(path):
    t = TrackerReport()
    lines = read(path).splitlines()
    if not lines or lines[0] != "BCITRACKER 1" or lines[-1] != "END":
        raise Fail("tracker report %s is incomplete" % path)
    for l in lines[1:-1]:
        k, _, rest = l.partition(" ")
        if k == "entry":
            i, n = rest.split()
            t.entries[int(i)] = int(n)
        elif k == "exit":
            i, n = rest.split()
            t.exits[int(i)] = int(n)
        elif k == "array":
            name, n = rest.rsplit(" ", 1)
            t.arrays[name] = int(n)
        elif k in ("objectinit", "maxdepth", "threads"):
            setattr(t, k, int(rest))
        elif k == "errors":
            t.nerrors = int(rest)
        elif k == "error":
            t.errors.append(rest)
        elif k == "unbalanced":
            t.unbalanced.append(rest)
    return t


SERIOUS = re.compile(r"VerifyError|ClassFormatError|LinkageError|IncompatibleClassChangeError|NoSuchMethodError|"
                     r"NoSuchFieldError|NoClassDefFoundError|AbstractMethodError|IllegalAccessError|"
                     r"ExceptionInInitializerError|StackOverflowError|OutOfMemoryError|Internal Error|"
                     r"SIGSEGV|hs_err|Bad <init>|Stack map|stack map|Expecting a stack map|Inconsistent")


def name_of(ids, i):
    c = ids.get(i)
    return "%s.%s%s" % c if c else "id %d (not in the ids file)" % i


def compare_runs(probs, where, plain, inst, ids, expect_rc=0, expect_tracker=True):
    """Same exit code, stdout and stderr; nothing the rewrite introduced that
    looks like a linkage or verification error; the tracker balanced."""
    if plain.rc != expect_rc:
        probs.add("uninstrumented run failed", where, "exit code %d; %s" % (plain.rc, tail(plain.err + plain.out)))
        return
    if inst.rc != plain.rc:
        probs.add("exit code differs", where, "%d instead of %d; stderr: %s" % (inst.rc, plain.rc, tail(inst.err, 6)))
    for stream, a, b in (("stdout", plain.out, inst.out), ("stderr", plain.err, inst.err)):
        if a != b:
            al, bl = a.splitlines(), b.splitlines()
            k = next((i for i in range(min(len(al), len(bl))) if al[i] != bl[i]), min(len(al), len(bl)))
            probs.add("%s differs" % stream, where, "first difference at line %d: expected %r, got %r"
                      % (k + 1, al[k] if k < len(al) else "<end>", bl[k] if k < len(bl) else "<end>"))
    serious = [l for l in (inst.out + "\n" + inst.err).splitlines() if SERIOUS.search(l)]
    plain_serious = set(l for l in (plain.out + "\n" + plain.err).splitlines() if SERIOUS.search(l))
    new = [l for l in serious if l not in plain_serious]
    if new:
        probs.add("VerifyError or linkage error", where, " | ".join(new[:4]))
    if expect_tracker or inst.tracker is not None:
        check_tracker(probs, where, inst.tracker, ids)


def check_tracker(probs, where, t, ids):
    if t is None:
        probs.add("no tracker report", where)
        return
    if t.nerrors:
        probs.add("tracker stack errors", where, "%d, e.g. %s" % (t.nerrors, "; ".join(
            re.sub(r"(methodExit\(|method is )(\d+)", lambda m: "%s%s = %s" % (m.group(1), m.group(2),
                                                                             name_of(ids, int(m.group(2)))), e)
            for e in t.errors[:2])))
    if t.unbalanced:
        probs.add("thread stacks not empty at exit", where, "; ".join(t.unbalanced[:3]))
    bad = []
    for i in sorted(set(t.entries) | set(t.exits)):
        if t.entries.get(i, 0) != t.exits.get(i, 0):
            bad.append("%s: %d entries, %d exits" % (name_of(ids, i), t.entries.get(i, 0), t.exits.get(i, 0)))
        if i not in ids:
            bad.append("id %d called but not in the ids file" % i)
    if bad:
        probs.add("entries != exits", where, "; ".join(bad[:4]) + (" (+%d)" % (len(bad) - 4) if len(bad) > 4 else ""))


# ================================================================ structure

PUSH_INT = {"iconst_m1": -1, "iconst_0": 0, "iconst_1": 1, "iconst_2": 2, "iconst_3": 3, "iconst_4": 4,
            "iconst_5": 5}
NOTHROW = set("""nop aconst_null iconst_m1 iconst_0 iconst_1 iconst_2 iconst_3 iconst_4 iconst_5 lconst_0 lconst_1
fconst_0 fconst_1 fconst_2 dconst_0 dconst_1 bipush sipush iload lload fload dload aload iload_0 iload_1 iload_2
iload_3 lload_0 lload_1 lload_2 lload_3 fload_0 fload_1 fload_2 fload_3 dload_0 dload_1 dload_2 dload_3 aload_0
aload_1 aload_2 aload_3 istore lstore fstore dstore astore istore_0 istore_1 istore_2 istore_3 lstore_0 lstore_1
lstore_2 lstore_3 fstore_0 fstore_1 fstore_2 fstore_3 dstore_0 dstore_1 dstore_2 dstore_3 astore_0 astore_1
astore_2 astore_3 pop pop2 dup dup_x1 dup_x2 dup2 dup2_x1 dup2_x2 swap iadd ladd fadd dadd isub lsub fsub dsub
imul lmul fmul dmul fdiv ddiv frem drem ineg lneg fneg dneg ishl lshl ishr lshr iushr lushr iand land ior lor ixor
lxor iinc i2l i2f i2d l2i l2f l2d f2i f2l f2d d2i d2l d2f i2b i2c i2s lcmp fcmpl fcmpg dcmpl dcmpg ifeq ifne iflt
ifge ifgt ifle if_icmpeq if_icmpne if_icmplt if_icmpge if_icmpgt if_icmple if_acmpeq if_acmpne goto jsr ret
tableswitch lookupswitch ireturn lreturn freturn dreturn areturn return ifnull ifnonnull goto_w jsr_w""".split())
NORM_NAME = {"goto_w": "goto", "jsr_w": "jsr", "ldc_w": "ldc"}
CODE_ATTRS_MAPPED = {"LineNumberTable", "LocalVariableTable", "LocalVariableTypeTable", "StackMapTable"}


def pushed_int(cp, ins):
    if ins.name in PUSH_INT:
        return PUSH_INT[ins.name]
    if ins.name in ("bipush", "sipush"):
        return ins.operand
    if ins.name in ("ldc", "ldc_w"):
        tag, v = cp.get(ins.operand)
        if tag == C.INTEGER:
            return v
    return None


class CodeView:
    """A method's code with the inserted tracker calls marked (kind[k] is
    'entry', 'exit', 'newarray', 'objinit' or None) and the remaining
    instructions as normalized tokens: (name, operand, targets); targets are
    (token index, landed kind) pairs, token index END for the end of code."""

    END = 10 ** 9

    def __init__(self, cf, m, tracker, probs, where):
        self.cf, self.m, self.code, self.where = cf, m, m.code, where
        ins = self.insns = m.code.insns
        cp = cf.cp
        n = len(ins)
        self.kind = [None] * n
        self.calls = []          # (tracker method, pushed id or None, insn index)
        if tracker:
            for k, i in enumerate(ins):
                if i.name != "invokestatic":
                    continue
                cls, name, desc = cp.member(i.operand)
                if cls != tracker:
                    continue
                if name in ("methodEntry", "methodExit"):
                    v = pushed_int(cp, ins[k - 1]) if k > 0 else None
                    if desc != "(I)V" or v is None:
                        probs.add("bad inserted call", where, "%s%s at %d not preceded by an int push" % (name, desc, i.pc))
                        continue
                    self.kind[k - 1] = self.kind[k] = "entry" if name == "methodEntry" else "exit"
                    self.calls.append((name, v, k))
                elif name == "newArray":
                    if desc != "(Ljava/lang/Object;)V" or k < 2 or ins[k - 1].name != "dup" \
                            or ins[k - 2].name not in C.ALLOCS:
                        probs.add("bad inserted call", where, "newArray at %d not `<allocation>; dup; invokestatic`" % i.pc)
                        continue
                    self.kind[k - 1] = self.kind[k] = "newarray"
                    self.calls.append((name, None, k))
                elif name == "objectInit":
                    if ins[k - 1].name != "aload_0":
                        probs.add("bad inserted call", where, "objectInit at %d not preceded by aload_0" % i.pc)
                        continue
                    self.kind[k - 1] = self.kind[k] = "objinit"
                    self.calls.append((name, None, k))
                else:
                    probs.add("bad inserted call", where, "unknown tracker method %s%s" % (name, desc))
        # Collapse `if!c L; goto_w T; L:` (javac's fat code and the
        # rewriter's widening) into `ifc T`.
        self.absorbed = [False] * n
        self.inverted = {}
        for k in range(n - 1):
            a, b = ins[k], ins[k + 1]
            if (self.kind[k] is None and self.kind[k + 1] is None and a.name in C.COND_BRANCHES
                    and b.name == "goto_w" and a.target == b.pc + b.length):
                self.absorbed[k + 1] = True
                self.inverted[k] = b.target
        self.tok_of = {}         # insn index -> token index
        self.insn_of_tok = []
        for k in range(n):
            if self.kind[k] is None and not self.absorbed[k]:
                self.tok_of[k] = len(self.insn_of_tok)
                self.insn_of_tok.append(k)
        self.by_pc = {i.pc: k for k, i in enumerate(ins)}
        self.length = len(m.code.code)

    def resolve(self, pc):
        """pc -> (token index or END, kind of the inserted code landed on or
        None); None if pc is not an instruction boundary."""
        if pc == self.length:
            return (self.END, None)
        k = self.by_pc.get(pc)
        if k is None:
            return None
        landed = self.kind[k] or ("absorbed" if self.absorbed[k] else None)
        while k < len(self.insns) and (self.kind[k] is not None or self.absorbed[k]):
            k += 1
        if k == len(self.insns):
            return (self.END, landed)
        return (self.tok_of[k], landed)

    def tokens(self):
        cp = self.cf.cp
        out = []
        for t, k in enumerate(self.insn_of_tok):
            i = self.insns[k]
            name = NORM_NAME.get(i.name, i.name)
            op = i.operand
            f = C.FORMAT.get(i.op)
            if f in ("c1", "c2", "indy") and not i.wide:
                op = cp.describe(op)
            elif f in ("iface", "multi"):
                op = (cp.describe(op[0]), op[1])
            targets = []
            if k in self.inverted:
                name = C.INVERSE[i.name]
                targets = [self.resolve(self.inverted[k])]
            elif i.target is not None:
                targets = [self.resolve(i.target)]
            elif i.switch is not None:
                if len(i.switch) == 4:
                    op = (i.switch[1], i.switch[2])
                else:
                    op = tuple(key for key, _ in i.switch[1])
                targets = [self.resolve(p) for p in C.branch_targets(i)]
            out.append((name, op, targets))
        return out


def this_call_tokens(view, toks):
    """Token indices of the invokespecial <init> that initializes `this` in a
    constructor (new/<init> pairs matched like parentheses)."""
    if view.m.name != "<init>":
        return set()
    depth = 0
    out = set()
    for t, (name, op, _) in enumerate(toks):
        if name == "new":
            depth += 1
        elif name == "invokespecial" and isinstance(op, str) and ".<init>:" in op:
            if depth == 0:
                out.add(t)
            else:
                depth -= 1
    return out


def vt_norm(view, t):
    if t[0] == "uninit":
        r = view.resolve(t[1])
        if r is None or r[1] is not None or r[0] == view.END or view.insns[view.insn_of_tok[r[0]]].name != "new":
            return ("uninit", "BAD@%d" % t[1])
        return ("uninit", r[0])
    return t


def compare_classes(orig_bytes, new_bytes, where, tracker, ids_by_member, probs, obs, cover, flags=FLAGS):
    """Compares one original and one rewritten class; problems into probs,
    observations (not failures) into obs, alignment/opcode coverage into cover."""
    try:
        o = C.parse(orig_bytes)
    except C.FormatError as e:
        probs.add("cannot parse the original", where, str(e))
        return
    try:
        n = C.parse(new_bytes)
    except C.FormatError as e:
        probs.add("rewritten class is malformed", where, str(e))
        return
    if (o.major, o.minor) != (n.major, n.minor):
        probs.add("class version changed", where, "%d.%d -> %d.%d" % (o.major, o.minor, n.major, n.minor))
    if len(n.cp) < len(o.cp) or any(o.cp.raw[i] != n.cp.raw[i] for i in range(1, len(o.cp))):
        probs.add("constant pool not preserved", where, "existing entries changed (entries must only be appended)")
        return
    if (o.access, o.this_class, o.super_class, o.interfaces) != (n.access, n.this_class, n.super_class, n.interfaces):
        probs.add("class header changed", where)
    if [(a.name, a.data) for a in o.attributes] != [(a.name, a.data) for a in n.attributes]:
        probs.add("class attributes changed", where, "%s -> %s" % ([a.name for a in o.attributes], [a.name for a in n.attributes]))
    if [(f.access, f.name, f.desc, [(a.name, a.data) for a in f.attributes]) for f in o.fields] != \
            [(f.access, f.name, f.desc, [(a.name, a.data) for a in f.attributes]) for f in n.fields]:
        probs.add("fields changed", where)
    if [(m.access, m.name, m.desc) for m in o.methods] != [(m.access, m.name, m.desc) for m in n.methods]:
        probs.add("methods changed", where, "names, descriptors, flags or order differ")
        return
    cls = o.name
    for om, nm in zip(o.methods, n.methods):
        mw = "%s %s.%s%s" % (where, cls, om.name, om.desc)
        if [(a.name, a.data) for a in om.attributes if a.name != "Code"] != \
                [(a.name, a.data) for a in nm.attributes if a.name != "Code"]:
            probs.add("method attributes changed", mw)
        if om.code is None:
            if nm.code is not None:
                probs.add("code added to a method without code", mw)
            continue
        for i in om.code.insns:
            cover.setdefault("orig_ops", set()).add(i.name)
            if i.name == "newarray":
                cover.setdefault("atypes", set()).add(i.operand)
            if i.switch is not None:
                cover.setdefault("orig_align", set()).add((i.name, i.pc % 4))
        if om.code.frames and om.code.frames[0].offset == 0:
            cover.setdefault("frame0", set()).add(mw)
        compare_code(o, om, n, nm, mw, tracker, ids_by_member.get((cls, om.name, om.desc)), probs, obs, cover, flags)


def compare_code(o, om, n, nm, mw, tracker, mid, probs, obs, cover, flags):
    ov = CodeView(o, om, None, probs, mw)
    nv = CodeView(n, nm, tracker, probs, mw)
    for i in nm.code.insns:
        if i.switch is not None:
            cover.setdefault("new_align", set()).add((i.name, i.pc % 4))
            if any(i.pad):
                probs.add("nonzero switch padding", mw, "%s at %d" % (i.name, i.pc))
        if i.name in ("goto_w", "jsr_w"):
            cover.setdefault("new_wide", set()).add(mw)
    ot, nt = ov.tokens(), nv.tokens()
    entry_exit = "--entry-exit" in flags
    # --- inserted calls and ids
    ids_pushed = set(v for name, v, _ in nv.calls if name in ("methodEntry", "methodExit"))
    if entry_exit:
        if mid is None:
            if ids_pushed:
                probs.add("method not in the ids file but instrumented", mw, "ids %s" % sorted(ids_pushed))
        elif mid >= 0:
            if ids_pushed != {mid}:
                probs.add("pushed ids differ from the ids file", mw, "pushed %s, file %d" % (sorted(ids_pushed), mid))
            if not (len(nv.insns) >= 2 and nv.kind[0] == "entry" and nv.kind[1] == "entry"):
                probs.add("methodEntry not at offset 0", mw)
            for k, i in enumerate(nv.insns):
                if i.name in C.RETURNS and not (k >= 2 and nv.kind[k - 1] == "exit"):
                    probs.add("return without methodExit before it", mw, "at %d" % i.pc)
    if "--newarray" in flags:
        for k, i in enumerate(nv.insns):
            if i.name in C.ALLOCS and not (k + 2 < len(nv.insns) and nv.kind[k + 2] == "newarray"):
                probs.add("allocation without newArray after it", mw, "%s at %d" % (i.name, i.pc))
    # --- the code itself
    if len(nt) < len(ot):
        probs.add("instructions lost", mw, "%d original instructions, %d left" % (len(ot), len(nt)))
        return
    for t, (a, b) in enumerate(zip(ot, nt)):
        if a[0] != b[0] or a[1] != b[1] or len(a[2]) != len(b[2]):
            probs.add("instruction changed", mw, "original #%d %s %r, rewritten %s %r (pc %d)"
                      % (t, a[0], a[1], b[0], b[1], nv.insns[nv.insn_of_tok[t]].pc))
            return
        for (ta, la), tb in zip(a[2], b[2]):
            if tb is None:
                probs.add("branch into the middle of an instruction", mw, "#%d %s" % (t, b[0]))
                continue
            tbi, lb = tb
            if ta != tbi:
                probs.add("branch target moved", mw, "#%d %s -> original #%s, rewritten #%s" % (t, a[0], ta, tbi))
                continue
            target_name = ot[ta][0] if ta != ov.END else None
            if entry_exit and mid is not None and mid >= 0 and target_name in C.RETURNS:
                if lb != "exit":
                    probs.add("branch to a return skips methodExit", mw, "#%d %s -> #%d %s" % (t, a[0], ta, target_name))
            elif ta == 0 and lb == "entry":
                probs.add("branch to offset 0 re-runs methodEntry", mw, "#%d %s" % (t, a[0]))
            elif lb is not None and not (lb == "exit" and target_name in C.RETURNS):
                probs.add("branch lands on inserted code", mw, "#%d %s lands on %s code before #%d %s"
                          % (t, a[0], lb, ta, target_name))
    tail_names = [x[0] for x in nt[len(ot):]]
    if tail_names and (tail_names[-1] != "athrow" or any(
            not re.match(r"^(athrow|nop|dup|pop|swap|aload(_\d)?|astore(_\d)?)$", x) for x in tail_names)):
        probs.add("unexpected code after the original code", mw, " ".join(tail_names[:12]))
    # --- exception table
    oex = om.code.exceptions
    nex = nm.code.exceptions
    if len(nex) < len(oex):
        probs.add("exception handlers lost", mw, "%d -> %d" % (len(oex), len(nex)))
        return

    def ctype(cf, i):
        return cf.cp.class_name(i) if i else "any"

    for j, (a, b) in enumerate(zip(oex, nex)):
        ra = (ov.resolve(a[0]), ov.resolve(a[1]), ov.resolve(a[2]), ctype(o, a[3]))
        rb = (nv.resolve(b[0]), nv.resolve(b[1]), nv.resolve(b[2]), ctype(n, b[3]))
        if None in rb[:3]:
            probs.add("exception range not on instruction boundaries", mw, "entry %d %r" % (j, b))
            continue
        if (ra[0][0], ra[1][0], ra[2][0], ra[3]) != (rb[0][0], rb[1][0] if rb[1][0] < len(ot) else ov.END,
                                                     rb[2][0], rb[3]):
            probs.add("exception table entry changed", mw, "entry %d: original %r -> rewritten %r (as instructions "
                      "%r vs %r)" % (j, a, b, [x[0] for x in ra[:3]] + [ra[3]], [x[0] for x in rb[:3]] + [rb[3]]))
        elif rb[2][1] is not None:
            probs.add("handler lands on inserted code", mw, "entry %d" % j)
    extra = nex[len(oex):]
    if entry_exit and mid is not None and mid >= 0:
        covered = set()
        for s, e, h, ct in extra:
            if ct and n.cp.class_name(ct) != "java/lang/Throwable":
                probs.add("added handler is not a catch-all", mw, n.cp.class_name(ct))
            rh = nv.resolve(h)
            if rh is None or (rh[0] != nv.END and rh[0] < len(ot)):
                probs.add("added handler not after the original code", mw, "handler_pc %d" % h)
            for k, i in enumerate(nv.insns):
                if s <= i.pc < e and k in nv.tok_of:
                    covered.add(nv.tok_of[k])
        exempt = this_call_tokens(nv, nt)
        gaps = [t for t in range(len(ot)) if ot[t][0] not in NOTHROW and t not in covered and t not in exempt]
        first_init = min(exempt) if exempt else -1
        for label, g in (("exceptional exit before super()/this() not covered", [t for t in gaps if t < first_init]),
                         ("exceptional exit not covered", [t for t in gaps if t > first_init])):
            if g:
                probs.add(label, mw, "%d instruction(s) that can throw are outside the added handler%s, e.g. #%d %s "
                          "at pc %d" % (len(g), "" if extra else " (no handler added)", g[0], ot[g[0]][0],
                                        nv.insns[nv.insn_of_tok[g[0]]].pc))
        if exempt:
            obs.add("constructors whose super()/this() call is outside the catch-all (no StackMapTable frame "
                    "can express a handler there; if the super constructor throws, this one gets no methodExit)")
    # --- max_stack / max_locals
    if nm.code.max_stack < om.code.max_stack or nm.code.max_locals < om.code.max_locals:
        probs.add("max_stack/max_locals shrank", mw, "%d/%d -> %d/%d" % (om.code.max_stack, om.code.max_locals,
                                                                    nm.code.max_stack, nm.code.max_locals))
    # --- line numbers
    if om.code.line_numbers is not None:
        a = sorted((ov.resolve(pc)[0], line) for pc, line in om.code.line_numbers)
        if nm.code.line_numbers is None:
            probs.add("LineNumberTable lost", mw)
        else:
            b = []
            for pc, line in nm.code.line_numbers:
                r = nv.resolve(pc)
                if r is None:
                    probs.add("LineNumberTable entry not on an instruction", mw, "pc %d" % pc)
                elif r[0] < len(ot):
                    b.append((r[0], line))
            if sorted(b) != a:
                diff = sorted(set(a) ^ set(b))[:3]
                probs.add("LineNumberTable changed", mw, "differences (instruction, line): %r" % diff)
    elif nm.code.line_numbers is not None:
        obs.add("LineNumberTable added where there was none")
    # --- local variables
    for attr in ("local_vars", "local_var_types"):
        oa, na = getattr(om.code, attr), getattr(nm.code, attr)
        if oa is None:
            continue
        label = "LocalVariableTable" if attr == "local_vars" else "LocalVariableTypeTable"
        if na is None:
            probs.add(label + " lost", mw)
            continue

        def norm(view, ents, ntok):
            out = []
            for s, ln, name, desc, slot in ents:
                rs, re_ = view.resolve(s), view.resolve(s + ln)
                if rs is None or re_ is None:
                    out.append(("BAD", s, ln, name))
                    continue
                end = re_[0] if re_[0] < ntok else view.END
                out.append((rs[0], end, name, desc, slot))
            return out
        a, b = norm(ov, oa, len(ot)), norm(nv, na, len(ot))
        if a != b:
            d = [(x, y) for x, y in zip(a, b) if x != y][:2] or [(a[len(b):][:1], b[len(a):][:1])]
            probs.add(label + " changed", mw, "(start, end, name, desc, slot) as instructions: %r" % d)
        for s, ln, name, desc, slot in na:
            if slot + (2 if desc in ("J", "D") else 1) > nm.code.max_locals:
                probs.add(label + " slot beyond max_locals", mw, name)
    # --- StackMapTable frames at the original instructions
    if om.code.frames:
        if not nm.code.frames:
            probs.add("StackMapTable lost", mw)
        else:
            at = {}
            for f in nm.code.frames:
                r = nv.resolve(f.offset)
                if r is not None:
                    at.setdefault(r[0], []).append(f)
            for f in om.code.frames:
                r = ov.resolve(f.offset)
                cands = at.get(r[0], [])
                want = ([vt_norm(ov, t) for t in f.locals], [vt_norm(ov, t) for t in f.stack])
                got = [([vt_norm(nv, t) for t in g.locals], [vt_norm(nv, t) for t in g.stack]) for g in cands]
                if not cands:
                    probs.add("StackMapTable frame missing", mw, "no frame at original instruction #%d (pc %d)"
                              % (r[0], f.offset))
                elif want not in got:
                    probs.add("StackMapTable frame changed", mw, "at original #%d: %r -> %r" % (r[0], want, got[0]))
    elif om.code.frames is None and nm.code.frames and o.major < 50:
        obs.add("StackMapTable added to a class older than 50.0 (ignored by the JVM)")
    # --- other Code attributes
    oo = [(a.name, a.data) for a in om.code.attributes if a.name not in CODE_ATTRS_MAPPED]
    no = [(a.name, a.data) for a in nm.code.attributes if a.name not in CODE_ATTRS_MAPPED]
    if oo != no:
        obs.add("other Code attributes changed: %s -> %s" % ([x[0] for x in oo], [x[0] for x in no]))
    elif oo and om.code.code != nm.code.code:
        obs.add("Code attributes %s kept byte for byte although the code moved (offsets inside are stale)"
                % sorted(set(x[0] for x in oo)))


def has_code(data):
    """Whether a class has a method with code (else the rewriter has nothing to do)."""
    try:
        return any(m.attr("Code") for m in C.parse(data, decode_code=False).methods)
    except C.FormatError:
        return True


def compare_tree(orig_dir, rw, probs, obs, cover, flags=FLAGS, expect_unchanged=()):
    """compare_classes for every class of a rewritten directory; classes whose
    relative path is in expect_unchanged must be byte-identical."""
    ids_by_member = {}
    if "--entry-exit" in flags:
        for i, (c, m, d) in rw.ids.items():
            if (c, m, d) in ids_by_member:
                probs.add("method listed twice in the ids file", rw.ids_path, "%s.%s%s" % (c, m, d))
            ids_by_member[(c, m, d)] = i
    seen = set()
    for f in class_files(orig_dir):
        rel = os.path.relpath(f, orig_dir)
        g = os.path.join(rw.dst, rel)
        where = os.path.relpath(g, ROOT)
        if not os.path.isfile(g):
            probs.add("class missing from the output", where)
            continue
        ob, nb = read(f, "rb"), read(g, "rb")
        if rel in expect_unchanged:
            if ob != nb:
                probs.add("class that could not be rewritten was not copied unchanged", where)
            continue
        if ob == nb:
            if has_code(ob):
                probs.add("class not rewritten", where)
            continue
        try:
            seen.add(C.parse(ob, decode_code=False).name)
        except C.FormatError:
            pass
        compare_classes(ob, nb, where, TRACKER, ids_by_member, probs, obs, cover, flags)
    if "--entry-exit" in flags:
        stray = sorted(set(c for c, _, _ in rw.ids.values()) - seen
                       - set(C.parse(read(os.path.join(orig_dir, r), "rb"), decode_code=False).name
                             for r in expect_unchanged))
        if stray:
            probs.add("ids file names classes that are not in the input", rw.ids_path, ", ".join(stray[:3]))


class Observations:
    def __init__(self):
        self.items = {}
        self.lock = threading.Lock()

    def add(self, s):
        with self.lock:
            self.items[s] = self.items.get(s, 0) + 1

    def note(self, ctx):
        for s, k in sorted(self.items.items()):
            ctx.note("observation: %s (%d methods)" % (s, k))


# ================================================================ tests

SIZE_MSG = re.compile(r"(?i)65535|65536|64 ?k|too (large|long|big)|exceed|limit|overflow|code size|code length")


def setup(ctx):
    ensure_tool()
    trk = build_tracker()
    return trk, build_corpus()


def top_release(ctx):
    return jdk_release(ctx.jdk_name)


def check_rewrite_ok(probs, where, rw):
    if rw.rc != 0 or rw.error_lines():
        probs.add("hprof-bci failed", where, "exit %d: %s" % (rw.rc, " | ".join(rw.error_lines()[:3]) or tail(rw.output)))


def missing_jdk_note(ctx):
    names = [n for n, h in _jdks() if not h]
    if names:
        ctx.note("not installed: %s (its --release levels and runs are skipped)" % ", ".join(names))


def bci_corpus(ctx):
    trk, variants = setup(ctx)
    vs = [v for v in variants.values() if v.group == "corpus" and v.release <= top_release(ctx)]
    probs = Problems(ctx)

    def one(v):
        rw = rewrite(v.path, v.name)
        check_rewrite_ok(probs, v.name, rw)
        plain = java(ctx, [v.path], "corpus.Main", v.name + ".plain")
        inst = java(ctx, [rw.dst, trk], "corpus.Main", v.name + ".inst", tracker_out=True)
        compare_runs(probs, v.name, plain, inst, rw.ids)
        if "== done" not in plain.out:
            probs.add("corpus did not finish", v.name)
        failed = [l for l in plain.out.splitlines() if "SECTION" in l and "FAILED" in l]
        if failed:
            probs.add("corpus section failed without the rewriter", v.name, failed[0])
        return sum(inst.tracker.entries.values()) if inst.tracker else 0, len(rw.ids)

    res = parallel(one, vs)
    ctx.note("%d variants (%s), %d methods with ids, %d tracked calls"
             % (len(vs), ", ".join(sorted(set("%s r%d-r%d" % (j, min(v.release for v in vs if v.jdk == j),
                                                              max(v.release for v in vs if v.jdk == j))
                                          for j in set(v.jdk for v in vs)))),
                sum(r[1] for r in res), sum(r[0] for r in res)))
    missing_jdk_note(ctx)
    probs.raise_if_any(" in %d variants" % len(vs))


# Coverage the corpus must give (checked on the compiled classes, so that a
# javac change that loses a case is noticed).
REQUIRED_OPS = (sorted(C.COND_BRANCHES) + ["goto", "tableswitch", "lookupswitch", "newarray", "anewarray",
                                           "multianewarray", "monitorenter", "monitorexit", "athrow",
                                           "invokedynamic", "invokeinterface", "invokespecial", "dup_x1", "dup_x2",
                                           "dup2", "dup2_x1", "dup2_x2", "lcmp", "fcmpl", "fcmpg", "dcmpl", "dcmpg",
                                           "checkcast", "instanceof", "iinc"])


def bci_structure(ctx):
    trk, variants = setup(ctx)
    jl = jdk_list()
    vs = [v for v in variants.values() if v.group == "corpus" and v.jdk == ctx.jdk_name]
    if not vs:
        raise Skip("no variant compiled by %s" % ctx.jdk_name)
    probs = Problems(ctx)
    obs = Observations()
    covers = []

    def one(v):
        rw = rewrite(v.path, v.name)
        check_rewrite_ok(probs, v.name, rw)
        cover = {}
        compare_tree(v.path, rw, probs, obs, cover)
        return cover

    covers = parallel(one, vs)
    cover = {}
    for c in covers:
        for k, s in c.items():
            cover.setdefault(k, set()).update(s)
    missing = [op for op in REQUIRED_OPS if op not in cover.get("orig_ops", set())]
    if missing:
        probs.add("corpus coverage", "compiled corpus", "opcodes never emitted: %s" % " ".join(missing))
    if cover.get("atypes", set()) != set(C.ATYPES):
        probs.add("corpus coverage", "compiled corpus", "newarray types missing: %s"
                  % sorted(C.ATYPES[t] for t in set(C.ATYPES) - cover.get("atypes", set())))
    for key, what in (("orig_align", "before"), ("new_align", "after")):
        got = cover.get(key, set())
        lack = [(n, a) for n in ("tableswitch", "lookupswitch") for a in range(4) if (n, a) not in got]
        if lack:
            probs.add("corpus coverage", "compiled corpus", "switch alignments (pc %% 4) %s rewriting never seen: %s"
                      % (what, lack))
    if not cover.get("frame0"):
        probs.add("corpus coverage", "compiled corpus", "no method with a StackMapTable frame at offset 0")
    ctx.note("%d variants compiled by %s; %d opcodes seen; switch alignments before %s, after %s; "
             "%d methods with a frame at offset 0"
             % (len(vs), ctx.jdk_name, len(cover.get("orig_ops", ())),
                sorted(a for n, a in cover.get("orig_align", ()) if n == "tableswitch"),
                sorted(a for n, a in cover.get("new_align", ()) if n == "tableswitch"), len(cover.get("frame0", ()))))
    obs.note(ctx)
    if jl and ctx.jdk_name == jl[-1][0] and len(jl) > 1:
        ctx.note("the other JDK's variants are checked by bci_structure on that JDK")
    probs.raise_if_any(" in %d variants" % len(vs))


COUNTS_EXPECTED = {
    ("counts/Counts", "<init>", "()V"): 0,
    ("counts/Counts", "<clinit>", "()V"): 1,
    ("counts/Counts", "main", "([Ljava/lang/String;)V"): 1,
    ("counts/Counts", "hot", "(I)I"): 1000000,
    ("counts/Counts", "fib", "(I)I"): 21891,
    ("counts/Counts", "down", "(I)I"): 1000,
    ("counts/Counts", "thrower", "(I)V"): 1234,
    ("counts/Counts", "maybe", "(I)I"): 3000,
    ("counts/Counts", "chainA", "(I)I"): 500,
    ("counts/Counts", "chainB", "(I)I"): 500,
    ("counts/Counts", "chainC", "(I)I"): 500,
    ("counts/Counts", "deepThrow", "(I)I"): 3010,
    ("counts/Counts", "tick", "()Z"): 1000,
    ("counts/Counts", "spinUntil", "(I)I"): 100,
    ("counts/Counts", "sw", "(I)I"): 10000,
    ("counts/Counts", "syncM", "(I)I"): 2000,
    ("counts/Counts", "work", "(I)I"): 100000,
    ("counts/Counts", "check", "(I)I"): 200,
    ("counts/Counts", "arrays", "()V"): 1,
    ("counts/Counts", "lambda$main$*", "(I)I"): 5000,
    ("counts/Counts$Worker", "<init>", "(I)V"): 4,
    ("counts/Counts$Worker", "run", "()V"): 4,
    ("counts/Counts$Obj", "<init>", "(I)V"): 3100,
    ("counts/Counts$Obj2", "<init>", "(I)V"): 200,
    ("counts/Counts$Holder", "<init>", "()V"): 0,
    ("counts/Counts$Holder", "<clinit>", "()V"): 1,
    ("counts/Counts$Holder", "init", "()I"): 1,
}
COUNTS_ARRAYS = {"[Z": 101, "[B": 102, "[C": 103, "[S": 104, "[I": 105, "[J": 106, "[F": 107, "[D": 108,
                 "[Ljava.lang.String;": 109, "[Ljava.lang.Object;": 110, "[[I": 111, "[[J": 112, "[[[I": 113,
                 "[[Ljava.lang.String;": 114, "[Ljava.lang.Thread;": 1}


def counts_expected_by_id(probs, where, ids_files):
    """{id: expected entries} from one or more ids files (summed)."""
    exp = {}
    for ids in ids_files:
        for i, (c, m, d) in ids.items():
            if not c.startswith("counts/"):
                continue
            key = (c, m, d)
            if m.startswith("lambda$main$"):
                key = (c, "lambda$main$*", d)
            if key not in COUNTS_EXPECTED:
                probs.add("unexpected method in counts.Counts (update COUNTS_EXPECTED)", where, "%s.%s%s" % (c, m, d))
                continue
            exp[i] = exp.get(i, 0) + COUNTS_EXPECTED[key]
        seen = set(("lambda$main$*" if m.startswith("lambda$main$") else m, c, d) for c, m, d in ids.values())
        for c, m, d in COUNTS_EXPECTED:
            if (m, c, d) not in seen:
                probs.add("method missing from the ids file", where, "%s.%s%s" % (c, m, d))
    return exp


def check_counts(probs, where, t, exp, ids, factor=1):
    if t is None:
        return
    for i, n in sorted(exp.items()):
        got = t.entries.get(i, 0)
        if got != n:
            probs.add("wrong entry count", where, "%s: %d entries, expected %d" % (name_of(ids, i), got, n))
    arrays = {k: v * factor for k, v in COUNTS_ARRAYS.items()}
    if t.arrays != arrays:
        diff = {k: (t.arrays.get(k, 0), arrays.get(k, 0)) for k in set(t.arrays) | set(arrays)
                if t.arrays.get(k, 0) != arrays.get(k, 0)}
        probs.add("wrong array counts", where, "(got, expected): %r" % diff)
    if t.maxdepth < 1001:
        probs.add("recursion depth not seen", where, "maxdepth %d < 1001" % t.maxdepth)
    if t.threads != 5:
        probs.add("wrong thread count", where, "%d threads called the tracker, expected 5" % t.threads)


COUNTS_VARIANTS = {"jdk17": ["jdk17-r8-nog", "jdk17-r17-g", "jdk25-r11-g"],
                   "jdk25": ["jdk25-r8-g", "jdk25-r21-nog", "jdk25-r25-g", "jdk17-r17-nog"]}


def bci_counts(ctx):
    trk, variants = setup(ctx)
    vs = [variants[n] for n in COUNTS_VARIANTS.get(ctx.jdk_name, []) if n in variants]
    if not vs:
        raise Skip("no counts variant for %s" % ctx.jdk_name)
    probs = Problems(ctx)

    def one(v):
        rw = rewrite(v.path, v.name)
        check_rewrite_ok(probs, v.name, rw)
        plain = java(ctx, [v.path], "counts.Counts", v.name + ".counts.plain")
        inst = java(ctx, [rw.dst, trk], "counts.Counts", v.name + ".counts.inst", tracker_out=True)
        compare_runs(probs, v.name, plain, inst, rw.ids)
        exp = counts_expected_by_id(probs, v.name, [rw.ids])
        check_counts(probs, v.name, inst.tracker, exp, rw.ids)
        return inst.tracker

    res = parallel(one, vs)
    ctx.note("exact counts checked on %s (Counts.hot 1,000,000 entries and exits; %d methods, 15 array types)"
             % (", ".join(v.name for v in vs), len(COUNTS_EXPECTED)))
    probs.raise_if_any()


def calibrate_huge(probs, v):
    """The compiled huge classes must have the shapes gen_huge.py aims for."""
    def load(c):
        return C.parse(read(os.path.join(v.path, "huge", c + ".class"), "rb"))

    def spans(m):
        return [i.target - i.pc for i in m.code.insns if i.target is not None]

    st = load("Straight")
    fl = load("FarLoop")
    fat = load("JavacFat")
    wl = load("WideLocals")
    ov = load("Overflow")
    checks = [
        ("Straight.straight code length ~61,000", 60000 <= len(st.method("straight").code.code) <= 62000),
        ("Straight.near code length in 65,000..65,535", 65000 <= len(st.method("near").code.code) <= 65535),
        ("FarLoop.farFor forward branch 32,600..32,767", 32600 <= max(spans(fl.method("farFor"))) <= 32767),
        ("FarLoop.farFor backward goto -32,600..-32,768", -32768 <= min(spans(fl.method("farFor"))) <= -32600),
        ("FarLoop.farDoWhile backward branch -32,600..-32,768",
         -32768 <= min(spans(fl.method("farDoWhile"))) <= -32600),
        ("FarLoop.farSwitch forward goto 32,600..32,767", 32600 <= max(spans(fl.method("farSwitch"))) <= 32767),
        ("FarLoop has no goto_w", not any(i.name == "goto_w" for m in fl.methods for i in m.code.insns)),
        ("FarLoop.farFor has a tableswitch and a lookupswitch",
         {"tableswitch", "lookupswitch"} <= set(i.name for i in fl.method("farFor").code.insns)),
        ("JavacFat.fatLoop has javac's goto_w", any(i.name == "goto_w" for i in fat.method("fatLoop").code.insns)),
        ("WideLocals.wide has > 256 locals and wide instructions",
         wl.method("wide").code.max_locals > 256 and any(i.wide for i in wl.method("wide").code.insns)),
        ("Overflow.big > 64,000 bytes with 200 allocations",
         len(ov.method("big").code.code) > 64000
         and sum(1 for i in ov.method("big").code.insns if i.name in C.ALLOCS) == 200),
    ]
    if v.release >= 17:
        ft = load("FarTypes")
        sub = C.parse(read(os.path.join(v.path, "huge", "FarTypes$Sub.class"), "rb"))
        for label, m in (("FarTypes$Sub.<init>", sub.method("<init>")), ("FarTypes.types", ft.method("types")),
                         ("FarTypes.locals", ft.method("locals"))):
            checks.append(("%s forward branch 32,500..32,767 and no goto_w" % label,
                           32500 <= max(spans(m)) <= 32767 and not any(i.name == "goto_w" for i in m.code.insns)))
        checks.append(("FarTypes.types has Uninitialized entries in its frames",
                       any(t[0] == "uninit" for f in ft.method("types").code.frames or [] for t in f.stack)))
    bad = [name for name, ok in checks if not ok]
    if bad:
        probs.add("huge corpus out of calibration (gen_huge.py)", v.name, "; ".join(bad))


HUGE_ENTRIES = {("huge/Straight", "straight"): 2, ("huge/Straight", "near"): 1, ("huge/FarLoop", "farFor"): 4,
                ("huge/FarLoop", "farDoWhile"): 2, ("huge/FarLoop", "farSwitch"): 6, ("huge/JavacFat", "fatLoop"): 2,
                ("huge/WideLocals", "wide"): 2, ("huge/HugeMain", "main"): 1}
HUGE_ENTRIES_17 = {("huge/FarTypes$Sub", "<init>"): 3, ("huge/FarTypes", "types"): 3, ("huge/FarTypes", "locals"): 3,
                   ("huge/FarTypes$Foo", "<init>"): 3, ("huge/FarTypes", "main"): 1}


def check_overflow_rewrite(probs, where, rw, rel_paths, also_expected=()):
    """hprof-bci must exit 1, name each overflowing class in an error line
    with a size message, and copy it unchanged (also_expected: other paths
    whose error lines are checked by the caller)."""
    if rw.rc != 1:
        probs.add("hprof-bci exit code for an overflowing method", where, "%d, expected 1; %s" % (rw.rc, tail(rw.output)))
    errs = rw.error_lines()
    for rel in rel_paths:
        mine = [l for l in errs if rel in l]
        if not mine:
            probs.add("no error line for the overflowing class", where, "%s; output: %s" % (rel, tail(rw.output)))
        elif not SIZE_MSG.search(mine[0]):
            probs.add("error message does not say the code is too large", where, mine[0])
        elif not re.match(r"^hprof-bci: \S*%s: \S" % re.escape(rel), mine[0]):
            probs.add("error line not in the form `hprof-bci: <path>: <err>`", where, mine[0])
    others = [l for l in errs if not any(rel in l for rel in list(rel_paths) + list(also_expected))]
    if others:
        probs.add("unexpected hprof-bci errors", where, " | ".join(others[:3]))
    return [l for l in errs if any(rel in l for rel in rel_paths)]


def bci_huge(ctx):
    trk, variants = setup(ctx)
    vs = [v for v in variants.values() if v.group == "huge" and v.release <= top_release(ctx)]
    if not vs:
        raise Skip("no huge variant runs on %s" % ctx.jdk_name)
    probs = Problems(ctx)
    obs = Observations()
    msgs = []

    def one(v):
        calibrate_huge(probs, v)
        rw = rewrite(v.path, v.name)
        msgs.extend(check_overflow_rewrite(probs, v.name, rw, ["huge/Overflow.class"]))
        cover = {}
        compare_tree(v.path, rw, probs, obs, cover, expect_unchanged={os.path.join("huge", "Overflow.class")})
        wide = ["FarLoop.farFor", "FarLoop.farDoWhile", "FarLoop.farSwitch"]
        if v.release >= 17:
            wide += ["FarTypes$Sub.<init>", "FarTypes.types", "FarTypes.locals"]
        for mname in wide:
            if not any(mname + "(" in w for w in cover.get("new_wide", ())):
                probs.add("far branch not widened", v.name, "%s has no goto_w after the insertion" % mname)
        plain = java(ctx, [v.path], "huge.HugeMain", v.name + ".plain")
        inst = java(ctx, [rw.dst, trk], "huge.HugeMain", v.name + ".inst", tracker_out=True)
        compare_runs(probs, v.name, plain, inst, rw.ids)
        if inst.tracker:
            by_name = {(c, m): i for i, (c, m, d) in rw.ids.items()}
            expected = dict(HUGE_ENTRIES)
            if v.release >= 17:
                expected.update(HUGE_ENTRIES_17)
            for key, n in expected.items():
                got = inst.tracker.entries.get(by_name.get(key, -1), 0)
                if got != n:
                    probs.add("wrong entry count", v.name, "%s.%s: %d, expected %d" % (key + (got, n)))
            ov = [i for i, (c, m, d) in rw.ids.items() if c == "huge/Overflow" and inst.tracker.entries.get(i)]
            if ov:
                probs.add("calls counted from the class that was copied unchanged", v.name)

    parallel(one, vs)
    ctx.note("variants %s; overflow reported as: %s" % (", ".join(v.name for v in vs), msgs[0] if msgs else "-"))
    obs.note(ctx)
    probs.raise_if_any()


def run_handmade(ctx, probs, obs, group, progs, trk, key, flags=FLAGS, expect_rc=0, unchanged=()):
    """Rewrite one hand-made group, compare the structure, run each main
    plain and rewritten with -Xlog:verification, check the fail-over
    expectations ('typecheck' classes must not fall back to the old
    verifier)."""
    hm, _ = build_handmade()
    src = os.path.join(hm, group)
    rw = rewrite(src, key, flags)
    if expect_rc == 0:
        check_rewrite_ok(probs, key, rw)
    cover = {}
    compare_tree(src, rw, probs, obs, cover, flags, expect_unchanged=set(unchanged))
    mine = [p for p in progs if p["group"] == group and p["flags"] != "library"]

    def one(p):
        tag = key + "." + p["main"]
        rel = p["main"].replace(".", "/") + ".class"
        plain = java(ctx, [src], p["main"], tag + ".plain", vlog=True)
        inst = java(ctx, [rw.dst, trk], p["main"], tag + ".inst", tracker_out=True, vlog=True)
        where = "%s (%s, class file %s)" % (os.path.relpath(os.path.join(rw.dst, rel), ROOT), p["main"], p["version"])
        changed = read(os.path.join(src, rel), "rb") != read(os.path.join(rw.dst, rel), "rb")
        compare_runs(probs, where, plain, inst, rw.ids, expect_tracker=changed)
        fo = "Fail over class verification to old verifier for: " + p["main"]
        for r, which in ((plain, "uninstrumented"), (inst, "rewritten")):
            failed_over = fo in (r.vlog or "")
            if p["flags"] == "typecheck" and failed_over:
                if which == "rewritten":
                    probs.add("type checker rejected the rewritten 50.0 class (HotSpot fell back to the old verifier)",
                              where, typecheck_error(ctx, rw.dst, rel, p["main"], trk, tag))
                else:
                    probs.add("hand-made class falls back to the old verifier", where)
            if p["flags"] == "failover" and not failed_over:
                obs.add("%s: %s run did not fall back to the old verifier" % (p["main"], which))
        return inst

    parallel(one, mine)
    return rw, cover


def typecheck_error(ctx, root, rel, main, trk, tag):
    """Why the type checker rejected a 50.0 class (HotSpot logs no reason
    when it falls back): a copy marked 51.0, which cannot fall back, run
    again; returns the VerifyError lines and where the copy is."""
    d = os.path.join(WORK, "as51", tag)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.dirname(os.path.join(d, rel)))
    b = bytearray(read(os.path.join(root, rel), "rb"))
    b[6:8] = (51).to_bytes(2, "big")
    with open(os.path.join(d, rel), "wb") as f:
        f.write(bytes(b))
    r = java(ctx, [d, root, trk], main, tag + ".as51")
    lines = [l.strip() for l in (r.err + r.out).splitlines()
             if re.search(r"VerifyError|Location|Reason|^\s+\S+\(.*\)\S* @\d+", l)]
    return "the same class marked 51.0 (%s): %s" % (os.path.relpath(os.path.join(d, rel), ROOT),
                                                    " ".join(lines[:5]) or "runs without a VerifyError")


def bci_old_versions(ctx):
    trk, _ = setup(ctx)
    _, progs = build_handmade()
    probs = Problems(ctx)
    obs = Observations()
    run_handmade(ctx, probs, obs, "old", progs, trk, "handmade-old")
    ctx.note("classes: %s" % ", ".join("%s %s" % (p["main"], p["version"]) for p in progs if p["group"] == "old"))
    obs.note(ctx)
    probs.raise_if_any()


def bci_edge_cases(ctx):
    trk, _ = setup(ctx)
    _, progs = build_handmade()
    probs = Problems(ctx)
    obs = Observations()
    run_handmade(ctx, probs, obs, "edge", progs, trk, "handmade-edge")
    ctx.note("classes: %s" % ", ".join("%s %s" % (p["main"], p["version"]) for p in progs if p["group"] == "edge"))
    obs.note(ctx)
    probs.raise_if_any()


def bci_far_branches(ctx):
    trk, _ = setup(ctx)
    _, progs = build_handmade()
    probs = Problems(ctx)
    obs = Observations()
    rw, cover = run_handmade(ctx, probs, obs, "far", progs, trk, "handmade-far")
    # Widening expected at least where the inserted code cannot fit (d = 0).
    for m in ("fwdIf0", "bwdIf0", "fwdGoto0", "bwdGoto0", "jsrFwd0", "jsrBwd0"):
        if not any(w.endswith("." + m + "(I)I") for w in cover.get("new_wide", ())):
            probs.add("far branch not widened", "handmade-far", "%s has no goto_w/jsr_w" % m)
    ctx.note("widened methods: %d" % len(cover.get("new_wide", ())))
    obs.note(ctx)
    probs.raise_if_any()


def bci_limits(ctx):
    """Classes hprof-bci cannot rewrite (a 65535-byte method, a full constant
    pool): exit 1, one `hprof-bci: <path>: <err>` line each, copied
    unchanged, still run.  And 34,000 method ids: ids above 32767."""
    trk, _ = setup(ctx)
    _, progs = build_handmade()
    probs = Problems(ctx)
    obs = Observations()
    unchanged = ["overflow/Overflow52.class", "overflow/CpFull52.class"]
    rw, _ = run_handmade(ctx, probs, obs, "overflow", progs, trk, "handmade-overflow", expect_rc=1,
                         unchanged=[os.path.join(*u.split("/")) for u in unchanged])
    msgs = check_overflow_rewrite(probs, "handmade-overflow", rw, unchanged[:1], unchanged[1:])
    cp = [l for l in rw.error_lines() if "CpFull52.class" in l]
    if not cp:
        probs.add("no error line for the class with a full constant pool", "handmade-overflow", tail(rw.output))
    elif not re.search(r"(?i)constant pool|constant_pool|cp\b", cp[0]):
        probs.add("error message does not say the constant pool is full", "handmade-overflow", cp[0])
    elif not re.match(r"^hprof-bci: \S*overflow/CpFull52\.class: \S", cp[0]):
        probs.add("error line not in the form `hprof-bci: <path>: <err>`", "handmade-overflow", cp[0])
    rw2, _ = run_handmade(ctx, probs, obs, "many", progs, trk, "handmade-many")
    big = sorted(i for i in rw2.ids if i > 32767)
    if not big:
        probs.add("no method id above 32767", rw2.ids_path, "ids go up to %d" % max(rw2.ids or [0]))
    inst_tracker = parse_tracker(os.path.join(ctx.out, "handmade-many.many.ManyMain.inst.tracker"))
    called_big = [i for i in big if inst_tracker.entries.get(i)]
    if big and not called_big:
        probs.add("no method with an id above 32767 was called", "handmade-many")
    ctx.note("65535-byte method: %s; full constant pool: %s; %d ids above 32767, %d of them called"
             % (msgs[0] if msgs else "-", cp[0] if cp else "-", len(big), len(called_big)))
    obs.note(ctx)
    probs.raise_if_any()


def bci_reinstrument(ctx):
    trk, variants = setup(ctx)
    jl = jdk_list()
    top = top_release(ctx)
    names = ["%s-r8-g" % jl[0][0], "%s-r%d-nog" % (ctx.jdk_name, top)]
    vs = [variants[n] for n in names if n in variants and variants[n].release <= top]
    probs = Problems(ctx)
    obs = Observations()

    def one(v):
        rw1 = rewrite(v.path, v.name)
        rw2 = rewrite(rw1.dst, v.name + "-again")
        check_rewrite_ok(probs, v.name + " (second rewrite)", rw2)
        ids = dict(rw1.ids)
        ids.update(rw2.ids)
        for main, tag in (("corpus.Main", "main"), ("counts.Counts", "counts")):
            plain = java(ctx, [v.path], main, "%s.%s.plain" % (v.name, tag))
            inst = java(ctx, [rw2.dst, trk], main, "%s.%s.twice" % (v.name, tag), tracker_out=True)
            compare_runs(probs, v.name + " rewritten twice, " + main, plain, inst, ids)
            if main == "counts.Counts" and inst.tracker:
                exp = counts_expected_by_id(probs, v.name, [rw1.ids, rw2.ids])
                check_counts(probs, v.name + " rewritten twice", inst.tracker, exp, ids, factor=2)

    parallel(one, vs)
    hv = [v for v in variants.values() if v.group == "huge" and v.release <= top][:1]
    for v in hv:
        rw1 = rewrite(v.path, v.name)
        rw2 = rewrite(rw1.dst, v.name + "-again")
        check_overflow_rewrite(probs, v.name + " (second rewrite)", rw2, ["huge/Overflow.class"])
        plain = java(ctx, [v.path], "huge.HugeMain", v.name + ".plain")
        inst = java(ctx, [rw2.dst, trk], "huge.HugeMain", v.name + ".twice", tracker_out=True)
        ids = dict(rw1.ids)
        ids.update(rw2.ids)
        compare_runs(probs, v.name + " rewritten twice", plain, inst, ids)
    ctx.note("rewritten twice: %s" % ", ".join(v.name for v in vs + hv))
    obs.note(ctx)
    probs.raise_if_any()


def make_jar(src_dir, path, main):
    """A jar with a manifest, directory entries, classes, stored and deflated
    resources, in a fixed order."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nMain-Class: %s\r\n\r\n" % main,
                   compress_type=zipfile.ZIP_DEFLATED)
        dirs = set()
        for f in class_files(src_dir):
            rel = os.path.relpath(f, src_dir).replace(os.sep, "/")
            d = rel.rsplit("/", 1)[0] + "/"
            if d not in dirs:
                dirs.add(d)
                z.writestr(zipfile.ZipInfo(d), b"")
            z.write(f, rel, compress_type=zipfile.ZIP_DEFLATED if len(dirs) % 2 else zipfile.ZIP_STORED)
        z.writestr("corpus/data.txt", "resource kept as is\n" * 10, compress_type=zipfile.ZIP_STORED)
        z.writestr("README", b"\x00\x01binary\xff" * 50, compress_type=zipfile.ZIP_DEFLATED)


def bci_cli(ctx):
    trk, variants = setup(ctx)
    jl = jdk_list()
    v = variants.get("%s-r8-g" % jl[0][0])
    if v is None:
        raise Fail("no r8 variant")
    probs = Problems(ctx)
    obs = Observations()
    d = os.path.join(WORK, "cli-" + ctx.jdk_name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    base = [TOOL] + FLAGS + ["--tracker", TRACKER]

    # 1. jar in, jar out
    jar_in, jar_out = os.path.join(d, "in.jar"), os.path.join(d, "out.jar")
    make_jar(v.path, jar_in, "corpus.Main")
    rc, out = sh(base + ["--ids", os.path.join(d, "jar.ids"), jar_in, jar_out], os.path.join(d, "jar.log"))
    if rc != 0:
        probs.add("jar rewrite failed", jar_in, "exit %d: %s" % (rc, tail(out)))
    else:
        with zipfile.ZipFile(jar_in) as zi, zipfile.ZipFile(jar_out) as zo:
            ni, no = [i.filename for i in zi.infolist()], [i.filename for i in zo.infolist()]
            if ni != no:
                probs.add("jar entries changed", jar_out, "names or order differ: %s" % sorted(set(ni) ^ set(no))[:5])
            bad = zo.testzip()
            if bad:
                probs.add("jar CRC error", jar_out, bad)
            for name in ni:
                if name not in no:
                    continue
                a, b = zi.read(name), zo.read(name)
                if name.endswith(".class"):
                    if a == b and has_code(a):
                        probs.add("class in jar not rewritten", jar_out + "!" + name)
                elif a != b:
                    probs.add("jar resource changed", jar_out + "!" + name)
        plain = java(ctx, [jar_in], "corpus.Main", "jar.plain")
        inst = java(ctx, [jar_out, trk], "corpus.Main", "jar.inst", tracker_out=True)
        compare_runs(probs, jar_out, plain, inst, parse_ids(os.path.join(d, "jar.ids")))

    # 2. a single .class
    one_in = os.path.join(v.path, "corpus", "Switches.class")
    one_out = os.path.join(d, "single", "Switches.class")
    os.makedirs(os.path.dirname(one_out))
    rc, out = sh(base + ["--ids", os.path.join(d, "single.ids"), one_in, one_out], os.path.join(d, "single.log"))
    if rc != 0 or not os.path.isfile(one_out):
        probs.add("single class rewrite failed", one_in, "exit %d: %s" % (rc, tail(out)))
    else:
        ids = parse_ids(os.path.join(d, "single.ids"))
        if set(c for c, _, _ in ids.values()) != {"corpus/Switches"}:
            probs.add("ids file of a single class names other classes", os.path.join(d, "single.ids"))
        ibm = {(c, m, de): i for i, (c, m, de) in ids.items()}
        compare_classes(read(one_in, "rb"), read(one_out, "rb"), one_out, TRACKER, ibm, probs, obs, {})

    # 3. malformed classes among good ones: exit 1, one error line each, copied unchanged
    mal = os.path.join(d, "mixed")
    shutil.copytree(os.path.join(v.path, "corpus"), os.path.join(mal, "corpus"))
    good = read(os.path.join(v.path, "corpus", "Branches.class"), "rb")
    bads = {"bad/Truncated.class": good[:len(good) // 2],
            "bad/BadMagic.class": b"\xca\xfe\xba\xbf" + good[4:],
            "bad/NotAClass.class": b"this is not a class file\n",
            "bad/Empty.class": b"",
            "bad/BadCpIndex.class": good[:10] + b"\xff\xff" + good[12:]}
    for rel, data in bads.items():
        os.makedirs(os.path.dirname(os.path.join(mal, rel)), exist_ok=True)
        with open(os.path.join(mal, rel), "wb") as f:
            f.write(data)
    with open(os.path.join(mal, "notes.txt"), "w") as f:
        f.write("not a class\n")
    mal_out = os.path.join(d, "mixed-out")
    rc, out = sh(base + ["--ids", os.path.join(d, "mixed.ids"), mal, mal_out], os.path.join(d, "mixed.log"))
    if rc != 1:
        probs.add("exit code with malformed classes", mal, "%d, expected 1: %s" % (rc, tail(out)))
    errs = [l for l in out.splitlines() if l.startswith("hprof-bci: ") and not re.match(r"^hprof-bci: \d+ class", l)]
    for rel, data in bads.items():
        mine = [l for l in errs if rel in l]
        if not mine:
            probs.add("no error line for a malformed class", rel, tail(out))
        elif not re.match(r"^hprof-bci: \S*%s: \S" % re.escape(rel), mine[0]):
            probs.add("error line not in the form `hprof-bci: <path>: <err>`", rel, mine[0])
        p = os.path.join(mal_out, rel)
        if not os.path.isfile(p) or read(p, "rb") != data:
            probs.add("malformed class not copied unchanged", p)
    if len(errs) != len(bads):
        probs.add("unexpected number of error lines", mal, "%d for %d bad files: %s" % (len(errs), len(bads), errs[:6]))
    if not os.path.isfile(os.path.join(mal_out, "notes.txt")) or read(os.path.join(mal_out, "notes.txt")) != "not a class\n":
        probs.add("non-class file not copied", mal_out + "/notes.txt")
    for f in class_files(os.path.join(mal, "corpus")):
        g = os.path.join(mal_out, os.path.relpath(f, mal))
        if not os.path.isfile(g) or (read(g, "rb") == read(f, "rb") and has_code(read(f, "rb"))):
            probs.add("good class not rewritten next to malformed ones", g)
            break
    ctx.note("malformed inputs reported as: %s" % " || ".join(errs[:len(bads)]))

    # 4. the tracker's own classes in the input (an application shipped with
    #    its tracker): the tracker and its nested classes must be left alone,
    #    or the tracker calls itself
    both = os.path.join(d, "with-tracker")
    shutil.copytree(v.path, both)
    shutil.copytree(os.path.join(trk, "bcitest"), os.path.join(both, "bcitest"))
    both_out = os.path.join(d, "with-tracker-out")
    rc, out = sh(base + ["--ids", os.path.join(d, "with-tracker.ids"), both, both_out])
    touched = [os.path.relpath(f, trk) for f in class_files(trk)
               if read(f, "rb") != read(os.path.join(both_out, os.path.relpath(f, trk)), "rb")]
    if touched:
        probs.add("tracker classes rewritten when they are part of the input", both_out,
                  "%s (only %s itself is skipped; its nested classes then call the tracker from inside it)"
                  % (", ".join(touched), TRACKER))
    plain = java(ctx, [v.path], "corpus.Main", "with-tracker.plain")
    inst = java(ctx, [both_out], "corpus.Main", "with-tracker.inst", tracker_out=True)
    compare_runs(probs, both_out + " (tracker in the input)", plain, inst, parse_ids(os.path.join(d, "with-tracker.ids")))

    # 5. --quiet, determinism, dotted tracker name, usage errors
    outs = []
    for k, extra in enumerate((["--quiet"], ["--quiet"], ["--quiet"])):
        o = os.path.join(d, "det%d" % k)
        tracker = TRACKER if k < 2 else TRACKER.replace("/", ".")
        rc, out = sh([TOOL] + FLAGS + ["--tracker", tracker, "--ids", o + ".ids"] + extra + [v.path, o])
        if rc != 0:
            probs.add("rewrite failed", o, tail(out))
        if out.strip():
            probs.add("--quiet still prints", o, tail(out))
        outs.append(o)
    for o in outs[1:]:
        a, b = class_files(outs[0]), class_files(o)
        if [os.path.relpath(x, outs[0]) for x in a] != [os.path.relpath(x, o) for x in b] or \
                any(read(x, "rb") != read(y, "rb") for x, y in zip(a, b)) or read(outs[0] + ".ids") != read(o + ".ids"):
            probs.add("output not deterministic" if o == outs[1] else "dotted --tracker name gives a different output",
                      o, "compared with %s" % outs[0])
    for args, what in (([], "no arguments"), ([v.path], "one argument"),
                       ([os.path.join(d, "does-not-exist"), os.path.join(d, "x")], "missing input"),
                       (["--bogus", v.path, os.path.join(d, "y")], "unknown option")):
        rc, out = sh([TOOL] + args)
        if rc != 2:
            probs.add("usage/I/O error exit code", what, "%d, expected 2: %s" % (rc, tail(out)))
    obs.note(ctx)
    probs.raise_if_any()


OBJINIT_MAIN = r"""package objinit;

import java.lang.reflect.Field;

/** Counts Object.<init> calls through the tracker patched into java.base. */
public final class ObjInitMain {
    static Object keep;

    public static void main(String[] args) throws Exception {
        Field f = Class.forName("java.lang.HprofBciTestTracker").getField("count");
        Field nulls = Class.forName("java.lang.HprofBciTestTracker").getField("nulls");
        long warm = f.getLong(null);
        warm += f.getLong(null);
        long before = f.getLong(null);
        for (int i = 0; i < 100000; i++) keep = new Object();
        for (int i = 0; i < 50000; i++) keep = new ObjInitMain();
        for (int i = 0; i < 20000; i++) keep = new int[1];        // arrays do not run Object.<init>
        long after = f.getLong(null);
        System.out.println("before>0 " + (before > 0) + " delta " + (after - before) + " nulls " + nulls.getLong(null));
    }
}
"""
OBJINIT_TRACKER = r"""package java.lang;

/** The objectInit tracker for bci_object_init, patched into java.base next
 *  to the rewritten Object.class (no allocation, no class initialization). */
public final class HprofBciTestTracker {
    private HprofBciTestTracker() {}

    public static long count;
    public static long nulls;

    public static void objectInit(Object o) {
        if (o == null) nulls++;
        else count++;
    }
}
"""


def bci_object_init(ctx):
    ensure_tool()
    jimage = os.path.join(ctx.jdk, "bin", "jimage")
    javac = javac_of(ctx.jdk)
    if not os.path.isfile(jimage) or not javac:
        raise Skip("no jimage/javac in %s" % ctx.jdk)
    probs = Problems(ctx)
    obs = Observations()
    d = os.path.join(WORK, "objinit-" + ctx.jdk_name)
    shutil.rmtree(d, ignore_errors=True)
    for sub in ("src/java.base/java/lang", "src/app/objinit", "jimage", "patch/java/lang", "app"):
        os.makedirs(os.path.join(d, sub))
    rc, out = sh([jimage, "extract", "--dir", os.path.join(d, "jimage"), "--include",
                  "regex:/java.base/java/lang/Object.class", os.path.join(ctx.jdk, "lib", "modules")])
    obj = os.path.join(d, "jimage", "java.base", "java", "lang", "Object.class")
    if rc != 0 or not os.path.isfile(obj):
        raise Fail("cannot extract java/lang/Object.class with jimage: %s" % tail(out))
    with open(os.path.join(d, "src/java.base/java/lang/HprofBciTestTracker.java"), "w") as f:
        f.write(OBJINIT_TRACKER)
    with open(os.path.join(d, "src/app/objinit/ObjInitMain.java"), "w") as f:
        f.write(OBJINIT_MAIN)
    rc, out = sh([javac, "--patch-module", "java.base=" + os.path.join(d, "src/java.base"), "-d",
                  os.path.join(d, "patch"), os.path.join(d, "src/java.base/java/lang/HprofBciTestTracker.java")])
    rc2, out2 = sh([javac, "-d", os.path.join(d, "app"), os.path.join(d, "src/app/objinit/ObjInitMain.java")])
    if rc or rc2:
        raise Fail("javac failed: %s %s" % (tail(out), tail(out2)))
    flags = ["--object-init"]
    new_obj = os.path.join(d, "patch", "java", "lang", "Object.class")
    rc, out = sh([TOOL] + flags + ["--tracker", "java/lang/HprofBciTestTracker", obj, new_obj],
                 os.path.join(d, "rewrite.log"))
    if rc != 0 or not os.path.isfile(new_obj):
        raise Fail("hprof-bci --object-init on %s failed (exit %d): %s" % (obj, rc, tail(out)))
    cover = {}
    compare_classes(read(obj, "rb"), read(new_obj, "rb"), new_obj, "java/lang/HprofBciTestTracker", {}, probs, obs,
                    cover, flags)
    init = C.parse(read(new_obj, "rb")).method("<init>", "()V")
    ins = init.code.insns
    if not (len(ins) >= 2 and ins[0].name == "aload_0" and ins[1].name == "invokestatic"):
        probs.add("objectInit call not at the start of Object.<init>", new_obj, "%r" % ins[:3])
    r = java(ctx, [os.path.join(d, "app")], "objinit.ObjInitMain", "objinit",
             jvm=["--patch-module", "java.base=" + os.path.join(d, "patch")])
    if r.rc != 0 or SERIOUS.search(r.out + r.err):
        probs.add("run with the rewritten Object.class failed", new_obj, "exit %d: %s" % (r.rc, tail(r.err + r.out, 6)))
    m = re.search(r"before>0 (\w+) delta (\d+) nulls (\d+)", r.out)
    if not m:
        probs.add("no result from objinit.ObjInitMain", new_obj, tail(r.out + r.err))
    else:
        delta = int(m.group(2))
        if m.group(1) != "true":
            probs.add("no Object.<init> counted during start-up", new_obj)
        if not 150000 <= delta <= 150500:
            probs.add("wrong Object.<init> count", new_obj, "%d for 150,000 objects allocated" % delta)
        if m.group(3) != "0":
            probs.add("objectInit called with null", new_obj, m.group(3))
        ctx.note("Object.<init> calls while allocating 150,000 objects and 20,000 arrays: %d" % delta)
    obs.note(ctx)
    probs.raise_if_any()


# ================================================================ checker self-test

class _Collect:
    """A Problems/Observations stand-in that just records kinds."""

    def __init__(self):
        self.items = []

    def add(self, kind, where="", detail=""):
        self.items.append((kind, where, detail))

    def kinds(self):
        return set(k for k, _, _ in self.items)


def _u2(b, off, v):
    b[off:off + 2] = (v & 0xFFFF).to_bytes(2, "big")


def _find_method(classes, pred):
    """(orig bytes, new bytes, class, method, view) for the first method where
    pred(view, method) holds."""
    for ob, nb in classes:
        cf = C.parse(nb)
        for m in cf.methods:
            if m.code is None:
                continue
            v = CodeView(cf, m, TRACKER, _Collect(), "")
            if pred(v, m):
                return ob, nb, cf, m, v
    raise Fail("checker self-test: no method for a mutation in the corpus")


def bci_checker_selftest(ctx):
    """The structure checker must notice each of these corruptions of a
    correctly rewritten class (and none in the class as rewritten).  Runs
    without a JDK context: any exception is a
    FAIL, never a crash of the runner."""
    try:
        _checker_selftest(ctx)
    except (Fail, Skip):
        raise
    except Exception as e:
        import traceback
        raise Fail("test error: %r at %s" % (e, traceback.format_exc().strip().splitlines()[-3].strip()))


def _checker_selftest(ctx):
    ensure_tool()
    jl = jdk_list()
    if not jl:
        raise Fail("no JDK to compile the corpus")
    variants = build_corpus()
    v = variants.get("%s-r8-g" % jl[0][0])
    rw = rewrite(v.path, v.name)
    ibm = {(c, m, d): i for i, (c, m, d) in rw.ids.items()}
    classes = []
    for f in class_files(os.path.join(v.path, "corpus")):
        g = os.path.join(rw.dst, os.path.relpath(f, v.path))
        if os.path.basename(f) in ("Branches.class", "Exceptions.class", "Switches.class", "Wide.class"):
            classes.append((read(f, "rb"), read(g, "rb")))

    def check(ob, nb):
        p, o = _Collect(), Observations()
        compare_classes(ob, nb, "selftest", TRACKER, ibm, p, o, {})
        return p

    failures = []
    for ob, nb in classes:
        p = check(ob, nb)
        if p.items:
            failures.append("unmodified rewritten class reported: %s" % p.items[:2])

    def code_at(m, pc):
        return m.code.base + 8 + pc

    def mutate(expect, pred, fn):
        try:
            ob, nb, cf, m, view = _find_method(classes, pred)
        except Fail as e:
            failures.append("%s: %s" % (expect, e))
            return
        b = bytearray(nb)
        fn(b, cf, m, view)
        try:
            got = check(ob, bytes(b)).kinds()
        except Exception as e:  # the checker must not crash either
            failures.append("%s: checker crashed: %r" % (expect, e))
            return
        if expect not in got:
            failures.append("%s: not detected (got %s) in %s.%s%s" % (expect, sorted(got), cf.name, m.name, m.desc))

    def lands(view, kind):
        out = []
        for k, i in enumerate(view.insns):
            if i.target is not None and view.kind[k] is None and not view.absorbed[k] and i.name in C.COND_BRANCHES | {"goto"}:
                tk = view.by_pc.get(i.target)
                if tk is not None and view.kind[tk] == kind:
                    out.append((k, i))
        return out

    # 1. a branch to a return retargeted past its methodExit
    def skip_exit(b, cf, m, view):
        k, i = lands(view, "exit")[0]
        _u2(b, code_at(m, i.pc) + 1, i.target + 4 - i.pc if view.insns[view.by_pc[i.target]].name.startswith("iconst")
            else i.target + 5 - i.pc)
    mutate("branch to a return skips methodExit", lambda v, m: lands(v, "exit"), skip_exit)

    # 2. a branch to the first original instruction retargeted to offset 0
    def to_zero(v, m):
        return [(k, i) for k, i in enumerate(v.insns) if i.target is not None and v.kind[k] is None
                and i.name in C.COND_BRANCHES and v.resolve(i.target) == (0, None)]

    def reenter(b, cf, m, view):
        k, i = to_zero(view, m)[0]
        _u2(b, code_at(m, i.pc) + 1, -i.pc)
    mutate("branch to offset 0 re-runs methodEntry", to_zero, reenter)

    # 3. an original instruction changed (iadd -> isub)
    def has_iadd(v, m):
        return [i for k, i in enumerate(v.insns) if i.name == "iadd" and v.kind[k] is None]
    mutate("instruction changed", has_iadd, lambda b, cf, m, v: b.__setitem__(code_at(m, has_iadd(v, m)[0].pc), 0x64))

    # 4. a line number changed
    def lnt(b, cf, m, v):
        a = next(x for x in m.code.attributes if x.name == "LineNumberTable")
        off = m.code.base + a.offset + 2 + 2
        _u2(b, off, int.from_bytes(b[off:off + 2], "big") + 1)
    mutate("LineNumberTable changed", lambda v, m: m.code.line_numbers, lnt)

    # 5. two original exception table entries swapped
    def two_handlers(v, m):
        return len(m.code.exceptions) >= 3 and m.code.exceptions[0][2] != m.code.exceptions[1][2]

    def swap(b, cf, m, v):
        off = m.code.base + 8 + len(m.code.code) + 2
        b[off:off + 16] = b[off + 8:off + 16] + b[off:off + 8]
    mutate("exception table entry changed", two_handlers, swap)

    # 6. the added catch-all shrunk to nothing
    def empty_catch_all(b, cf, m, v):
        n = len(m.code.exceptions)
        off = m.code.base + 8 + len(m.code.code) + 2 + 8 * (n - 1)
        _u2(b, off + 2, int.from_bytes(b[off:off + 2], "big") + 1)
    mutate("exceptional exit not covered",
           lambda v, m: m.name == "propagate" and m.code.exceptions and m.code.exceptions[-1][3] == 0, empty_catch_all)

    # 7. the id pushed for methodEntry changed
    def bump_id(b, cf, m, v):
        i = v.insns[0]
        if i.name in ("bipush", "sipush"):
            b[code_at(m, i.pc) + i.length - 1] ^= 1
        else:
            b[code_at(m, i.pc)] = 0x03 if i.name != "iconst_0" else 0x04
    mutate("pushed ids differ from the ids file", lambda v, m: v.kind[0] == "entry", bump_id)

    # 8. a local variable's slot changed
    def lvt(b, cf, m, v):
        a = next(x for x in m.code.attributes if x.name == "LocalVariableTable")
        off = m.code.base + a.offset + 2 + 8
        _u2(b, off, int.from_bytes(b[off:off + 2], "big") ^ 1)
    mutate("LocalVariableTable changed", lambda v, m: m.code.local_vars and len(m.code.local_vars) > 1, lvt)

    # 9. the first StackMapTable frame moved by one byte
    def smt(b, cf, m, v):
        a = next(x for x in m.code.attributes if x.name == "StackMapTable")
        off = m.code.base + a.offset + 2
        ft = b[off]
        if ft < 63:
            b[off] = ft + 1
        elif 64 <= ft < 127:
            b[off] = ft + 1
        else:
            _u2(b, off + 1, int.from_bytes(b[off + 1:off + 3], "big") + 1)
    def at_original(v, pc):
        # A frame at an original instruction, not at an inserted handler
        # (`<push id>; methodExit; athrow`; constructors have two).
        t = v.resolve(pc)
        if t is None or t[0] == v.END:
            return False
        k = v.insn_of_tok[t[0]]
        return not (v.insns[k].name == "athrow" and k > 0 and v.kind[k - 1] == "exit")
    mutate("StackMapTable frame missing", lambda v, m: m.code.frames and len(m.code.frames) >= 2
           and m.code.frames[0].frame_type not in (63, 127) and m.code.frames[1].offset > m.code.frames[0].offset + 1
           and at_original(v, m.code.frames[0].offset), smt)

    # 10. switch padding made nonzero
    def padded(v, m):
        return [i for i in v.insns if i.switch is not None and len(i.pad) > 0]
    mutate("nonzero switch padding", padded,
           lambda b, cf, m, v: b.__setitem__(code_at(m, padded(v, m)[0].pc) + 1, 1))

    # 11. an existing constant changed
    def cp_change(b, cf, m, v):
        raw = next(cf.cp.raw[i] for i in range(1, len(cf.cp)) if cf.cp.raw[i] and cf.cp.entries[i][0] == C.UTF8
                   and cf.cp.entries[i][1].startswith("ifz/icmp"))
        at = bytes(b).index(raw)
        b[at + 3] ^= 0x01
    mutate("constant pool not preserved", lambda v, m: m.name == "run" and "Branches" in v.cf.name, cp_change)

    # 12. the dup before newArray replaced by a nop
    def nodup(v, m):
        return [k for k, i in enumerate(v.insns) if v.kind[k] == "newarray" and i.name == "dup"]
    mutate("bad inserted call", nodup, lambda b, cf, m, v: b.__setitem__(code_at(m, v.insns[nodup(v, m)[0]].pc), 0))

    # 13. the handler's athrow replaced by a return
    def last_athrow(v, m):
        return v.insns[-1].name == "athrow" and v.kind[-2] == "exit" and m.desc.endswith(")V")
    mutate("unexpected code after the original code", last_athrow,
           lambda b, cf, m, v: b.__setitem__(code_at(m, v.insns[-1].pc), 0xB1))

    if ctx is not None:
        ctx.note("13 kinds of corruption of a rewritten class, each detected")
    if failures:
        raise Fail("structure checker: %s" % "; ".join(failures))

