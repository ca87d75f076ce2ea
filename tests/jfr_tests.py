"""build/hprof reading the JVM's own JFR recordings (imported by tests/run.py;
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
"""

import json
import os
import re
import subprocess
import time

import hprof_text

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
HPROF = os.path.join(os.path.dirname(TESTS_DIR), "build", "hprof")
ALLOC_SETTINGS = """<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0">
  <event name="jdk.ObjectAllocationSample"><setting name="enabled">true</setting>
    <setting name="throttle">100/ms</setting><setting name="stackTrace">true</setting></event>
</configuration>
"""
# A row of a diff table: change before% after% before after delta name
RE_DIFF_ROW = re.compile(r"^\s+([+-][\d.]+)\s+([\d.]+)%\s+([\d.]+)%\s+([\d,]+)\s+([\d,]+)\s+([+-]?[\d,]+)\s+(\S+)$")


def make_tests(Fail):
    def hprof(ctx, args):
        r = subprocess.run([HPROF] + args, capture_output=True, text=True, timeout=120, cwd=ctx.out)
        with open(ctx.path("hprof-%d.log" % len(ctx.notes)), "w") as f:
            f.write("$ hprof %s\nrc %d\n%s\n%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
        if r.returncode != 0:
            raise Fail("hprof %s: exit %d: %s" % (" ".join(args), r.returncode, (r.stderr or r.stdout)[-400:]))
        return r.stdout

    def jdk_tool(ctx, tool, args):
        r = subprocess.run([os.path.join(ctx.jdk, "bin", tool)] + args, capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 0:
            raise Fail("%s %s: exit %d: %s" % (tool, " ".join(args), r.returncode, (r.stderr + r.stdout)[-400:]))
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
        for line in open(out, encoding="utf-8"):
            stack, _, n = line.rstrip("\n").rpartition(" ")
            leaf = re.sub(r"_\[[0-9a-z]\]$", "", stack.split(";")[-1])
            leaves[leaf] = leaves.get(leaf, 0) + int(n)
            total += int(n)
        return leaves, total

    def cpu_truth(stderr):
        m = re.search(r"TRUTH partA_ns=(\d+) partB_ns=(\d+)", stderr)
        if not m:
            raise Fail("CpuSplit printed no TRUTH line")
        return int(m.group(1)) / float(int(m.group(1)) + int(m.group(2)))

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

    def t_cpu(ctx):
        rec, dump, txt = ctx.path("rec.jfr"), ctx.path("dump.jfr"), ctx.path("cpu.txt")
        # 6 s of worker CPU: about 600 samples at settings=profile's 10 ms, so
        # that JFR's own sampling error stays well inside the 4 points.
        cmd = ctx.java_cmd("CpuSplit", ["6000"], agent="cpu=samples,depth=32,file=" + txt,
                           jvm=["-XX:StartFlightRecording=name=rec,filename=%s,settings=profile" % rec])
        with open(ctx.path("cpusplit.stderr"), "wb") as err:
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=ctx.out)
            time.sleep(3)
            jdk_tool(ctx, "jcmd", [str(p.pid), "JFR.dump", "name=rec", "filename=" + dump])
            if p.wait(timeout=120) != 0:
                raise Fail("CpuSplit exited %d" % p.returncode)
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
        if problems:
            raise Fail("; ".join(problems))

    def t_alloc(ctx):
        rec, jfc = ctx.path("alloc.jfr"), ctx.path("alloc.jfc")
        with open(jfc, "w") as f:
            f.write(ALLOC_SETTINGS)
        ctx.run("AllocMix", ["2000"], jvm=["-XX:StartFlightRecording=filename=%s,settings=%s" % (rec, jfc)])
        report = hprof(ctx, ["report", rec, "--top", "10"])
        problems = []
        check_counts(ctx, rec, report, problems)
        ours = {}
        section = report[report.find("Classes (all sites)"):]
        for m in re.finditer(r"^\s+\d+\s+0\s+0\s+([\d,]+)\s+0\s+(\S+)$", section, re.M):
            ours.setdefault(m.group(2), int(m.group(1).replace(",", "")))
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
        if problems:
            raise Fail("; ".join(problems))

    def t_monitor(ctx):
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
        if problems:
            raise Fail("; ".join(problems))

    def t_write(ctx):
        txt, rec, conv = ctx.path("cpu.txt"), ctx.path("cpu.jfr"), ctx.path("converted.jfr")
        # 6 s: at 3 s (about 300 samples) the sampler's own share strayed 4.8
        # points from the truth on a loaded machine, in the text report alike.
        r = ctx.run("CpuSplit", ["6000"], agent="cpu=samples,file=%s,jfr=%s" % (txt, rec))
        truth = cpu_truth(r.stderr)
        totals = re.findall(r"^CPU SAMPLES BEGIN \(total = (\d+)\)", open(txt, encoding="utf-8").read(), re.M)
        if not totals:
            raise Fail("the text report has no CPU SAMPLES section")
        want = int(totals[-1])
        # The recording must say what the text report says, sample for sample.
        prof = hprof_text.parse_file(txt)
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
        if problems:
            raise Fail("; ".join(problems))

    return [("jfr_cpu", t_cpu), ("jfr_alloc", t_alloc), ("jfr_monitor", t_monitor), ("jfr_write", t_write)]
