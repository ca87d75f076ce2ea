"""heap= on a real JVM (pytest tests, run on each JDK with the ctx fixture of
tests/conftest.py; docs/heap.md): allocation sites and heap dumps against
truths the programs know about themselves.

    heap_sites_exact    AllocTruth's sites: allocated and live objects of
                        every site exactly as the program made them (by new,
                        new[], multianewarray's inner arrays, reflection and
                        clone), live counted after a GC; -Xverify:all
    heap_sites_jni      JniAlloc's objects made by JNI: NewObject's exactly,
                        once each; AllocObject's and NewObjectArray's exact
                        or not reported (HotSpot posts no VMObjectAlloc)
    heap_sites_zgc      AllocTruth under ZGC: the exit dump counted without a
                        collection (and saying so), allocated counts exact
    heap_sites_class_unload  a class loader whose class heap=sites saw is
                        unloaded as without the agent; a second class of that
                        name a site of its own, both exact
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
    heap_all_traces     heap=all (the JVM's dumper by default; and the walk):
                        the dump's objects carry the trace of their
                        allocation site (25,000 Small from makeSmall, ...)
    heap_all_shape      the same heap with heap=all,heap_dumper=walk: the
                        agent's own walk, exact with no quirk accepted
    heap_dump_fallback  no jdk.management module: the agent says the JVM's
                        dumper is missing and walks the heap itself, exactly
    heap_dump_cpu_samples  heap=dump with cpu=samples (format=b): the agent's
                        walk, one LOAD CLASS per class, HeapShape exact
    heap_dump_zgc       heap=dump alone under ZGC: the exit dump without a
                        collection (a forced one never returned), the JVM ends
    heap_dumps_in_order HeapGrow dumped twice into one file (heap=dump and
                        heap=all, the JVM's dumper): the second dump after
                        the first, the last one the newer heap
    heap_dump_two_loaders  one class name loaded by two class loaders: the dump
                        has two classes of that name, with their own loaders
                        and exactly their instances (3 and 5)
    heap_dump_disk_full the file cannot grow past 64 KiB (RLIMIT_FSIZE): a
                        clear error naming the file, no corrupt file left,
                        the program's exit unchanged
    heap_dump_visualvm  the binary dump opened by VisualVM's own heap reader (jfluid-heap),
                        checked against HeapShape's documented shape
    heap_dump_new_classes  ClassChurn defines classes while `hprof dump` dumps
                        (the walk: heap=all,format=b,heap_dumper=walk;
                        heap=dump,format=a; 3 each): every
                        kept carrier of a class loaded mid-dump is in the dump
                        with its fields and array, no value left out; the
                        binary read whole by VisualVM's reader too
"""

import os
import re
import resource
import shutil
import subprocess

import pytest

import heap_dump_check
import hprof_reader
from heap_runs import run_with_go_files
from heap_sites import natives, site_totals, site_truths, sites_sections, text_heap_dump
from run import BUILD, ROOT, TESTS_DIR, Fail, parse_profile, tail

HPROF = os.path.join(BUILD, "hprof")

# heap=dump's binary dump by the JVM's own dumper: its LOAD CLASS serials
# from here (src/agent/heap_dump.c, JVM_CLASS_SERIALS).
JVM_CLASS_SERIALS = 0x40000000

# VisualVM's heap reader, from Debian's visualvm package.
VISUALVM_HEAP_JAR = "/usr/share/visualvm/visualvm/modules/org-graalvm-visualvm-lib-jfluid-heap.jar"


def traces_written(prof, rows):
    """Problems: the traces SITES rows name that the file never wrote."""
    missing = sorted({r.trace for r in rows if r.trace not in prof.traces})
    return ["traces used by SITES but never written: %s" % missing[:10]] if missing else []


def test_heap_sites_exact(ctx):
    path = ctx.path("sites.txt")
    r = ctx.run("AllocTruth", [], agent="heap=sites,depth=16,cutoff=0,file=" + path, jvm=["-Xverify:all"])
    want = site_truths(r.stderr)
    interval, rows = sites_sections(path)[-1]
    prof = parse_profile(path)
    problems = traces_written(prof, rows)
    if interval:
        problems.append("exact SITES marked as estimated (every %d bytes)" % interval)
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
    assert not problems, "; ".join(problems)
    ctx.note("every site exact (%d truths), %d rows" % (len(want), len(rows)))


