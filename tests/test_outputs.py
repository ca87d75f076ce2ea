"""pprof=, flamegraph= and collapsed= tests (pytest tests, run on each JDK with
the ctx fixture of tests/conftest.py): the whole-stack outputs of one run
against the HPROF text report of the same run, which must agree sample for
sample.

    outputs_cpu         CpuSplit, cpu=samples,depth=4: the CPU SAMPLES total,
                        the collapsed sum and the pprof sample sum are equal;
                        every method's self count (the leaf of a stack, the
                        top of a TRACE) is the same in all three; cpu values
                        are samples x interval; frames have files and line
                        numbers; partA/partB's split right; the flame graph
                        names the methods; `go tool pprof` reads the file and
                        counts the same total
    outputs_deep        DeepStack, a recursion 40 frames deep, depth=4: the
                        TRACEs stop at 4 frames, pprof and collapsed stacks go
                        down to main (at least 40 frames), self counts agree
    outputs_heap        AllocTruth, heap=sites: pprof's alloc_objects and
                        inuse_objects of every site exactly the program's
                        truth and SITES' counts (the allocated class a frame
                        above the allocating method), totals in objects and
                        bytes equal to SITES'; collapsed sums alloc_space
    outputs_heap_sampled  heap_sample=: estimated counts in pprof scaled as
                        SITES scales them: per class and in total, equal
    outputs_lock        Contention, monitor=y: two profiles, lock.lock.pb.gz
                        (contentions per lock class equal MONITOR TIME's
                        counts) and lock.wait.pb.gz (waits MONITOR WAIT
                        TIME's), delays their times; each collapsed file sums
                        its pprof's delay
    outputs_wait        EnterLine, monitor=y: the waits are a profile of their
                        own in pprof=, collapsed= and flamegraph= (p.wait.pb.gz,
                        c.wait.txt, a "Monitor waits" graph): its delay within
                        1 ms of MONITOR WAIT TIME's total, its count that of
                        the section, the waiter's Object.wait the program's
                        own time, and no wait in the lock profile
    outputs_times       TimesTruth, cpu=times,depth=4: pprof's calls per method
                        (leaf) equal CPU TIME's counts, and the program's
                        exact truths (hot 1,000,000, fib 635,621, ...); call
                        and CPU totals equal (CPU to the ms CPU TIME prints);
                        collapsed sums the CPU ns per leaf as pprof does; the
                        stacks are whole (rec(50): exactly 100 calls at each
                        recursion depth 1..51, down to main); the flame graph
                        names the methods; `go tool pprof` counts the calls
    outputs_two         cpu=samples and monitor=y at once: prof.cpu.pb.gz,
                        prof.lock.pb.gz and prof.wait.pb.gz (c.cpu.txt,
                        c.lock.txt, c.wait.txt), each said on
                        stderr, no file by the plain name; one flame-graph page
                        with both graphs
    outputs_lambdas     Lambdas (four lambdas and a method reference, hidden
                        classes named by the JVM per run) run twice with
                        cpu=samples and file=, collapsed=, pprof=, flamegraph=:
                        no Java frame name in any output holds an address
                        (0x), the lambda frames are named alike in both runs
                        and in all four outputs, and `hprof diff` of the two
                        text files pairs them (before and after both counted)
    outputs_bad_path    pprof= in a missing directory: the JVM stops at
                        start-up with a message naming pprof= and the path
"""

import json
import math
import os
import re
import subprocess
from collections import Counter

import pytest

import heap_sites
from hprof_text import ms_of
from pprof_reader import go_pprof_total, read_pprof
from run import parse_collapsed, parse_cpu_time, parse_profile, truths

INTERVAL_NS = 10 * 1000 * 1000


# Every run has cutoff=0: the text report leaves rows under cutoff= out
# (their samples stay in its total), the whole-stack outputs do not.


def text_self_counts(prof, sec):
    out = Counter()
    for r in sec.rows:
        t = prof.traces[r.trace]
        out[leaf_name(t.top) if t.top else "<empty>"] += r.count
    return out


