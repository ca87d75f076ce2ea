"""`build/hprof heap` (pytest tests, run on each JDK with the ctx fixture of
tests/conftest.py; docs/heap.md): retained sizes and paths to GC roots on a
heap whose answer is known (tests/java/HeapRetain.java, the JVMPI paper's
example), dumped three ways from one JVM: by the agent (heap=dump,format=b,
on SIGQUIT), by `jcmd GC.heap_dump` and by `jcmd GC.heap_dump -gz=1`.

    heap_analyze_paths     each dump: the byte[1000000] held by C.data held by
                           D.c held by a local of B.g, with its path from the
                           Java frame (thread main, B.g at the marked line);
                           retained sizes of D, C, the static map's entries,
                           a cycle of 50 and an array of arrays, by hand; no
                           garbage; the text report says the same
    heap_analyze_visualvm  VisualVM's heap library (jfluid-heap) on the agent's
                           and jcmd's dumps: every class's count and shallow
                           bytes equal, HeapRetain's classes' and objects'
                           retained sizes equal, all classes' retained within
                           1% in sum
    heap_analyze_errors    a dump cut short, a gzip cut short, a file that is
                           no dump: exit 1 and a message naming the file (and
                           the offset)
    heap_analyze_sites     HeapRetain under heap=all: retained bytes by
                           allocation site, the byte[1000000]'s site (C's
                           field initializer called from B.g) exact; none for
                           jcmd's dump, whose objects carry no traces
    heap_analyze_baseline  tests/java/HeapGrow.java dumped by jcmd before and
                           after 2,000 more Leak objects: `--baseline` says
                           exactly that growth, by class
    heap_analyze_suspects  tests/java/HeapLeak.java (the agent's and jcmd's
                           dumps): exactly its four leak suspects (a list's
                           array of 20,000 Leak, a linked chain of 8,000 Link
                           by its head, 8 Chunk objects each held by a
                           thread's local, a byte[] held by main's local),
                           their sizes and paths; HeapRetain's byte[] suspect
    heap_analyze_html      --html on HeapLeak's dump in headless Chromium: the
                           suspects drawn, the tree expanded down to a Leak
                           (#expand) with its "19,900 more" row summed
                           exactly, the histogram sorted by count (#sort=count),
                           no address outside the page
    heap_analyze_site_growth  HeapGrow under heap=all dumped twice (SIGQUIT):
                           --baseline's growth by allocation site is exactly
                           the 2,000 new Leak objects at the marked line and
                           their byte[1000]
"""

import html
import json
import os
import re
import shutil
import subprocess

import pytest

from heap_runs import (BYTE_ARRAY, BYTES, C_RETAINED, D_RETAINED, ENTRIES, ENTRY_RETAINED, GRID_RETAINED, RING,
                       RING_RETAINED, hprof_heap, run_with_go_files)
from run import BUILD, ROOT, TESTS_DIR, marked_line

VISUALVM_HEAP_JAR = "/usr/share/visualvm/visualvm/modules/org-graalvm-visualvm-lib-jfluid-heap.jar"

# What HeapLeak.java builds.
LEAKS, LEAK_BYTES, BIG, CHUNKS, CHUNK_BYTES, LINKS, LINK_BYTES = 20000, 504, 4000000, 8, 500000, 8000, 496
LEAK_RETAINED = 16 + 16 + LEAK_BYTES                # a Leak and its byte[]
CACHE_RETAINED = 16 + 4 * LEAKS + LEAKS * LEAK_RETAINED
CHUNK_RETAINED = 16 + 16 + CHUNK_BYTES
LINK_RETAINED = 24 + 16 + LINK_BYTES                # a Link (12 + 4 + 4, rounded up) and its byte[]

# Dumps several tests read, made once per JDK: {(what, JDK home): {name: path}}.
_made = {}


