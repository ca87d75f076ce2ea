"""build/hprof reading the JVM's own JFR recordings, and the agent's jfr=
(pytest tests, run on each JDK with the ctx fixture of tests/conftest.py;
docs/front-end.md "JFR recordings"). Each records a program whose true
profile is known with -XX:StartFlightRecording (no hprof agent unless said),
reads the .jfr with build/hprof, and checks the answer against the truth and
against the JDK's own `jfr summary` / `jfr print --json` of the same file.

    jfr_cpu      CpuSplit (partA ~70% of the worker's CPU), settings=profile,
                 the agent's cpu=samples beside it, and a `jcmd JFR.dump`
                 while it runs: `convert --to collapsed` puts partA's share of
                 partA+partB within 4 points of the program's truth (the
                 dump's share is only noted: on a loaded machine it may hold
                 30 samples); for both files the collapsed total, each
                 event type's count and the number of events equal `jfr
                 summary`'s; partA's and
                 partB's sample counts equal those `jfr print --json` puts
                 on them; `hprof diff` of the agent's text file and the
                 recording, and of the recording and the dump, shows
                 partA's counts of both sides
    jfr_alloc    AllocMix (byte[] 75% of the bytes, long[] 25%, at random),
                 jdk.ObjectAllocationSample at 100/ms: the report's class
                 table gives byte[] 75 +- 5% of the two, and each class's
                 bytes equal the sum of the weights `jfr print --json` gives
    jfr_monitor  EnterLine (two threads block on a synchronized statement,
                 one on a synchronized method, one waits): three
                 jdk.JavaMonitorEnter in EnterLine's methods, two on EnterLine$Gate in
                 blockOnStatement at the line `jfr print --json` names (the
                 synchronized block's, 28 or 29), the wait on
                 EnterLine$WaitLock; counts equal `jfr summary`'s
    jfr_write    CpuSplit with the agent's cpu=samples,jfr=: `jfr summary`
                 counts as many jdk.ExecutionSample as the text report's CPU
                 SAMPLES total (the target: within 1%), `jfr print` reads it,
                 its partA and partB samples are the text report's, sample
                 for sample, and `jfr print --json` puts partA's share of partA+partB within
                 4 points of the program's truth; `hprof convert --to jfr` of
                 the text file gives the same count, and build/hprof reads
                 both back with that total
    jfr_write_sites  AllocTruth with heap=sites,jfr=: hprof.AllocationSite's
                 allocatedObjects and liveObjects per class and site (as `jfr
                 print --json` reads them) equal the program's truth (100,000
                 AllocTruth$Small, 25,000 live; 50,000 int[] at makeInts; ...),
                 and build/hprof reads them back as SITES with those counts
    jfr_write_alloc  AllocMix with heap=sites,heap_sample=4k,jfr=: the
                 jdk.ObjectAllocationSample weights per class equal
                 hprof.AllocationSite's (estimated) bytes and SITES' within
                 0.1% (its cutoff), byte[] 75 +- 5% of them, and build/hprof
                 reads the same bytes back
    jfr_write_monitor  EnterLine and Waits with monitor=y,thread=y,jfr=: three
                 jdk.JavaMonitorEnter in EnterLine's methods, two on
                 EnterLine$Gate in blockOnStatement by blocked-1 and blocked-2,
                 their durations adding up to MONITOR TIME's total, the wait on
                 EnterLine$WaitLock as jdk.JavaMonitorWait; Waits' parks
                 (Condition.await, FutureTask.get, CountDownLatch.await) as
                 jdk.ThreadPark with their classes and counts, Object.wait as
                 jdk.JavaMonitorWait; build/hprof reads the counts back, and
                 `convert --to jfr` of the text report gives MONITOR TIME's and
                 MONITOR WAIT TIME's counts as events
    jfr_write_times  TimesTruth with cpu=times,include=TimesTruth*,jfr=:
                 hprof.MethodTime's calls of hot (1,000,000) and rec (5,100)
                 exact, their cpuTime adding up to CPU TIME's total; build/hprof
                 reads every call back
    jfr_write_wall  WallStates with wall=10,thread=y,jfr=: one event per
                 sample, each state's count that of WALL SUMMARY (running
                 and runnable jdk.ExecutionSample, the others
                 jdk.NativeMethodSample with the JDK's state), w-park's all
                 STATE_PARKED, w-blocked's STATE_BLOCKED_ON_MONITOR_ENTER
"""

import json
import os
import re
import subprocess
import time