def leaf_name(frame):
    """A TRACE frame as the whole-stack outputs name it: a native
    function (class "[libfoo.so]", native=y) by its name alone."""
    if frame.cls.startswith("[") and frame.cls != "[unwalkable]":
        return frame.method
    return frame.qualname


def as_text(counts):
    """Whole-stack names as the HPROF text file writes them: spaces and
    parentheses of C++ names become '_', '[' and ']'."""
    out = Counter()
    for name, n in counts.items():
        out[name.replace(" ", "_").replace("(", "[").replace(")", "]")] += n
    return out


def compare_counts(what, a, b, problems):
    diff = {k: (a.get(k, 0), b.get(k, 0)) for k in set(a) | set(b) if a.get(k, 0) != b.get(k, 0)}
    if diff:
        problems.append("%s differ: %s" % (what, sorted(diff.items())[:6]))


def check_go_pprof(ctx, path, index, want, problems):
    got = go_pprof_total(ctx, path, index)
    if got is None:
        ctx.note("go tool pprof not installed (scripts/ensure-test-tools installs golang-go): "
                 "the file was checked by the test's own decoder only")
        return
    rc, total, out = got
    if rc != 0 or total is None:
        problems.append("go tool pprof -top failed (rc %d): %s" % (rc, out.strip()[-300:]))
    elif total != want:
        problems.append("go tool pprof counts %d %s, expected %d" % (total, index, want))
    else:
        ctx.note("go tool pprof -top: %d %s, as the report" % (total, index))


def cpu_run(ctx, main, args, extra):
    paths = {k: ctx.path(n) for k, n in (("text", "cpu.hprof.txt"), ("pprof", "cpu.pb.gz"),
                                         ("collapsed", "cpu.collapsed"), ("flamegraph", "cpu.html"))}
    agent = "cpu=samples,cutoff=0,%s,file=%s,pprof=%s,collapsed=%s,flamegraph=%s" % (
        extra, paths["text"], paths["pprof"], paths["collapsed"], paths["flamegraph"])
    r = ctx.run(main, args, agent=agent)
    prof = parse_profile(paths["text"])
    if not prof.sections:
        pytest.fail("no CPU SAMPLES section")
    return r, paths, prof, prof.final, read_pprof(paths["pprof"]), parse_collapsed(paths["collapsed"])


def check_cpu_agreement(ctx, prof, sec, pp, stacks, problems):
    col_total = sum(c for _, c in stacks)
    ctx.note("totals: text %d, collapsed %d, pprof %d samples" % (sec.total, col_total, pp.total("samples")))
    if not sec.total:
        problems.append("no samples")
    if not (sec.total == col_total == pp.total("samples")):
        problems.append("totals differ: text %d, collapsed %d, pprof %d"
                        % (sec.total, col_total, pp.total("samples")))
    if pp.total("cpu") != pp.total("samples") * INTERVAL_NS:
        problems.append("pprof cpu %d ns is not samples x 10 ms" % pp.total("cpu"))
    if pp.period_type != ("cpu", "nanoseconds") or pp.period != INTERVAL_NS:
        problems.append("pprof period %r %d, expected cpu/nanoseconds 10000000" % (pp.period_type, pp.period))
    text = text_self_counts(prof, sec)
    compare_counts("self counts (text vs pprof)", text, as_text(pp.by_leaf("samples")), problems)
    leaves = Counter()
    for frames, count in stacks:
        leaves[frames[-1]] += count
    compare_counts("self counts (text vs collapsed)", text, as_text(leaves), problems)
    return text