def jcmd_heap_dump(ctx, pid, *args):
    """`jcmd PID GC.heap_dump ARGS...`, whose last argument is the file."""
    r = subprocess.run([os.path.join(ctx.jdk, "bin", "jcmd"), str(pid), "GC.heap_dump"] + list(args),
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or not os.path.exists(args[-1]):
        pytest.fail("jcmd GC.heap_dump %s: expected exit 0 and the file, found exit %d%s: %s" % (
            " ".join(args), r.returncode, "" if os.path.exists(args[-1]) else " and no file",
            (r.stdout + r.stderr)[-400:]))


def heap_retain(ctx, d, agent, jcmd_dumps=()):
    """HeapRetain run in directory d with the agent's options: once READY,
    `jcmd GC.heap_dump ARGS` for each ARGS of jcmd_dumps, then SIGQUIT (the
    agent's dump), then its go file."""
    def at_ready(n, prog):
        for args in jcmd_dumps:
            jcmd_heap_dump(ctx, prog.pid, *args)
        prog.sigquit_dump(1)
    run_with_go_files(ctx, "HeapRetain", [os.path.join(d, "go")], agent, at_ready, "retain", cwd=d)


def dumps(ctx):
    """The three dumps of one HeapRetain run (made once per JDK)."""
    key = ("retain", ctx.jdk)
    if key in _made:
        return _made[key]
    d = os.path.join(BUILD, "tests", "heap_analyze", os.path.basename(ctx.jdk))
    os.makedirs(d, exist_ok=True)
    files = {"agent": os.path.join(d, "agent.hprof"), "jcmd": os.path.join(d, "jcmd.hprof"),
             "jcmd-gz": os.path.join(d, "jcmd.hprof.gz")}
    for f in files.values():
        if os.path.exists(f):
            os.remove(f)
    heap_retain(ctx, d, "heap=dump,format=b,doe=n,file=" + files["agent"],
                ([files["jcmd"]], ["-gz=1", files["jcmd-gz"]]))
    _made[key] = files
    return files


def all_dump(ctx):
    """HeapRetain's heap=all dump by the JVM's dumper with our allocation
    traces and records merged in (heap_dumper=jvm), once per JDK."""
    key = ("retain-all", ctx.jdk)
    if key in _made:
        return _made[key]
    d = os.path.join(BUILD, "tests", "heap_analyze", "all-" + os.path.basename(ctx.jdk))
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "agent-all.hprof")
    if os.path.exists(path):
        os.remove(path)
    heap_retain(ctx, d, "heap=all,format=b,doe=n,heap_dumper=jvm,file=" + path)
    _made[key] = path
    return path


def leak_dumps(ctx):
    """HeapLeak dumped by the agent (SIGQUIT) and by jcmd, once per JDK."""
    key = ("leak", ctx.jdk)
    if key in _made:
        return _made[key]
    d = os.path.join(BUILD, "tests", "heap_analyze", "leak-" + os.path.basename(ctx.jdk))
    os.makedirs(d, exist_ok=True)
    files = {"agent": os.path.join(d, "agent.hprof"), "jcmd": os.path.join(d, "jcmd.hprof")}
    for f in files.values():
        if os.path.exists(f):
            os.remove(f)

    def dump_both(n, prog):
        jcmd_heap_dump(ctx, prog.pid, files["jcmd"])
        prog.sigquit_dump(1)
    run_with_go_files(ctx, "HeapLeak", [os.path.join(d, "go")], "heap=dump,format=b,doe=n,file=" + files["agent"],
                      dump_both, "leak", cwd=d)
    _made[key] = files
    return files