import hprof_text
from heap_sites import site_truths, sites_sections
from hprof_report import HPROF, RE_DIFF_ROW
from hprof_report import classes as report_classes
from run import parse_profile, truths

ALLOC_SETTINGS = """<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0">
  <event name="jdk.ObjectAllocationSample"><setting name="enabled">true</setting>
    <setting name="throttle">100/ms</setting><setting name="stackTrace">true</setting></event>
</configuration>
"""


def parse_span(value):
    """A span as `jfr print --json` writes it ("PT0.600859745S", "PT1M2.5S", or a number of ns)."""
    if isinstance(value, (int, float)):
        return int(value)
    m = re.match(r"^PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?$", value)
    if not m:
        raise ValueError("not a span: %r" % value)
    h, mi, sec = m.groups()
    whole, _, frac = (sec or "0").partition(".")
    return ((int(h or 0) * 60 + int(mi or 0)) * 60 + int(whole)) * 1000000000 + int((frac + "000000000")[:9])


def hprof(ctx, args):
    r = subprocess.run([HPROF] + args, capture_output=True, text=True, timeout=120, cwd=ctx.out)
    with open(ctx.path("hprof-%d.log" % len(ctx.notes)), "w") as f:
        f.write("$ hprof %s\nrc %d\n%s\n%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
    assert r.returncode == 0, "hprof %s: expected exit 0, found %d: %s" % (
        " ".join(args), r.returncode, (r.stderr or r.stdout)[-400:])
    return r.stdout


def jdk_tool(ctx, tool, args):
    r = subprocess.run([os.path.join(ctx.jdk, "bin", tool)] + args, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, "%s %s: expected exit 0, found %d: %s" % (
        tool, " ".join(args), r.returncode, (r.stderr + r.stdout)[-400:])
    return r.stdout


def summary(ctx, path):
    """`jfr summary`: event type -> count."""
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^\s*(jdk\.\w+)\s+(\d+)\s+\d+\s*$", jdk_tool(ctx, "jfr", ["summary", path]), re.M)}


def json_events(ctx, path, event):
    return json.loads(jdk_tool(ctx, "jfr", ["print", "--json", "--events", event, path]))["recording"]["events"]


def check_counts(ctx, path, report, problems):
    """The report's events line against `jfr summary`: every type hprof
    reads, and the number of events (summary also lists the metadata and
    checkpoints, which are not events)."""
    m = re.search(r"^\s*events\s+(\d+) in (\d+) chunks?; read:(.*)$", report, re.M)
    if not m:
        problems.append("%s: the report has no events line" % os.path.basename(path))
        return
    want = summary(ctx, path)
    ours = {name: int(n) for name, n in re.findall(r"(jdk\.\w+) (\d+)", m.group(3))}
    for name, n in ours.items():
        if want.get(name) != n:
            problems.append("%s: %s: hprof read %d, jfr summary says %s" % (os.path.basename(path), name, n,
                                                                           want.get(name)))
    events = sum(n for name, n in want.items() if name not in ("jdk.CheckPoint", "jdk.Checkpoint", "jdk.Metadata"))
    if int(m.group(1)) != events:
        problems.append("%s: hprof walked %s events, jfr summary lists %d" % (os.path.basename(path),
                                                                            m.group(1), events))
    ctx.note("%s: %s events in %s chunk(s), %s; as jfr summary" % (os.path.basename(path), m.group(1),
                                                                  m.group(2), m.group(3).strip()[:80]))


def leaf_counts(ctx, path, kind):
    """convert --to collapsed: leaf method (run suffix dropped) -> count, and the total."""
    out = ctx.path(os.path.basename(path) + "." + kind + ".collapsed")
    hprof(ctx, ["convert", path, "--to", "collapsed", "--profile", kind, "-o", out])
    leaves, total = {}, 0
    # (runs=True and our own cut: the shared parser drops only _[j], _[i]
    # and _[0], a recording's frames may carry other marks)
    for frames, n in hprof_text.parse_collapsed_file(out, runs=True):
        leaf = re.sub(r"_\[[0-9a-z]\]$", "", frames[-1])
        leaves[leaf] = leaves.get(leaf, 0) + n
        total += n
    return leaves, total


def cpu_truth(stderr):
    """partA's share of partA+partB in CpuSplit's own measure."""
    t = truths(stderr)
    return t["partA_ns"] / float(t["partA_ns"] + t["partB_ns"])


def check_split(ctx, path, truth, max_diff, problems):
    leaves, total = leaf_counts(ctx, path, "cpu")
    a, b = leaves.get("CpuSplit.partA", 0), leaves.get("CpuSplit.partB", 0)
    share = a / float(a + b) if a + b else 0
    ctx.note("%s: partA %d, partB %d samples: %.1f%% (truth %.1f%%)" % (os.path.basename(path), a, b,
                                                                       100 * share, 100 * truth))
    if max_diff is not None and (a + b < 150 or abs(share - truth) > max_diff):
        problems.append("%s: partA's share %.1f%% of %d samples is not within %d points of the truth %.1f%%"
                        % (os.path.basename(path), 100 * share, a + b, 100 * max_diff, 100 * truth))
    n = summary(ctx, path).get("jdk.ExecutionSample")
    if total != n:
        problems.append("%s: collapsed total %d, jfr summary's jdk.ExecutionSample %s" % (os.path.basename(path),
                                                                                        total, n))
    return a, b


def test_jfr_cpu(ctx):
    rec, dump, txt = ctx.path("rec.jfr"), ctx.path("dump.jfr"), ctx.path("cpu.txt")
    # 6 s of worker CPU: about 600 samples at settings=profile's 10 ms, so
    # that JFR's own sampling error stays well inside the 4 points.
    cmd = ctx.java_cmd("CpuSplit", ["6000"], agent="cpu=samples,depth=32,file=" + txt,
                       jvm=["-XX:StartFlightRecording=name=rec,filename=%s,settings=profile" % rec])
    with open(ctx.path("cpusplit.stderr"), "wb") as err:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=ctx.out)
        time.sleep(3)
        jdk_tool(ctx, "jcmd", [str(p.pid), "JFR.dump", "name=rec", "filename=" + dump])
        rc = p.wait(timeout=120)
        assert rc == 0, "CpuSplit: expected exit 0, found %d" % rc
    truth = cpu_truth(open(ctx.path("cpusplit.stderr"), encoding="utf-8", errors="replace").read())
    problems = []
    a, b = check_split(ctx, rec, truth, 0.04, problems)
    # The dump holds what the worker ran in its first 3 s of wall clock,
    # which on a loaded machine may be 30 samples: its split is noted, not
    # judged; its counts are checked exactly.
    check_split(ctx, dump, truth, None, problems)
    for path in (rec, dump):
        check_counts(ctx, path, hprof(ctx, ["report", path]), problems)
    # The JDK's own reading of the same samples, leaf by leaf.
    leaf = {}
    for e in json_events(ctx, rec, "jdk.ExecutionSample"):
        frames = (e["values"].get("stackTrace") or {}).get("frames") or []
        if frames:
            name = frames[0]["method"]["type"]["name"].replace("/", ".") + "." + frames[0]["method"]["name"]
            leaf[name] = leaf.get(name, 0) + 1
    if (leaf.get("CpuSplit.partA"), leaf.get("CpuSplit.partB")) != (a, b):
        problems.append("jfr print --json puts %s/%s samples on partA/partB, hprof %d/%d"
                        % (leaf.get("CpuSplit.partA"), leaf.get("CpuSplit.partB"), a, b))
    # diff reads both sides: the agent's own file of the same run against
    # the recording, and the recording against the dump.
    agent_a = leaf_counts(ctx, txt, "cpu")[0].get("CpuSplit.partA", 0)
    dump_a = leaf_counts(ctx, dump, "cpu")[0].get("CpuSplit.partA", 0)
    for before, after, want in ((txt, rec, (agent_a, a)), (rec, dump, (a, dump_a))):
        got = None
        for line in hprof(ctx, ["diff", before, after, "--profile", "cpu"]).split("\n"):
            m = RE_DIFF_ROW.match(line)
            if m and m.group(7) == "CpuSplit.partA" and got is None:
                got = (int(m.group(4).replace(",", "")), int(m.group(5).replace(",", "")))
        ctx.note("diff %s %s: partA %s samples (want %s)" % (os.path.basename(before), os.path.basename(after),
                                                             got, want))
        if got != want and not (got is None and want[0] == want[1]):
            problems.append("diff %s %s: partA %s, want %s" % (os.path.basename(before),
                                                               os.path.basename(after), got, want))
    assert not problems, "; ".join(problems)


def test_jfr_alloc(ctx):
    rec, jfc = ctx.path("alloc.jfr"), ctx.path("alloc.jfc")
    with open(jfc, "w") as f:
        f.write(ALLOC_SETTINGS)
    ctx.run("AllocMix", ["2000"], jvm=["-XX:StartFlightRecording=filename=%s,settings=%s" % (rec, jfc)])
    report = hprof(ctx, ["report", rec, "--top", "10"])
    problems = []
    check_counts(ctx, rec, report, problems)
    # a recording's samples know no live objects, nor numbers of objects
    ours = {c: v[2] for c, v in report_classes(report).items() if (v[0], v[1], v[3]) == (0, 0, 0)}
    want = {}
    for e in json_events(ctx, rec, "jdk.ObjectAllocationSample"):
        cls = (e["values"].get("objectClass") or {}).get("name")
        name = {"[B": "byte[]", "[J": "long[]"}.get(cls, cls)
        want[name] = want.get(name, 0) + int(e["values"]["weight"])
    bytes_, longs = ours.get("byte[]", 0), ours.get("long[]", 0)
    share = bytes_ / float(bytes_ + longs) if bytes_ + longs else 0
    ctx.note("byte[] %d, long[] %d bytes: byte[] %.1f%% (truth 75%%); jfr print --json: %s, %s"
             % (bytes_, longs, 100 * share, want.get("byte[]"), want.get("long[]")))
    if abs(share - 0.75) > 0.05:
        problems.append("byte[]'s share of the bytes is %.1f%%, not 75 +- 5%%" % (100 * share))
    for cls in ("byte[]", "long[]"):
        if ours.get(cls) != want.get(cls):
            problems.append("%s: hprof %s bytes, jfr print --json's weights add to %s" % (cls, ours.get(cls),
                                                                                       want.get(cls)))
    assert not problems, "; ".join(problems)


def test_jfr_monitor(ctx):
    rec = ctx.path("enter.jfr")
    ctx.run("EnterLine", [], jvm=["-XX:StartFlightRecording=filename=%s,settings=profile" % rec])
    report = hprof(ctx, ["report", rec])
    problems = []
    check_counts(ctx, rec, report, problems)
    want_lines = set()
    for e in json_events(ctx, rec, "jdk.JavaMonitorEnter"):
        frames = e["values"]["stackTrace"]["frames"]
        if frames and frames[0]["method"]["name"] == "blockOnStatement":
            want_lines.add(frames[0]["lineNumber"])
    rows = re.findall(r"^\s+\d+\s+([\d.]+)\s+[\d.]+%\s+(\d+)\s+(\S+)\s+(\S+)$",
                      report[report.find("Contended locks"):report.find("Monitor waits")], re.M)
    gate = [(int(n), where) for _ms, n, cls, where in rows if cls == "EnterLine$Gate"]
    ctx.note("contended: %s; jfr print --json: blockOnStatement at line(s) %s" % (rows, sorted(want_lines)))
    # (JFR's own threads may contend too, over the 10 ms threshold.)
    ours = sum(int(r[1]) for r in rows if r[3].startswith("EnterLine."))
    if ours != 3:
        problems.append("%d contended enters in EnterLine's methods, want 3" % ours)
    lines = {int(w.rsplit(":", 1)[1].rstrip(")")) for _n, w in gate if w.startswith("EnterLine.blockOnStatement(")}
    if sum(n for n, _w in gate) != 2 or lines != want_lines or not lines <= {28, 29}:
        problems.append("EnterLine$Gate: %s, want 2 enters in blockOnStatement at line %s (28 or 29)"
                        % (gate, sorted(want_lines)))
    waits = report[report.find("Monitor waits"):]
    if "EnterLine$WaitLock" not in waits:
        problems.append("no wait on EnterLine$WaitLock in the report")
    assert not problems, "; ".join(problems)


def test_jfr_write(ctx):
    txt, rec, conv = ctx.path("cpu.txt"), ctx.path("cpu.jfr"), ctx.path("converted.jfr")
    # 6 s: at 3 s (about 300 samples) the sampler's own share strayed 4.8
    # points from the truth on a loaded machine, in the text report alike.
    r = ctx.run("CpuSplit", ["6000"], agent="cpu=samples,file=%s,jfr=%s" % (txt, rec))
    truth = cpu_truth(r.stderr)
    # The recording must say what the text report says, sample for sample.
    prof = parse_profile(txt)
    want = prof.final.total
    text_a = prof.samples(prof.final, lambda t: bool(t.frames) and t.frames[0].qualname == "CpuSplit.partA")
    text_b = prof.samples(prof.final, lambda t: bool(t.frames) and t.frames[0].qualname == "CpuSplit.partB")
    hprof(ctx, ["convert", txt, "--to", "jfr", "-o", conv])
    problems = []
    for path in (rec, conv):
        n = summary(ctx, path).get("jdk.ExecutionSample", 0)
        jdk_tool(ctx, "jfr", ["print", path])
        leaf = {}
        for e in json_events(ctx, path, "jdk.ExecutionSample"):
            frames = e["values"]["stackTrace"]["frames"]
            if frames:
                name = frames[0]["method"]["type"]["name"].replace("/", ".") + "." + frames[0]["method"]["name"]
                leaf[name] = leaf.get(name, 0) + 1
        a, b = leaf.get("CpuSplit.partA", 0), leaf.get("CpuSplit.partB", 0)
        share = a / float(a + b) if a + b else 0
        back = leaf_counts(ctx, path, "cpu")[1]
        ctx.note("%s: %d jdk.ExecutionSample (CPU SAMPLES total %d), partA %d partB %d: %.1f%% (truth %.1f%%); "
                 "read back: %d" % (os.path.basename(path), n, want, a, b, 100 * share, 100 * truth, back))
        if abs(n - want) > 0.01 * want:
            problems.append("%s: %d jdk.ExecutionSample, CPU SAMPLES total %d" % (os.path.basename(path), n, want))
        if (a, b) != (text_a, text_b):
            problems.append("%s: partA %d, partB %d samples; the text report's CPU SAMPLES: %d, %d"
                            % (os.path.basename(path), a, b, text_a, text_b))
        if a + b < 150 or abs(share - truth) > 0.04:
            problems.append("%s: partA's share %.1f%% of %d, truth %.1f%%" % (os.path.basename(path), 100 * share,
                                                                               a + b, 100 * truth))
        if back != n:
            problems.append("%s: build/hprof reads %d samples back of %d" % (os.path.basename(path), back, n))
    assert not problems, "; ".join(problems)


def json_values(ctx, path, event, depth=64):
    """`jfr print --json` (JDK 17 or 25): the values of every event of one type."""
    out = jdk_tool(ctx, "jfr", ["print", "--json", "--stack-depth", str(depth), "--events", event, path])
    return [e["values"] for e in json.loads(out)["recording"]["events"]]


def tools_read(ctx, path, events, plain=True):
    """`jfr summary` and (plain) `jfr print` read the recording, the
    summary with the counts of `events` (type -> count) that `jfr print
    --json` gave."""
    if plain:
        jdk_tool(ctx, "jfr", ["print", "--stack-depth", "1", path])
    counts = {m.group(1): int(m.group(2)) for m in
              re.finditer(r"^\s*((?:jdk|hprof)\.\w+)\s+(\d+)\s+\d+\s*$", jdk_tool(ctx, "jfr", ["summary", path]),
                          re.M)}
    wrong = {t: (counts.get(t), n) for t, n in events.items() if counts.get(t) != n}
    assert not wrong, "%s: jfr summary's counts (found) against jfr print --json's (expected): %s" % (
        os.path.basename(path), wrong)


def java_class(name):
    """A JVM class name ("[I", "java/lang/Thread") as Java writes it."""
    prims = {"Z": "boolean", "B": "byte", "C": "char", "S": "short", "I": "int", "J": "long", "F": "float",
             "D": "double"}
    dims = len(name) - len(name.lstrip("["))
    base = name[dims:]
    if dims:
        base = prims.get(base) or base[1:-1]
    return base.replace("/", ".") + "[]" * dims


def by_class(values, field, keys):
    sums = {}
    for v in values:
        cls = java_class((v.get(field) or {}).get("name") or "?")
        row = sums.setdefault(cls, [0] * len(keys))
        for i, k in enumerate(keys):
            row[i] += int(v[k])
    return sums


def test_jfr_write_sites(ctx):
    rec = ctx.path("sites.jfr")
    r = ctx.run("AllocTruth", [], agent="heap=sites,file=%s,jfr=%s" % (ctx.path("sites.txt"), rec))
    # (class, site): the site is the first of AllocTruth's frames but a
    # constructor (the JDK allocates int[] too; Object.<init> records some)
    got = {}
    values = json_values(ctx, rec, "hprof.AllocationSite", 8)
    # (plain `jfr print` left out: 2,400 sites, and the other tests print theirs)
    tools_read(ctx, rec, {"hprof.AllocationSite": len(values)}, plain=False)
    for v in values:
        site = next((f["method"]["type"]["name"] + "." + f["method"]["name"] for f in v["stackTrace"]["frames"]
                     if f["method"]["type"]["name"].startswith("AllocTruth") and f["method"]["name"] != "<init>"),
                    None)
        row = got.setdefault((java_class(v["objectClass"]["name"]), site), [0, 0])
        row[0] += int(v["allocatedObjects"])
        row[1] += int(v["liveObjects"])
    problems = []
    for cls, site, alloc, live in site_truths(r.stderr):
        if "$$Lambda" in cls:
            continue
        ctx.note("%s at %s: hprof.AllocationSite %s, truth %s %s" % (cls, site, got.get((cls, site)), alloc, live))
        if got.get((cls, site)) != [int(alloc), int(live)]:
            problems.append("%s at %s: allocated/live %s in the recording, truth %s %s"
                            % (cls, site, got.get((cls, site)), alloc, live))
    # build/hprof reads them back as SITES, live counts and all
    small = report_classes(hprof(ctx, ["report", rec, "--top", "5"])).get("AllocTruth$Small")
    ctx.note("read back: AllocTruth$Small %s" % (small,))
    if not small or (small[3], small[1]) != (100000, 25000):
        problems.append("build/hprof reads AllocTruth$Small as %s, want 100000 allocated, 25000 live" % (small,))
    assert not problems, "; ".join(problems)


def test_jfr_write_alloc(ctx):
    rec, txt = ctx.path("alloc.jfr"), ctx.path("alloc.txt")
    ctx.run("AllocMix", ["1500"], agent="heap=sites,heap_sample=4k,file=%s,jfr=%s" % (txt, rec))
    sites = {}
    for row in sites_sections(txt)[-1][1]:
        sites[row.cls] = sites.get(row.cls, 0) + row.alloc_bytes
    samples, sites_ = json_values(ctx, rec, "jdk.ObjectAllocationSample", 1), json_values(ctx, rec,
                                                                                         "hprof.AllocationSite", 1)
    tools_read(ctx, rec, {"jdk.ObjectAllocationSample": len(samples), "hprof.AllocationSite": len(sites_)})
    weights = {c: v[0] for c, v in by_class(samples, "objectClass", ("weight",)).items()}
    site_bytes = {c: v[0] for c, v in by_class(sites_, "objectClass", ("allocatedBytes",)).items()}
    ours = {c: v[2] for c, v in report_classes(hprof(ctx, ["report", rec, "--top", "1000"])).items()}
    problems = []
    for cls in ("byte[]", "long[]"):
        ctx.note("%s: SITES %s bytes, weights %s, hprof.AllocationSite %s, read back %s"
                 % (cls, sites.get(cls), weights.get(cls), site_bytes.get(cls), ours.get(cls)))
        # SITES leaves out rows under cutoff= (the JDK's own few arrays): within 0.1%
        if not sites.get(cls) or not weights.get(cls) == site_bytes.get(cls) == ours.get(cls) or \
                abs(weights[cls] - sites[cls]) > 0.001 * sites[cls]:
            problems.append("%s: SITES %s bytes, jdk.ObjectAllocationSample weights %s, hprof.AllocationSite %s, "
                            "read back %s" % (cls, sites.get(cls), weights.get(cls), site_bytes.get(cls),
                                              ours.get(cls)))
    b, l = weights.get("byte[]", 0), weights.get("long[]", 0)
    share = b / float(b + l) if b + l else 0
    ctx.note("byte[] %.1f%% of the bytes (truth 75%%)" % (100 * share))
    if abs(share - 0.75) > 0.05:
        problems.append("byte[] is %.1f%% of the weights, not 75 +- 5%%" % (100 * share))
    assert not problems, "; ".join(problems)


def test_jfr_write_monitor(ctx):
    rec, txt = ctx.path("enter.jfr"), ctx.path("enter.txt")
    ctx.run("EnterLine", [], agent="monitor=y,thread=y,file=%s,jfr=%s" % (txt, rec))
    enters = json_values(ctx, rec, "jdk.JavaMonitorEnter")
    problems = []
    mine = [e for e in enters if e["stackTrace"]["frames"] and
            e["stackTrace"]["frames"][0]["method"]["type"]["name"] == "EnterLine"]
    gate = sorted((e["eventThread"]["javaName"], e["stackTrace"]["frames"][0]["method"]["name"],
                   e["stackTrace"]["frames"][0]["lineNumber"]) for e in mine
                  if e["monitorClass"]["name"] == "EnterLine$Gate")
    ctx.note("jdk.JavaMonitorEnter in EnterLine: %d; on EnterLine$Gate: %s" % (len(mine), gate))
    if len(mine) != 3:
        problems.append("%d jdk.JavaMonitorEnter in EnterLine's methods, want 3" % len(mine))
    if [g[:2] for g in gate] != [("blocked-1", "blockOnStatement"), ("blocked-2", "blockOnStatement")] or \
            not {g[2] for g in gate} <= {28, 29}:
        problems.append("EnterLine$Gate's enters %s, want blocked-1 and blocked-2 in blockOnStatement at 28/29"
                        % gate)
    prof = parse_profile(txt)
    contention, waited = prof.final_monitor_time, prof.final_monitor_wait
    want = contention.total_ms * 1000000 if contention else None
    got = sum(parse_span(e["duration"]) for e in enters)
    ctx.note("durations %d ns, MONITOR TIME %s ns" % (got, want))
    if want is None or abs(got - want) > 1000000 * (len(enters) + 1):
        problems.append("jdk.JavaMonitorEnter's durations add to %d ns, MONITOR TIME's total is %s ns"
                        % (got, want))
    waits = [e for e in json_values(ctx, rec, "jdk.JavaMonitorWait")
             if e["monitorClass"]["name"] == "EnterLine$WaitLock"]
    if len(waits) != 1 or parse_span(waits[0]["duration"]) < 500000000 or \
            waits[0]["eventThread"]["javaName"] != "waiter":
        problems.append("the wait on EnterLine$WaitLock: %s" % waits)
    check_counts(ctx, rec, hprof(ctx, ["report", rec]), problems)
    jdk_tool(ctx, "jfr", ["print", "--stack-depth", "1", rec])
    # convert --to jfr of the text report: its MONITOR TIME and MONITOR WAIT TIME counts as events
    conv = ctx.path("enter-converted.jfr")
    hprof(ctx, ["convert", txt, "--to", "jfr", "-o", conv])
    want_counts = {event: sum(r.count for r in section.rows) if section else 0
                   for section, event in ((contention, "jdk.JavaMonitorEnter"), (waited, "jdk.JavaMonitorWait"))}
    got_counts = {k: v for k, v in summary(ctx, conv).items() if k in want_counts}
    ctx.note("convert --to jfr of the text: %s (MONITOR TIME, WAIT TIME counts %s)" % (got_counts, want_counts))
    if got_counts != want_counts:
        problems.append("convert --to jfr: %s, the text's counts %s" % (got_counts, want_counts))

    # Parks (java.util.concurrent) against Object.wait: Waits, 2 rounds of 100 ms.
    rec2 = ctx.path("waits.jfr")
    ctx.run("Waits", ["100", "2"], agent="monitor=y,thread=y,file=%s,jfr=%s" % (ctx.path("waits.txt"), rec2))
    parks = {}
    for e in json_values(ctx, rec2, "jdk.ThreadPark", 1):
        key = (e["eventThread"]["javaName"], java_class(e["parkedClass"]["name"]))
        parks[key] = parks.get(key, 0) + 1
    object_waits = {}
    for e in json_values(ctx, rec2, "jdk.JavaMonitorWait", 1):
        key = (e["eventThread"]["javaName"], java_class(e["monitorClass"]["name"]))
        object_waits[key] = object_waits.get(key, 0) + 1
    ctx.note("Waits: jdk.ThreadPark %s; jdk.JavaMonitorWait %s" % (sorted(parks.items()),
                                                                  sorted(object_waits.items())))
    cond = "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject"
    for key in (("w-cond", cond), ("w-nanos", cond), ("w-future", "java.util.concurrent.FutureTask"),
                ("w-latch", "java.util.concurrent.CountDownLatch$Sync")):
        if parks.get(key) != 2:
            problems.append("%s: %s jdk.ThreadPark, want 2" % (key, parks.get(key)))
    if object_waits.get(("w-object", "Waits$WaitObj")) != 2:
        problems.append("w-object: %s jdk.JavaMonitorWait on Waits$WaitObj, want 2"
                        % object_waits.get(("w-object", "Waits$WaitObj")))
    if any(k[0].startswith("w-") and k[0] != "w-object" for k in object_waits):
        problems.append("parks written as jdk.JavaMonitorWait: %s" % object_waits)
    check_counts(ctx, rec2, hprof(ctx, ["report", rec2]), problems)
    jdk_tool(ctx, "jfr", ["print", "--stack-depth", "1", rec2])
    assert not problems, "; ".join(problems)


def test_jfr_write_times(ctx):
    rec, txt = ctx.path("times.jfr"), ctx.path("times.txt")
    ctx.run("TimesTruth", [], agent="cpu=times,include=TimesTruth*,file=%s,jfr=%s" % (txt, rec))
    calls, cpu = {}, 0
    values = json_values(ctx, rec, "hprof.MethodTime", 1)
    tools_read(ctx, rec, {"hprof.MethodTime": len(values)})
    for e in values:
        m = e["method"]
        name = m["type"]["name"].replace("/", ".") + "." + m["name"]
        calls[name] = calls.get(name, 0) + int(e["calls"])
        cpu += parse_span(e["cpuTime"])
    want = hprof_text.parse_cpu_time_file(txt)[-1][0] * 1000000
    ctx.note("calls: hot %s, rec %s; cpuTime %d ns, CPU TIME %s ns" % (calls.get("TimesTruth.hot"),
                                                                      calls.get("TimesTruth.rec"), cpu, want))
    report = hprof(ctx, ["report", rec, "--top", "3"])
    m = re.search(r"^CPU time \(cpu=times\): [\d,]+ ms of CPU in timed methods, ([\d,]+) calls", report, re.M)
    back = int(m.group(1).replace(",", "")) if m else None
    ctx.note("read back: %s calls of %d" % (back, sum(calls.values())))
    problems = []
    if back != sum(calls.values()):
        problems.append("build/hprof reads %s calls back, the recording holds %d" % (back, sum(calls.values())))
    if calls.get("TimesTruth.hot") != 1000000 or calls.get("TimesTruth.rec") != 5100:
        problems.append("hprof.MethodTime's calls: hot %s (want 1000000), rec %s (want 5100)"
                        % (calls.get("TimesTruth.hot"), calls.get("TimesTruth.rec")))
    if want is None or abs(cpu - want) > 1000000:
        problems.append("hprof.MethodTime's cpuTime adds to %d ns, CPU TIME's total is %s ns" % (cpu, want))
    assert not problems, "; ".join(problems)


def test_jfr_write_wall(ctx):
    rec, txt = ctx.path("wall.jfr"), ctx.path("wall.txt")
    ctx.run("WallStates", ["1500"], agent="wall=10,thread=y,file=%s,jfr=%s" % (txt, rec))
    text = open(txt, encoding="utf-8").read()
    summary_ = text[text.rfind("WALL SUMMARY BEGIN"):]
    want = {m.group(1): int(m.group(2)) for m in
            re.finditer(r"^(running|runnable|sleeping|waiting|parked|blocked|syscall)\s+\S+%\s+(\d+)",
                        summary_, re.M)}
    state_of = {"STATE_SLEEPING": "sleeping", "STATE_IN_OBJECT_WAIT": "waiting", "STATE_PARKED": "parked",
                "STATE_BLOCKED_ON_MONITOR_ENTER": "blocked", "STATE_RUNNABLE": "syscall"}
    got, per_thread, counts = {}, {}, {}
    for kind in ("jdk.ExecutionSample", "jdk.NativeMethodSample"):
        values = json_values(ctx, rec, kind, 1)
        counts[kind] = len(values)
        for e in values:
            state = "running" if kind == "jdk.ExecutionSample" else state_of.get(e["state"], e["state"])
            got[state] = got.get(state, 0) + 1
            key = (e["sampledThread"]["javaName"], e["state"])
            per_thread[key] = per_thread.get(key, 0) + 1
    tools_read(ctx, rec, counts)
    got_run = got.pop("running", 0)
    want_run = want.pop("running", 0) + want.pop("runnable", 0)
    ctx.note("WALL SUMMARY %s (running+runnable %d); recording %s (jdk.ExecutionSample %d)"
             % (want, want_run, got, got_run))
    problems = []
    if got != want or got_run != want_run:
        problems.append("states in the recording %s, running+runnable %d; WALL SUMMARY %s, %d"
                        % (got, got_run, want, want_run))
    for thread, state in (("w-park", "STATE_PARKED"), ("w-blocked", "STATE_BLOCKED_ON_MONITOR_ENTER"),
                          ("w-wait", "STATE_IN_OBJECT_WAIT")):
        mine = {k[1]: n for k, n in per_thread.items() if k[0] == thread}
        if max(mine, key=mine.get, default=None) != state or mine[state] < 0.9 * sum(mine.values()):
            problems.append("%s: %s, want nearly all %s" % (thread, mine, state))
    assert not problems, "; ".join(problems)