def test_outputs_cpu(ctx):
    r, paths, prof, sec, pp, stacks = cpu_run(ctx, "CpuSplit", ["3000"], "depth=4")
    problems = []
    text = check_cpu_agreement(ctx, prof, sec, pp, stacks, problems)
    a, b = text.get("CpuSplit.partA", 0), text.get("CpuSplit.partB", 0)
    m = re.search(r"TRUTH partA_ns=(\d+) partB_ns=(\d+)", r.stderr)
    if m and a + b:
        truth = int(m.group(1)) / float(int(m.group(1)) + int(m.group(2)))
        ctx.note("partA %d, partB %d samples: %.1f%% (truth %.1f%%)" % (a, b, 100.0 * a / (a + b), 100 * truth))
        # A sanity check only (cpu_split measures accuracy, with ten times
        # the samples): ~300 samples at 10 ms have a standard error of
        # about 2.7 points, so a fixed 3-point bound failed one run in four.
        bound = max(0.03, 4 * math.sqrt(truth * (1 - truth) / (a + b)))
        if abs(a / float(a + b) - truth) > bound:
            problems.append("partA share %.1f%% off the truth %.1f%% by more than %.1f points (4 standard "
                            "errors)" % (100.0 * a / (a + b), 100 * truth, 100 * bound))
    lines = [(f, ln) for frames, _, _ in pp.samples for (name, f, ln) in frames[:1]
             if name in ("CpuSplit.partA", "CpuSplit.partB")]
    if not lines or not all(f == "CpuSplit.java" and ln > 0 for f, ln in lines):
        problems.append("partA/partB frames lack CpuSplit.java and a line number: %r" % lines[:3])
    html = open(paths["flamegraph"], encoding="utf-8", errors="replace").read()
    missing = [m for m in ("CpuSplit.partA", "CpuSplit.partB", "CpuSplit.workerLoop") if m not in html]
    if missing:
        problems.append("flame graph lacks %s" % missing)
    check_go_pprof(ctx, paths["pprof"], "samples", sec.total, problems)
    assert not problems, "; ".join(problems)


def test_outputs_deep(ctx):
    _r, _paths, prof, sec, pp, stacks = cpu_run(ctx, "DeepStack", ["40", "1500"], "depth=4")
    problems = []
    check_cpu_agreement(ctx, prof, sec, pp, stacks, problems)
    longest = max((len(t.frames) for t in prof.traces.values()), default=0)
    if longest > 4:
        problems.append("a TRACE has %d frames with depth=4" % longest)
    deep = [frames for frames, _, _ in pp.samples if frames and frames[0][0] == "DeepStack.spin"]
    depths = sorted(sum(1 for f in fr if f[0] == "DeepStack.descend") for fr in deep)
    ctx.note("pprof stacks in spin: %d, descend frames in them: %s" % (len(deep), depths[-3:]))
    if not deep or depths[-1] < 40:
        problems.append("no pprof stack with spin under 40 descend frames (most: %s)" % depths[-1:])
    elif any(fr[-1][0] != "DeepStack.main" for fr in deep if len(fr) > 40):
        problems.append("deep pprof stacks do not end in DeepStack.main")
    col = [fr for fr, _ in stacks if fr and fr[-1] == "DeepStack.spin"]
    if not col or max(fr.count("DeepStack.descend") for fr in col) < 40 or col[0][0] != "DeepStack.main":
        problems.append("collapsed stacks of spin are not whole (main first, 40 descend frames)")
    assert not problems, "; ".join(problems)


def heap_run(ctx, extra):
    text, pb, col = ctx.path("sites.txt"), ctx.path("alloc.pb.gz"), ctx.path("alloc.collapsed")
    r = ctx.run("AllocTruth", [], agent="heap=sites,depth=16,cutoff=0,%sfile=%s,pprof=%s,collapsed=%s"
                % (extra, text, pb, col))
    interval, rows = heap_sites.sites_sections(text)[-1]
    return r, parse_profile(text), rows, read_pprof(pb), parse_collapsed(col)


def check_heap_totals(ctx, rows, pp, stacks, problems):
    names = ("alloc_objects", "alloc_space", "inuse_objects", "inuse_space")
    sites = (sum(r.alloc_objs for r in rows), sum(r.alloc_bytes for r in rows),
             sum(r.live_objs for r in rows), sum(r.live_bytes for r in rows))
    ours = tuple(pp.total(n) for n in names)
    ctx.note("SITES alloc %d objs %d bytes, live %d objs %d bytes; pprof %r"
             % (sites + (ours,)))
    if sites != ours:
        problems.append("pprof totals %r differ from SITES' %r" % (ours, sites))
    if sum(c for _, c in stacks) != sites[1]:
        problems.append("collapsed sums to %d, SITES allocated %d bytes" % (sum(c for _, c in stacks), sites[1]))
    by_class = Counter()
    for r in rows:
        by_class[r.cls] += r.alloc_objs
    compare_counts("allocated objects per class (SITES vs pprof leaf)", by_class, pp.by_leaf("alloc_objects"),
                   problems)
    if pp.default_type != "alloc_space":
        problems.append("pprof default sample type %r, expected alloc_space" % pp.default_type)


