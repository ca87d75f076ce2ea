"""Finalizers (issue 17's first case; pytest tests, run on each JDK with the ctx fixture of tests/conftest.py): a program
whose 1,000,000 finalizable objects must all be finalized within its run
(tests/java/Finalizers.java, -Xmx64m), without the agent, under cpu=times,
exact heap=sites and heap_sample=.

    finalizers   every run: exit 0, every object finalized, no
                 OutOfMemoryError. cpu=times: Finalizable.<init>, .init and
                 .finalize (run by the Finalizer thread) counted exactly
                 1,000,000 times each; the JDK's own reference processing
                 on the JVM's service threads (ReferenceQueue.remove and
                 .enqueue, Finalizer.runFinalizer) not recorded. Exact
                 heap=sites: Finalizable allocated exactly 1,000,000 times
                 and 0 live at the end, as many java.lang.ref.Finalizer
                 objects. heap_sample=: the Finalizable estimate within 30%.
                 Peak RSS and CPU per run (os.wait4) go to the notes, as
                 ratios to the run without the agent: not asserted.
    finalizer_empty  cpu=times on tests/java/EmptyFinalizer.java: 100,000
                 objects of a class whose finalize() only returns make no
                 java.lang.ref.Finalizer (the JVM's rule for an empty
                 finalizer holds on the rewritten class), 100,000 of a class
                 with a real finalize() make 100,000; their constructors
                 counted exactly.
"""

import os
import subprocess
import time

import pytest

import heap_sites
from hprof_text import calls_of
from run import Run, parse_cpu_time, truth_fields

ROUNDS, PER_ROUND = 20, 50_000
N = ROUNDS * PER_ROUND


