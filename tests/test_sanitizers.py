"""The agent built with ASan+UBSan (`make asan`, build/asan/libhprof.so)
inside real JVMs: every collector and writer run once, no sanitizer report,
each run's known truth still right.

    asan_agent      CpuSplit, ThreadChurn, GcChurn, WallStates (samples, the
                    writers), Deadlocks (monitor=y, deadlock=100), TimesTruth
                    (cpu=times: the rewriter on every class), AllocTruth
                    (heap=all, heap=sites: exact counts), on JDK 21+ virtual
                    threads beside a debugger, then net= to a raw listener
"""

import os
import socket
import threading

import pytest

import hprof_text
from heap_sites import sites_sections, text_heap_dump
from jdwp import JDWP_SERVER
from monitor_checks import check_deadlocks, final_monitor
from run import ASAN_AGENT, asan_env, build_asan_agent, final_section, parse_cpu_time, parse_profile

SANITIZER_WORDS = ("AddressSanitizer", "runtime error:", "LeakSanitizer")


def sanitizer_reports(stderr):
    return [line for line in stderr.splitlines() if any(w in line for w in SANITIZER_WORDS)]


def samples(ctx, main, prof):
    sec = final_section(prof)
    assert sec.total > 0, "%s: no samples under ASan" % main
    return "%d samples" % sec.total


def times_rows(ctx, main, prof):
    total, rows = parse_cpu_time(ctx.path("times.hprof.txt"))[-1]
    hot = hprof_text.calls_of(rows, "TimesTruth.hot")
    assert hot == 1000000, "%s under ASan: TimesTruth.hot has %d calls" % (main, hot)
    return "%d CPU TIME rows, %d ms" % (len(rows), total)


def heap_all(ctx, main, prof):
    path = ctx.path("heap.hprof.txt")
    rows = sites_sections(path)[-1][1]
    small = [r for r in rows if r.cls == "AllocTruth$Small"]
    assert sum(r.alloc_objs for r in small) == 100000 and sum(r.live_objs for r in small) == 25000, \
        "%s under ASan: Small sites %s" % (main, [(r.alloc_objs, r.live_objs) for r in small])
    n, _b, records, _refs = text_heap_dump(path)
    dumped = sum(1 for k, a in records.values() if k == "OBJ" and a["class"].startswith("AllocTruth$Small@"))
    assert dumped == 25000, "%s under ASan: %d Small in the heap dump, 25000 alive" % (main, dumped)
    return "Small 100000/25000 in SITES, %d objects in the heap dump" % n


def heap_sites(ctx, main, prof):
    rows = sites_sections(ctx.path("sites.hprof.txt"))[-1][1]
    got = {}
    for cls in ("AllocTruth$Small", "AllocTruth$Refl"):
        mine = [r for r in rows if r.cls == cls]
        got[cls] = (sum(r.alloc_objs for r in mine), sum(r.live_objs for r in mine))
    assert got == {"AllocTruth$Small": (100000, 25000), "AllocTruth$Refl": (1000, 10)}, \
        "%s under ASan: exact sites %s" % (main, got)
    return "exact sites: Small 100000/25000, Refl 1000/10"


def deadlocks(ctx, main, prof):
    dl = final_monitor(prof)[3]
    problems = []
    check_deadlocks(prof, dl, problems)
    assert not problems, "%s under ASan: %s" % (main, "; ".join(problems))
    assert len(prof.deadlocks) >= 2, "%s under ASan: no DEADLOCKS dump from deadlock=100 before the exit dump" % main
    return "%d DEADLOCKS sections, %d cycles in the last" % (len(prof.deadlocks), len(dl.cycles))


def vthread_parks(ctx, main, prof):
    mt = prof.final_monitor_time
    parks = sum(r.count for r in mt.rows if r.monitor == "java.util.concurrent.locks.ReentrantLock$NonfairSync") \
        if mt else 0
    assert parks > 0, "%s under ASan, beside a debugger: no park on the ReentrantLock timed" % main
    return "%d ReentrantLock parks of virtual threads timed by their unmounts" % parks


