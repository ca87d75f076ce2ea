"""heap= tests (imported by tests/run.py): allocation sites and heap dumps on
a real JVM, against truths the programs know about themselves.

    heap_sites_exact    AllocTruth's sites: allocated and live objects of
                        every site exactly as the program made them (by new,
                        new[], multianewarray's inner arrays, reflection and
                        clone), live counted after a GC; -Xverify:all
    heap_sites_jni      JniAlloc's objects made by JNI: NewObject's exactly,
                        once each; AllocObject's and NewObjectArray's exact
                        or not reported (HotSpot posts no VMObjectAlloc)
    heap_sites_sampled  heap_sample=4k: the same sites estimated within 30%,
                        and the section marked as estimated
    heap_sites_evict    an LRU cache: 2,000,000 byte[1000] through it, exactly
                        10,000 live at exit (the live census, not late
                        ObjectFree events)
    heap_dump_binary    HeapShape dumped on SIGQUIT (format=b), read by the
                        independent reader (tests/hprof_reader.py): every
                        count, field value and static exact, no integrity
                        problem but the JVM's own dumper's known quirks (it
                        writes that dump: its LOAD CLASS serials from
                        0x40000000 say so), and the program's classes counted
                        as `jcmd GC.class_histogram` counts them at that moment
    heap_dump_text      the same heap in HPROF's text HEAP DUMP (format=a):
                        counts exact, every reference resolves, the header's
                        object count right
    heap_all_traces     heap=all: the dump's objects carry the trace of their
                        allocation site (25,000 Small from makeSmall, ...)
    heap_all_shape      the same heap with heap=all: the agent's own walk,
                        exact with no quirk accepted
    heap_dump_fallback  no jdk.management module: the agent says the JVM's
                        dumper is missing and walks the heap itself, exactly
    heap_dump_zgc       heap=dump alone under ZGC: the exit dump without a
                        collection (a forced one never returned), the JVM ends
    heap_dump_cpu_samples  heap=dump with cpu=samples (format=b): the agent's
                        walk, one LOAD CLASS per class, HeapShape exact
    heap_dump_two_loaders  one class name loaded by two class loaders: the dump
                        has two classes of that name, with their own loaders
                        and exactly their instances (3 and 5)
    heap_dump_visualvm  the binary dump opened by VisualVM's own heap reader (jfluid-heap),
                        checked against HeapShape's documented shape
    heap_dump_new_classes  ClassChurn defines classes while `hprof dump` dumps
                        (heap=all,format=b; heap=dump,format=a; 3 each): every
                        kept carrier of a class loaded mid-dump is in the dump
                        with its fields and array, no value left out; the
                        binary read whole by VisualVM's reader too
    heap_dump_disk_full the file cannot grow past 64 KiB (RLIMIT_FSIZE): a
                        clear error naming the file, no corrupt file left,
                        the program's exit unchanged
"""

import os
import re
import resource
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hprof_reader  # noqa: E402
import heap_dump_check  # noqa: E402

HPROF = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "hprof")

# heap=dump's binary dump by the JVM's own dumper: its LOAD CLASS serials
# from here (src/agent/heap_dump.c, JVM_CLASS_SERIALS).
JVM_CLASS_SERIALS = 0x40000000

# VisualVM's heap reader, from Debian's visualvm package.
VISUALVM_HEAP_JAR = "/usr/share/visualvm/visualvm/modules/org-graalvm-visualvm-lib-jfluid-heap.jar"


def tail_of(text, n=3):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return " | ".join(lines[-n:]) if lines else "<empty>"

RE_SITES_BEGIN = re.compile(r"^SITES BEGIN \(ordered by live bytes(, estimated from allocation samples "
                            r"every (\d+) bytes)?\) .+$")
SITES_HEAD = ["          percent          live          alloc'ed  stack class",
              " rank   self  accum     bytes objs     bytes  objs trace name"]
RE_SITE_ROW = re.compile(r"^ *(\d+) +(\d{1,3}\.\d\d)% +(\d{1,3}\.\d\d)% +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) (\S+)$")


class SiteRow:
    def __init__(self, m):
        self.rank = int(m.group(1))
        self.self_pct, self.accum_pct = float(m.group(2)), float(m.group(3))
        self.live_bytes, self.live_objs = int(m.group(4)), int(m.group(5))
        self.alloc_bytes, self.alloc_objs = int(m.group(6)), int(m.group(7))
        self.trace, self.cls = int(m.group(8)), m.group(9)


