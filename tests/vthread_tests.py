"""monitor=y on virtual threads (imported by tests/run.py): issue 18's
experiment, against the blocked time the program measures itself.

    vthread_contention  400 virtual threads (JDK 25) each hold a ReentrantLock
                        then a monitor for 2 ms (tests/java/VirtualContention):
                        MONITOR TIME's ReentrantLock$NonfairSync rows and
                        VirtualContention$MonLock rows each within 20% of the
                        program's own time in RL.lock() and in front of
                        `synchronized`; the monitor's count within 10% of the
                        program's slow enters (over 20 us); park traces
                        without LockSupport's, Unsafe's or VirtualThread's
                        frames; the program's lock is the rows whose trace
                        has ReentrantLock.lock (the pool's own locks,
                        lockInterruptibly or Condition.await's re-acquire,
                        are other ReentrantLocks); monitor rows
                        topped by VirtualContention.task; no contention in
                        MONITOR WAIT TIME. JDK 17 (no virtual threads): SKIP.
    vthread_platform    the same 400 tasks on 8 platform threads, the same
                        checks (on every JDK): what virtual threads added
                        changed nothing there.
"""

import re

VT_MON = "VirtualContention$MonLock"
NONFAIR = "java.util.concurrent.locks.ReentrantLock$NonfairSync"
HIDDEN = ("java.util.concurrent.locks.LockSupport", "jdk.internal.misc.Unsafe", "java.lang.VirtualThread")


def make_tests(Fail, Skip, parse_profile, final_monitor):
    def truth(stderr, mode):
        m = re.search(r"^VC mode=%s tasks=(\d+) rl_ns=(\d+) rl_slow=(\d+) mon_ns=(\d+) mon_slow=(\d+)$" % mode,
                      stderr, re.M)
        if not m or "VirtualContention: done" not in stderr:
            raise Fail("VirtualContention printed no complete truth; stderr: %s" % stderr.strip()[-400:])
        t = {"tasks": int(m.group(1)), "rl_ms": int(m.group(2)) / 1e6, "rl_slow": int(m.group(3)),
             "mon_ms": int(m.group(4)) / 1e6, "mon_slow": int(m.group(5))}
        if t["rl_ms"] < 300 or t["mon_ms"] < 300:
            raise Fail("test program invalid: too little contention (%.0f ms in lock(), %.0f ms in front of "
                       "synchronized)" % (t["rl_ms"], t["mon_ms"]))
        return t

    def within(ours, want, tol):
        return want > 0 and abs(ours - want) <= tol * want

    def rel(ours, want):
        return "%+.1f%%" % (100.0 * (ours - want) / want) if want else "n/a"

    def check(ctx, mode):
        path = ctx.path("vc-%s.hprof.txt" % mode)
        r = ctx.run("VirtualContention", [mode, "400", "2"], agent="monitor=y,file=" + path, expect_rc=None)
        if mode == "virtual" and r.rc == 3 and "no virtual threads" in r.stderr:
            raise Skip("%s has no virtual threads (JDK 21 and later): nothing to test" % ctx.jdk_name)
        if r.rc != 0:
            raise Fail("exit code %d; stderr: %s" % (r.rc, r.stderr.strip()[-400:]))
        t = truth(r.stderr, mode)
        prof = parse_profile(path)
        mt, mw, _, dl = final_monitor(prof)
        classes = mt.by_class()
        # The program's lock is taken with lock(); the pool's own locks
        # (platform mode: LinkedBlockingQueue's, with lockInterruptibly) are
        # other ReentrantLocks, not the program's truth.
        rl_ms, rl_n = mt.time_of(lambda row: row.monitor == NONFAIR and row.trace in prof.traces and
                                 prof.traces[row.trace].has_method("java.util.concurrent.locks.ReentrantLock.lock"))
        mon_ms, mon_n = classes.get(VT_MON, (0.0, 0))
        ctx.note("%s threads, ReentrantLock: ours %.0f ms in %d parks; program: %.0f ms in lock() (%d of %d calls "
                 "over 20 us): ours %s" % (mode, rl_ms, rl_n, t["rl_ms"], t["rl_slow"], t["tasks"],
                                           rel(rl_ms, t["rl_ms"])))
        ctx.note("%s threads, monitor: ours %.0f ms in %d contended enters; program: %.0f ms in front of "
                 "synchronized (%d of %d enters over 20 us): ours %s"
                 % (mode, mon_ms, mon_n, t["mon_ms"], t["mon_slow"], t["tasks"], rel(mon_ms, t["mon_ms"])))
        problems = []
        if not within(rl_ms, t["rl_ms"], 0.20):
            problems.append("ReentrantLock contention %.0f ms not within 20%% of the program's %.0f ms"
                            % (rl_ms, t["rl_ms"]))
        if not within(mon_ms, t["mon_ms"], 0.20):
            problems.append("monitor contention %.0f ms not within 20%% of the program's %.0f ms"
                            % (mon_ms, t["mon_ms"]))
        if not within(mon_n, t["mon_slow"], 0.10):
            problems.append("monitor count %d not within 10%% of the program's %d slow enters"
                            % (mon_n, t["mon_slow"]))
        if rl_n < t["rl_slow"] * 0.9:
            problems.append("%d ReentrantLock parks for %d slow lock() calls" % (rl_n, t["rl_slow"]))
        for row in mt.rows:
            tr = prof.traces.get(row.trace)
            top = tr.top.qualname if tr is not None and tr.top is not None else None
            if row.monitor == NONFAIR:
                if tr is None or tr.top is None or tr.top.cls in HIDDEN or \
                        tr.top.cls.startswith("java.lang.System$"):
                    problems.append("park row %d: top frame %s (LockSupport's, Unsafe's, VirtualThread's "
                                    "frames must be left out)" % (row.rank, top))
            if row.monitor == VT_MON and top != "VirtualContention.task":
                problems.append("monitor row %d: top frame %s, not VirtualContention.task" % (row.rank, top))
        bad = sorted(set(r.monitor for r in mw.rows if r.monitor in (NONFAIR, VT_MON)))
        if bad:
            problems.append("MONITOR WAIT TIME has contention rows: %s" % bad)
        if dl.cycles:
            problems.append("DEADLOCKS reports %d cycles in a program without deadlock" % len(dl.cycles))
        if "warning" in r.stderr:
            problems.append("the agent warned: %s" % r.stderr.strip()[-300:])
        if problems:
            raise Fail("; ".join(problems))

    def t_vthread_contention(ctx):
        if ctx.jdk_name == "jdk17":
            raise Skip("JDK 17 has no virtual threads (JDK 21 and later): monitor=y on virtual threads not tested")
        check(ctx, "virtual")

    def t_vthread_platform(ctx):
        check(ctx, "platform")

    return [("vthread_contention", t_vthread_contention), ("vthread_platform", t_vthread_platform)]
