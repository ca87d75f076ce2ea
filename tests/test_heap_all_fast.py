"""heap=all,format=b by the JVM's own dumper (src/agent/heap_all_dump.c;
pytest tests, run on each JDK with the ctx fixture of tests/conftest.py): the
JVM writes the heap dump, then the agent gives each object it tracked the
trace of its allocation, in place (docs/heap.md, "heap=all by the JVM's
dumper").

    heap_all_fast        AllocTruth under heap=all: the dump is the JVM's (its
                         LOAD CLASS serials from 0x40000000), and every live
                         object of each of the program's known sites carries
                         a trace through that site's method, exactly as many
                         as the program says are live; no integrity problem
                         but the JVM dumper's known quirks
    heap_all_fast_fallback  HPROF_TEST_HEAP_ALL_MISMATCH=1 (for tests only:
                         the first object found is taken for one of another
                         class): the agent says the dump does not match, drops
                         it and walks the heap; the walk's file has the same
                         exact traces. Under ZGC: the agent says the collector
                         is not one it can follow and walks the heap
    heap_all_fast_classes_once  AllocTruth again: the agent's records after the
                         JVM's dump define no class again that the JVM's
                         records define (even a name the JVM gives two class
                         ids, told apart by the class's address); no name
                         twice among ours; every frame's and site's class
                         serial defined
    heap_all_fast_matches_walk  AllocTruth under heap_dumper=walk and =jvm:
                         `build/hprof heap --json` gives the program's classes
                         (AllocTruth*, a hidden class's address dropped) the
                         same count, shallow and retained bytes in both files,
                         and each file's objects carry the program's exact
                         allocation traces (the JDK's own classes differ from
                         run to run and are not compared)
"""

import collections
import json
import os
import re
import subprocess

import heap_dump_check
import hprof_reader
from heap_sites import site_truths
from run import BUILD, Fail, tail

JVM_CLASS_SERIALS = 0x40000000


def by_jvm(d):
    """Whether the file's heap dump is the JVM's (its class serials)."""
    return any((c.serial or 0) >= JVM_CLASS_SERIALS for c in d.classes.values())


def check_truths(d, want):
    """Problems: for each TRUTH line, the live objects of its class in the
    dump carrying a trace through its frame, against the program's count."""
    problems = []
    tc = d.trace_counts
    for cls, frame, _alloc, live in want:
        # The JVM's dump names a hidden class Foo$$Lambda+0x..., the agent Foo$$Lambda.0x...
        got = sum(n for (c, ts), n in tc.items()
                  if hprof_reader.pretty_name(c).replace("+0x", ".0x") == cls
                  and frame in d.trace_methods(ts))
        if got != live:
            problems.append("%d %s in the dump carry a trace through %s; %d are alive" % (got, cls, frame, live))
    return problems


STICKY = re.compile(r"GC root sticky_class -> 0x([0-9a-f]+): no such object in the heap dump")


def problems_but_quirks(d):
    """d.check()'s problems but the JVM dumper's quirks (heap_dump_check),
    and one more of JDK 17's: in a JVM whose classes were retransformed (the
    agent's heap=sites rewrites them) its dump has a second LOAD CLASS for
    some boot classes (java.lang.Object, ...), under another id with no
    CLASS DUMP, that its ROOT STICKY CLASS records name (`jcmd
    GC.heap_dump` writes the same in such a JVM)."""
    _ok, rest = heap_dump_check.jvm_quirks(d, d.check())
    dumped = {c.java_name for c in d.classes.values() if c.id in d.heap.classes}
    left = []
    for p in rest:
        m = STICKY.match(str(p))
        c = d.classes.get(int(m.group(1), 16)) if m else None
        if c is not None and (c.serial or 0) >= JVM_CLASS_SERIALS and c.java_name in dumped:
            continue
        left.append(str(p)[:300])
    return left


def alloc_truth(ctx, tag, jvm=(), env=None, dumper="jvm"):
    path = ctx.path(tag + ".hprof")
    r = ctx.run("AllocTruth", [], agent="heap=all,format=b,heap_dumper=%s,depth=16,file=%s" % (dumper, path),
                jvm=list(jvm), env=env, tag=tag)
    return r, hprof_reader.read(path), site_truths(r.stderr)


def test_heap_all_fast(ctx):
    r, d, want = alloc_truth(ctx, "fast")
    if not by_jvm(d):
        raise Fail("the dump is the agent's walk, not the JVM's: %s" % tail(r.stderr))
    problems = problems_but_quirks(d) + check_truths(d, want)
    if problems:
        raise Fail("; ".join(problems[:8]))
    ctx.note("the JVM's dump; %d truths exact, %d objects" % (len(want), d.objects))