def asan_runs(ctx):
    """(main, args, options, check, JVM options) of each run."""
    p = ctx.path
    runs = [("CpuSplit", ["2000"], "cpu=samples,interval=1,depth=64,thread=y,collapsed=%s,pprof=%s,flamegraph=%s,"
             "file=%s" % (p("split.collapsed"), p("split.pb.gz"), p("split.html"), p("split.hprof.txt")), samples),
            ("ThreadChurn", ["1000", "50", "300000"], "cpu=samples,interval=1,file=%s" % p("churn.hprof.txt"),
             samples),
            # native=y's walks of every thread (GC workers' deep C++ stacks) at 1 ms.
            ("GcChurn", ["2"], "cpu=samples,interval=1,thread=y,collapsed=%s,file=%s"
             % (p("gc.collapsed"), p("gc.hprof.txt")), samples),
            # wall=: the ticker, its real-time signal on blocked threads, the states.
            ("WallStates", ["1500", "200"], "wall=5,cpu=samples,thread=y,pprof=%s,file=%s"
             % (p("wall.pb.gz"), p("wall.hprof.txt")), samples),
            ("Deadlocks", ["1500"], "monitor=y,thread=y,deadlock=100,pprof=%s,file=%s"
             % (p("deadlocks.pb.gz"), p("deadlocks.hprof.txt")), deadlocks),
            # cpu=times: every class rewritten by the ASan-built rewriter as it loads.
            ("TimesTruth", ["exit"], "cpu=times,cutoff=0,file=%s" % p("times.hprof.txt"), times_rows),
            # heap=all: allocation hooks, the object store, the census, the dump's tags from
            # the store, the heap walk and the text dump.
            ("AllocTruth", [], "heap=all,depth=16,cutoff=0,file=%s" % p("heap.hprof.txt"), heap_all),
            # heap=sites alone: the stack walk from the native, trace caches, the
            # object store's sweeps, per-thread traces (thread=y).
            ("AllocTruth", [], "heap=sites,thread=y,cutoff=0,pprof=%s,flamegraph=%s,file=%s"
             % (p("sites.pb.gz"), p("sites.html"), p("sites.hprof.txt")), heap_sites)]
    runs = [r + ((),) for r in runs]
    if ctx.jdk_name != "jdk17":
        # monitor=y's handlers of the mount events (breakpoints left to jdwp).
        runs.append(("VirtualContention", ["virtual", "200", "1"], "monitor=y,file=%s" % p("vc.hprof.txt"),
                     vthread_parks, ["-Djdk.virtualThreadScheduler.parallelism=2", JDWP_SERVER]))
    return runs


def test_asan_agent(ctx):
    """The agent built with ASan+UBSan, inside a real JVM: the split and idle
    threads, then 1000 threads starting and ending while sampling at 1 ms,
    then the monitor features (monitor=y with thread=y and the periodic
    deadlock check) on Deadlocks, then cpu=times (the rewriter on every
    class the JVM loads) on TimesTruth, then heap=all and heap=sites on
    AllocTruth; pprof=, flamegraph= and collapsed= beside them (whole stacks,
    the writers); on JDK 21+ monitor=y on virtual threads beside a debugger
    (their parks timed by the mount events); then net= to a raw listener."""
    env = asan_env()
    if env is None:
        pytest.skip("gcc's libasan.so not found")
    build_asan_agent(ctx)
    for main, args, opts, check, jvm in asan_runs(ctx):
        r = ctx.run(main, args, agent=opts, agent_path=ASAN_AGENT, env=env, jvm=jvm,
                    tag="asan-" + main + ("-sites" if "heap=sites" in opts else ""), timeout=300)
        bad = sanitizer_reports(r.stderr)
        assert not bad, "%s: sanitizer report: %s (see %s)" % (main, bad[0], ctx.out)
        prof = parse_profile(opts.split("file=")[1])
        ctx.note("asan %s: exit 0, no sanitizer report, %s" % (main, check(ctx, main, prof)))
    for out in ("split.pb.gz", "split.html", "deadlocks.lock.pb.gz", "deadlocks.wait.pb.gz", "sites.pb.gz",
                "sites.html"):
        assert os.path.isfile(ctx.path(out)) and os.path.getsize(ctx.path(out)) > 0, \
            "under ASan, %s was not written" % out
    asan_net_run(ctx, env)


def asan_net_run(ctx, env):
    """net= under ASan: the spool, the send queue and the sender thread, with
    a listener that sends no greeting (raw mode: the bytes of the report)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(120)
    got = bytearray()

    def receive():
        try:
            conn, _ = server.accept()
            with conn:
                conn.settimeout(120)
                while True:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    got.extend(chunk)
        except OSError:
            pass

    reader = threading.Thread(target=receive, daemon=True)
    reader.start()
    try:
        r = ctx.run("CpuSplit", ["1500"], agent="cpu=samples,interval=1,net=127.0.0.1:%d,file=%s"
                    % (server.getsockname()[1], ctx.path("net-fallback.hprof.txt")),
                    agent_path=ASAN_AGENT, env=env, tag="asan-net", timeout=300)
        reader.join(60)
    finally:
        server.close()
    bad = [line for line in r.stderr.splitlines() if "AddressSanitizer" in line or "runtime error:" in line]
    assert not bad, "net=: sanitizer report: %s (see %s)" % (bad[0], ctx.out)
    path = ctx.path("net-received.hprof.txt")
    with open(path, "wb") as f:
        f.write(bytes(got))
    sec = final_section(parse_profile(path), "the report received over net=")
    assert sec.total > 0, "net= under ASan: no samples in the %d bytes received" % len(got)
    ctx.note("asan net=: exit 0, no sanitizer report, %d bytes received, %d samples" % (len(got), sec.total))
