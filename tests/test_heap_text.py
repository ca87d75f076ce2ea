"""`hprof heap` on the agent's HPROF text heap dumps (format=a; pytest tests,
run on each JDK with the ctx fixture of tests/conftest.py), against its
binary dumps of the same program (src/heapgraph/heap_text.c, docs/heap.md).

    heap_text_matches_binary  tests/java/HeapRetain.java (the JVMPI paper's
                 example: a byte[1000000] held by C.data held by D.c held by
                 a local of B.g; a static map, a ring, an array of arrays)
                 dumped on SIGQUIT with heap=all,format=a in one run and
                 heap=all,format=b,heap_dumper=walk in another (the
                 agent's walk both times).
                 `hprof heap --json` of the text: HeapRetain's classes with
                 the known counts and retained sizes, equal to the binary
                 dump's; the byte[]'s path (Java frame of thread main at the
                 marked line, D.c, C.data), the statics' paths (MAP, GRID,
                 RING) equal to the binary's, root kinds and fields; the
                 byte[]'s allocation site retaining it; the suspect; classes'
                 counts equal but for the JVM's own churn between two runs.
                 --html writes the page. The text cut short in its heap dump:
                 exit 1 naming the file and the line; a spoilt OBJ line: its
                 line named.
    heap_text_baseline  tests/java/HeapGrow.java under heap=all,format=a,
                 two SIGQUIT dumps (the file copied after the first): `hprof
                 heap AFTER --baseline BEFORE --json` says exactly +2,000
                 HeapGrow$Leak (+32,000 shallow, +2,064,000 retained) by class,
                 and by site the Leak objects at the marked line and their
                 byte[1000].
"""

import json
import shutil

from heap_runs import (BYTE_ARRAY, BYTES, C_RETAINED, D_RETAINED, ENTRIES, ENTRY_RETAINED, GRID_RETAINED, RING,
                       RING_RETAINED, hprof_heap, run_with_go_files)
from run import marked_line


def sigquit_dumps(ctx, main, gos, agent, tag, after_dump=None):
    """main with the agent's options; at each READY line a SIGQUIT dump (its
    "done." awaited), after_dump(n) called, then the next go file."""
    def at_ready(n, prog):
        prog.sigquit_dump(n)
        if after_dump:
            after_dump(n)
    run_with_go_files(ctx, main, gos, agent, at_ready, tag)