def test_heap_all_fast_fallback(ctx):
    r, d, want = alloc_truth(ctx, "mismatch", env={"HPROF_TEST_HEAP_ALL_MISMATCH": "1"})
    said = [l for l in r.stderr.splitlines() if "does not match the agent's record" in l]
    if not said or "walks the heap itself" not in said[0]:
        raise Fail("no line saying the JVM's dump was dropped: %s" % tail(r.stderr))
    if by_jvm(d):
        raise Fail("the JVM's dump was kept after a mismatch")
    problems = [str(p)[:300] for p in d.check()] + check_truths(d, want)
    r2, d2, _ = alloc_truth(ctx, "zgc", jvm=["-XX:+UseZGC"])
    if "needs the G1, Parallel or Serial collector" not in r2.stderr:
        problems.append("under ZGC, no line saying the collector is not followed: %s"
                        % tail(r2.stderr))
    if by_jvm(d2):
        problems.append("under ZGC, the JVM's dump was used")
    if problems:
        raise Fail("; ".join(problems[:8]))
    ctx.note("walked after the mismatch (%s); %d truths exact; ZGC walked" % (said[0][:90], len(want)))


def test_heap_all_fast_classes_once(ctx):
    r, d, _want = alloc_truth(ctx, "once")
    if not by_jvm(d):
        raise Fail("the dump is the agent's walk, not the JVM's: %s" % tail(r.stderr))
    jvm_ids, ours = collections.defaultdict(set), collections.Counter()
    for serial, c in d.load_class_by_serial.items():
        if serial >= JVM_CLASS_SERIALS:
            jvm_ids[c.name].add(c.id)
        else:
            ours[c.name] += 1
    # A name the JVM's records give two class ids (JDK 17/25 after
    # retransformation: a boot class's second record, as jcmd writes it)
    # is told apart by the class's address, which heap=all reads.
    again = sorted(n for n in ours if n in jvm_ids)
    twice = sorted(n for n, k in ours.items() if k > 1)
    problems = ["%d classes the JVM's records define are defined again by ours: %s" % (len(again), again[:5])
                ] if again else []
    if twice:
        problems.append("our records define %d names twice: %s" % (len(twice), twice[:5]))
    problems += [str(p)[:300] for p in d.check() if p.kind in ("frame_class", "alloc_sites", "serial_twice")]
    if problems:
        raise Fail("; ".join(problems))
    ctx.note("%d classes by the JVM's records (%d names of two ids), %d by ours"
             % (len(jvm_ids), sum(1 for s in jvm_ids.values() if len(s) > 1), sum(ours.values())))


HIDDEN_ADDRESS = re.compile(r"[.+]0x[0-9a-f]+$")


def program_classes(path):
    """`hprof heap --json`'s AllocTruth* classes: name (a hidden class's
    address dropped) -> (count, shallow, retained)."""
    r = subprocess.run([os.path.join(BUILD, "hprof"), "heap", path, "--json", "--top", "1"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise Fail("hprof heap %s: rc %d: %s" % (path, r.returncode, r.stderr[-500:]))
    return {HIDDEN_ADDRESS.sub("", c["name"]): (c["count"], c["shallow"], c["retained"])
            for c in json.loads(r.stdout)["classes"] if c["name"].startswith("AllocTruth")}


def test_heap_all_fast_matches_walk(ctx):
    rw, dw, want = alloc_truth(ctx, "walk", dumper="walk")
    rj, dj, want_j = alloc_truth(ctx, "jvm")
    if by_jvm(dw) or not by_jvm(dj):
        raise Fail("heap_dumper=walk/jvm did not give the walk's and the JVM's dump: %s | %s"
                   % (tail(rw.stderr), tail(rj.stderr)))
    walk, fast = program_classes(ctx.path("walk.hprof")), program_classes(ctx.path("jvm.hprof"))
    problems = ["%s: walk %s, JVM's dumper %s" % (n, walk.get(n), fast.get(n))
                for n in sorted(set(walk) | set(fast)) if walk.get(n) != fast.get(n)]
    if len(walk) < 6:
        problems.append("only %d AllocTruth classes in the walk's histogram: %s" % (len(walk), sorted(walk)))
    problems += ["walk: " + p for p in check_truths(dw, want)] + ["jvm: " + p for p in check_truths(dj, want_j)]
    if problems:
        raise Fail("; ".join(problems[:8]))
    ctx.note("%d classes equal (count, shallow, retained); %d truths exact in both" % (len(walk), len(want)))