def run_measured(ctx, agent, tag):
    """ctx.run, with the child's CPU time and peak RSS (os.wait4)."""
    cmd = ctx.java_cmd("Finalizers", [ROUNDS, PER_ROUND, 60000], agent, jvm=["-Xmx64m"])
    so, se = ctx.path(tag + ".stdout"), ctx.path(tag + ".stderr")
    with open(ctx.path(tag + ".cmd"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    t0 = time.time()
    with open(so, "wb") as fo, open(se, "wb") as fe:
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, cwd=ctx.out)
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.time() - t0 > 300:
                p.kill()
                p.wait()
                pytest.fail("timeout after 300 s: %s" % " ".join(cmd))
            time.sleep(0.05)
    p.returncode = os.waitstatus_to_exitcode(status)
    r = Run(p.returncode, open(so, errors="replace").read(), open(se, errors="replace").read(), p.pid, cmd)
    ctx.check_crash(r)
    problems = []
    if "OutOfMemoryError" in r.stderr:
        problems.append("%s: OutOfMemoryError" % tag)
    t = truth_fields(r.stderr)
    if r.rc != 0:
        problems.append("%s: exit code %d (2: not every object finalized, 3: OutOfMemoryError): %s"
                        % (tag, r.rc, r.stderr.strip()[-300:]))
    elif t.get("created") != N or t.get("finalized") != N or t.get("inits") != N:
        problems.append("%s: TRUTH %r, expected %d created, finalized and init'ed" % (tag, t, N))
    if problems:
        pytest.fail("; ".join(problems))
    return r, t, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def test_finalizers(ctx):
    problems, notes = [], []
    _, t0, cpu0, rss0 = run_measured(ctx, None, "none")
    notes.append("no agent: %.2f s CPU, %.0f MB peak RSS, backlog max %d, paced %d ms"
                 % (cpu0, rss0, t0["backlog_max"], t0["paced_ms"]))

    path = ctx.path("times.txt")
    _, t, cpu, rss = run_measured(ctx, "cpu=times,cutoff=0,file=" + path, "times")
    notes.append("cpu=times: %.2fx CPU, %.2fx peak RSS, backlog max %d, paced %d ms"
                 % (cpu / cpu0, rss / rss0, t["backlog_max"], t["paced_ms"]))
    rows = parse_cpu_time(path)[-1][1]
    for m in ("Finalizers$Finalizable.<init>", "Finalizers$Finalizable.init", "Finalizers$Finalizable.finalize"):
        got = calls_of(rows, m)
        if got != N:
            problems.append("cpu=times: %s %d calls, expected exactly %d" % (m, got, N))
    # Only the Finalizer thread (a service thread) calls these: the JDK's
    # own methods are not recorded there.
    for m in ("java.lang.ref.ReferenceQueue.remove", "java.lang.ref.Finalizer.runFinalizer",
              "java.lang.ref.ReferenceQueue.enqueue"):
        got = calls_of(rows, m)
        if got != 0:
            problems.append("cpu=times: %s recorded %d times on the JVM's service threads" % (m, got))

    path = ctx.path("sites.txt")
    _, t, cpu, rss = run_measured(ctx, "heap=sites,cutoff=0,file=" + path, "sites")
    notes.append("heap=sites: %.2fx CPU, %.2fx peak RSS, backlog max %d, paced %d ms"
                 % (cpu / cpu0, rss / rss0, t["backlog_max"], t["paced_ms"]))
    rows = heap_sites.sites_sections(path)[-1][1]
    fin = [r for r in rows if r.cls == "Finalizers$Finalizable"]
    alloc, live = sum(r.alloc_objs for r in fin), sum(r.live_objs for r in fin)
    if alloc != N or live != 0:
        problems.append("heap=sites: Finalizable %d allocated, %d live; expected exactly %d and 0"
                        % (alloc, live, N))
    refs = sum(r.alloc_objs for r in rows if r.cls == "java.lang.ref.Finalizer")
    if not N <= refs <= N + 1000:
        problems.append("heap=sites: %d java.lang.ref.Finalizer allocated, expected %d (one per object, "
                        "and the JDK's own few)" % (refs, N))

    path = ctx.path("sampled.txt")
    _, t, cpu, rss = run_measured(ctx, "heap=sites,heap_sample=4k,cutoff=0,file=" + path, "sampled")
    notes.append("heap_sample=4k: %.2fx CPU, %.2fx peak RSS" % (cpu / cpu0, rss / rss0))
    rows = heap_sites.sites_sections(path)[-1][1]
    est = sum(r.alloc_objs for r in rows if r.cls == "Finalizers$Finalizable")
    if abs(est - N) > 0.3 * N:
        problems.append("heap_sample=4k: Finalizable %d allocated (estimated), truth %d" % (est, N))
    for n in notes:
        ctx.note(n)
    if problems:
        pytest.fail("; ".join(problems))


def test_finalizer_empty(ctx):
    """An empty finalize() stays empty under cpu=times (EmptyFinalizer.java):
    its class's instances are not registered for finalization, those of a
    class with a real finalize() are; their constructors are counted."""
    n = 100_000
    path = ctx.path("times.txt")
    r = ctx.run("EmptyFinalizer", [n], "cpu=times,cutoff=0,file=" + path)
    t = truth_fields(r.stderr)
    if not t:
        pytest.fail("no TRUTH line: %s" % r.stderr.strip()[-300:])
    problems = []
    if t["after_real"] - t["after_empty"] < n:
        problems.append("test program invalid: %d objects with a real finalize() made %d Finalizers"
                        % (n, t["after_real"] - t["after_empty"]))
    if t["after_empty"] - t["finalizers_before"] > 100:
        problems.append("%d objects whose finalize() is empty made %d Finalizers: the inserted calls "
                        "made the empty finalizer non-empty" % (n, t["after_empty"] - t["finalizers_before"]))
    rows = parse_cpu_time(path)[-1][1]
    for m in ("EmptyFinalizer$Base.<init>", "EmptyFinalizer$Empty.<init>", "EmptyFinalizer$Real.<init>"):
        got = calls_of(rows, m)
        if got != n:
            problems.append("cpu=times: %s %d calls, expected exactly %d" % (m, got, n))
    if problems:
        pytest.fail("; ".join(problems))
    ctx.note("Finalizers: %d before, %d after %d empty, %d after %d real"
             % (t["finalizers_before"], t["after_empty"], n, t["after_real"], n))