def test_heap_sites_jni(ctx):
    """Objects native code makes through JNI. NewObject's run their
    constructor, which the tracker sees: exact. The JVMTI specification
    allows a VMObjectAlloc for them as well, which must not count them
    twice. AllocObject's and NewObjectArray's have no byte code to
    instrument and HotSpot (17, 25) posts no VMObjectAlloc for them, so
    they are not seen; if a JVM reports them, they must be exact."""
    lib_dir = os.path.dirname(natives("libjni_alloc.so"))
    path = ctx.path("sites.txt")
    r = ctx.run("JniAlloc", [], agent="heap=sites,depth=8,cutoff=0,file=" + path,
                jvm=["-Djava.library.path=" + lib_dir])
    want = site_truths(r.stderr)
    _, rows = sites_sections(path)[-1]
    prof = parse_profile(path)
    problems, notes = [], []
    for cls, frame, alloc, live in want:
        got = site_totals(prof, rows, cls, frame)
        if got[0] == 0 and frame != "JniAlloc.newObject":
            notes.append("%s (%s): not reported by the JVM" % (cls, frame))
        elif got[0] != alloc or got[1] != live:
            problems.append("%s at %s: %d allocated, %d live; expected exactly %d and %d"
                            % (cls, frame, got[0], got[1], alloc, live))
        else:
            notes.append("%s (%s): %d allocated, %d live" % (cls, frame, alloc, live))
    assert not problems, "; ".join(problems)
    ctx.note("; ".join(notes))


def test_heap_sites_class_unload(ctx):
    """The agent keeps no class alive: heap=sites caches each thread's
    recent classes (by the tracker's identity hash) with weak references.
    A class loader whose only class was allocated 1,000 times must be
    unloaded after System.gc() as without the agent (a cache that held
    the class kept it: UNLOADED false), and a second class of the same
    name, allocated after on the same thread, is a site of its own: both
    counted exactly."""
    path = ctx.path("sites.txt")
    r = ctx.run("ClassUnload", [], agent="heap=sites,cutoff=0,file=" + path)
    want = site_truths(r.stderr)
    problems = []
    if "UNLOADED true" not in r.stderr:
        problems.append("the dropped class loader was not unloaded under heap=sites (expected UNLOADED true, "
                        "found %s)" % ("UNLOADED false" if "UNLOADED false" in r.stderr else "no UNLOADED line"))
    _, rows = sites_sections(path)[-1]
    prof = parse_profile(path)
    got = sorted((row.alloc_objs, row.live_objs) for row in rows if row.cls == want[0][0]
                 and prof.traces.get(row.trace) is not None and prof.traces[row.trace].has_method(want[0][1]))
    expected = sorted((alloc, live) for _, _, alloc, live in want)
    if got != expected:
        problems.append("%s rows (allocated, live) %s; expected %s (one per class)" % (want[0][0], got, expected))
    assert not problems, "; ".join(problems)
    ctx.note("%s: %s, loader unloaded" % (want[0][0], got))


def test_heap_sites_zgc(ctx):
    """ZGC's collector thread has stopped when VMDeath comes, and a
    ForceGarbageCollection there never returned: the JVM never exited
    (JDK 17 and 25). The exit dump now counts without a collection and
    says so; allocated counts stay exact, live ones at least the truth."""
    path = ctx.path("zgc.txt")
    r = ctx.run("AllocTruth", [], agent="heap=sites,depth=16,cutoff=0,file=" + path, jvm=["-XX:+UseZGC"],
                timeout=120)
    want = site_truths(r.stderr)
    rows = sites_sections(path)[-1][1]
    prof = parse_profile(path)
    problems = []
    if not re.search(r"^hprof: heap=sites: ZGC cannot collect while the JVM exits", r.stderr, re.M):
        problems.append("stderr does not say the exit dump was counted without a collection: %s" % tail(r.stderr))
    for cls, frame, alloc, live in want:
        got = site_totals(prof, rows, cls, frame)
        if got[0] != alloc or got[1] < live:
            problems.append("%s at %s: %d allocated, %d live; expected exactly %d and at least %d"
                            % (cls, frame, got[0], got[1], alloc, live))
    assert not problems, "; ".join(problems)
    ctx.note("exit dump under ZGC: exit 0, %d truths' allocated counts exact" % len(want))