def test_heap_text_matches_binary(ctx):
    text, binary = ctx.path("retain.txt"), ctx.path("retain.hprof")
    sigquit_dumps(ctx, "HeapRetain", [ctx.path("go-a")], "heap=all,format=a,doe=n,file=" + text, "text")
    sigquit_dumps(ctx, "HeapRetain", [ctx.path("go-b")], "heap=all,format=b,heap_dumper=walk,doe=n,file=" + binary,
                  "binary")
    t = json.loads(hprof_heap(text, "--json", "--top", "500").stdout)
    b = json.loads(hprof_heap(binary, "--json", "--top", "500").stdout)
    problems = []
    tc, bc = ({c["name"]: c for c in r["classes"]} for r in (t, b))
    none = {"count": 0, "shallow": 0, "retained": 0}
    want = {"HeapRetain$D": (1, 16, D_RETAINED), "HeapRetain$C": (1, 16, C_RETAINED),
            "HeapRetain$Entry": (ENTRIES, ENTRIES * 16, ENTRIES * ENTRY_RETAINED),
            "HeapRetain$Ring": (RING, RING * 24, RING_RETAINED), "HeapRetain$Garbage": (0, 0, 0)}
    for n, w in want.items():
        for kind, classes in (("text", tc), ("binary", bc)):
            c = classes.get(n, none)
            if (c["count"], c["shallow"], c["retained"]) != w:
                problems.append("%s: %s count, shallow, retained %s, expected %s"
                                % (kind, n, (c["count"], c["shallow"], c["retained"]), w))
    # the JVM's own objects differ a little from one run to the next (and
    # hidden classes' names carry addresses): most classes' counts are equal
    shared = [n for n in tc if n in bc]
    same = [n for n in shared if tc[n]["count"] == bc[n]["count"]]
    if len(shared) < 0.9 * len(bc) or len(same) < 0.9 * len(shared):
        problems.append("classes: %d of the binary's %d in the text, %d of them with the same count"
                        % (len(shared), len(bc), len(same)))

    frame = "HeapRetain$B.g(HeapRetain.java:%d)" % marked_line("HeapRetain.java", "paper-wait")
    want_path = [{"root": "Java frame", "thread": "main", "frame": frame},
                 {"class": "HeapRetain$D", "field": "c"}, {"class": "HeapRetain$C", "field": "data"}]

    def find(report, pred):
        return next((x for x in report["dominators"] if pred(x)), None)

    for kind, report in (("text", t), ("binary", b)):
        big = find(report, lambda x: x["class"] == "byte[]" and x["retained"] == BYTE_ARRAY)
        if big is None or big["path"] != want_path or report["dominators"][0] is not big:
            problems.append("%s: the byte[%d] is not the biggest object with the path %s: %s" % (
                kind, BYTES, want_path, big and big["path"]))
        if not any(s["kind"] == "object" and s["class"] == "byte[]" and s["path"] == want_path
                   for s in report["suspects"]):
            problems.append("%s: no byte[] suspect with the paper's path" % kind)
        site = "HeapRetain$C.<init>(HeapRetain.java:%d)" % marked_line("HeapRetain.java", "site-data")
        if not any(s["frames"][:1] == [site] and s["retained"] == BYTE_ARRAY for s in report.get("sites", [])):
            problems.append("%s: no site %s retaining %d: %s" % (kind, site, BYTE_ARRAY, report.get("sites", [])[:3]))
    # the statics' paths: the same steps (root kind, fields, statics) in both
    for static, clazz, retained in (("MAP", "java.util.HashMap$Node[]", None), ("GRID", "int[][]", GRID_RETAINED),
                                    ("RING", "HeapRetain$Ring", RING_RETAINED)):
        step = {"class": "HeapRetain$Registry", "static": static}
        x, y = (find(r, lambda d: d["class"] == clazz and step in d["path"]) for r in (t, b))
        if x is None or y is None:
            problems.append("%s held by Registry.%s: text %s, binary %s" % (clazz, static, x, y))
        elif x["path"] != y["path"] or x["retained"] != y["retained"] or (retained and x["retained"] != retained):
            problems.append("%s held by Registry.%s: text %s retaining %d, binary %s retaining %d" % (
                clazz, static, x["path"], x["retained"], y["path"], y["retained"]))
    page = ctx.path("retain.html")
    hprof_heap(text, "--html", "-o", page)
    if "HeapRetain$D" not in open(page, errors="replace").read():
        problems.append("the page of the text dump names no HeapRetain$D")

    # cut short in its heap dump; an OBJ line spoilt
    lines = open(text, errors="replace").read().split("\n")
    begin = next(i for i, l in enumerate(lines) if l.startswith("HEAP DUMP BEGIN"))
    cut = ctx.path("cut.txt")
    with open(cut, "w") as f:
        f.write("\n".join(lines[:begin + 500]))
    r = hprof_heap(cut, expect_rc=1)
    if "%s: line %d: the heap dump that begins here has no HEAP DUMP END" % (cut, begin + 1) not in r.stderr:
        problems.append("the cut text: %s" % r.stderr.strip())
    obj = next(i for i, l in enumerate(lines) if l.startswith("OBJ "))
    lines[obj] = lines[obj].replace("sz=", "size=")
    spoilt = ctx.path("spoilt.txt")
    with open(spoilt, "w") as f:
        f.write("\n".join(lines))
    r = hprof_heap(spoilt, expect_rc=1)
    if "%s: line %d: no sz=N" % (spoilt, obj + 1) not in r.stderr:
        problems.append("the spoilt text: %s" % r.stderr.strip())
    assert not problems, "; ".join(problems)
    ctx.note("text %d objects, %d bytes; binary %d objects, %d bytes; %d of %d shared classes with equal counts"
             % (t["objects"], t["bytes"], b["objects"], b["bytes"], len(same), len(shared)))


def test_heap_text_baseline(ctx):
    path, before = ctx.path("grow.txt"), ctx.path("before.txt")
    go1, go2 = ctx.path("go1"), ctx.path("go2")

    def copy_first(n):
        if n == 1:
            shutil.copyfile(path, before)     # the file then holds the first dump only
    sigquit_dumps(ctx, "HeapGrow", [go1, go2], "heap=all,format=a,depth=8,doe=n,file=" + path, "grow", copy_first)
    report = json.loads(hprof_heap(path, "--baseline", before, "--json").stdout)
    want = {"count": 2000, "shallow": 2000 * 16, "retained": 2000 * (16 + 1016)}
    leak = {g["name"]: g for g in report["growth"]}.get("HeapGrow$Leak")
    assert leak == dict(name="HeapGrow$Leak", **want), \
        "growth of HeapGrow$Leak by class: %s, expected %s" % (leak, want)
    grow = "HeapGrow.main(HeapGrow.java:%d)" % marked_line("HeapGrow.java", "grow-more")
    data = "HeapGrow$Leak.<init>(HeapGrow.java:%d)" % marked_line("HeapGrow.java", "leak-data")
    sites = report.get("site_growth", [])
    leaks = [x for x in sites if grow in x["frames"][:2] and x["frames"][0] != data]
    arrays = [x for x in sites if x["frames"][:2] == [data, grow]]
    got = lambda xs: [{k: x[k] for k in ("count", "shallow", "retained")} for x in xs]
    want_arrays = {"count": 2000, "shallow": 2000 * 1016, "retained": 2000 * 1016}
    assert got(leaks) == [want] and got(arrays) == [want_arrays], \
        "growth at %s: %s and %s, expected %s and %s" % (grow, got(leaks), got(arrays), want, want_arrays)
    text = hprof_heap(path, "--baseline", before, "--top", "3").stdout
    assert "(the file holds 2 heap dumps: this is the last)" in text, \
        "the report does not say which of the text's two dumps it read (expected \"(the file holds 2 heap " \
        "dumps: this is the last)\"): %s" % text[:400]
    ctx.note("HeapGrow$Leak +2,000 (+2,064,000 retained) by class and at %s, exact" % grow)