def check_paths(name, path, problems):
    report = json.loads(hprof_heap(path, "--json", "--top", "500").stdout)
    classes = {c["name"]: c for c in report["classes"]}
    frame = "HeapRetain$B.g(HeapRetain.java:%d)" % marked_line("HeapRetain.java", "paper-wait")

    def cls(n):
        return classes.get(n, {"count": 0, "shallow": 0, "retained": 0})

    want = {"HeapRetain$D": (1, D_RETAINED), "HeapRetain$C": (1, C_RETAINED),
            "HeapRetain$Entry": (ENTRIES, ENTRIES * ENTRY_RETAINED), "HeapRetain$Ring": (RING, RING_RETAINED),
            "HeapRetain$Garbage": (0, 0)}
    for n, (count, retained) in want.items():
        got = cls(n)
        if (got["count"], got["retained"]) != (count, retained):
            problems.append("%s: %s has %d instances retaining %d bytes, expected %d retaining %d"
                            % (name, n, got["count"], got["retained"], count, retained))
    doms = report["dominators"]
    big = [x for x in doms if x["class"] == "byte[]" and x["retained"] == BYTE_ARRAY]
    want_path = [{"root": "Java frame", "thread": "main", "frame": frame},
                 {"class": "HeapRetain$D", "field": "c"}, {"class": "HeapRetain$C", "field": "data"}]
    if not big:
        problems.append("%s: no byte[%d] among the biggest objects: %s" % (
            name, BYTES, [(x["class"], x["retained"]) for x in doms[:5]]))
    elif big[0]["path"] != want_path:
        problems.append("%s: the byte[%d]'s path is %s, expected %s" % (name, BYTES, big[0]["path"], want_path))
    elif doms[0] is not big[0]:
        problems.append("%s: the biggest object is %s, not the byte[%d]" % (name, doms[0]["class"], BYTES))

    sus = [x for x in report["suspects"] if x["kind"] == "object" and x["class"] == "byte[]"
           and x["retained"] == BYTE_ARRAY]
    if len(sus) != 1 or sus[0]["path"] != want_path:
        problems.append("%s: no leak suspect byte[%d] with the path %s: %s" % (
            name, BYTES, want_path, [(x["class"], x["retained"], x["path"]) for x in report["suspects"]]))

    def held_by_static(static, clazz, retained):
        for x in doms:
            steps = x["path"]
            if x["class"] == clazz and {"class": "HeapRetain$Registry", "static": static} in steps:
                if retained is not None and x["retained"] != retained:
                    problems.append("%s: %s under Registry.%s retains %d, expected %d" % (
                        name, clazz, static, x["retained"], retained))
                if "root" not in steps[0]:
                    problems.append("%s: a path does not begin at a root: %s" % (name, steps))
                return x
        problems.append("%s: no %s held by Registry.%s among the biggest objects" % (name, clazz, static))

    held_by_static("GRID", "int[][]", GRID_RETAINED)
    # the table's own size and the keys' depend on the map: its entries are what is known
    table = held_by_static("MAP", "java.util.HashMap$Node[]", None)
    if table is not None and table["retained"] < ENTRIES * ENTRY_RETAINED:
        problems.append("%s: Registry.MAP's table retains %d, less than its entries' %d" % (
            name, table["retained"], ENTRIES * ENTRY_RETAINED))
    ring = held_by_static("RING", "HeapRetain$Ring", RING_RETAINED)
    if ring is not None and ring["path"][-1] != {"class": "HeapRetain$Registry", "static": "RING"}:
        problems.append("%s: the first Ring's path ends %s" % (name, ring["path"][-1]))
    text = hprof_heap(path, "--top", "5").stdout
    if "root: Java frame, thread \"main\", " + frame not in text or "-> HeapRetain$D.c" not in text:
        problems.append("%s: the text report does not show the byte[]'s path: %s" % (name, text[-800:]))
    return report


def test_heap_analyze_paths(ctx):
    files = dumps(ctx)
    problems = []
    reports = {name: check_paths(name, path, problems) for name, path in files.items()}
    assert not problems, "; ".join(problems)
    ctx.note("paths and retained sizes exact in the agent's, jcmd's and jcmd -gz=1's dumps (%s objects)"
             % ", ".join(str(r["objects"]) for r in reports.values()))


