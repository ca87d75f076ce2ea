"""End-to-end tests of the class-file rewriter through build/hprof-bci.

Registered in tests/run.py as the bci_* tests (run on each JDK):

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
                     jsr) around inserted code, and a 65535-byte method
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
                     1, error line, copied unchanged), --quiet, determinism,
                     the --ids format
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
import time
import zipfile

sys.dont_write_bytecode = True
BCI_TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BCI_TESTS)
import classfile as C  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(BCI_TESTS))
BUILD = os.path.join(ROOT, "build")
TOOL = os.path.join(BUILD, "hprof-bci")
WORK = os.path.join(BUILD, "tests", "bci")
JAVA_SRC = os.path.join(BCI_TESTS, "java")
TRACKER = "bcitest/Tracker"
FLAGS = ["--entry-exit", "--newarray"]
TIMEOUT = 120
WORKERS = 2


class Fail(Exception):
    pass


class Skip(Exception):
    pass


_jdks = None


def init(fail_cls, skip_cls, jdks_fn):
    """Called by tests/run.py: its exception classes and JDK discovery."""
    global Fail, Skip, _jdks
    Fail, Skip, _jdks = fail_cls, skip_cls, jdks_fn


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


_once_lock = threading.Lock()
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
        # Huge methods: the lowest release with -g on the first JDK, the
        # highest release without debug info on the last one.
        hsrcs = [os.path.join(hsrc, "huge", f) for f in ("Straight.java", "FarLoop.java", "JavacFat.java",
                                                         "WideLocals.java", "Overflow.java", "HugeMain.java")]
        hjobs = []
        if jl:
            hjobs.append((jl[0][0], jl[0][1], 8, "g"))
            if len(jl) > 1:
                hjobs.append((jl[-1][0], jl[-1][1], jdk_release(jl[-1][0]), "nog"))
        for jname, home, rel, debug in hjobs:
            name = "huge-%s-r%d-%s" % (jname, rel, debug)
            path = os.path.join(base, name)
            plan.append((jname, home, ["--release", str(rel), "-g" if debug == "g" else "-g:none",
                                       "-Xlint:-options", "-nowarn", "-d", path] + hsrcs,
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


def compare_runs(probs, where, plain, inst, ids, expect_rc=0):
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
    check_tracker(probs, where, inst.tracker, ids)


def check_tracker(probs, where, t, ids):
    if t is None:
        probs.add("no tracker report", where)
        return
    if t.nerrors:
        probs.add("tracker stack errors", where, "%d, e.g. %s" % (t.nerrors, "; ".join(
            re.sub(r"\b(\d+)\b", lambda m: "%s(%s)" % (m.group(1), name_of(ids, int(m.group(1))))
                   if int(m.group(1)) in ids else m.group(1), e) for e in t.errors[:2])))
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