def pprof_site(pp, cls, frame):
    """(alloc objs, live objs) of the samples whose leaf is class cls with
    frame somewhere below."""
    a, l = pp.index("alloc_objects"), pp.index("inuse_objects")
    got = [0, 0]
    for frames, v, _ in pp.samples:
        if frames and frames[0][0] == cls and any(f[0] == frame for f in frames[1:]):
            got[0] += v[a]
            got[1] += v[l]
    return got


def test_outputs_heap(ctx):
    r, prof, rows, pp, stacks = heap_run(ctx, "")
    want = heap_sites.site_truths(r.stderr)
    problems = []
    check_heap_totals(ctx, rows, pp, stacks, problems)
    for cls, frame, alloc, live in want:
        ours = pprof_site(pp, cls, frame)
        sites = heap_sites.site_totals(prof, rows, cls, frame)[:2]
        if ours != [alloc, live] or sites != [alloc, live]:
            problems.append("%s at %s: pprof %r, SITES %r, truth %r" % (cls, frame, ours, sites, [alloc, live]))
    lines = [ln for frames, _, _ in pp.samples for (name, f, ln) in frames[1:2]
             if name == "AllocTruth.makeInts" and f == "AllocTruth.java"]
    if not lines or min(lines) <= 0:
        problems.append("AllocTruth.makeInts frames lack a file and line: %r" % lines[:3])
    assert not problems, "; ".join(problems)


def test_outputs_heap_sampled(ctx):
    _r, _prof, rows, pp, stacks = heap_run(ctx, "heap_sample=4k,")
    problems = []
    check_heap_totals(ctx, rows, pp, stacks, problems)
    assert not problems, "; ".join(problems)


def test_outputs_lock(ctx):
    text, pb, col = ctx.path("contention.txt"), ctx.path("lock.pb.gz"), ctx.path("lock.collapsed")
    ctx.run("Contention", ["1500", "1500"],
            agent="monitor=y,cutoff=0,file=%s,pprof=%s,collapsed=%s" % (text, pb, col))
    prof = parse_profile(text)
    mt, mw = prof.final_monitor_time, prof.final_monitor_wait
    if mt is None or mw is None:
        pytest.fail("no MONITOR TIME / MONITOR WAIT TIME section")
    problems = []
    stacks = None
    for sec, kind, count in ((mt, "lock", "contentions"), (mw, "wait", "waits")):
        pp = read_pprof(ctx.path("lock.%s.pb.gz" % kind))
        col_stacks = parse_collapsed(ctx.path("lock.%s.collapsed" % kind))
        stacks = stacks or col_stacks
        check_section_profile(ctx, sec, pp, col_stacks, count, problems)
    if not any(fr[-1] == "Contention$HotLock" and "Contention$Hot.run" in fr for fr, _ in stacks):
        problems.append("no collapsed stack Contention$Hot.run;...;Contention$HotLock")
    assert not problems, "; ".join(problems)


def check_section_profile(ctx, sec, pp, stacks, count, problems):
    """A MONITOR (WAIT) TIME section against its profile: counts per
    lock class, delay to the ms the section prints, the collapsed sum."""
    counts = Counter({cls: n for cls, (_ms, n) in sec.by_class().items()})
    compare_counts("%s per lock class (report vs pprof)" % count, counts, pp.by_leaf(count), problems)
    ms = pp.total("delay") / 1e6
    ctx.note("%s: report %d episodes %d ms, pprof %d and %.1f ms" % (
        count, sum(counts.values()), sec.total_ms, pp.total(count), ms))
    if not sec.total_ms <= ms < sec.total_ms + 1:
        problems.append("pprof %s delay %.1f ms, the report's total %d ms" % (count, ms, sec.total_ms))
    if sum(c for _, c in stacks) != pp.total("delay"):
        problems.append("%s: collapsed sums to %d, pprof delay %d ns"
                        % (count, sum(c for _, c in stacks), pp.total("delay")))