def test_heap_analyze_visualvm(ctx):
    jar = VISUALVM_HEAP_JAR
    if not os.path.isfile(jar):
        pytest.skip("VisualVM's heap library %s is missing: apt-get install visualvm" % jar)
    files = dumps(ctx)
    classes_dir = ctx.path("visualvm-classes")
    src = os.path.join(TESTS_DIR, "tools", "VisualVmRetained.java")
    r = subprocess.run([os.path.join(ctx.jdk, "bin", "javac"), "-nowarn", "-cp", jar, "-d", classes_dir, src],
                       capture_output=True, text=True)
    assert r.returncode == 0, "javac VisualVmRetained: %s" % r.stderr[-400:]
    files = dict(files, **{"agent heap=all (the JVM's dumper)": all_dump(ctx)})
    problems, notes = [], []
    for name in ("agent", "jcmd", "agent heap=all (the JVM's dumper)"):
        ours = json.loads(hprof_heap(files[name], "--json", "--top", "1").stdout)
        mine = {c["name"]: c for c in ours["classes"]}
        r = subprocess.run([ctx.java, "-cp", jar + ":" + classes_dir, "VisualVmRetained", files[name],
                            "HeapRetain$D", "HeapRetain$C"],
                           capture_output=True, text=True, timeout=300, cwd=ctx.out)
        assert r.returncode == 0, "VisualVM's library on %s: %s" % (name, (r.stderr or r.stdout)[-600:])
        theirs, objects = {}, []
        for line in r.stdout.splitlines():
            f = line.split()
            if f[0] == "class":
                theirs[f[1]] = tuple(int(x) for x in f[2:5])
            elif f[0] == "object":
                objects.append((f[1], int(f[3]), int(f[4])))
        if set(theirs) != set(mine):
            problems.append("%s: classes only VisualVM has: %s; only ours: %s" % (
                name, sorted(set(theirs) - set(mine))[:5], sorted(set(mine) - set(theirs))[:5]))
        off, diff, total = [], 0, 0
        for n, (count, shallow, retained) in theirs.items():
            c = mine.get(n)
            if c is None:
                continue
            if (c["count"], c["shallow"]) != (count, shallow):
                problems.append("%s: %s: %d instances of %d bytes, VisualVM %d of %d" % (
                    name, n, c["count"], c["shallow"], count, shallow))
            if n.startswith("HeapRetain") and c["retained"] != retained:
                problems.append("%s: %s retains %d, VisualVM %d" % (name, n, c["retained"], retained))
            diff += abs(c["retained"] - retained)
            total += retained
            if c["retained"] != retained:
                off.append(n)
        if diff > total // 100:
            problems.append("%s: retained sizes by class differ from VisualVM's by %d bytes in all, "
                            "more than 1%% of %d" % (name, diff, total))
        for clazz, size, retained in objects:
            want = {"HeapRetain$D": D_RETAINED, "HeapRetain$C": C_RETAINED}[clazz]
            if retained != want:
                problems.append("%s: VisualVM says %s retains %d (hand: %d)" % (name, clazz, retained, want))
        notes.append("%s: %d classes, counts and shallow exact, retained exact for %d, the rest within "
                     "%.3f%% in sum (%s)" % (name, len(theirs), len(theirs) - len(off),
                                             100.0 * diff / max(total, 1), ", ".join(sorted(off)[:4])))
    assert not problems, "; ".join(problems)
    ctx.note("; ".join(notes))