def sites_sections(path, Fail):
    """[(sample_interval or 0, [SiteRow])] of every SITES section, checked
    strictly: header lines, consecutive ranks, ordered by live bytes, self
    the share of live bytes, accum the running sum, live <= allocated."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = RE_SITES_BEGIN.match(lines[i])
        if not m:
            i += 1
            continue
        interval = int(m.group(2)) if m.group(2) else 0
        if lines[i + 1:i + 3] != SITES_HEAD:
            raise Fail("SITES: bad column lines %r" % lines[i + 1:i + 3])
        rows, j = [], i + 3
        while j < len(lines) and lines[j] != "SITES END":
            r = RE_SITE_ROW.match(lines[j])
            if not r:
                raise Fail("SITES: malformed row %r" % lines[j])
            row = SiteRow(r)
            if row.rank != len(rows) + 1:
                raise Fail("SITES: rank %d after %d" % (row.rank, len(rows)))
            if rows and row.live_bytes > rows[-1].live_bytes:
                raise Fail("SITES: rows not ordered by live bytes at rank %d" % row.rank)
            if row.live_objs > row.alloc_objs or row.live_bytes > row.alloc_bytes:
                raise Fail("SITES: more live than allocated at rank %d: %r" % (row.rank, lines[j]))
            rows.append(row)
            j += 1
        if j >= len(lines):
            raise Fail("SITES: no SITES END")
        total_live = sum(r.live_bytes for r in rows)
        accum = 0.0
        for r in rows:
            share = 100.0 * r.live_bytes / total_live if total_live else 0.0
            accum += share
            if abs(share - r.self_pct) > 0.011 or abs(accum - r.accum_pct) > 0.05:
                raise Fail("SITES: rank %d: self %.2f%%/accum %.2f%%, expected %.2f%%/%.2f%%"
                           % (r.rank, r.self_pct, r.accum_pct, share, accum))
        out.append((interval, rows))
        i = j + 1
    if not out:
        raise Fail("no SITES section in %s" % path)
    return out


def truths(stderr, Fail):
    """The program's "TRUTH <class> <frame> <allocated> <live>" lines."""
    t = [l.split() for l in stderr.splitlines() if l.startswith("TRUTH ")]
    if not t:
        raise Fail("the program printed no TRUTH lines: %s" % stderr[-500:])
    # A hidden class (a lambda's) is Foo$$Lambda/0x... to Class.getName and
    # Foo$$Lambda.0x... in profiles, as HPROF names classes.
    return [(c.replace("/", "."), f, int(a), int(l)) for _, c, f, a, l in t]


def site_totals(prof, rows, cls, frame):
    """(allocated objs, live objs, allocated bytes, live bytes) summed over
    the rows of class `cls` whose trace has a frame `frame`."""
    tot = [0, 0, 0, 0]
    for r in rows:
        tr = prof.traces.get(r.trace)
        if r.cls == cls and tr is not None and tr.has_method(frame):
            tot[0] += r.alloc_objs
            tot[1] += r.live_objs
            tot[2] += r.alloc_bytes
            tot[3] += r.live_bytes
    return tot


RE_DUMP_BEGIN = re.compile(r"^HEAP DUMP BEGIN \((\d+) objects, (\d+) bytes\) .+$")
RE_RECORD = re.compile(r"^(ROOT|CLS|OBJ|ARR) ([0-9a-f]+) \((.*)\)$")
RE_FIELD = re.compile(r"^\t(.+?)\t+([0-9a-f]+)$")


def text_heap_dump(path, Fail):
    """The last HEAP DUMP section of a text profile: (header objects, header
    bytes, {id: (kind, attrs)}, [(from id, field, to id)])."""
    lines = open(path, encoding="utf-8").read().split("\n")
    starts = [i for i, l in enumerate(lines) if RE_DUMP_BEGIN.match(l)]
    if not starts:
        raise Fail("no HEAP DUMP section in %s" % path)
    m = RE_DUMP_BEGIN.match(lines[starts[-1]])
    records, refs, cur = {}, [], None
    for l in lines[starts[-1] + 1:]:
        if l == "HEAP DUMP END":
            return int(m.group(1)), int(m.group(2)), records, refs
        r = RE_RECORD.match(l)
        if r:
            attrs = dict(kv.split("=", 1) for kv in r.group(3).split(", ") if "=" in kv)
            oid = int(r.group(2), 16)
            if r.group(1) != "ROOT":
                if oid in records:
                    raise Fail("HEAP DUMP: id %x written twice" % oid)
                records[oid] = (r.group(1), attrs)
            else:
                refs.append((0, "root " + attrs.get("kind", "?"), oid))
            cur = oid
            continue
        f = RE_FIELD.match(l)
        if not f or cur is None:
            raise Fail("HEAP DUMP: malformed line %r" % l)
        refs.append((cur, f.group(1), int(f.group(2), 16)))
    raise Fail("HEAP DUMP: no HEAP DUMP END")


def trace_methods(d, serial):
    """Method names (Class.method) of a binary dump's trace, top first."""
    t = d.traces.get(serial)
    if t is None:
        return []
    out = []
    for fid in t[1]:
        f = d.frames.get(fid)
        if f is not None:
            cls = d.load_class_by_serial.get(f.class_serial) if hasattr(f, "class_serial") else None
            out.append("%s.%s" % (cls.java_name if cls is not None else "?", f.method))
    return out