def test_heap_sites_sampled(ctx):
    path = ctx.path("sampled.txt")
    # G1 whatever the machine: with one CPU the JVM picks the serial
    # collector, under which JDK 17's own sampler undercounts (about 40%
    # of the objects; README "How heap=sites and heap=dump work").
    r = ctx.run("AllocTruth", [], agent="heap=sites,heap_sample=4k,depth=16,cutoff=0,file=" + path,
                jvm=["-XX:+UseG1GC"])
    want = site_truths(r.stderr)
    interval, rows = sites_sections(path)[-1]
    prof = parse_profile(path)
    problems = traces_written(prof, rows)
    if interval != 4096:
        problems.append("SITES not marked as estimated every 4096 bytes (found %r)" % interval)
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
    assert not problems, "; ".join(problems)
    ctx.note("estimates: " + ", ".join(notes))


def test_heap_sites_evict(ctx):
    path = ctx.path("evict.txt")
    r = ctx.run("Evict", ["2000000"], agent="heap=sites,depth=8,cutoff=0,file=" + path, jvm=["-Xmx256m"])
    want = site_truths(r.stderr)
    assert len(want) == 1, "Evict printed %d TRUTH lines, expected 1: %s" % (len(want), want)
    (cls, frame, alloc, live), = want
    rows = sites_sections(path)[-1][1]
    prof = parse_profile(path)
    # The value arrays are allocated by Evict.value itself (on JDK 25 the
    # first call also loads classes whose own byte[]s have it deeper down).
    rows = [r for r in rows if prof.traces[r.trace].frames and prof.traces[r.trace].frames[0].qualname == frame]
    got = site_totals(prof, rows, cls, frame)
    assert got[:2] == [alloc, live], "%s at %s: %d allocated, %d live; expected exactly %d and %d" % (
        cls, frame, got[0], got[1], alloc, live)
    ctx.note("%d allocated, %d live, exact" % (got[0], got[1]))