def test_outputs_wait(ctx):
    text, pb, col, html = ctx.path("w.txt"), ctx.path("p.pb.gz"), ctx.path("c.txt"), ctx.path("f.html")
    r = ctx.run("EnterLine", ["500"],
                agent="monitor=y,cutoff=0,file=%s,pprof=%s,collapsed=%s,flamegraph=%s" % (text, pb, col, html))
    m = re.search(r"^WAIT_NS (\d+)$", r.stderr, re.M)
    if not m:
        pytest.fail("EnterLine printed no WAIT_NS: %s" % r.stderr[-600:])
    prof = parse_profile(text)
    mw = prof.final_monitor_wait
    problems = []
    missing = [n for n in ("p.lock.pb.gz", "p.wait.pb.gz", "c.lock.txt", "c.wait.txt")
               if not os.path.isfile(ctx.path(n))]
    if missing:
        pytest.fail("not written: %s (files: %s)" % (missing, sorted(os.listdir(os.path.dirname(text)))))
    wait, lock = read_pprof(ctx.path("p.wait.pb.gz")), read_pprof(ctx.path("p.lock.pb.gz"))
    check_section_profile(ctx, mw, wait, parse_collapsed(ctx.path("c.wait.txt")), "waits", problems)
    check_section_profile(ctx, prof.final_monitor_time, lock, parse_collapsed(ctx.path("c.lock.txt")), "contentions",
                          problems)
    if any(name == "waits" for name, _unit in lock.sample_types):
        problems.append("the lock profile still has waits")
    program_ms = int(m.group(1)) / 1e6
    waitlock_ms = sum(v[wait.index("delay")] for frames, v, _ in wait.samples
                      if frames and frames[0][0] == "EnterLine$WaitLock") / 1e6
    ctx.note("EnterLine$WaitLock: %.1f ms in the wait profile, the program's %.1f ms" % (waitlock_ms, program_ms))
    if not abs(waitlock_ms - program_ms) <= 0.05 * program_ms:
        problems.append("EnterLine$WaitLock %.1f ms in the wait profile, the program waited %.1f ms"
                        % (waitlock_ms, program_ms))
    page = open(html, encoding="utf-8", errors="replace").read()
    lacks = [w for w in ("Lock contention", "Monitor waits", "EnterLine$WaitLock", "EnterLine$Gate") if w not in page]
    if lacks:
        problems.append("flame graph page lacks %s" % lacks)
    assert not problems, "; ".join(problems)


