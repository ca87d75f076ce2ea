"""monitor=y against programs whose contention and waits are known.

    monitor_contention  Contention: HotLock's time within 20% of the JVM's
                        own blocked time, its count within 10%, the
                        ReentrantLock's parks within 20% of the program's
                        lock() time, the rows' frames where the threads block
    monitor_threads     the same with thread=y: each row on the right
                        thread, each thread's time within 20% of its own
    monitor_cpu         cpu=samples and monitor=y in one run: one dump with
                        CPU SAMPLES then the monitor sections
    monitor_waits       Waits: each kind of wait on its own thread within 20%
                        of the program's timing, in the right section
    monitor_dump_waiters
                        a thread in Object.wait() waits to be notified, not
                        to enter (Deadlocks' obj-waiter)
    monitor_dump_names  MONITOR DUMP names classes in Java form and threads
                        by their names
    monitor_enter_line  a contended enter at the line of its monitorenter
"""

import re

from monitor_checks import (DEADLOCK_STATUS, HOT_LOCK, NOISE_LOCK, NONFAIR, check_contention, check_monitor_dump,
                            contention_truth, deadlocks_ready, final_monitor, one_serial, within)
from run import diag, final_section, marked_line, parse_profile, tail


def test_monitor_contention(ctx):
    prof_path = ctx.path("contention.hprof.txt")
    r = ctx.run("Contention", ["1500", "1500"], agent="monitor=y,file=" + prof_path)
    truth = contention_truth(r.stderr)
    prof = parse_profile(prof_path)
    problems = []
    check_contention(ctx, prof, truth, problems)
    assert not problems, "; ".join(problems)
    assert "deadlock" not in r.stderr, "stderr mentions a deadlock: %s" % tail(r.stderr)


def test_monitor_enter_line(ctx):
    """A contended enter is placed at the line of the monitorenter: the
    line of `synchronized (GATE)` (marked ENTER-STATEMENT in EnterLine.java),
    not the block's first line, which HotSpot's location of the blocked
    frame (the instruction after the monitorenter) gives; and a contended
    synchronized method's enter at its call (ENTER-CALL), the method's own
    frame left out (it sits at its first line, which the thread has not
    reached). Also the HotLock rows of Contention (compiled code too)."""
    stmt, call = marked_line("EnterLine.java", "ENTER-STATEMENT"), marked_line("EnterLine.java", "ENTER-CALL")
    hot = marked_line("Contention.java", "ENTER-HOT")
    prof_path = ctx.path("enterline.hprof.txt")
    r = ctx.run("EnterLine", ["400"], agent="monitor=y,file=" + prof_path)
    assert "EnterLine: holding" in r.stderr and "EnterLine: done" in r.stderr, \
        "EnterLine did not get its threads blocked; %s" % diag(r)
    prof = parse_profile(prof_path)

    def tops(cls, p, sec):
        return [(p.traces[row.trace].top, row.count) for row in sec.rows if row.monitor == cls]

    def where(t):
        return "%s:%s" % (t.qualname, t.line) if t else None

    want = {"EnterLine$Gate": ("EnterLine.blockOnStatement", stmt, 2),
            "java.lang.Class": ("EnterLine.lambda$main$1", call, 1)}
    got = {cls: tops(cls, prof, prof.final_monitor_time) for cls in want}
    for cls, rows in got.items():
        ctx.note("%s: %s" % (cls, [(where(t), n) for t, n in rows]))
    cprof_path = ctx.path("contention.hprof.txt")
    ctx.run("Contention", ["600", "100"], agent="monitor=y,file=" + cprof_path)
    cprof = parse_profile(cprof_path)
    hot_rows = tops(HOT_LOCK, cprof, cprof.final_monitor_time)
    ctx.note("%s: %s" % (HOT_LOCK, [(where(t), n) for t, n in hot_rows]))
    for cls, (method, line, count) in want.items():
        assert sum(n for _, n in got[cls]) == count, \
            "%d contended enters of %s (expected %d)" % (sum(n for _, n in got[cls]), cls, count)
        wrong = [where(t) for t, _ in got[cls] if t is None or t.qualname != method or str(t.line) != str(line)]
        assert not wrong, "%s entered at %s, not %s line %d" % (cls, wrong, method, line)
    wrong = [(where(t), n) for t, n in hot_rows
             if t is None or (t.qualname, str(t.line)) != ("Contention$Hot.run", str(hot))]
    assert hot_rows and not wrong, "HotLock entered at %s, not Contention$Hot.run line %d" % (wrong or "no row", hot)