def jcmd(ctx, pid, *what):
    exe = os.path.join(ctx.jdk, "bin", "jcmd")
    r = subprocess.run([exe, str(pid)] + list(what), capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        pytest.fail("jcmd %s: expected exit 0, found %d: %s" % (" ".join(what), r.returncode, r.stderr[-500:]))
    return r.stdout


def test_heap_dump_binary(ctx):
    path = ctx.path("shape.hprof")
    histo = []

    def at_ready(n, prog):
        histo.append(jcmd(ctx, prog.pid, "GC.class_histogram"))
        prog.sigquit_dump(1)
    run_with_go_files(ctx, "HeapShape", [ctx.path("go")], "heap=dump,format=b,doe=n,file=" + path, at_ready, "shape")
    d = hprof_reader.read(path)
    # Without heap=sites the heap dump in the file is the JVM's own
    # (docs/heap.md), with its known quirks (pseudo statics such as
    # <resolved_references>, CDS's archived roots).
    heap_dump_check.check_heap_shape(d, Fail, jvm_quirks_ok=True)
    assert any((c.serial or 0) >= JVM_CLASS_SERIALS for c in d.classes.values()), \
        "the heap dump's classes have no LOAD CLASS serial of the JVM's dumper's range (0x40000000 and up): " \
        "the agent walked the heap itself"
    diff = heap_dump_check.compare_with_histogram(d, histo[0])
    assert not diff["own"], "HeapShape's classes counted differently from jcmd GC.class_histogram: %s" % (
        diff["own"][:10],)
    ctx.note("exact; %d objects; %d class names compared with the JVM's histogram, %d differ (JDK "
             "classes churn between the two)" % (d.objects, diff["compared"], len(diff["all"])))


@pytest.mark.parametrize("heap", ["dump", "all"])
def test_heap_dumps_in_order(ctx, heap):
    """HeapGrow dumped twice into one file on SIGQUIT (the JVM's dumper,
    by default for both): the second dump goes after the first (the file
    of the first dump is the start of the file of both), and the file's
    last dump is the newer heap, whose 3,000 Leak objects readers take."""
    path, first = ctx.path("grow.hprof"), ctx.path("first.hprof")

    def at_ready(n, prog):
        prog.sigquit_dump(n)
        if n == 1:
            shutil.copyfile(path, first)
    run_with_go_files(ctx, "HeapGrow", [ctx.path("go1"), ctx.path("go2")],
                      "heap=%s,format=b,doe=n,file=%s" % (heap, path), at_ready, "grow")
    d = hprof_reader.read(path)
    assert len(d.heap_dumps) == 2, "%d heap dumps in the file, expected 2" % len(d.heap_dumps)
    assert any((c.serial or 0) >= JVM_CLASS_SERIALS for c in d.classes.values()), \
        "heap=%s: the agent walked the heap itself, expected the JVM's dumper" % heap
    with open(first, "rb") as a, open(path, "rb") as b:
        head = a.read()
        assert b.read(len(head)) == head, "the file of the first dump (%d bytes) is not the start of the file " \
            "of both: the second dump was not put after it" % len(head)
    leak = [c for c in d.classes.values() if c.java_name == "HeapGrow$Leak"]
    counts = [d.instance_counts.get(c.id, 0) for c in leak]
    assert sum(counts) == 3000, "the file's last heap dump has %s HeapGrow$Leak, expected 3000 (the second dump)" % (
        counts,)
    new_leaks = sum(n for (c, ts), n in d.trace_counts.items()
                    if c == "HeapGrow$Leak" and d.trace_methods(ts)[:2] == ["HeapGrow$Leak.<init>", "HeapGrow.main"])
    if heap == "all":
        # the records written since the first dump went after the second,
        # their classes renamed to its own: every Leak's trace resolves
        assert new_leaks == 3000, "%d HeapGrow$Leak of the last dump carry a trace through HeapGrow.main, " \
            "expected 3000" % new_leaks
    ok, problems = heap_dump_check.jvm_quirks(d, d.check())
    # The JVM names classes by their Class object's address, which moves
    # between dumps: a reader that takes one set of class names for the
    # file misreads the earlier dump (docs/heap.md); the last one must read whole.
    earlier = [p for p in problems if p.startswith("heap dump #0 ")]
    problems = [p for p in problems if not p.startswith("heap dump #0 ")]
    assert not problems, "; ".join(str(p) for p in problems[:5])
    ctx.note("heap=%s: 2 dumps in order, the last with 3,000 Leak; %d JVM quirks accepted; %d problems of the "
             "first dump read with the second's class names" % (heap, len(ok), len(earlier)))


def test_heap_dump_two_loaders(ctx):
    path = ctx.path("twins.hprof")
    ctx.run("TwoLoaders", [], agent="heap=dump,format=b,file=" + path)
    d = hprof_reader.read(path)
    twins = [c for c in d.classes.values() if c.java_name == "TwoLoaders$Twin"]
    counts = sorted(d.instance_counts.get(c.id, 0) for c in twins)
    assert counts == [3, 5], "classes named TwoLoaders$Twin in the dump, by instances: %s; expected two, " \
        "with 3 and 5" % counts
    assert len({c.loader_id for c in twins}) == 2 and len({c.serial for c in twins}) == 2, \
        "the two Twin classes share a loader or a LOAD CLASS serial: %s" % [(c.loader_id, c.serial) for c in twins]
    # The JVM's dumper's file: a name two classes share does not tell
    # which loading trace is whose, so both keep the JVM's empty one
    # (docs/heap.md), where a class of its own name gets its trace.
    assert all(c.serial >= JVM_CLASS_SERIALS for c in twins), \
        "the Twin classes' LOAD CLASS serials %s are not the JVM's dumper's (0x40000000 and up): the agent " \
        "walked" % [c.serial for c in twins]
    traced = [c.load_trace for c in twins if d.traces.get(c.load_trace, (0, []))[1]]
    assert not traced, "a Twin class was given a loading trace (%s): which of the two was loaded there is " \
        "not known" % traced
    main = [c for c in d.classes.values() if c.java_name == "TwoLoaders"]
    assert len(main) == 1 and d.traces.get(main[0].load_trace, (0, []))[1], \
        "expected one TwoLoaders class with a loading trace in the JVM's dump, found traces %s" % (
            [c.load_trace for c in main],)
    ctx.note("two classes of one name, 3 and 5 instances, two loaders, both the JVM's empty trace")


def test_heap_dump_text(ctx):
    path = ctx.path("shape.txt")
    ctx.run("HeapShape", [], agent="heap=dump,file=" + path)
    n_objs, n_bytes, records, refs = text_heap_dump(path)
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
    parse_profile(path)          # the strict parser accepts the whole file
    assert not problems, "; ".join(problems)
    ctx.note("%d objects, %d references, all resolved" % (len(objs), len(refs)))


def hidden_spelling(name):
    """HotSpot's dumper spells a hidden class's name Foo$$Lambda$1+0x...,
    where JVMTI (and so the agent's walk) and HPROF's text say
    Foo$$Lambda$1.0x...: the truths use the latter."""
    return re.sub(r"\+(0x[0-9a-f]+)$", r".\1", name or "")


@pytest.mark.parametrize("dumper", ["auto", "walk"])
def test_heap_all_traces(ctx, dumper):
    """heap=all by default (the JVM's dumper, its objects given their
    traces in place) and by the agent's walk: every live object of the
    truth carries its allocation trace; the JVM's file is held to the
    JVM's known quirks only (heap_dump_check.jvm_quirks)."""
    path = ctx.path("all.hprof")
    r = ctx.run("AllocTruth", [], agent="heap=all,format=b,depth=16,heap_dumper=%s,file=%s" % (dumper, path))
    want = site_truths(r.stderr)
    d = hprof_reader.read(path)
    by_jvm = any((c.serial or 0) >= JVM_CLASS_SERIALS for c in d.classes.values())
    if by_jvm != (dumper == "auto"):
        raise Fail("heap_dumper=%s: the dump was written by %s" % (dumper, "the JVM" if by_jvm else "the walk"))
    problems = d.check()
    notes = []
    if by_jvm:
        ok, problems = heap_dump_check.jvm_quirks(d, problems)
        notes = ["accepted JVM quirk: %s" % why for _p, why in ok]
    tc = d.trace_counts
    for cls, frame, alloc, live in want:
        got = sum(n for (c, ts), n in tc.items()
                  if hidden_spelling(hprof_reader.pretty_name(c)) == cls and frame in d.trace_methods(ts))
        if got != live:
            problems.append("%d %s in the dump carry a trace through %s; %d are alive" % (got, cls, frame, live))
    assert not problems, "; ".join(str(p) for p in problems[:8])
    ctx.note("every live tracked object of the truth carries its allocation trace (%d truths)%s" % (
        len(want), "; " + "; ".join(notes) if notes else ""))


def walked_shape(ctx, options):
    """HeapShape dumped with these options, which must make the agent walk
    the heap itself: exact, without the JVM quirks heap_dump_binary
    accepts, and none of the JVM's dumper's serials. The dump read."""
    path = ctx.path("shape.hprof")
    ctx.run("HeapShape", [], agent=options + ",format=b,file=" + path)
    d = hprof_reader.read(path)
    heap_dump_check.check_heap_shape(d, Fail)
    jvm_serials = sorted(c.serial for c in d.classes.values() if (c.serial or 0) >= JVM_CLASS_SERIALS)
    assert not jvm_serials, "%s: expected the agent's walk, found LOAD CLASS serials of the JVM's dumper: %s" % (
        options, ["0x%x" % s for s in jvm_serials[:5]])
    return d


def test_heap_all_shape(ctx):
    """heap=all: the agent's own walk (objects carry their allocation
    traces), held to HeapShape's heap exactly."""
    ctx.note("exact; %d objects" % walked_shape(ctx, "heap=all,heap_dumper=walk").objects)


def test_heap_dump_fallback(ctx):
    """A runtime without the jdk.management module (--limit-modules
    java.base): the JVM's own dumper cannot be asked, the agent says so
    and walks the heap itself; the dump is exact and no staging file is
    left beside it."""
    path = ctx.path("shape.hprof")
    r = ctx.run("HeapShape", [], agent="heap=dump,format=b,file=" + path, jvm=["--limit-modules", "java.base"])
    said = [l for l in r.stderr.splitlines() if "JVM's own dumper did not write one" in l]
    assert said and "ManagementFactory" in said[0] and "walks the heap itself" in said[0], \
        "expected a line saying the JVM's dumper is missing and the agent walks the heap, found: %r" % tail(r.stderr)
    d = hprof_reader.read(path)
    heap_dump_check.check_heap_shape(d, Fail)
    left = [f for f in os.listdir(os.path.dirname(path)) if f.startswith(".hprof-heap.")]
    assert not left, "staging files left beside the dump: %s" % left
    ctx.note("exact, by the agent's walk; %s" % said[0][said[0].index("hprof:"):][:120])


def test_heap_dump_cpu_samples(ctx):
    """heap=dump with cpu=samples in one binary file: the agent's walk, so
    that the samples' classes and the heap's are one set of LOAD CLASS
    records (the JVM's dumper has its own): HeapShape exact, one class per
    name."""
    d = walked_shape(ctx, "heap=dump,cpu=samples")
    ctx.note("exact; %d objects, %d CPU SAMPLES records" % (d.objects, len(d.cpu_samples)))


def test_heap_dump_zgc(ctx):
    """heap=dump alone under ZGC: the exit dump is written without a
    collection (ZGC cannot collect while the JVM exits; a forced one never
    returned), the JVM ends, and the dump holds HeapShape's objects."""
    path = ctx.path("shape.hprof")
    r = ctx.run("HeapShape", [], agent="heap=dump,format=b,file=" + path, jvm=["-XX:+UseZGC"], timeout=120)
    assert re.search(r"^hprof: heap=dump: ZGC cannot collect while the JVM exits", r.stderr, re.M), \
        "stderr does not say the exit heap dump was written without a collection: %r" % tail(r.stderr)
    d = hprof_reader.read(path)
    node = [c for c in d.classes.values() if c.java_name == "HeapShape$Node"]
    n = sum(d.instance_counts.get(c.id, 0) for c in node)
    assert n >= heap_dump_check.NODES, "%d HeapShape$Node in the dump, expected at least %d" % (
        n, heap_dump_check.NODES)
    ctx.note("ended; %d objects, %d HeapShape$Node" % (d.objects, n))


def test_heap_dump_disk_full(ctx):
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
    assert not problems, "; ".join(problems)
    ctx.note([l for l in r.stderr.splitlines() if "hprof" in l][-1])


def visualvm_jar(ctx):
    """VisualVM's heap reader, installed by scripts/ensure-test-tools if it
    is missing; skips the test where it cannot be."""
    if not os.path.isfile(VISUALVM_HEAP_JAR):
        with open(ctx.path("ensure-test-tools.log"), "w") as log:
            subprocess.run([os.path.join(ROOT, "scripts", "ensure-test-tools")], stdout=log, stderr=log, timeout=900)
    if not os.path.isfile(VISUALVM_HEAP_JAR):
        pytest.skip("VisualVM's heap reader %s is missing: apt-get install visualvm (scripts/ensure-test-tools "
                    "could not; see ensure-test-tools.log)" % VISUALVM_HEAP_JAR)
    return VISUALVM_HEAP_JAR


def test_heap_dump_visualvm(ctx):
    """Our binary dump opened by VisualVM's own heap reader (Debian's
    visualvm package, its jfluid-heap library), compared with what
    HeapShape.java documents."""
    jar = visualvm_jar(ctx)
    path = ctx.path("shape.hprof")
    ctx.run("HeapShape", [], agent="heap=dump,format=b,file=" + path)
    classes = ctx.path("visualvm-classes")
    javac = os.path.join(ctx.jdk, "bin", "javac")
    src = os.path.join(TESTS_DIR, "tools", "VisualVmHeapCheck.java")
    r = subprocess.run([javac, "-nowarn", "-cp", jar, "-d", classes, src], capture_output=True, text=True)
    assert r.returncode == 0, "javac VisualVmHeapCheck against %s: %s" % (jar, r.stderr[-400:])
    r = subprocess.run([ctx.java, "-cp", jar + ":" + classes, "VisualVmHeapCheck", path],
                       capture_output=True, text=True, timeout=300, cwd=ctx.out)
    with open(ctx.path("visualvm.out"), "w") as f:
        f.write(r.stdout + r.stderr)
    assert r.returncode == 0, "VisualVM's heap reader failed on our dump: %s" % tail(r.stderr or r.stdout)
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
    assert not wrong, "VisualVM's reader sees: " + "; ".join(wrong)
    ctx.note("VisualVM's reader: %s classes, %s live objects, %s GC roots; HeapShape exact"
             % (seen.get("classes"), seen.get("live_instances"), seen.get("gc_roots")))


def churn_dumps(ctx, agent, tag, dumps=3):
    """ClassChurn under agent: `hprof dump PID file=` dumps (each its own
    file) while thread "definer" defines classes. (paths, stderr text)."""
    paths = []

    def at_ready(n, prog):
        for i in range(dumps):
            path = ctx.path("%s.%d" % (tag, i))
            r = subprocess.run([HPROF, "dump", str(prog.pid), "file=" + path],
                               capture_output=True, text=True, timeout=180)
            if r.returncode != 0 or not os.path.exists(path):
                pytest.fail("hprof dump %d: expected exit 0 and %s, found exit %d: %s"
                            % (i, path, r.returncode, (r.stdout + r.stderr)[-400:]))
            paths.append(path)
    prog = run_with_go_files(ctx, "ClassChurn", [ctx.path(tag + ".go")], agent + ",file=" + ctx.path(tag + ".exit"),
                             at_ready, tag)
    return paths, open(prog.stderr, errors="replace").read()


def visualvm_churn(ctx, path, problems):
    """VisualVM's heap reader on a ClassChurn dump: every carrier whole
    (it takes no other record between a dump's segments)."""
    if not os.path.isfile(VISUALVM_HEAP_JAR):
        return "VisualVM's heap reader not installed: not read by it"
    classes = ctx.path("visualvm-churn")
    src = os.path.join(TESTS_DIR, "tools", "VisualVmChurnCheck.java")
    r = subprocess.run([os.path.join(ctx.jdk, "bin", "javac"), "-nowarn", "-cp", VISUALVM_HEAP_JAR, "-d",
                        classes, src], capture_output=True, text=True)
    assert r.returncode == 0, "javac VisualVmChurnCheck: %s" % r.stderr[-400:]
    r = subprocess.run([ctx.java, "-cp", VISUALVM_HEAP_JAR + ":" + classes, "VisualVmChurnCheck", path],
                       capture_output=True, text=True, timeout=120)
    if r.stdout.strip() != "carriers 200 whole 200":
        problems.append("VisualVM's reader on %s: expected 'carriers 200 whole 200', found %r %s"
                        % (os.path.basename(path), r.stdout.strip(), r.stderr.strip()[-300:]))
    return "VisualVM: " + r.stdout.strip()


def check_churn_binary(path, problems):
    d = hprof_reader.read(path)
    where = os.path.basename(path)
    problems.extend("%s: %s" % (where, x) for x in d.check())
    main = [c for c in d.heap.classes.values() if c.java_name == "ClassChurn"]
    if len(main) != 1:
        problems.append("%s: %d ClassChurn classes, expected 1" % (where, len(main)))
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
    _n, _b, records, refs = text_heap_dump(path)
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


def test_heap_dump_new_classes(ctx):
    """Classes loaded while the agent walks the heap: every ClassChurn
    carrier whole, of a class the dump describes (docs/heap.md)."""
    problems, notes = [], []
    for agent, tag in (("heap=all,format=b,heap_dumper=walk", "bin"), ("heap=dump,format=a", "txt")):
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
    assert not problems, "; ".join(problems[:12])
    ctx.note("; ".join(notes))