def test_outputs_times(ctx):
    paths = {k: ctx.path(n) for k, n in (("text", "times.hprof.txt"), ("pprof", "times.pb.gz"),
                                         ("collapsed", "times.collapsed"), ("flamegraph", "times.html"))}
    r = ctx.run("TimesTruth", [], agent="cpu=times,cutoff=0,depth=4,file=%s,pprof=%s,collapsed=%s,flamegraph=%s"
                % (paths["text"], paths["pprof"], paths["collapsed"], paths["flamegraph"]))
    truth = truths(r.stderr)
    total_ms, rows = parse_cpu_time(paths["text"])[-1]
    pp, stacks = read_pprof(paths["pprof"]), parse_collapsed(paths["collapsed"])
    problems = []
    if pp.sample_types != [("calls", "count"), ("cpu", "nanoseconds")]:
        problems.append("pprof sample types %r, expected calls/count and cpu/nanoseconds" % pp.sample_types)
    text_calls = Counter()
    for row in rows:
        text_calls[row.method] += row.count
    text_calls = Counter({k: v for k, v in text_calls.items() if v})
    pp_calls = pp.by_leaf("calls")
    ctx.note("calls: CPU TIME %d in %d methods, pprof %d; CPU: CPU TIME %d ms, pprof %.3f ms, collapsed %.3f ms"
             % (sum(text_calls.values()), len(text_calls), pp.total("calls"), total_ms,
                pp.total("cpu") / 1e6, sum(c for _, c in stacks) / 1e6))
    compare_counts("calls per method (CPU TIME vs pprof)", text_calls, pp_calls, problems)
    if sum(text_calls.values()) != pp.total("calls"):
        problems.append("total calls: CPU TIME %d, pprof %d" % (sum(text_calls.values()), pp.total("calls")))
    for method, key in (("hot", "hot"), ("rec", "rec"), ("thrower", "thrower"), ("tiny", "tiny"),
                        ("leafHelper", "tiny"), ("fib", "fib")):
        if pp_calls.get("TimesTruth." + method, 0) != truth[key]:
            problems.append("pprof: TimesTruth.%s has %d calls, the program made %d"
                            % (method, pp_calls.get("TimesTruth." + method, 0), truth[key]))
    # CPU TIME prints whole ms of its total (ns summed, then rounded down or to nearest).
    if abs(pp.total("cpu") / 1e6 - total_ms) > 1:
        problems.append("CPU: pprof %.3f ms, CPU TIME total %d ms" % (pp.total("cpu") / 1e6, total_ms))
    if sum(c for _, c in stacks) != pp.total("cpu"):
        problems.append("collapsed sums %d ns, pprof %d" % (sum(c for _, c in stacks), pp.total("cpu")))
    leaves = Counter()
    for frames, count in stacks:
        leaves[frames[-1]] += count
    compare_counts("CPU ns per leaf (collapsed vs pprof)", pp.by_leaf("cpu"), leaves, problems)
    busy_ms = pp.by_leaf("cpu").get("TimesTruth.busy", 0) / 1e6
    text_busy = ms_of(rows, "TimesTruth.busy")
    if abs(busy_ms - text_busy) > total_ms * 0.0001 * 4 + 0.5:
        problems.append("TimesTruth.busy: pprof %.1f ms, CPU TIME %.1f ms" % (busy_ms, text_busy))
    # Whole stacks, not cut at depth=4: main calls rec(50) 100 times.
    rec_depths = Counter()
    for frames, v, _ in pp.samples:
        names = [f[0] for f in frames]
        if names and names[0] == "TimesTruth.rec" and v[0]:
            k = 0
            while k < len(names) and names[k] == "TimesTruth.rec":
                k += 1
            if names[k:] == ["TimesTruth.main"]:
                rec_depths[k] += v[0]
            else:
                problems.append("a stack of rec does not end in main: %s" % names[k:k + 3])
    if rec_depths != Counter({k: 100 for k in range(1, 52)}):
        problems.append("rec calls by recursion depth: %s, expected 100 at each of 1..51"
                        % sorted(rec_depths.items())[:6])
    html = open(paths["flamegraph"], encoding="utf-8", errors="replace").read()
    missing = [m for m in ("TimesTruth.busy", "TimesTruth.workerBusy", "TimesTruth.fib", "TimesTruth.main",
                           "TimesTruth.sleeper") if m not in html]
    if missing:
        problems.append("flame graph lacks %s" % missing)
    check_go_pprof(ctx, paths["pprof"], "calls", pp.total("calls"), problems)
    assert not problems, "; ".join(problems)


