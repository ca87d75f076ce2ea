"""The text heap dump's object sizes (heap=dump,format=a; pytest tests, run
on each JDK with the ctx fixture of tests/conftest.py; docs/heap.md).

    heap_text_thread_sizes  HeapShape under heap=dump,format=a: the objects of
                         the JDK's Thread subclasses (java.lang.ref.Finalizer$
                         FinalizerThread, Reference$ReferenceHandler) have
                         their size (sz=) as every object of a class does, no
                         smaller than a java.lang.Thread's; read by our parser
                         of the OBJ lines and by `build/hprof heap --json`
                         (their classes' shallow bytes). The walk numbers
                         thread objects before it starts and met them as
                         known: their classes had no size, and they printed
                         sz=0.
    heap_text_archived_sizes  the same program: no OBJ line has sz=0, and
                         every class's objects one size (on JDK 17 the
                         CDS-archived jdk.internal.math.FDBigInteger objects,
                         whose class is linked only after the walk, printed
                         sz=0: re-reading the class dropped the size the walk
                         had taken); `build/hprof heap --json` gives each such
                         class count x size as shallow bytes.
"""

import json
import os
import re
import subprocess

from run import BUILD, Fail

OBJ = re.compile(r"^OBJ [0-9a-f]+ \(sz=(\d+), trace=\d+, class=([^@]+)@[0-9a-f]+\)$", re.M)
THREADS = ("java.lang.ref.Finalizer$FinalizerThread", "java.lang.ref.Reference$ReferenceHandler")


def test_heap_text_thread_sizes(ctx):
    path = ctx.path("shape.txt")
    ctx.run("HeapShape", [], agent="heap=dump,format=a,file=" + path)
    with open(path) as f:
        sizes = {}
        for sz, cls in OBJ.findall(f.read()):
            sizes.setdefault(cls, set()).add(int(sz))
    problems = []
    thread = sizes.get("java.lang.Thread", set())
    if len(thread) != 1 or min(thread) <= 0:
        problems.append("java.lang.Thread objects have sizes %s, want one size > 0" % sorted(thread))
    for cls in THREADS:
        got = sizes.get(cls)
        if got is None or len(got) != 1 or min(got) < max(thread or {1}):
            problems.append("%s objects have sizes %s, want one size >= a Thread's %s" % (cls, got, sorted(thread)))
    r = subprocess.run([os.path.join(BUILD, "hprof"), "heap", path, "--json", "--top", "100000"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise Fail("hprof heap %s: rc %d: %s" % (path, r.returncode, r.stderr[-500:]))
    by_name = {c["name"]: c for c in json.loads(r.stdout)["classes"]}
    for cls in THREADS:
        c = by_name.get(cls)
        want = c and c["count"] * min(sizes.get(cls) or {0})
        if c is None or c["count"] < 1 or c["shallow"] != want or want <= 0:
            problems.append("hprof heap: %s is %s, want count >= 1 and shallow %s > 0" % (cls, c, want))
    if problems:
        raise Fail("; ".join(problems))
    ctx.note("; ".join("%s sz=%s" % (c, sorted(sizes[c])) for c in THREADS))


def test_heap_text_archived_sizes(ctx):
    path = ctx.path("archived.txt")
    ctx.run("HeapShape", [], agent="heap=dump,format=a,file=" + path)
    with open(path) as f:
        objs = OBJ.findall(f.read())
    sizes = {}
    for sz, cls in objs:
        sizes.setdefault(cls, set()).add(int(sz))
    zero = sorted(c for c, s in sizes.items() if 0 in s)
    mixed = sorted(c for c, s in sizes.items() if len(s) != 1)
    problems = []
    if not objs:
        problems.append("no OBJ line in %s" % path)
    if zero:
        problems.append("%d classes have objects of sz=0: %s" % (len(zero), zero[:5]))
    if mixed:
        problems.append("classes whose objects have several sizes: %s" % mixed[:5])
    r = subprocess.run([os.path.join(BUILD, "hprof"), "heap", path, "--json", "--top", "100000"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise Fail("hprof heap %s: rc %d: %s" % (path, r.returncode, r.stderr[-500:]))
    by_name = {c["name"]: c for c in json.loads(r.stdout)["classes"]}
    counts = {}
    for _sz, cls in objs:
        counts[cls] = counts.get(cls, 0) + 1
    wrong = [(cls, by_name.get(cls), n * min(sizes[cls])) for cls, n in counts.items()
             if (by_name.get(cls) or {}).get("shallow") != n * min(sizes[cls])]
    if wrong:
        problems.append("hprof heap: shallow bytes not count x sz for %d classes: %s" % (len(wrong), wrong[:3]))
    if problems:
        raise Fail("; ".join(problems))
    fd = sizes.get("jdk.internal.math.FDBigInteger")
    ctx.note("%d OBJ lines, %d classes; FDBigInteger sz=%s" % (len(objs), len(sizes), sorted(fd) if fd else "-"))