def test_monitor_threads(ctx):
    """thread=y: the HotLock rows belong to the hot-* threads, each with about
    its own blocked time; parks to rl-*, noise to noise-*."""
    prof_path = ctx.path("contention.hprof.txt")
    r = ctx.run("Contention", ["1500", "1500"], agent="monitor=y,thread=y,file=" + prof_path)
    truth = contention_truth(r.stderr)
    prof = parse_profile(prof_path)
    problems = []
    mt = check_contention(ctx, prof, truth, problems)
    assert not problems, "; ".join(problems)
    mw = prof.final_monitor_wait
    groups = {HOT_LOCK: "hot-", NOISE_LOCK: "noise-", NONFAIR: "rl-"}
    by_thread = {}
    for sec in (mt, mw):
        for row in sec.rows:
            th = prof.traces[row.trace].thread
            assert th is not None, "thread=y but trace %d (%s row) has no thread" % (row.trace, row.monitor)
            name = prof.thread_name(th) or "?"
            if row.monitor in groups:
                assert name.startswith(groups[row.monitor]), "%s row %d is on thread %s, not a %s* thread" \
                    % (row.monitor, row.rank, name, groups[row.monitor])
            if sec is mt:
                key = (row.monitor, name)
                ms, n = by_thread.get(key, (0.0, 0))
                by_thread[key] = (ms + mt.ms(row), n + row.count)
    per = ["%s %.0f/%d" % (name, by_thread.get((HOT_LOCK, name), (0.0, 0))[0], blocked)
           for name, blocked in sorted(truth["hot_threads"].items())]
    per += ["%s %.0f/%.0f" % (name, by_thread.get((NONFAIR, name), (0.0, 0))[0], lock_ms)
            for name, lock_ms in sorted(truth["rl_threads"].items())]
    ctx.note("per thread, ours/program ms: %s" % ", ".join(per))
    for name, blocked in sorted(truth["hot_threads"].items()):
        ours = by_thread.get((HOT_LOCK, name), (0.0, 0))[0]
        if blocked >= 100:
            assert within(ours, blocked), \
                "%s: HotLock %.0f ms not within 20%% of its JVM blocked time %d ms" % (name, ours, blocked)
        if blocked >= 20:
            assert (HOT_LOCK, name) in by_thread, "%s was blocked %d ms but has no HotLock row" % (name, blocked)
    for name, lock_ms in sorted(truth["rl_threads"].items()):
        ours = by_thread.get((NONFAIR, name), (0.0, 0))[0]
        if lock_ms >= 100:
            assert within(ours, lock_ms), \
                "%s: ReentrantLock %.0f ms not within 20%% of its lock() time %.0f ms" % (name, ours, lock_ms)


def test_monitor_cpu(ctx):
    """cpu=samples and monitor=y in one run: a CPU SAMPLES section then the
    monitor sections, both right."""
    prof_path = ctx.path("contention.hprof.txt")
    r = ctx.run("Contention", ["1000", "1000"], agent="cpu=samples,monitor=y,file=" + prof_path)
    truth = contention_truth(r.stderr)
    prof = parse_profile(prof_path)
    sec = final_section(prof)
    problems = []
    check_contention(ctx, prof, truth, problems)
    order = [k for k, _ in prof.section_order]
    want = ["cpu", "monitor_time", "monitor_wait", "monitor_dump", "deadlocks"]
    if ctx.jdk_name != "jdk17":                 # JDKs with virtual threads: MONITOR PINNED TIME
        want.insert(3, "monitor_pinned")
    spin = prof.samples(sec, lambda t: t.has_method("Contention.spin"))
    ctx.note("sections: %s; CPU samples %d, %d in Contention.spin" % (" ".join(order), sec.total, spin))
    assert not problems, "; ".join(problems)
    assert order == want, "sections %s, expected one dump: %s" % (order, want)
    assert spin >= 0.5 * sec.total, \
        "only %d of %d samples in Contention.spin (the threads spin most of the time)" % (spin, sec.total)


def waits_truth(stderr):
    t = {}
    for kind, name, ns, calls in re.findall(r"^WAIT kind=(\S+) thread=(\S+) ns=(\d+) calls=(\d+)$", stderr, re.M):
        t[kind] = (name, int(ns) / 1e6, int(calls))
    assert "Waits: done" in stderr and len(t) == 6, "Waits printed no complete truth; stderr: %s" % tail(stderr)
    return t


# Waits.java: kind -> (section, lock class) where its blocking must show.
WAIT_KINDS = {
    "object": ("wait", "Waits$WaitObj"),
    "cond": ("wait", "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject"),
    "nanos": ("wait", "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject"),
    "future": ("wait", "java.util.concurrent.FutureTask"),
    "latch": ("time", "java.util.concurrent.CountDownLatch$Sync"),
}
SECTION_TITLE = {"time": "MONITOR TIME", "wait": "MONITOR WAIT TIME"}