def test_outputs_two(ctx):
    text = ctx.path("two.txt")
    r = ctx.run("Contention", ["1000", "500"], agent="cpu=samples,monitor=y,cutoff=0,file=%s,pprof=%s,collapsed=%s,"
                "flamegraph=%s" % (text, ctx.path("prof.pb.gz"), ctx.path("c.txt"), ctx.path("f.html")))
    prof = parse_profile(text)
    problems = []
    for name in ("prof.cpu.pb.gz", "prof.lock.pb.gz", "prof.wait.pb.gz", "c.cpu.txt", "c.lock.txt", "c.wait.txt",
                 "f.html"):
        if not os.path.isfile(ctx.path(name)):
            problems.append("%s not written" % name)
        elif ctx.path(name) not in r.stderr:
            problems.append("stderr does not name %s" % name)
    for name in ("prof.pb.gz", "c.txt"):
        if os.path.exists(ctx.path(name)):
            problems.append("%s written although there are two profiles" % name)
    assert not problems, "; ".join(problems)
    cpu, lock = read_pprof(ctx.path("prof.cpu.pb.gz")), read_pprof(ctx.path("prof.lock.pb.gz"))
    if cpu.total("samples") != prof.final.total:
        problems.append("cpu pprof %d samples, CPU SAMPLES %d" % (cpu.total("samples"), prof.final.total))
    episodes = sum(n for _ms, n in prof.final_monitor_time.by_class().values())
    if lock.total("contentions") != episodes:
        problems.append("lock pprof %d contentions, MONITOR TIME %d" % (lock.total("contentions"), episodes))
    html = open(ctx.path("f.html"), encoding="utf-8", errors="replace").read()
    missing = [w for w in ("CPU samples", "Lock contention", "Contention$Hot.run", "Contention$HotLock")
               if w not in html]
    if missing:
        problems.append("flame graph page lacks %s" % missing)
    assert not problems, "; ".join(problems)


def flamegraph_names(path):
    """The frame names a flame graph page draws (its sections' names:[...])."""
    if not os.path.isfile(path):
        pytest.fail("flame graph file %s was not written" % path)
    with open(path, encoding="utf-8") as f:
        html = f.read()
    names = []
    for blob in re.findall(r"\bnames:\[(.*?)\],\ntree:", html, re.S):
        names += [json.loads('"%s"' % n) for n in re.findall(r'"((?:[^"\\]|\\.)*)"', blob)]
    return names


def test_outputs_lambdas(ctx):
    import hprof_report
    lambda_names = []
    for run in (1, 2):
        paths = {k: ctx.path("lambdas%d.%s" % (run, ext)) for k, ext in
                 (("text", "txt"), ("pprof", "pb.gz"), ("collapsed", "collapsed"), ("flamegraph", "html"))}
        ctx.run("Lambdas", ["1500"], agent="cpu=samples,cutoff=0,depth=8,file=%s,pprof=%s,collapsed=%s,"
                "flamegraph=%s" % (paths["text"], paths["pprof"], paths["collapsed"], paths["flamegraph"]))
        prof = parse_profile(paths["text"])
        # Java frames only: a native function the JVM made may be named by an address.
        names = {
            "text": {f.qualname for t in prof.traces.values() for f in t.frames if not f.cls.startswith("[")},
            "collapsed": {f for fr, _ in parse_collapsed(paths["collapsed"]) for f in fr},
            "pprof": {f[0] for fr, _, _ in read_pprof(paths["pprof"]).samples for f in fr},
            # How the frame ran (_[j] compiled, _[i] inlined, _[0] interpreted) aside.
            "flamegraph": {re.sub(r"_\[\w\]$", "", n) for n in flamegraph_names(paths["flamegraph"])},
        }
        problems = []
        for what, got in sorted(names.items()):
            java = {n for n in got if n.startswith(("Lambdas", "java."))}
            with_address = sorted(n for n in java if "0x" in n)
            if with_address:
                problems.append("run %d, %s: frames named by an address: %s" % (run, what, with_address[:4]))
            lambdas = sorted(n for n in java if "$$Lambda" in n)
            if not lambdas:
                problems.append("run %d, %s: no lambda frame" % (run, what))
            names[what] = lambdas
        assert not problems, "; ".join(problems)
        ctx.note("run %d: lambda frames %s" % (run, names["text"]))
        if len({tuple(v) for v in names.values()}) != 1:
            pytest.fail("run %d: the outputs name the lambda frames differently: %s" % (run, names))
        lambda_names.append(names["text"])
    if lambda_names[0] != lambda_names[1]:
        pytest.fail("the lambda frames are named differently in two runs: %s and %s" % tuple(lambda_names))
    d = subprocess.run([hprof_report.HPROF, "diff", ctx.path("lambdas1.txt"), ctx.path("lambdas2.txt")],
                       capture_output=True, text=True, timeout=120)
    with open(ctx.path("diff.txt"), "w") as f:
        f.write(d.stdout + d.stderr)
    rows = [m for m in map(hprof_report.RE_DIFF_ROW.match, d.stdout.splitlines())
            if m and "$$Lambda" in m.group(7)]
    # A lambda named differently in the two runs shows as rows of one run
    # only; a row of a few samples in one run and none in the other is the
    # sampling's chance (a CI run once had 1 and 0), not a naming.
    def count(text):
        return int(text.replace(",", ""))
    unpaired = [m.group(0).strip() for m in rows
                if min(count(m.group(4)), count(m.group(5))) == 0 and max(count(m.group(4)), count(m.group(5))) >= 5]
    ctx.note("hprof diff: %d rows name a lambda, %d of them in one run only" % (len(rows), len(unpaired)))
    if d.returncode != 0 or not rows or unpaired:
        pytest.fail("hprof diff (rc %d) of two runs pairs %s lambda rows; in one run only: %s"
                    % (d.returncode, len(rows) - len(unpaired), unpaired[:4]))