def test_heap_analyze_errors(ctx):
    files = dumps(ctx)
    data = open(files["jcmd"], "rb").read()
    problems = []
    cut = ctx.path("cut.hprof")
    with open(cut, "wb") as f:
        f.write(data[:len(data) // 2])
    r = hprof_heap(cut, expect_rc=1)
    if not r.stderr.startswith("hprof: " + cut + ": offset ") or "truncated" not in r.stderr:
        problems.append("a dump cut in half: expected \"hprof: %s: offset ...\" saying truncated, found %r"
                        % (cut, r.stderr))
    gz = open(files["jcmd-gz"], "rb").read()
    cut_gz = ctx.path("cut.hprof.gz")
    with open(cut_gz, "wb") as f:
        f.write(gz[:len(gz) // 2])
    r = hprof_heap(cut_gz, expect_rc=1)
    if cut_gz not in r.stderr or "gzip" not in r.stderr:
        problems.append("a gzip dump cut in half: expected a message naming the file and gzip, found %r"
                        % r.stderr)
    not_dump = os.path.join(ROOT, "tests", "java", "HeapRetain.java")
    r = hprof_heap(not_dump, expect_rc=1)
    if "not an HPROF binary file" not in r.stderr:
        problems.append("a Java source: expected \"not an HPROF binary file\", found %r" % r.stderr)
    assert not problems, "; ".join(problems)
    ctx.note("refused with the file and the offset: a cut dump, a cut gzip, a source file")


def test_heap_analyze_baseline(ctx):
    before, after = ctx.path("before.hprof"), ctx.path("after.hprof")

    def dump(n, prog):
        jcmd_heap_dump(ctx, prog.pid, (before, after)[n - 1])
    run_with_go_files(ctx, "HeapGrow", [ctx.path("go1"), ctx.path("go2")], None, dump, "grow")
    report = json.loads(hprof_heap(after, "--baseline", before, "--json").stdout)
    growth = {g["name"]: g for g in report.get("growth", [])}
    leak = growth.get("HeapGrow$Leak")
    want = {"name": "HeapGrow$Leak", "count": 2000, "shallow": 2000 * 16, "retained": 2000 * (16 + 1016)}
    assert leak == want, "growth of HeapGrow$Leak: %s, expected %s" % (leak, want)
    ranks = [g["retained"] for g in report["growth"]]
    assert ranks == sorted(ranks, reverse=True), \
        "the growth list is not largest retained growth first: %s" % ranks[:10]
    text = hprof_heap(after, "--baseline", before, "--top", "5").stdout
    assert any(l.split()[-1:] == ["HeapGrow$Leak"] and "+2,064,000" in l for l in text.splitlines()), \
        "the text report's growth table lacks HeapGrow$Leak +2,064,000: %s" % text[-800:]
    ctx.note("HeapGrow$Leak: +2,000 objects, +2,064,000 bytes retained, exact; %d classes changed"
             % len(growth))


def test_heap_analyze_sites(ctx):
    path = ctx.path("all.hprof")
    heap_retain(ctx, ctx.out, "heap=all,format=b,depth=8,doe=n,file=" + path)
    sites = json.loads(hprof_heap(path, "--json", "--top", "50").stdout).get("sites", [])
    data = "HeapRetain$C.<init>(HeapRetain.java:%d)" % marked_line("HeapRetain.java", "site-data")
    caller = "HeapRetain$B.g(HeapRetain.java:%d)" % marked_line("HeapRetain.java", "paper-new")
    mine = [x for x in sites if x["frames"][:2] == [data, caller]]
    assert len(mine) == 1 and (mine[0]["count"], mine[0]["retained"]) == (1, BYTE_ARRAY), \
        "the site %s <- %s: %s (expected one object retaining %d); top sites: %s" % (
            data, caller, mine, BYTE_ARRAY, [(x["frames"][:1], x["retained"]) for x in sites[:5]])
    assert sites[0]["retained"] >= BYTE_ARRAY and sites == sorted(sites, key=lambda x: -x["retained"]), \
        "sites not largest retained first: %s" % [x["retained"] for x in sites[:5]]
    plain = json.loads(hprof_heap(dumps(ctx)["jcmd"], "--json", "--top", "1").stdout)
    assert "sites" not in plain, "jcmd's dump, whose objects carry no traces, got sites: %s" % plain.get("sites")[:2]
    ctx.note("%d sites; %s <- %s retains %d, exact" % (len(sites), data, caller, BYTE_ARRAY))


def test_heap_analyze_suspects(ctx):
    files = leak_dumps(ctx)
    main_frame = "HeapLeak.main(HeapLeak.java:%d)" % marked_line("HeapLeak.java", "big-local")
    hold_frame = "HeapLeak.hold(HeapLeak.java:%d)" % marked_line("HeapLeak.java", "chunk-local")
    problems, notes = [], []
    for name, path in files.items():
        sus = json.loads(hprof_heap(path, "--json", "--top", "5").stdout)["suspects"]
        got = sorted(((x["kind"], x["class"], x["retained"]) for x in sus), key=lambda x: -x[2])
        want = [("object", "java.lang.Object[]", CACHE_RETAINED), ("object", "HeapLeak$Link", LINKS * LINK_RETAINED),
                ("class", "HeapLeak$Chunk", CHUNKS * CHUNK_RETAINED), ("object", "byte[]", 16 + BIG)]
        if got != want:
            problems.append("%s: suspects %s, expected %s" % (name, got, want))
            continue
        cache, chain, chunks, big = sorted(sus, key=lambda x: -x["retained"])
        # the chain by its head: the link the static holds, which holds the other links
        if chain["path"][-1] != {"class": "HeapLeak", "static": "CHAIN"} or chain.get("holds") != {
                "class": "HeapLeak$Link", "count": LINKS - 1, "retained": (LINKS - 1) * LINK_RETAINED}:
            problems.append("%s: the chain: %s, holding %s" % (name, chain["path"], chain.get("holds")))
        if cache.get("holds") != {"class": "HeapLeak$Leak", "count": LEAKS, "retained": LEAKS * LEAK_RETAINED}:
            problems.append("%s: the cache's array holds %s" % (name, cache.get("holds")))
        if "root" not in cache["path"][0] or cache["path"][-2:] != [
                {"class": "HeapLeak", "static": "CACHE"}, {"class": "java.util.ArrayList", "field": "elementData"}]:
            problems.append("%s: the cache's path: %s" % (name, cache["path"]))
        if chunks["count"] != CHUNKS or len(chunks["path"]) != 1 or chunks["path"][0].get("frame") != hold_frame \
                or not chunks["path"][0].get("thread", "").startswith("chunk-"):
            problems.append("%s: the Chunks: %s" % (name, chunks))
        if big["path"] != [{"root": "Java frame", "thread": "main", "frame": main_frame}]:
            problems.append("%s: the big byte[]'s path: %s" % (name, big["path"]))
        text = hprof_heap(path, "--top", "3").stdout
        for line in ("retains 10,800,016 bytes", "10,720,000 of them in 20,000 instances of HeapLeak$Leak",
                     "8 instances of HeapLeak$Chunk, held by no single object, retain 4,000,256 bytes",
                     "root: Java frame, thread \"main\", " + main_frame):
            if line not in text:
                problems.append("%s: the text report lacks %r" % (name, line))
        notes.append("%s: %s" % (name, ", ".join("%s %.1f%%" % (x["class"], x["percent"]) for x in sus)))
    assert not problems, "; ".join(problems)
    ctx.note("four suspects exact, sizes and paths: " + "; ".join(notes))


def test_heap_analyze_html(ctx):
    chromium = shutil.which("chromium")
    if not chromium:
        pytest.skip("no chromium (Debian package chromium): the page is not loaded in a browser")
    page = ctx.path("heap.html")
    r = hprof_heap(leak_dumps(ctx)["jcmd"], "--html", expect_rc=2)
    assert "--html writes a page: name its file with -o" in r.stderr, \
        "--html without -o: expected \"--html writes a page: name its file with -o\", found %r" % r.stderr
    hprof_heap(leak_dumps(ctx)["jcmd"], "--html", "-o", page)
    raw = open(page, encoding="utf-8").read()
    outside = re.search(r".{0,40}((src|href)\s*=|https?://|@import).{0,40}", raw)
    assert not outside, "the page refers to something outside itself: %s" % (outside and outside.group(0))

    def dom_of(fragment, shot=None):
        extra = ["--screenshot=" + shot] if shot else ["--dump-dom"]
        r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                            "--user-data-dir=" + ctx.path("chromium-profile"), "--window-size=1200,1600"]
                           + extra + ["file://" + page + fragment],
                           capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, cwd=ctx.out)
        assert r.returncode == 0, "chromium: expected exit 0, found %d: %s" % (r.returncode, r.stderr[-400:])
        return r.stdout
    dom = dom_of("#expand=12")
    dom_of("#expand=12", ctx.path("heap.png"))
    m = re.search(r'<p id="status" data-state="(\w+)">([^<]*)</p>', dom)
    assert m and m.group(1) == "ok", "the page's script did not finish (expected data-state=\"ok\"): %s" % (
        m.group(0) if m else dom[:400])
    problems = []
    rows = [(html.unescape(n).rsplit(" ", 1)[0], int(r.replace(",", ""))) for n, r in re.findall(
        r'<span class="name"><span class="bar"[^>]*></span>([^<]*)</span><span class="num retained">([^<]*)</span>',
        dom)]
    leak_rows = [r for r in rows if r == ("HeapLeak$Leak", LEAK_RETAINED)]
    if len(leak_rows) != 100:
        problems.append("%d rows of HeapLeak$Leak retaining %d (expected the 100 largest children shown)" % (
            len(leak_rows), LEAK_RETAINED))
    if ("byte[]", 16 + LEAK_BYTES) not in rows:
        problems.append("the first Leak was not opened down to its byte[%d]" % LEAK_BYTES)
    more = "%s more, retaining %s bytes" % (format(LEAKS - 100, ","), format((LEAKS - 100) * LEAK_RETAINED, ","))
    if more not in dom:
        problems.append("no row %r" % more)
    for text in ("20,000 instances of HeapLeak$Leak", "-&gt; HeapLeak.CACHE (static)",
                 "8 instances of HeapLeak$Chunk"):
        if text not in dom:
            problems.append("the suspects lack %r" % text)
    by_count = dom_of("#sort=count")
    counts = [int(c.replace(",", "")) for c in re.findall(
        r'<tr><td class="num">[\d,]+</td><td class="num">[\d,]+</td><td class="num">([\d,]+)</td>', by_count)]
    if len(counts) < 100 or counts != sorted(counts, reverse=True) or 'data-sort="count"' not in by_count:
        problems.append("the histogram sorted by count: expected at least 100 rows in decreasing order, "
                        "found %d: %s" % (len(counts), counts[:5]))
    assert not problems, "; ".join(problems)
    ctx.note("%d-byte page; %s; %d tree rows drawn, %d histogram rows" % (
        len(raw.encode()), m.group(2), len(rows), len(counts)))


def test_heap_analyze_site_growth(ctx):
    path, before = ctx.path("all.hprof"), ctx.path("before.hprof")
    for f in (path, before):
        if os.path.exists(f):
            os.remove(f)

    def dump(n, prog):
        prog.sigquit_dump(n)
        if n == 1:
            shutil.copyfile(path, before)     # the file then holds the first dump only
    run_with_go_files(ctx, "HeapGrow", [ctx.path("go1"), ctx.path("go2")],
                      "heap=all,format=b,depth=8,doe=n,file=" + path, dump, "grow")
    report = json.loads(hprof_heap(path, "--baseline", before, "--json").stdout)
    grow = "HeapGrow.main(HeapGrow.java:%d)" % marked_line("HeapGrow.java", "grow-more")
    data = "HeapGrow$Leak.<init>(HeapGrow.java:%d)" % marked_line("HeapGrow.java", "leak-data")
    sites = report.get("site_growth", [])
    # the Leak objects' own site: their constructor's first frame, called at the marked line
    leaks = [x for x in sites if grow in x["frames"][:2] and x["frames"][0] != data]
    arrays = [x for x in sites if x["frames"][:2] == [data, grow]]
    want_leaks = {"count": 2000, "shallow": 2000 * 16, "retained": 2000 * (16 + 1016)}
    want_arrays = {"count": 2000, "shallow": 2000 * 1016, "retained": 2000 * 1016}
    got = lambda xs: [{k: x[k] for k in ("count", "shallow", "retained")} for x in xs]  # noqa: E731
    assert got(leaks) == [want_leaks] and got(arrays) == [want_arrays], \
        "growth at %s: %s and %s, expected %s and %s; top sites: %s" % (
            grow, leaks, arrays, want_leaks, want_arrays, [(x["frames"][:2], x["retained"]) for x in sites[:4]])
    # (above them: the list's new array, and the list, which retain all the Leak objects)
    assert [x["retained"] for x in sites] == sorted((x["retained"] for x in sites), reverse=True), \
        "site growth not largest retained first: %s" % [(x["frames"][:2], x["retained"]) for x in sites[:4]]
    leak_class = {g["name"]: g for g in report["growth"]}.get("HeapGrow$Leak")
    assert leak_class == dict(name="HeapGrow$Leak", **want_leaks), \
        "growth of HeapGrow$Leak by class: %s, expected %s" % (leak_class, want_leaks)
    text = hprof_heap(path, "--baseline", before, "--top", "3").stdout
    assert "Growth since the baseline by allocation site" in text and grow in text, \
        "the text report lacks the growth by site at %s: %s" % (grow, text[-800:])
    ctx.note("%d sites changed; %s: +2,000 Leak (+2,064,000 retained) and +2,000 byte[1000], exact"
             % (len(sites), grow))
