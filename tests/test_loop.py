"""loop= tests (pytest tests, run on each JDK with the ctx fixture of
tests/conftest.py): continuous profiling, every output
a series of files, one per period (src/output/series.h, docs/continuous.md).

    loop_series     CpuSplit (5 s of worker CPU, partA 70%) with loop=2,
                    file=, pprof= and collapsed= named with %n and %t: at
                    least 3 periods, numbered 1..N without a gap, each text
                    file parsed by the strict parser, each period's text,
                    pprof and collapsed totals equal; the periods' partA +
                    partB samples add up to the worker's CPU time (the
                    program's own ThreadMXBean truth, / 10 ms) within 5%,
                    and each period splits 70/30 (4 standard errors)
    loop_keep       loop=1,loop_keep=2,loop_mode=cumulative: of 3 or more
                    periods only the last 2 text and pprof files remain;
                    cumulative totals never fall and the last file holds
                    the whole run (partA + partB within 5% of the truth)
    loop_attach     CpuSplit without the agent; `hprof attach PID
                    cpu=samples,loop=1,file=.../a-%n.txt`: at least 2 periods'
                    files while it runs, each read by the strict parser;
                    `hprof status` names the period; a `start` with another
                    loop= is refused and names loop=
    loop_bad        loop=0, loop=abc, loop=500ms, loop_keep= without loop=,
                    loop_mode=sideways, a name with %q: the JVM does not
                    start and the message names the option (loop= with net=
                    is tests/test_listen_series.py's)
"""

import glob
import math
import os
import re
import subprocess
import time

import pprof_reader
from hprof_text import parse_collapsed_file
from run import BUILD, parse_profile, reap, spawn, truths
from series_files import cpu_split_samples, numbered_files

INTERVAL_NS = 10 * 1000 * 1000
HPROF = os.path.join(BUILD, "hprof")


def truth(r):
    """CpuSplit's own partA and partB CPU times (ns)."""
    t = truths(r.stderr)
    return t["partA_ns"], t["partB_ns"]


def test_loop_series(ctx):
    d = ctx.path("series")
    os.makedirs(d, exist_ok=True)
    agent = ("cpu=samples,cutoff=0,loop=2,file=%s/cpu-%%n-%%t.txt,pprof=%s/cpu-%%n.pb.gz,"
             "collapsed=%s/cpu-%%n.collapsed" % (d, d, d))
    r = ctx.run("CpuSplit", ["5000"], agent=agent)
    a_ns, b_ns = truth(r)
    texts = numbered_files(d + "/cpu-*-*.txt", r"^cpu-(\d+)-\d{8}T\d{6}Z\.txt$")
    pprofs = numbered_files(d + "/cpu-*.pb.gz", r"^cpu-(\d+)\.pb\.gz$")
    cols = numbered_files(d + "/cpu-*.collapsed", r"^cpu-(\d+)\.collapsed$")
    n = len(texts)
    problems = []
    assert n >= 3 and sorted(texts) == list(range(1, n + 1)), \
        "expected at least 3 periods numbered 1..N, text files %s" % sorted(texts)
    if sorted(pprofs) != sorted(texts) or sorted(cols) != sorted(texts):
        problems.append("periods with text %s, pprof %s, collapsed %s" % (sorted(texts), sorted(pprofs), sorted(cols)))
    sum_a = sum_b = 0
    shares = []
    for k in sorted(texts):
        prof = parse_profile(texts[k])
        if len(prof.sections) != 1:
            problems.append("period %d: %d CPU SAMPLES sections, expected 1" % (k, len(prof.sections)))
        total, a, b = cpu_split_samples(prof)
        sum_a += a
        sum_b += b
        pp = pprof_reader.read_pprof(pprofs[k]) if k in pprofs else None
        col = sum(c for _, c in parse_collapsed_file(cols[k])) if k in cols else None
        if pp is not None and (pp.total("samples") != total or col != total):
            problems.append("period %d: text %d, pprof %d, collapsed %s samples" % (k, total, pp.total("samples"), col))
        if a + b:
            shares.append("%d: %d+%d %.0f%%" % (k, a, b, 100.0 * a / (a + b)))
        want = a_ns / float(a_ns + b_ns)
        if a + b >= 20:
            bound = max(0.03, 4 * math.sqrt(want * (1 - want) / (a + b)))
            if abs(a / float(a + b) - want) > bound:
                problems.append("period %d: partA %.1f%% of %d samples, truth %.1f%% (bound %.1f points)"
                                % (k, 100.0 * a / (a + b), a + b, 100 * want, 100 * bound))
    expected = (a_ns + b_ns) / float(INTERVAL_NS)
    ctx.note("%d periods (%s); partA+partB %d samples, truth %.0f (%.1f%% off)"
             % (n, ", ".join(shares), sum_a + sum_b, expected, 100.0 * (sum_a + sum_b - expected) / expected))
    if abs(sum_a + sum_b - expected) > 0.05 * expected:
        problems.append("the periods' partA+partB samples, %d, are not within 5%% of the worker's CPU time "
                        "/ 10 ms, %.0f" % (sum_a + sum_b, expected))
    assert not problems, "; ".join(problems)