def test_outputs_bad_path(ctx):
    bad = "/nonexistent-hprof-dir/p.pb.gz"
    r = ctx.run("Busy", ["200"], agent="cpu=samples,pprof=" + bad, expect_rc="nonzero")
    if "pprof=" not in r.stderr or bad not in r.stderr or "Busy: done" in r.stdout:
        pytest.fail("expected a start-up error naming pprof= and %s; stderr: %s" % (bad, r.stderr[-300:]))


def test_outputs_times_keys_full(ctx):
    """More distinct stacks than the tracker keeps (ManyStacks: 2^17 stacks
    of ~170 frames, beyond its 16M frame ids): every stack it kept has
    exactly its true calls, the rest are counted under
    [unwalkable].tracker_keys_full, and stderr says so (they were once
    counted, silently, under the thread's first stack)."""
    prefix, levels = 150, 16
    path, pprof_path = ctx.path("times.hprof.txt"), ctx.path("times.pb.gz")
    r = ctx.run("ManyStacks", [str(prefix), str(levels)],
                agent="cpu=times,file=%s,pprof=%s" % (path, pprof_path))
    if "TRUTH leaves=%d" % (1 << levels) not in r.stderr:
        pytest.fail("ManyStacks did not finish: " + r.stderr[-300:])
    pp = read_pprof(pprof_path)
    k_calls = pp.index("calls")
    problems = []
    kept_tree, folded, stacks_kept = 0, 0, 0
    for frames, values, _ in pp.samples:
        names = [f[0] for f in frames]
        calls = values[k_calls]
        if names and names[0] == "[unwalkable].tracker_keys_full":
            folded += calls
            continue
        tree = 0
        while tree < len(names) and names[tree] in ("ManyStacks.left", "ManyStacks.right"):
            tree += 1
        rest = names[tree:]
        if tree:
            want = 1 << (levels - (tree - 1))
            kept_tree += calls
            stacks_kept += 1
        elif names and names[0] == "ManyStacks.down":
            want = 1
        elif names and names[0] == "ManyStacks.main":
            want = 1
        else:
            continue                    # the JDK's own calls (class loading, shutdown)
        if calls != want and len(problems) < 5:
            problems.append("%d calls on a stack of %d tree frames above %d others (%s): expected exactly %d"
                            % (calls, tree, len(rest), names[0], want))
    all_tree = (1 << levels) * (levels + 1)
    ctx.note("%d tree calls on %d kept stacks, %d calls under tracker_keys_full, of %d tree calls"
             % (kept_tree, stacks_kept, folded, all_tree))
    if "[unwalkable].tracker_keys_full" not in r.stderr:
        problems.append("stderr does not say that the tracker's keys filled")
    if folded == 0:
        problems.append("no calls under [unwalkable].tracker_keys_full: the keys never filled?")
    if kept_tree >= all_tree or kept_tree + folded < all_tree:
        problems.append("tree calls: %d kept + %d folded, of %d" % (kept_tree, folded, all_tree))
    assert not problems, "; ".join(problems)