def test_monitor_waits(ctx):
    """MONITOR WAIT TIME: Object.wait, Condition.await, Condition.awaitNanos
    and FutureTask.get each timed on their own thread; a CountDownLatch
    (ownable synchronizer) as contention; Thread.sleep nowhere."""
    prof_path = ctx.path("waits.hprof.txt")
    r = ctx.run("Waits", ["300", "3"], agent="monitor=y,thread=y,file=" + prof_path)
    truth = waits_truth(r.stderr)
    prof = parse_profile(prof_path)
    mt, mw, _dump, _dl = final_monitor(prof)
    found = {}
    for kind, (name, ms, calls) in sorted(truth.items()):
        serial = one_serial(prof, name)
        found[kind] = {"time": [(rw, mt) for rw in mt.rows if prof.traces[rw.trace].thread == serial],
                       "wait": [(rw, mw) for rw in mw.rows if prof.traces[rw.trace].thread == serial]}
    notes = []
    for kind, (name, ms, calls) in sorted(truth.items()):
        rows = found[kind]
        if kind == "sleep":
            notes.append("sleep %.0f ms: %d rows" % (ms, len(rows["time"]) + len(rows["wait"])))
            continue
        where, cls = WAIT_KINDS[kind]
        ours = sum(sec.ms(rw) for rw, sec in rows[where] if rw.monitor == cls)
        n = sum(rw.count for rw, _ in rows[where] if rw.monitor == cls)
        notes.append("%s %s: ours %.0f ms/%d, program %.0f ms/%d calls" % (kind, cls.split(".")[-1], ours, n, ms, calls))
    ctx.note("; ".join(notes))
    for kind, (name, ms, calls) in sorted(truth.items()):
        rows = found[kind]
        if kind == "sleep":
            assert not rows["time"] and not rows["wait"], \
                "Thread.sleep thread has monitor rows: %s" % [rw.monitor for rw, _ in rows["time"] + rows["wait"]]
            continue
        where, cls = WAIT_KINDS[kind]
        other = "time" if where == "wait" else "wait"
        ours = sum(sec.ms(rw) for rw, sec in rows[where] if rw.monitor == cls)
        n = sum(rw.count for rw, _ in rows[where] if rw.monitor == cls)
        assert within(ours, ms), "%s (%s): %.0f ms in %s on %s, program measured %.0f ms" \
            % (name, kind, ours, SECTION_TITLE[where], cls, ms)
        assert n >= calls, "%s: %d episodes for %d blocking calls" % (name, n, calls)
        assert not [rw for rw, _ in rows[other] if rw.monitor == cls], \
            "%s: %s also in %s" % (name, cls, SECTION_TITLE[other])


def run_deadlocks(ctx, ms):
    """Deadlocks with monitor=y, its threads in place: the parsed profile."""
    prof_path = ctx.path("deadlocks.hprof.txt")
    r = ctx.run("Deadlocks", [str(ms)], agent="monitor=y,file=" + prof_path)
    assert deadlocks_ready(r.stdout) is not None, "Deadlocks did not get its threads in place; %s" % diag(r)
    return parse_profile(prof_path)


def test_monitor_dump_waiters(ctx):
    """A thread in Object.wait() is waiting to be notified on its monitor,
    not waiting to enter it (MONITOR DUMP of Deadlocks' obj-waiter)."""
    prof = run_deadlocks(ctx, 500)
    dump = final_monitor(prof)[2]
    waiter = one_serial(prof, "obj-waiter")
    ms = dump.monitors_of("Deadlocks$WaitLock")
    entering = [m.java_name for m in dump.monitors if waiter in m.waiting_to_enter]
    ctx.note("WaitLock monitors: %s; obj-waiter (%d) waiting to enter: %s"
             % ([(m.owner, m.waiting_to_enter, m.waiting_to_be_notified) for m in ms], waiter, entering))
    assert len(ms) == 1, "MONITOR DUMP lists %d Deadlocks$WaitLock monitors (expected 1: obj-waiter is in " \
        "WaitLock.wait())" % len(ms)
    assert ms[0].owner is None and ms[0].waiting_to_be_notified == [waiter], \
        "WaitLock: owner %s, waiting to be notified %s (expected unowned, [%d])" \
        % (ms[0].owner, ms[0].waiting_to_be_notified, waiter)
    assert not entering, "obj-waiter, in Object.wait(), is listed as waiting to enter %s" % entering


def test_monitor_dump_names(ctx):
    """MONITOR DUMP names lock classes in Java form (Deadlocks$MonA, as HPROF
    wrote an owned monitor's class, not LDeadlocks$MonA;) and each thread by
    its name after its serial (THREAD 200011 "dl-mon-a", owner: thread N
    "name", waiting to enter: thread N "name"), the names those of the
    threads' THREAD START records (Deadlocks, while its threads are blocked)."""
    prof = run_deadlocks(ctx, 500)      # the parser checks each name against THREAD START
    dump = final_monitor(prof)[2]
    sigs = [m.signature for m in dump.monitors if not m.named]
    assert not sigs, "MONITOR lines with JVM signatures, not Java names: %s" % sigs[:5]
    assert dump.named, "MONITOR DUMP gives threads by serial only, without their names"
    problems = []
    check_monitor_dump(prof, dump, problems, name_of=dump.names.get)
    assert not problems, "; ".join(problems)
    for name in DEADLOCK_STATUS:
        s = one_serial(prof, name)
        assert dump.names.get(s) == name, "THREAD %d (%s) is named %r in MONITOR DUMP" % (s, name, dump.names.get(s))