def test_loop_keep(ctx):
    d = ctx.path("keep")
    os.makedirs(d, exist_ok=True)
    agent = ("cpu=samples,cutoff=0,loop=1,loop_keep=2,loop_mode=cumulative,file=%s/cpu.txt,pprof=%s/cpu.pb.gz"
             % (d, d))
    r = ctx.run("CpuSplit", ["3000"], agent=agent)
    a_ns, b_ns = truth(r)
    texts = numbered_files(d + "/cpu.*.txt", r"^cpu\.\d{8}T\d{6}Z\.(\d+)\.txt$")
    pprofs = numbered_files(d + "/cpu.*.pb.gz", r"^cpu\.\d{8}T\d{6}Z\.(\d+)\.pb\.gz$")
    left = sorted(os.listdir(d))
    assert len(texts) == 2 and sorted(pprofs) == sorted(texts) and len(left) == 4, \
        "loop_keep=2: expected the last 2 periods' text and pprof files, found %s" % left
    last = max(texts)
    assert last >= 3 and min(texts) == last - 1, \
        "loop_keep=2: expected periods N-1 and N with N >= 3, found %s" % sorted(texts)
    (t1, a1, b1), (t2, a2, b2) = (cpu_split_samples(parse_profile(texts[k])) for k in sorted(texts))
    pp = pprof_reader.read_pprof(pprofs[last])
    expected = (a_ns + b_ns) / float(INTERVAL_NS)
    ctx.note("periods %s kept; cumulative totals %d then %d (pprof %d); partA+partB %d, truth %.0f"
             % (sorted(texts), t1, t2, pp.total("samples"), a2 + b2, expected))
    problems = []
    if t2 < t1 or a2 < a1 or b2 < b1:
        problems.append("cumulative counts fell: %d/%d/%d then %d/%d/%d" % (t1, a1, b1, t2, a2, b2))
    if pp.total("samples") != t2:
        problems.append("the last period's pprof has %d samples, its text %d" % (pp.total("samples"), t2))
    if abs(a2 + b2 - expected) > 0.05 * expected:
        problems.append("the last cumulative file's partA+partB, %d, is not within 5%% of %.0f" % (a2 + b2, expected))
    assert not problems, "; ".join(problems)

def test_loop_attach(ctx):
    d = ctx.path("attach")
    os.makedirs(d, exist_ok=True)
    p, so, se, cmd = spawn(ctx, "CpuSplit", ["4000"], None, "cpusplit")
    problems = []
    try:
        time.sleep(1.0)
        a = subprocess.run([HPROF, "attach", str(p.pid), "cpu=samples,loop=1,file=%s/a-%%n.txt" % d],
                           capture_output=True, text=True, timeout=60)
        assert a.returncode == 0, "hprof attach: expected exit 0, found %d: %s" % (
            a.returncode, (a.stdout + a.stderr)[-300:])
        deadline = time.time() + 60
        while len(glob.glob(d + "/a-*.txt")) < 3 and time.time() < deadline and p.poll() is None:
            time.sleep(0.2)
        st = subprocess.run([HPROF, "status", str(p.pid)], capture_output=True, text=True, timeout=60)
        if not re.search(r"^loop: period \d+ of 1000 ms \(delta\)", st.stdout + st.stderr, re.M):
            problems.append("hprof status does not name the period: %s" % (st.stdout + st.stderr)[-300:])
        bad = subprocess.run([HPROF, "start", str(p.pid), "cpu=samples,loop=5,file=%s/a-%%n.txt" % d],
                             capture_output=True, text=True, timeout=60)
        if bad.returncode == 0 or "loop=" not in bad.stdout + bad.stderr:
            problems.append("a start with another loop= was not refused: %s" % (bad.stdout + bad.stderr)[-300:])
    finally:
        reap(ctx, p, so, se, cmd)
    files = numbered_files(d + "/a-*.txt", r"^a-(\d+)\.txt$")
    if len(files) < 2 or sorted(files) != list(range(1, len(files) + 1)):
        problems.append("expected at least 2 periods numbered 1..N, found %s" % sorted(files))
    totals = []
    for k in sorted(files):
        total, a, b = cpu_split_samples(parse_profile(files[k]))
        totals.append("%d: %d (%d+%d)" % (k, total, a, b))
    ctx.note("periods while attached: %s" % ", ".join(totals))
    assert not problems, "; ".join(problems)


BAD_LOOP_OPTIONS = [
    ("loop=0", "'loop'"),
    ("loop=abc", "'loop'"),
    ("loop=500ms", "'loop'"),
    ("loop_keep=2", "loop_keep="),
    ("loop=2,loop_mode=sideways", "'loop_mode'"),
    ("loop=2,pprof=p-%q.pb.gz", "'pprof'"),
]


def test_loop_bad(ctx):
    problems = []
    for opts, names in BAD_LOOP_OPTIONS:
        r = ctx.run("Busy", ["200"], agent="cpu=samples," + opts, expect_rc="nonzero")
        if names not in r.stderr or "Busy: done" in r.stdout:
            problems.append("%s: stderr does not name %s: %s" % (opts, names, r.stderr.strip()[-200:]))
    assert not problems, "; ".join(problems)