def test_natives(name, Fail):
    """build/tests/<name>, the natives of a test program (made by `make
    test`), built here if missing; its path."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lib = os.path.join(root, "build", "tests", name)
    if not os.path.isfile(lib):
        r = subprocess.run(["make", "-C", root, "build/tests/" + name], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise Fail("cannot build build/tests/%s: %s" % (name, tail_of(r.stdout + r.stderr)))
    return lib


def make_tests(Fail, parse_profile, Skip):
    def check_traces_written(prof, rows, problems):
        missing = sorted({r.trace for r in rows if r.trace not in prof.traces})
        if missing:
            problems.append("traces used by SITES but never written: %s" % missing[:10])

    def t_heap_sites_exact(ctx):
        path = ctx.path("sites.txt")
        r = ctx.run("AllocTruth", [], agent="heap=sites,depth=16,cutoff=0,file=" + path, jvm=["-Xverify:all"])
        want = truths(r.stderr, Fail)
        interval, rows = sites_sections(path, Fail)[-1]
        prof = parse_profile(path)
        problems = []
        check_traces_written(prof, rows, problems)
        if interval:
            problems.append("exact SITES marked as estimated")
        # A trace starts at the allocation (or its constructor): the tracker's
        # own frames and Object.<init> are left out, whatever the path.
        tops = {prof.traces[r.trace].frames[0].qualname for r in rows
                if r.trace in prof.traces and prof.traces[r.trace].frames}
        bad = sorted(t for t in tops if t.startswith("java.lang.HprofTracker.") or t == "java.lang.Object.<init>")
        if bad:
            problems.append("traces start in the tracker: %s" % bad)
        # A capturing lambda is made through four frames of java.lang.invoke
        # (JDK 25: a VMObjectAlloc from Unsafe.allocateInstance, whose trace
        # at the default depth=4 had no frame of the program at all; JDK 17:
        # its constructor, under two of them): its trace starts where the
        # program made it.
        for cls, frame, _, _ in want:
            if "$$Lambda" in cls:
                for r in rows:
                    tr = prof.traces.get(r.trace)
                    names = [f.qualname for f in tr.frames] if tr is not None else []
                    if r.cls == cls and names[:1] != [frame]:
                        problems.append("%s: trace %s starts at %s, not at %s" % (cls, r.trace, names[:5], frame))
        for cls, frame, alloc, live in want:
            got = site_totals(prof, rows, cls, frame)
            if got[0] != alloc or got[1] != live:
                problems.append("%s at %s: %d allocated, %d live; expected exactly %d and %d"
                                % (cls, frame, got[0], got[1], alloc, live))
            elif alloc and (got[2] % alloc or (live and got[3] * alloc != got[2] * live)):
                problems.append("%s at %s: bytes %d/%d not a whole size per object" % (cls, frame, got[2], got[3]))
        if problems:
            raise Fail("; ".join(problems))
        ctx.note("every site exact (%d truths), %d rows" % (len(want), len(rows)))

    def t_heap_sites_jni(ctx):
        """Objects native code makes through JNI. NewObject's run their
        constructor, which the tracker sees: exact. The JVMTI specification
        allows a VMObjectAlloc for them as well, which must not count them
        twice. AllocObject's and NewObjectArray's have no byte code to
        instrument and HotSpot (17, 25) posts no VMObjectAlloc for them, so
        they are not seen; if a JVM reports them, they must be exact."""
        lib_dir = os.path.dirname(test_natives("libjni_alloc.so", Fail))
        path = ctx.path("sites.txt")
        r = ctx.run("JniAlloc", [], agent="heap=sites,depth=8,cutoff=0,file=" + path,
                    jvm=["-Djava.library.path=" + lib_dir])
        want = truths(r.stderr, Fail)
        _, rows = sites_sections(path, Fail)[-1]
        prof = parse_profile(path)
        problems = []
        notes = []
        for cls, frame, alloc, live in want:
            got = site_totals(prof, rows, cls, frame)
            if got[0] == 0 and frame != "JniAlloc.newObject":
                notes.append("%s (%s): not reported by the JVM" % (cls, frame))
            elif got[0] != alloc or got[1] != live:
                problems.append("%s at %s: %d allocated, %d live; expected exactly %d and %d"
                                % (cls, frame, got[0], got[1], alloc, live))
            else:
                notes.append("%s (%s): %d allocated, %d live" % (cls, frame, alloc, live))
        if problems:
            raise Fail("; ".join(problems))
        ctx.note("; ".join(notes))

    def t_heap_sites_class_unload(ctx):
        """The agent keeps no class alive: heap=sites caches each thread's
        recent classes (by the tracker's identity hash) with weak references.
        A class loader whose only class was allocated 1,000 times must be
        unloaded after System.gc() as without the agent (a cache that held
        the class kept it: UNLOADED false), and a second class of the same
        name, allocated after on the same thread, is a site of its own: both
        counted exactly."""
        path = ctx.path("sites.txt")
        r = ctx.run("ClassUnload", [], agent="heap=sites,cutoff=0,file=" + path)
        want = truths(r.stderr, Fail)
        problems = []
        if "UNLOADED true" not in r.stderr:
            problems.append("the dropped class loader was not unloaded under heap=sites (%s)"
                            % ("UNLOADED false" if "UNLOADED false" in r.stderr else "no UNLOADED line"))
        _, rows = sites_sections(path, Fail)[-1]
        prof = parse_profile(path)
        got = sorted((row.alloc_objs, row.live_objs) for row in rows if row.cls == want[0][0]
                     and prof.traces.get(row.trace) is not None and prof.traces[row.trace].has_method(want[0][1]))
        expected = sorted((alloc, live) for _, _, alloc, live in want)
        if got != expected:
            problems.append("%s rows (allocated, live) %s; expected %s (one per class)" % (want[0][0], got, expected))
        if problems:
            raise Fail("; ".join(problems))
        ctx.note("%s: %s, loader unloaded" % (want[0][0], got))

    def t_heap_sites_zgc(ctx):
        """ZGC's collector thread has stopped when VMDeath comes, and a
        ForceGarbageCollection there never returned: the JVM never exited
        (JDK 17 and 25). The exit dump now counts without a collection and
        says so; allocated counts stay exact, live ones at least the truth."""
        path = ctx.path("zgc.txt")
        r = ctx.run("AllocTruth", [], agent="heap=sites,depth=16,cutoff=0,file=" + path, jvm=["-XX:+UseZGC"],
                    timeout=120)
        want = truths(r.stderr, Fail)
        rows = sites_sections(path, Fail)[-1][1]
        prof = parse_profile(path)
        problems = []
        if not re.search(r"^hprof: heap=sites: ZGC cannot collect while the JVM exits", r.stderr, re.M):
            problems.append("stderr does not say the exit dump was counted without a collection")
        for cls, frame, alloc, live in want:
            got = site_totals(prof, rows, cls, frame)
            if got[0] != alloc or got[1] < live:
                problems.append("%s at %s: %d allocated, %d live; expected exactly %d and at least %d"
                                % (cls, frame, got[0], got[1], alloc, live))
        if problems:
            raise Fail("; ".join(problems))
        ctx.note("exit dump under ZGC: exit 0, %d truths' allocated counts exact" % len(want))

    def t_heap_sites_sampled(ctx):
        path = ctx.path("sampled.txt")
        # G1 whatever the machine: with one CPU the JVM picks the serial
        # collector, under which JDK 17's own sampler undercounts (about 40%
        # of the objects; README "How heap=sites and heap=dump work").
        r = ctx.run("AllocTruth", [], agent="heap=sites,heap_sample=4k,depth=16,cutoff=0,file=" + path,
                    jvm=["-XX:+UseG1GC"])
        want = truths(r.stderr, Fail)
        interval, rows = sites_sections(path, Fail)[-1]
        prof = parse_profile(path)
        problems = []
        check_traces_written(prof, rows, problems)
        if interval != 4096:
            problems.append("SITES not marked as estimated every 4096 bytes (got %r)" % interval)
        notes = []
        # Only sites with enough bytes for the estimate to be tight: at 4 KiB
        # per sample, 600 KB is ~146 samples (a standard error ~8%).
        for cls, frame, alloc, live in want:
            got = site_totals(prof, rows, cls, frame)
            if cls == "AllocTruth$Small" or (cls == "int[]" and frame.endswith("makeInts")):
                per = got[2] / got[0] if got[0] else 0
                for what, est, true in (("allocated", got[0], alloc), ("live", got[1], live)):
                    if true * per >= 500000 and abs(est - true) > 0.3 * true:
                        problems.append("%s at %s: %s %d estimated, truth %d (over 30%% off)"
                                        % (cls, frame, what, est, true))
                    notes.append("%s %s %d/%d" % (cls.split("$")[-1], what, est, true))
        if problems:
            raise Fail("; ".join(problems))
        ctx.note("estimates: " + ", ".join(notes))

    def t_heap_sites_evict(ctx):
        path = ctx.path("evict.txt")
        r = ctx.run("Evict", ["2000000"], agent="heap=sites,depth=8,cutoff=0,file=" + path, jvm=["-Xmx256m"])
        (cls, frame, alloc, live), = truths(r.stderr, Fail)
        rows = sites_sections(path, Fail)[-1][1]
        prof = parse_profile(path)
        # The value arrays are allocated by Evict.value itself (on JDK 25 the
        # first call also loads classes whose own byte[]s have it deeper down).
        rows = [r for r in rows if prof.traces[r.trace].frames and prof.traces[r.trace].frames[0].qualname == frame]
        got = site_totals(prof, rows, cls, frame)
        if got[0] != alloc or got[1] != live:
            raise Fail("%s at %s: %d allocated, %d live; expected exactly %d and %d" % (cls, frame, got[0], got[1], alloc, live))
        ctx.note("%d allocated, %d live, exact" % (got[0], got[1]))

    def spawn_ready(ctx, main, args, agent, tag):
        cmd = ctx.java_cmd(main, args, agent=agent)
        so, se = ctx.path(tag + ".stdout"), ctx.path(tag + ".stderr")
        with open(ctx.path(tag + ".cmd"), "w") as f:
            f.write(" ".join(cmd) + "\n")
        p = subprocess.Popen(cmd, stdout=open(so, "wb"), stderr=open(se, "wb"), stdin=subprocess.DEVNULL,
                             cwd=ctx.out)
        deadline = time.time() + 60
        while time.time() < deadline:
            if "READY" in open(so, errors="replace").read():
                return p, so, se
            if p.poll() is not None:
                raise Fail("%s exited (rc %s) before READY: %s" % (main, p.returncode, open(se).read()[-800:]))
            time.sleep(0.05)
        p.kill()
        raise Fail("%s not READY within 60 s" % main)

    def finish(p, se, go, Fail):
        open(go, "w").close()
        try:
            rc = p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            raise Fail("the program did not exit after its go file appeared")
        if rc != 0:
            raise Fail("exit code %d: %s" % (rc, open(se).read()[-800:]))

    def jcmd(ctx, pid, *what):
        exe = os.path.join(ctx.jdk, "bin", "jcmd")
        r = subprocess.run([exe, str(pid)] + list(what), capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise Fail("jcmd %s failed: %s" % (" ".join(what), r.stderr[-500:]))
        return r.stdout

    def t_heap_dump_binary(ctx):
        path, go = ctx.path("shape.hprof"), ctx.path("go")
        p, so, se = spawn_ready(ctx, "HeapShape", [go], "heap=dump,format=b,doe=n,file=" + path, "shape")
        try:
            histo = jcmd(ctx, p.pid, "GC.class_histogram")
            os.kill(p.pid, signal.SIGQUIT)
            deadline = time.time() + 120
            while "done" not in open(se, errors="replace").read():
                if time.time() > deadline:
                    raise Fail("the SIGQUIT heap dump did not finish within 120 s")
                time.sleep(0.1)
        finally:
            finish(p, se, go, Fail)
        d = hprof_reader.read(path)
        # Without heap=sites the heap dump in the file is the JVM's own
        # (docs/heap.md), with its known quirks (pseudo statics such as
        # <resolved_references>, CDS's archived roots).
        heap_dump_check.check_heap_shape(d, Fail, jvm_quirks_ok=True)
        if not any((c.serial or 0) >= JVM_CLASS_SERIALS for c in d.classes.values()):
            raise Fail("the heap dump's classes have no LOAD CLASS serial of the JVM's dumper's range "
                       "(0x40000000 and up): the agent walked the heap itself")
        diff = heap_dump_check.compare_with_histogram(d, histo)
        if diff["own"]:
            raise Fail("HeapShape's classes counted differently from jcmd GC.class_histogram: %s" % diff["own"][:10])
        ctx.note("exact; %d objects; %d class names compared with the JVM's histogram, %d differ (JDK "
                 "classes churn between the two)" % (d.objects, diff["compared"], len(diff["all"])))

    def t_heap_dump_two_loaders(ctx):
        path = ctx.path("twins.hprof")
        ctx.run("TwoLoaders", [], agent="heap=dump,format=b,file=" + path)
        d = hprof_reader.read(path)
        twins = [c for c in d.classes.values() if c.java_name == "TwoLoaders$Twin"]
        counts = sorted(d.instance_counts.get(c.id, 0) for c in twins)
        if counts != [3, 5]:
            raise Fail("classes named TwoLoaders$Twin in the dump, by instances: %s; expected two, "
                       "with 3 and 5" % counts)
        if len({c.loader_id for c in twins}) != 2 or len({c.serial for c in twins}) != 2:
            raise Fail("the two Twin classes share a loader or a LOAD CLASS serial: %s"
                       % [(c.loader_id, c.serial) for c in twins])
        # The JVM's dumper's file: a name two classes share does not tell
        # which loading trace is whose, so both keep the JVM's empty one
        # (docs/heap.md), where a class of its own name gets its trace.
        if any(c.serial < JVM_CLASS_SERIALS for c in twins):
            raise Fail("the Twin classes' LOAD CLASS serials are not the JVM's dumper's: the agent walked")
        traced = [c.load_trace for c in twins if d.traces.get(c.load_trace, (0, []))[1]]
        if traced:
            raise Fail("a Twin class was given a loading trace (%s): which of the two was loaded there is "
                       "not known" % traced)
        main = [c for c in d.classes.values() if c.java_name == "TwoLoaders"]
        if len(main) != 1 or not d.traces.get(main[0].load_trace, (0, []))[1]:
            raise Fail("TwoLoaders has no loading trace in the JVM's dump: %s"
                       % [c.load_trace for c in main])
        ctx.note("two classes of one name, 3 and 5 instances, two loaders, both the JVM's empty trace")

    def t_heap_dump_text(ctx):
        path = ctx.path("shape.txt")
        ctx.run("HeapShape", [], agent="heap=dump,file=" + path)
        n_objs, n_bytes, records, refs = text_heap_dump(path, Fail)
        problems = []
        objs = [a for k, a in records.values() if k in ("OBJ", "ARR")]
        if n_objs != len(objs):
            problems.append("header says %d objects, %d OBJ/ARR records" % (n_objs, len(objs)))
        if n_bytes != sum(int(a["sz"]) for a in objs):
            problems.append("header says %d bytes, the records add up to %d" % (n_bytes, sum(int(a["sz"]) for a in objs)))
        def count(cls):
            return sum(1 for k, a in records.values() if k == "OBJ" and a["class"].split("@")[0] == cls)
        for cls, want in (("HeapShape$Node", heap_dump_check.NODES), ("HeapShape$Leaf", heap_dump_check.LEAVES)):
            if count(cls) != want:
                problems.append("%d OBJ of %s, expected %d" % (count(cls), cls, want))
        ints = sum(1 for k, a in records.values() if k == "ARR" and a.get("elem type") == "int"
                   and a.get("nelems") == str(heap_dump_check.INT_ARRAY_LEN))
        if ints < heap_dump_check.INT_ARRAYS:
            problems.append("%d int[10] arrays, expected at least %d" % (ints, heap_dump_check.INT_ARRAYS))
        dangling = [(f, n, t) for f, n, t in refs if t not in records]
        if dangling:
            problems.append("%d references to ids not in the dump, e.g. %s" % (len(dangling), dangling[:3]))
        prof = parse_profile(path)          # the strict parser accepts the whole file
        if problems:
            raise Fail("; ".join(problems))
        ctx.note("%d objects, %d references, all resolved" % (len(objs), len(refs)))

    def t_heap_all_traces(ctx):
        path = ctx.path("all.hprof")
        r = ctx.run("AllocTruth", [], agent="heap=all,format=b,depth=16,file=" + path)
        want = truths(r.stderr, Fail)
        d = hprof_reader.read(path)
        problems = d.check()
        tc = d.trace_counts
        for cls, frame, alloc, live in want:
            name = {"int[]": "int[]", "long[]": "long[]", "long[][]": "long[][]"}.get(cls, cls)
            got = sum(n for (c, ts), n in tc.items()
                      if hprof_reader.pretty_name(c) in (name, cls) and frame in trace_methods(d, ts))
            if got != live:
                problems.append("%d %s in the dump carry a trace through %s; %d are alive" % (got, cls, frame, live))
        if problems:
            raise Fail("; ".join(str(p) for p in problems[:8]))
        ctx.note("every live tracked object of the truth carries its allocation trace (%d truths)" % len(want))

    def walked_shape(ctx, options):
        """HeapShape dumped with these options, which must make the agent walk
        the heap itself: exact, without the JVM quirks heap_dump_binary
        accepts, and none of the JVM's dumper's serials. The dump read."""
        path = ctx.path("shape.hprof")
        ctx.run("HeapShape", [], agent=options + ",format=b,file=" + path)
        d = hprof_reader.read(path)
        heap_dump_check.check_heap_shape(d, Fail)
        if any((c.serial or 0) >= JVM_CLASS_SERIALS for c in d.classes.values()):
            raise Fail("%s: LOAD CLASS serials of the JVM's dumper: it must be the agent's walk" % options)
        return d

    def churn_dumps(ctx, agent, tag, dumps=3):
        """ClassChurn under agent: `hprof dump PID file=` dumps (each its own
        file) while thread "definer" defines classes. (paths, stderr text)."""
        go = ctx.path(tag + ".go")
        p, so, se = spawn_ready(ctx, "ClassChurn", [go], agent + ",file=" + ctx.path(tag + ".exit"), tag)
        paths = []
        try:
            for i in range(dumps):
                path = ctx.path("%s.%d" % (tag, i))
                r = subprocess.run([HPROF, "dump", str(p.pid), "file=" + path],
                                   capture_output=True, text=True, timeout=180)
                if r.returncode != 0 or not os.path.exists(path):
                    raise Fail("hprof dump %d failed (rc %d): %s" % (i, r.returncode, (r.stdout + r.stderr)[-400:]))
                paths.append(path)
        finally:
            finish(p, se, go, Fail)
        return paths, open(se, errors="replace").read()

    def t_heap_dump_new_classes(ctx):
        """Classes loaded while the agent walks the heap: every ClassChurn
        carrier whole, of a class the dump describes (docs/heap.md)."""
        problems, notes = [], []
        for agent, tag in (("heap=all,format=b", "bin"), ("heap=dump,format=a", "txt")):
            paths, err = churn_dumps(ctx, agent, tag)
            for l in err.splitlines():
                if "did not match" in l or "left out" in l:
                    problems.append("%s: %s" % (tag, l))
            for path in paths:
                check = check_churn_binary if tag == "bin" else check_churn_text
                classes = check(path, problems)
                notes.append("%s %s: 200 carriers of %d classes" % (tag, os.path.basename(path), classes))
            if tag == "bin":
                notes.append(visualvm_churn(ctx, paths[-1], problems))
        if problems:
            raise Fail("; ".join(problems[:12]))
        ctx.note("; ".join(notes))

    def visualvm_churn(ctx, path, problems):
        """VisualVM's heap reader on a ClassChurn dump: every carrier whole
        (it takes no other record between a dump's segments)."""
        if not os.path.isfile(VISUALVM_HEAP_JAR):
            return "VisualVM's heap reader not installed: not read by it"
        classes = ctx.path("visualvm-churn")
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools", "VisualVmChurnCheck.java")
        r = subprocess.run([os.path.join(ctx.jdk, "bin", "javac"), "-nowarn", "-cp", VISUALVM_HEAP_JAR, "-d",
                            classes, src], capture_output=True, text=True)
        if r.returncode != 0:
            raise Fail("javac VisualVmChurnCheck: %s" % r.stderr[-400:])
        r = subprocess.run([ctx.java, "-cp", VISUALVM_HEAP_JAR + ":" + classes, "VisualVmChurnCheck", path],
                           capture_output=True, text=True, timeout=120)
        if r.stdout.strip() != "carriers 200 whole 200":
            problems.append("VisualVM's reader on %s: %r %s" % (os.path.basename(path), r.stdout.strip(),
                                                                r.stderr.strip()[-300:]))
        return "VisualVM: " + r.stdout.strip()

    def check_churn_binary(path, problems):
        d = hprof_reader.read(path)
        where = os.path.basename(path)
        problems.extend("%s: %s" % (where, x) for x in d.check())
        main = [c for c in d.heap.classes.values() if c.java_name == "ClassChurn"]
        if len(main) != 1:
            problems.append("%s: %d ClassChurn classes" % (where, len(main)))
            return 0
        arr = d.fetch([main[0].static("carriers")]).get(main[0].static("carriers"))
        if arr is None or len(arr.elements) != 200:
            problems.append("%s: ClassChurn.carriers is not a 200-element array in the dump" % where)
            return 0
        def field(o, name):
            try:
                return o[name]
            except KeyError:                # a class written without its fields
                return None

        got = d.fetch(arr.elements)
        boxes = d.fetch([field(o, "box") for o in got.values() if isinstance(o, hprof_reader.Instance)])
        bigs, classes = set(), set()
        for oid in arr.elements:
            o = got.get(oid)
            if not isinstance(o, hprof_reader.Instance) or o.class_name != "ClassChurn$Carrier":
                problems.append("%s: carrier 0x%x is %s" % (where, oid, "missing" if o is None else o))
                continue
            box = boxes.get(field(o, "box"))
            if field(o, "mark") != 0x5EED or field(o, "self") != oid or box is None or \
                    getattr(box, "elements", None) != [oid] or "Carrier" not in box.class_name:
                problems.append("%s: carrier 0x%x not whole: mark %s self %s box %s"
                                % (where, oid, field(o, "mark"), field(o, "self"), box))
            bigs.add(field(o, "big"))
            classes.add(o.class_id)
        if len(bigs) != 200:
            problems.append("%s: %d distinct carrier numbers, not 200" % (where, len(bigs)))
        return len(classes)

    def check_churn_text(path, problems):
        where = os.path.basename(path)
        _n, _b, records, refs = text_heap_dump(path, Fail)
        fields = {}
        for f, name, t in refs:
            fields.setdefault(f, {})[name] = t
        main = [oid for oid, (k, a) in records.items() if k == "CLS" and a.get("name") == "ClassChurn"]
        carriers = fields.get(main[0], {}).get("static carriers") if len(main) == 1 else None
        slots = fields.get(carriers, {})
        if carriers is None or len(slots) != 200:
            problems.append("%s: ClassChurn.carriers has %d elements in the dump, not 200" % (where, len(slots)))
            return 0
        classes = set()
        for oid in slots.values():
            kind, a = records.get(oid, (None, {}))
            cls, _, cid = a.get("class", "").partition("@")
            box = fields.get(oid, {}).get("box")
            bk, ba = records.get(box, (None, {}))
            if kind != "OBJ" or cls != "ClassChurn$Carrier" or int(cid or "0", 16) not in records:
                problems.append("%s: carrier %x is %s" % (where, oid, (kind, a)))
            elif fields.get(oid, {}).get("self") != oid or bk != "ARR" or fields.get(box, {}).get("[0]") != oid or \
                    not ba.get("elem type", "").startswith("ClassChurn$Carrier[]@"):
                problems.append("%s: carrier %x not whole: fields %s, box %s" % (where, oid, fields.get(oid), ba))
            classes.add(cid)
        return len(classes)

    def t_heap_all_shape(ctx):
        """heap=all: the agent's own walk (objects carry their allocation
        traces), held to HeapShape's heap exactly."""
        ctx.note("exact; %d objects" % walked_shape(ctx, "heap=all").objects)

    def t_heap_dump_fallback(ctx):
        """A runtime without the jdk.management module (--limit-modules
        java.base): the JVM's own dumper cannot be asked, the agent says so
        and walks the heap itself; the dump is exact and no staging file is
        left beside it."""
        path = ctx.path("shape.hprof")
        r = ctx.run("HeapShape", [], agent="heap=dump,format=b,file=" + path, jvm=["--limit-modules", "java.base"])
        said = [l for l in r.stderr.splitlines() if "JVM's own dumper did not write one" in l]
        if not said or "ManagementFactory" not in said[0] or "walks the heap itself" not in said[0]:
            raise Fail("no line saying the JVM's dumper is missing and the agent walks the heap: %r"
                       % tail_of(r.stderr))
        d = hprof_reader.read(path)
        heap_dump_check.check_heap_shape(d, Fail)
        left = [f for f in os.listdir(os.path.dirname(path)) if f.startswith(".hprof-heap.")]
        if left:
            raise Fail("staging files left beside the dump: %s" % left)
        ctx.note("exact, by the agent's walk; %s" % said[0][said[0].index("hprof:"):][:120])

    def t_heap_dump_zgc(ctx):
        """heap=dump alone under ZGC: the exit dump is written without a
        collection (ZGC cannot collect while the JVM exits; a forced one never
        returned), the JVM ends, and the dump holds HeapShape's objects."""
        path = ctx.path("shape.hprof")
        r = ctx.run("HeapShape", [], agent="heap=dump,format=b,file=" + path, jvm=["-XX:+UseZGC"], timeout=120)
        if not re.search(r"^hprof: heap=dump: ZGC cannot collect while the JVM exits", r.stderr, re.M):
            raise Fail("stderr does not say the exit heap dump was written without a collection: %r"
                       % tail_of(r.stderr))
        d = hprof_reader.read(path)
        node = [c for c in d.classes.values() if c.java_name == "HeapShape$Node"]
        n = sum(d.instance_counts.get(c.id, 0) for c in node)
        if n < heap_dump_check.NODES:
            raise Fail("%d HeapShape$Node in the dump, expected at least %d" % (n, heap_dump_check.NODES))
        ctx.note("ended; %d objects, %d HeapShape$Node" % (d.objects, n))

    def t_heap_dump_cpu_samples(ctx):
        """heap=dump with cpu=samples in one binary file: the agent's walk, so
        that the samples' classes and the heap's are one set of LOAD CLASS
        records (the JVM's dumper has its own): HeapShape exact, one class per
        name."""
        d = walked_shape(ctx, "heap=dump,cpu=samples")
        ctx.note("exact; %d objects, %d CPU SAMPLES records" % (d.objects, len(d.cpu_samples)))

    def t_heap_dump_visualvm(ctx):
        """Our binary dump opened by VisualVM's own heap reader (Debian's
        visualvm package, its jfluid-heap library), compared with what
        HeapShape.java documents."""
        jar = VISUALVM_HEAP_JAR
        if not os.path.isfile(jar):
            tools = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts",
                                 "ensure-test-tools")
            with open(ctx.path("ensure-test-tools.log"), "w") as log:
                subprocess.run([tools], stdout=log, stderr=log, timeout=900)
        if not os.path.isfile(jar):
            raise Skip("VisualVM's heap reader %s is missing: apt-get install visualvm (scripts/ensure-test-tools "
                       "could not; see ensure-test-tools.log)" % jar)
        path = ctx.path("shape.hprof")
        ctx.run("HeapShape", [], agent="heap=dump,format=b,file=" + path)
        classes = ctx.path("visualvm-classes")
        javac = os.path.join(ctx.jdk, "bin", "javac")
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools", "VisualVmHeapCheck.java")
        r = subprocess.run([javac, "-nowarn", "-cp", jar, "-d", classes, src], capture_output=True, text=True)
        if r.returncode != 0:
            raise Fail("javac VisualVmHeapCheck against %s: %s" % (jar, r.stderr[-400:]))
        r = subprocess.run([ctx.java, "-cp", jar + ":" + classes, "VisualVmHeapCheck", path],
                           capture_output=True, text=True, timeout=300, cwd=ctx.out)
        with open(ctx.path("visualvm.out"), "w") as f:
            f.write(r.stdout + r.stderr)
        if r.returncode != 0:
            raise Fail("VisualVM's heap reader failed on our dump: %s" % tail_of(r.stderr or r.stdout))
        seen = {}
        for line in r.stdout.splitlines():
            key, _, value = line.rpartition(" ")
            seen[key] = value
        want = {"count HeapShape$Node": str(heap_dump_check.NODES), "count HeapShape$Leaf": str(heap_dump_check.LEAVES),
                "static sInt": "-123456789", "static sLong": "-1234567890123456789", "static sShort": "-12345",
                "static sByte": "-123", "static sBoolean": "true", "static sDouble": "-6.02214076E23",
                "static sString": "heap-shape", "node_chain %d bad_ids" % heap_dump_check.NODES: "0",
                "int10_arrays_in_sequence": str(heap_dump_check.INT_ARRAYS)}
        wrong = ["%s: %s (expected %s)" % (k, seen.get(k, "<absent>"), v) for k, v in want.items() if seen.get(k) != v]
        if wrong:
            raise Fail("VisualVM's reader sees: " + "; ".join(wrong))
        ctx.note("VisualVM's reader: %s classes, %s live objects, %s GC roots; HeapShape exact"
                 % (seen.get("classes"), seen.get("live_instances"), seen.get("gc_roots")))

    def t_heap_dump_disk_full(ctx):
        path = ctx.path("full.hprof")
        cmd = ctx.java_cmd("HeapShape", [], agent="heap=dump,format=b,file=" + path)
        limit = 64 * 1024
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ctx.out,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
        with open(ctx.path("full.stderr"), "w") as f:
            f.write(r.stderr)
        problems = []
        if r.returncode != 0:
            problems.append("exit code %d (the program's own is 0)" % r.returncode)
        if path not in r.stderr or "incomplete" not in r.stderr:
            problems.append("no error naming %s and saying it is incomplete: %r" % (path, r.stderr[-400:]))
        if os.path.exists(path):
            problems.append("the incomplete file %s was left behind (%d bytes)" % (path, os.path.getsize(path)))
        if problems:
            raise Fail("; ".join(problems))
        ctx.note([l for l in r.stderr.splitlines() if "hprof" in l][-1])

    return [("heap_sites_exact", t_heap_sites_exact), ("heap_sites_jni", t_heap_sites_jni),
            ("heap_sites_zgc", t_heap_sites_zgc),
            ("heap_sites_class_unload", t_heap_sites_class_unload),
            ("heap_sites_sampled", t_heap_sites_sampled),
            ("heap_sites_evict", t_heap_sites_evict), ("heap_dump_binary", t_heap_dump_binary), ("heap_dump_text", t_heap_dump_text),
            ("heap_all_traces", t_heap_all_traces), ("heap_all_shape", t_heap_all_shape),
            ("heap_dump_fallback", t_heap_dump_fallback), ("heap_dump_cpu_samples", t_heap_dump_cpu_samples),
            ("heap_dump_zgc", t_heap_dump_zgc),
            ("heap_dump_two_loaders", t_heap_dump_two_loaders), ("heap_dump_disk_full", t_heap_dump_disk_full),
            ("heap_dump_visualvm", t_heap_dump_visualvm), ("heap_dump_new_classes", t_heap_dump_new_classes)]
