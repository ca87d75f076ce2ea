"""monitor=y on virtual threads (pytest tests, run on each JDK with the ctx
fixture of tests/conftest.py): issue 18's experiment, against the blocked
time the program measures itself.

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
    vthread_contention_debugger  the same as vthread_contention beside a
                        debugger (-agentlib:jdwp after ours: breakpoints are
                        left to it): virtual threads' parks are timed from
                        their unmounts to their mounts instead, the same
                        checks.
    vthread_contention_attach  the same with monitor=y attached (jcmd
                        JVMTI.agent_load) while the program waits to start
                        its tasks: no breakpoints after an attach, the
                        unmounts and mounts time the parks, the same checks.
    vthread_pinning     tests/java/VirtualPinning: virtual threads parked on
                        a ReentrantLock inside a class initializer (pinned to
                        their carrier) for a known time, and the same lock
                        taken outside one (unmounted): MONITOR PINNED TIME's
                        rows within 20% of the program's pinned time, one
                        episode per round, traces through PinnedWait.block
                        and <clinit>; the unpinned parks are in MONITOR TIME
                        and not in MONITOR PINNED TIME; with thread=y, each
                        round's rows belong to its own virtual thread.
                        Then monitors (-Djdk.reflect.useNativeAccessorOnly=
                        true): enters in class initializers, under
                        reflection's native invoke0 and by JNI's MonitorEnter
                        (build/tests/libvirtual_pinning.so), and waits in class
                        initializers, in MONITOR PINNED TIME within 20%, one
                        episode a round, and in MONITOR TIME / MONITOR WAIT
                        TIME too; plain enters and waits not in it from
                        JDK 24 (pinned always before).
    vthread_pinning_debugger  the same beside a debugger (-agentlib:jdwp
                        after ours), where the unmounts and mounts time the
                        parks: a pinned park's failed yield does not end its
                        episode, the wrapper of Unsafe.park does.
    vthread_cpu_samples tests/java/VirtualCpu: 4 virtual threads do 7 units of
                        work each (taskA), 4 others 3 units (taskB), yielding
                        all the time (they change carriers): cpu=samples with
                        thread=y charges each sample to its virtual thread:
                        the vcpu-a threads' share of the tasks' samples within
                        4 standard errors of 70%; their traces never name
                        taskB (nor vcpu-b's taskA), and end at
                        VirtualThread.run with no carrier frame (ForkJoinPool,
                        Continuation); at most 5% of the task code's samples
                        are left to a carrier thread (those in a yield,
                        between the unmount event and the unmount: 1-2%);
                        the 8 virtual threads each have a THREAD END.
    vthread_cpu_times   the same program under cpu=times,depth=2: a virtual
                        thread's time is its own (its carriers' CPU time while
                        it was mounted), not its carrier's, which counts the
                        other virtual threads it ran between the yields:
                        Work.unit called exactly 28 times under taskA and 12
                        under taskB; taskA's share of their time within 7
                        points of 70%; their sum at most the JVM's whole CPU
                        time (os.wait4) and at least 40% of it (the carrier's
                        clock made it several times the JVM's CPU time).
    vthread_deadlocks   tests/java/VirtualDeadlock cycles: a cycle of three
                        virtual threads through ReentrantLocks and one of two
                        through monitors, exactly (members, locks, owners),
                        each member with its THREAD line and status in
                        MONITOR DUMP; the two waiters that are not on a cycle
                        are listed (MW/P) and not deadlocked; the monitors'
                        owners and waiters are the virtual threads.
    vthread_deadlocks_debugger  the same beside a debugger (-agentlib:jdwp after
                        ours): the parked members are found through the
                        episodes their unmounts began.
    vthread_deadlock_periodic  the same with deadlock=200: a dump while the
                        JVM runs reports both cycles, and the exit dump again.
    vthread_deadlock_churn  50,000 virtual threads taking two of four locks
                        (ReentrantLocks and monitors) in one global order,
                        with deadlock=20: contention is seen (MONITOR TIME),
                        no cycle is ever reported, no dump but the exit one.
"""

import os
import re
import time

import pytest

import heap_sites
from jdwp import JDWP_SERVER
from monitor_checks import final_monitor, rel, within
from run import agent_load, parse_cpu_time, parse_profile, reap, spawn

VT_MON = "VirtualContention$MonLock"
NONFAIR = "java.util.concurrent.locks.ReentrantLock$NonfairSync"
FAIR = "java.util.concurrent.locks.ReentrantLock$FairSync"
HIDDEN = ("java.util.concurrent.locks.LockSupport", "jdk.internal.misc.Unsafe", "java.lang.VirtualThread")


def truth(stderr, mode):
    m = re.search(r"^VC mode=%s tasks=(\d+) rl_ns=(\d+) rl_slow=(\d+) mon_ns=(\d+) mon_slow=(\d+)$" % mode,
                  stderr, re.M)
    if not m or "VirtualContention: done" not in stderr:
        pytest.fail("VirtualContention printed no complete truth; stderr: %s" % stderr.strip()[-400:])
    t = {"tasks": int(m.group(1)), "rl_ms": int(m.group(2)) / 1e6, "rl_slow": int(m.group(3)),
         "mon_ms": int(m.group(4)) / 1e6, "mon_slow": int(m.group(5))}
    if t["rl_ms"] < 300 or t["mon_ms"] < 300:
        pytest.fail("test program invalid: too little contention (%.0f ms in lock(), %.0f ms in front of "
                    "synchronized)" % (t["rl_ms"], t["mon_ms"]))
    return t


def run_attached(ctx, mode, path, jvm):
    """VirtualContention waiting for its go file while monitor=y is
    attached through jcmd; then its tasks run."""
    go = ctx.path("vc-go")
    if os.path.exists(go):
        os.unlink(go)
    p, so, se, cmd = spawn(ctx, "VirtualContention", [mode, "400", "2", go], None, "vc-attach", jvm=jvm)
    try:
        deadline = time.time() + 30
        while True:
            with open(se, errors="replace") as f:
                err = f.read()
            if "VC waiting" in err or "no virtual threads" in err or p.poll() is not None:
                break
            if time.time() > deadline:
                pytest.fail("VirtualContention did not wait for its go file within 30 s: %s" % err[-300:])
            time.sleep(0.02)
        if "VC waiting" in err:
            agent_load(ctx, p.pid, "start,monitor=y,file=" + path)
            open(go, "w").close()
        return reap(ctx, p, so, se, cmd, want_rc=None)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def check(ctx, mode, how="start"):
    """how: the agent loaded at start-up ("start"), beside a debugger
    loaded after it ("debugger"), or attached ("attach")."""
    path = ctx.path("vc-%s-%s.hprof.txt" % (mode, how))
    # Two carriers whatever the machine's CPU count (the default is one
    # per CPU): the tasks spin while holding the locks, and on one carrier
    # they would never contend (taskset -c 0 made the program invalid).
    # How much the tasks contend is up to the scheduler: a run where the
    # program itself measured too little (a fresh-clone CI once saw 135 ms
    # in front of synchronized) tests nothing, and runs again, twice at most.
    for attempt in range(3):
        jvm = ["-Djdk.virtualThreadScheduler.parallelism=2"]
        if how == "attach":
            r = run_attached(ctx, mode, path, jvm)
        else:
            if how == "debugger":
                # After our agent, so that it is the debugger HotSpot gives
                # the breakpoints to; it listens and is never attached to.
                jvm = jvm + [JDWP_SERVER]
            r = ctx.run("VirtualContention", [mode, "400", "2"], agent="monitor=y,file=" + path,
                        expect_rc=None, jvm=jvm)
        if mode == "virtual" and r.rc == 3 and "no virtual threads" in r.stderr:
            pytest.skip("%s has no virtual threads (JDK 21 and later): nothing to test" % ctx.jdk_name)
        if r.rc != 0:
            pytest.fail("exit code %d; stderr: %s" % (r.rc, r.stderr.strip()[-400:]))
        try:
            t = truth(r.stderr, mode)
            break
        except pytest.fail.Exception as e:
            if "too little contention" not in str(e) or attempt == 2:
                raise
            ctx.note("run %d: %s; run again" % (attempt + 1, e))
    prof = parse_profile(path)
    if how == "attach":
        # No MONITOR DUMP nor DEADLOCKS after an attach (HotSpot tells
        # which monitors a thread owns only to agents loaded at start-up).
        mt, mw, dl = prof.final_monitor_time, prof.final_monitor_wait, None
        if mt is None or mw is None:
            pytest.fail("no MONITOR TIME or MONITOR WAIT TIME after the attach")
    else:
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
    if dl is not None and dl.cycles:
        problems.append("DEADLOCKS reports %d cycles in a program without deadlock" % len(dl.cycles))
    if "hprof: warning" in r.stderr:
        problems.append("the agent warned: %s" % r.stderr.strip()[-300:])
    if mode == "virtual" and how != "start":
        # Said with verbose= notes, or in the agent's status: which way
        # the parks were timed.
        ctx.note("beside a debugger or attached: %s" % ("; ".join(
            l for l in r.stderr.splitlines() if "virtual threads: parks" in l) or "no note"))
    assert not problems, "; ".join(problems)


def test_vthread_contention(ctx):
    if ctx.jdk_name == "jdk17":
        pytest.skip("JDK 17 has no virtual threads (JDK 21 and later): monitor=y on virtual threads not tested")
    check(ctx, "virtual")


def test_vthread_platform(ctx):
    check(ctx, "platform")


def test_vthread_contention_debugger(ctx):
    if ctx.jdk_name == "jdk17":
        pytest.skip("JDK 17 has no virtual threads (JDK 21 and later): monitor=y beside a debugger on virtual "
                    "threads not tested")
    check(ctx, "virtual", "debugger")


def test_vthread_contention_attach(ctx):
    if ctx.jdk_name == "jdk17":
        pytest.skip("JDK 17 has no virtual threads (JDK 21 and later): monitor=y attached on virtual threads "
                    "not tested")
    check(ctx, "virtual", "attach")

# VirtualDeadlock cycles: {thread: (parked, lock class, held by)} per cycle.
cycles_want = [
    {"vdl-rl-a": (True, FAIR, "vdl-rl-b"), "vdl-rl-b": (True, NONFAIR, "vdl-rl-c"),
     "vdl-rl-c": (True, NONFAIR, "vdl-rl-a")},
    {"vdl-mon-a": (False, "VirtualDeadlock$VMonB", "vdl-mon-b"),
     "vdl-mon-b": (False, "VirtualDeadlock$VMonA", "vdl-mon-a")},
]
status_want = {"vdl-rl-a": "P", "vdl-rl-b": "P", "vdl-rl-c": "P", "vdl-rl-waiter": "P",
               "vdl-mon-a": "MW", "vdl-mon-b": "MW", "vdl-mon-waiter": "MW", "vdl-cond-waiter": "CW"}
# monitor -> (owner, threads waiting to enter)
monitors_want = {"VirtualDeadlock$VMonA": ("vdl-mon-a", {"vdl-mon-b", "vdl-mon-waiter"}),
                 "VirtualDeadlock$VMonB": ("vdl-mon-b", {"vdl-mon-a"})}


def skip_without_vthreads(ctx, r=None):
    if ctx.jdk_name == "jdk17" or (r is not None and r.rc == 3 and "no virtual threads" in r.stderr):
        pytest.skip("%s has no virtual threads (JDK 21 and later): deadlocks of virtual threads not tested"
                    % ctx.jdk_name)


def cycles_of(prof, sec):
    return [{m.name: (m.parked, m.lock, prof.thread_name(m.held_by)) for m in c} for c in sec.cycles]


def check_cycles(prof, sec, problems, what):
    got = cycles_of(prof, sec)
    if sorted(map(sorted, got)) != sorted(map(sorted, cycles_want)) or any(w not in got for w in cycles_want):
        problems.append("%s: cycles %s, expected exactly %s" % (what, got, cycles_want))


def run_cycles(ctx, hold_ms, options, jvm=()):
    path = ctx.path("vdl.hprof.txt")
    r = ctx.run("VirtualDeadlock", ["cycles", str(hold_ms)], agent="monitor=y,%sfile=%s" % (options, path),
                expect_rc=None, jvm=jvm)
    skip_without_vthreads(ctx, r)
    if r.rc != 0 or "READY" not in r.stdout:
        pytest.fail("VirtualDeadlock did not get its threads in place (exit code %d); stderr: %s"
                    % (r.rc, r.stderr.strip()[-400:]))
    return r, path, parse_profile(path)


def deadlocks(ctx, jvm=()):
    skip_without_vthreads(ctx)
    r, path, prof = run_cycles(ctx, 500, "", jvm)
    _, _, dump, dl = final_monitor(prof)
    problems = []
    check_cycles(prof, dl, problems, "DEADLOCKS")
    ctx.note("DEADLOCKS: %s; VIRTUAL THREADS: %s" % (cycles_of(prof, dl), dump.virtual))
    for name, want in status_want.items():
        ts = prof.threads_named(name)
        dt = dump.threads.get(ts[0].serial) if len(ts) == 1 else None
        if dt is None or dt.status != want:
            problems.append("MONITOR DUMP: %s %s (expected one THREAD line with status %s)"
                            % (name, "status %s" % dt.status if dt else "not listed", want))
    for cls, (owner, enter) in monitors_want.items():
        ms = dump.monitors_of(cls)
        if len(ms) != 1:
            problems.append("MONITOR DUMP lists %d %s monitors (expected 1)" % (len(ms), cls))
            continue
        got = (prof.thread_name(ms[0].owner), {prof.thread_name(t) for t in ms[0].waiting_to_enter})
        if got != (owner, enter):
            problems.append("MONITOR %s: owner %s, waiting to enter %s (expected %s, %s)"
                            % (cls, got[0], sorted(got[1]), owner, sorted(enter)))
    # A monitor nobody owns, one virtual thread in its Object.wait.
    ms = dump.monitors_of("VirtualDeadlock$VCond")
    got = [(ms[0].owner, [prof.thread_name(t) for t in ms[0].waiting_to_enter],
            [prof.thread_name(t) for t in ms[0].waiting_to_be_notified])] if len(ms) == 1 else ms
    if got != [(None, [], ["vdl-cond-waiter"])]:
        problems.append("MONITOR VirtualDeadlock$VCond: %s (expected no owner, nobody waiting to enter, "
                        "vdl-cond-waiter waiting to be notified)" % got)
    if dump.virtual is None or dump.virtual[0] < 8 or dump.virtual[1] < 8:
        problems.append("VIRTUAL THREADS line %s: expected at least the 8 blocked virtual threads listed"
                        % (dump.virtual,))
    want = "hprof: 2 deadlocks found: see DEADLOCKS in %s" % path
    if want not in r.stderr:
        problems.append("stderr lacks %r" % want)
    assert not problems, "; ".join(problems)


def test_vthread_deadlocks(ctx):
    deadlocks(ctx)


def test_vthread_deadlocks_debugger(ctx):
    # After ours: HotSpot gives the debugger the breakpoints, the
    # virtual threads' parks are found by their unmounts instead.
    deadlocks(ctx, [JDWP_SERVER])


def test_vthread_deadlock_periodic(ctx):
    skip_without_vthreads(ctx)
    r, path, prof = run_cycles(ctx, 3000, "deadlock=200,")
    problems = []
    ctx.note("DEADLOCKS sections: %s" % [len(sec.cycles) for sec in prof.deadlocks])
    if len(prof.deadlocks) < 2:
        problems.append("%d DEADLOCKS sections: no dump from deadlock=200 before the exit dump"
                        % len(prof.deadlocks))
    for k, sec in enumerate(prof.deadlocks):
        check_cycles(prof, sec, problems, "DEADLOCKS section %d" % (k + 1))
    assert not problems, "; ".join(problems)


def test_vthread_deadlock_churn(ctx):
    skip_without_vthreads(ctx)
    path = ctx.path("vdl-churn.hprof.txt")
    r = ctx.run("VirtualDeadlock", ["churn", "50000"], agent="monitor=y,deadlock=20,file=" + path,
                expect_rc=None)
    skip_without_vthreads(ctx, r)
    if r.rc != 0 or "CHURN tasks=50000" not in r.stderr:
        pytest.fail("VirtualDeadlock churn failed (exit code %d); stderr: %s" % (r.rc, r.stderr.strip()[-400:]))
    prof = parse_profile(path)
    mt = final_monitor(prof)[0]
    blocked = sum(row.count for row in mt.rows
                  if row.monitor in (NONFAIR, "VirtualDeadlock$ChurnMon"))
    cycles = [len(sec.cycles) for sec in prof.deadlocks]
    ctx.note("%d contended episodes on the churn's locks; DEADLOCKS sections' cycles: %s" % (blocked, cycles))
    problems = []
    if blocked < 100:
        problems.append("only %d contended episodes: the churn did not contend (test invalid)" % blocked)
    if any(cycles):
        problems.append("deadlocks reported in a program without any: %s" % cycles)
    if len(prof.deadlocks) != 1:
        problems.append("%d dumps (expected only the exit dump: deadlock=20 dumped without a deadlock)"
                        % len(prof.deadlocks))
    if "deadlock" in r.stderr.replace("deadlock=", ""):
        problems.append("stderr mentions a deadlock: %s" % r.stderr.strip()[-300:])
    assert not problems, "; ".join(problems)


def pinning(ctx, how):
    if ctx.jdk_name == "jdk17":
        pytest.skip("JDK 17 has no virtual threads (JDK 21 and later): pinning not tested")
    path = ctx.path("vp.hprof.txt")
    # Method.invoke through the native NativeMethodAccessorImpl.invoke0:
    # NativeFrameWait's monitor enter has a native frame below it.
    jvm = ["-Djdk.reflect.useNativeAccessorOnly=true"]
    if how == "debugger":       # after ours: HotSpot gives it the breakpoints
        jvm.append(JDWP_SERVER)
    # thread=y: each round's virtual thread has rows of its own (cutoff=0:
    # rows of one thread each can fall under HPROF's default cutoff).
    r = ctx.run("VirtualPinning", ["4", "150", heap_sites.natives("libvirtual_pinning.so")],
                agent="monitor=y,depth=12,thread=y,cutoff=0,file=" + path, expect_rc=None, jvm=jvm)
    if r.rc == 3 and "no virtual threads" in r.stderr:
        pytest.skip("%s has no virtual threads: pinning not tested" % ctx.jdk_name)
    m = re.search(r"^VP rounds=(\d+) pinned_ns=(\d+) unpinned_ns=(\d+)$", r.stderr, re.M)
    if r.rc != 0 or not m or "VirtualPinning: done" not in r.stderr:
        pytest.fail("VirtualPinning failed (exit code %d); stderr: %s" % (r.rc, r.stderr.strip()[-400:]))
    rounds, pinned_ms, unpinned_ms = int(m.group(1)), int(m.group(2)) / 1e6, int(m.group(3)) / 1e6
    prof = parse_profile(path)
    mt = final_monitor(prof)[0]
    pin = prof.final_monitor_pinned
    if pin is None:
        pytest.fail("no MONITOR PINNED TIME section")

    def through(method):
        return lambda row: row.trace in prof.traces and prof.traces[row.trace].has_method(method)

    ours_ms, ours_n = pin.time_of(through("VirtualPinning$PinnedWait.block"))
    wrong_ms, wrong_n = pin.time_of(through("VirtualPinning$Unpinned.block"))
    unpinned_ours_ms, unpinned_n = mt.time_of(through("VirtualPinning$Unpinned.block"))
    clinit = all(any(f.method == "<clinit>" for f in prof.traces[row.trace].frames)
                 for row in pin.rows if through("VirtualPinning$PinnedWait.block")(row))
    ctx.note("pinned: ours %.0f ms in %d episodes, program %.0f ms in %d rounds (ours %s); unpinned: "
             "MONITOR TIME %.0f ms in %d parks (program %.0f ms), in MONITOR PINNED TIME %.0f ms"
             % (ours_ms, ours_n, pinned_ms, rounds, rel(ours_ms, pinned_ms), unpinned_ours_ms, unpinned_n,
                unpinned_ms, wrong_ms))
    problems = []
    if pinned_ms < 300:
        problems.append("test program invalid: only %.0f ms pinned" % pinned_ms)
    if not within(ours_ms, pinned_ms, 0.20):
        problems.append("pinned time %.0f ms not within 20%% of the program's %.0f ms" % (ours_ms, pinned_ms))
    if ours_n != rounds:
        problems.append("%d pinned episodes for %d rounds" % (ours_n, rounds))
    if not clinit:
        problems.append("a pinned row's trace does not go through the class initializer (<clinit>)")
    if wrong_n:
        problems.append("unpinned parks in MONITOR PINNED TIME: %d, %.0f ms" % (wrong_n, wrong_ms))
    if unpinned_n != rounds or not within(unpinned_ours_ms, unpinned_ms, 0.20):
        problems.append("unpinned parks in MONITOR TIME: %d, %.0f ms (program: %d, %.0f ms)"
                        % (unpinned_n, unpinned_ours_ms, rounds, unpinned_ms))
    # thread=y: the rows of each round's park belong to that round's own
    # virtual thread (group VirtualThreads), one thread a round each.
    for sec, method in ((pin, "VirtualPinning$PinnedWait.block"), (mt, "VirtualPinning$Unpinned.block")):
        owners = set()
        for row in filter(through(method), sec.rows):
            t = prof.threads.get(prof.traces[row.trace].thread)
            if t is None or t.group != "VirtualThreads":
                problems.append("thread=y: a %s row of %s is not a virtual thread's (%s)"
                                % (method.split("$")[1], sec.kind, t.name if t else "no thread"))
            else:
                owners.add(t.serial)
        if len(owners) != rounds:
            problems.append("thread=y: %s rows on %d virtual threads, not %d" % (method, len(owners), rounds))
    problems += pinned_monitors(prof, r.stderr, mt, pin, through, ctx)
    assert not problems, "; ".join(problems)


def pinned_monitors(prof, stderr, mt, pin, through, ctx):
    """VirtualPinning's monitor enters and waits: in MONITOR PINNED TIME
    exactly when the JVM pins them (JFR's jdk.VirtualThreadPinned agrees:
    under a class initializer or a native frame from JDK 24, always before)."""
    m = re.search(r"^VPM rounds=(\d+) clinit_ns=(\d+) native_ns=(\d+) plain_ns=(\d+) native_frame=([01]) "
                  r"monitors_unmount=([01])$", stderr, re.M)
    w = re.search(r"^VPW rounds=(\d+) clinit_ns=(\d+) plain_ns=(\d+)$", stderr, re.M)
    j = re.search(r"^VPJ rounds=(\d+) jni_ns=(\d+)$", stderr, re.M)
    if not m or not w or not j:
        return ["no VPM/VPW/VPJ line from VirtualPinning"]
    rounds = int(m.group(1))
    native_frame, unmount = m.group(5) == "1", m.group(6) == "1"
    waits = prof.final_monitor_wait
    cases = [  # (method, program's ms, pinned?, the ordinary section)
        ("VirtualPinning$MonitorPinnedWait.block", int(m.group(2)) / 1e6, True, mt),
        ("VirtualPinning$NativeFrameWait.block", int(m.group(3)) / 1e6, True, mt),
        ("VirtualPinning$MonitorUnpinned.block", int(m.group(4)) / 1e6, not unmount, mt),
        ("VirtualPinning$JniEnter.block", int(j.group(2)) / 1e6, True, mt),
        ("VirtualPinning$PinnedWaiting.block", int(w.group(2)) / 1e6, True, waits),
        ("VirtualPinning$PlainWaiting.block", int(w.group(3)) / 1e6, not unmount, waits)]
    problems, notes = [], []
    for method, truth_ms, pinned, section in cases:
        short = method.split("$")[1]
        if short.startswith("NativeFrame") and not native_frame:
            ctx.note("no native frame under NativeFrameWait (jdk.reflect.useNativeAccessorOnly ignored): "
                     "that case is not checked")
            continue
        ms, n = pin.time_of(through(method))
        notes.append("%s %.0f ms in %d (program %.0f ms in %d%s)"
                     % (short, ms, n, truth_ms, rounds, "" if pinned else ", not pinned"))
        if truth_ms < 0.8 * rounds * 150:     # each blocks about 150 ms (VirtualPinning 4 150)
            problems.append("test program invalid: %s blocked only %.0f ms" % (short, truth_ms))
        if pinned and (n != rounds or not within(ms, truth_ms, 0.20)):
            problems.append("%s: MONITOR PINNED TIME %.0f ms in %d episodes, program %.0f ms in %d"
                            % (short, ms, n, truth_ms, rounds))
        if not pinned and n:
            problems.append("%s is not pinned from JDK 24 on, yet MONITOR PINNED TIME has %d episodes, %.0f ms"
                            % (short, n, ms))
        if section is not None:     # every episode also has its ordinary row
            oms, on = section.time_of(through(method))
            if on != rounds or not within(oms, truth_ms, 0.20):
                problems.append("%s: %s %.0f ms in %d episodes, program %.0f ms in %d"
                                % (short, section.kind, oms, on, truth_ms, rounds))
    ctx.note("monitors: " + "; ".join(notes))
    return problems


def test_vthread_pinning(ctx):
    pinning(ctx, "start")


def test_vthread_pinning_debugger(ctx):
    pinning(ctx, "debugger")

carrier_frames = ("java.util.concurrent.ForkJoin", "jdk.internal.vm.Continuation.",
                  "java.lang.VirtualThread.runContinuation")


def test_vthread_cpu_samples(ctx):
    if ctx.jdk_name == "jdk17":
        pytest.skip("JDK 17 has no virtual threads (JDK 21 and later): cpu=samples on virtual threads not tested")
    path = ctx.path("vcpu.hprof.txt")
    r = ctx.run("VirtualCpu", ["200000000"], agent="cpu=samples,interval=1,depth=30,thread=y,file=" + path,
                expect_rc=None)
    if r.rc == 3 and "no virtual threads" in r.stderr:
        pytest.skip("%s has no virtual threads: cpu=samples on virtual threads not tested" % ctx.jdk_name)
    if r.rc != 0 or "VirtualCpu: done" not in r.stderr:
        pytest.fail("VirtualCpu failed (exit code %d); stderr: %s" % (r.rc, r.stderr.strip()[-400:]))
    prof = parse_profile(path)
    sec = prof.final
    by_kind = {"a": 0, "b": 0}
    carrier_task = 0
    problems = []
    for row in sec.rows:
        tr = prof.traces[row.trace]
        name = prof.thread_name(tr.thread) or ""
        quals = [f.qualname for f in tr.frames]
        m = re.match(r"^vcpu-([ab])-\d$", name)
        if m:
            kind = m.group(1)
            by_kind[kind] += row.count
            other = "VirtualCpu.task" + ("B" if kind == "a" else "A")
            if other in quals:
                problems.append("trace %d of %s names %s" % (row.trace, name, other))
            below = [q for q in quals if q.startswith(carrier_frames)]
            if below:
                problems.append("trace %d of %s has carrier frames %s" % (row.trace, name, below[:2]))
            if "java.lang.VirtualThread.run" in quals and quals[-1] != "java.lang.VirtualThread.run":
                problems.append("trace %d of %s goes on below VirtualThread.run: %s"
                                % (row.trace, name, quals[quals.index("java.lang.VirtualThread.run"):]))
        elif "VirtualCpu$Work.unit" in quals and name.startswith("ForkJoinPool"):
            # A carrier: samples in a task's yield between the unmount
            # event and the unmount (or the mount and its event).
            carrier_task += row.count
    tasks = by_kind["a"] + by_kind["b"]
    share = by_kind["a"] / tasks if tasks else 0.0
    se = (0.7 * 0.3 / tasks) ** 0.5 if tasks else 1.0
    ctx.note("samples of vcpu-a threads %d, vcpu-b threads %d: %.1f%% (truth 70%%, 4 standard errors %.1f "
             "points); task code charged to carriers: %d" % (by_kind["a"], by_kind["b"], 100 * share,
                                                                   400 * se, carrier_task))
    if tasks < 200:
        problems.append("only %d samples charged to the virtual threads (expected several hundred)" % tasks)
    elif abs(share - 0.7) > 4 * se:
        problems.append("vcpu-a share %.1f%% not within 4 standard errors (%.1f points) of 70%%"
                        % (100 * share, 400 * se))
    if carrier_task > 0.05 * max(tasks, 1):
        problems.append("%d samples in Work.unit charged to a carrier thread" % carrier_task)
    # The 8 task threads ended before the exit dump: each named once,
    # with its THREAD END (VirtualThreadEnd; they get no ThreadEnd).
    vcpu = [t for t in prof.threads.values() if re.match(r"^vcpu-[ab]-\d$", t.name)]
    ctx.note("%d vcpu-* virtual threads named, %d with THREAD END" % (len(vcpu), sum(t.ended for t in vcpu)))
    if len(vcpu) != 8 or not all(t.ended for t in vcpu):
        problems.append("vcpu-* threads named %d times (expected 8), %d without THREAD END"
                        % (len(vcpu), sum(not t.ended for t in vcpu)))
    if problems:
        pytest.fail("; ".join(problems[:6]))


def test_vthread_cpu_times(ctx):
    if ctx.jdk_name == "jdk17":
        pytest.skip("JDK 17 has no virtual threads (JDK 21 and later): cpu=times on virtual threads not tested")
    import os
    import subprocess
    path = ctx.path("vcpu-times.hprof.txt")
    cmd = ctx.java_cmd("VirtualCpu", ["400000000"], agent="cpu=times,depth=2,cutoff=0,file=" + path)
    with open(ctx.path("vcpu-times.stderr"), "wb") as fe:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=fe, stdin=subprocess.DEVNULL, cwd=ctx.out)
        _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    stderr = open(ctx.path("vcpu-times.stderr"), errors="replace").read()
    if p.returncode == 3 and "no virtual threads" in stderr:
        pytest.skip("%s has no virtual threads: cpu=times on virtual threads not tested" % ctx.jdk_name)
    if p.returncode != 0 or "VirtualCpu: done" not in stderr:
        pytest.fail("VirtualCpu failed (exit code %d); stderr: %s" % (p.returncode, stderr.strip()[-400:]))
    jvm_ms = 1000.0 * (usage.ru_utime + usage.ru_stime)
    total, rows = parse_cpu_time(path)[-1]
    prof = parse_profile(path)
    calls = {"a": 0, "b": 0}
    ms = {"a": 0.0, "b": 0.0}
    for row in rows:
        quals = [f.qualname for f in prof.traces[row.trace].frames]
        if quals[:1] != ["VirtualCpu$Work.unit"]:
            continue
        kind = "a" if "VirtualCpu.taskA" in quals else "b" if "VirtualCpu.taskB" in quals else None
        if kind:
            calls[kind] += row.count
            ms[kind] += row.ms
    work = ms["a"] + ms["b"]
    share = ms["a"] / work if work else 0.0
    ctx.note("Work.unit: %d calls under taskA, %d under taskB; %.0f ms + %.0f ms = %.0f ms of the JVM's %.0f "
             "ms of CPU; taskA's share %.1f%% (truth 70%%)" % (calls["a"], calls["b"], ms["a"], ms["b"], work,
                                                              jvm_ms, 100 * share))
    problems = []
    if calls != {"a": 28, "b": 12}:
        problems.append("Work.unit calls %s, expected taskA 28, taskB 12" % calls)
    if abs(share - 0.7) > 0.07:
        problems.append("taskA's share of Work.unit's time %.1f%%, not within 7 points of 70%%" % (100 * share))
    if work > jvm_ms:
        problems.append("Work.unit's time %.0f ms is more than the JVM's whole CPU time %.0f ms: virtual "
                        "threads were charged their carriers' time" % (work, jvm_ms))
    if work < 0.4 * jvm_ms:
        problems.append("Work.unit's time %.0f ms is under 40%% of the JVM's CPU time %.0f ms" % (work, jvm_ms))
    assert not problems, "; ".join(problems)


def virtual_many(ctx, agent, n, tag):
    """VirtualMany with n virtual threads under agent: (profile path, its TRUTH as a dict)."""
    path = ctx.path(tag + ".hprof.txt")
    r = ctx.run("VirtualMany", [str(n)], agent=agent + ",file=" + path, expect_rc=None)
    if r.rc == 3 and "no virtual threads" in r.stderr:
        pytest.skip("%s has no virtual threads: many virtual threads not tested" % ctx.jdk_name)
    if r.rc != 0 or "VirtualMany: done" not in r.stderr:
        pytest.fail("VirtualMany (%s) failed (exit code %d); stderr: %s" % (agent, r.rc, r.stderr.strip()[-400:]))
    from run import truth_fields
    truth = truth_fields(r.stderr)
    if not truth:
        pytest.fail("VirtualMany printed no TRUTH line: %s" % r.stderr.strip()[-400:])
    return path, truth


def test_vthread_many_times(ctx):
    """cpu=times on many short virtual threads: exact counts with the
    shared counters (thread=n) and with each thread's own (thread=y), and
    no state left behind by a virtual thread that ended."""
    if ctx.jdk_name == "jdk17":
        pytest.skip("JDK 17 has no virtual threads (JDK 21 and later): many virtual threads not tested")
    problems, notes = [], []
    for agent, n, tag in (("cpu=times,cutoff=0", 20000, "many-times"),
                          ("cpu=times,thread=y,cutoff=0", 2000, "many-times-threads")):
        path, truth = virtual_many(ctx, agent, n, tag)
        total, rows = parse_cpu_time(path)[-1]
        work = sum(r.count for r in rows if r.method == "VirtualMany$Step.work")
        tasks = sum(r.count for r in rows if r.method == "VirtualMany.task")
        notes.append("%s: Step.work %d calls (truth %d), task %d (truth %d), %d states alive at the end"
                     % (agent, work, truth["work_calls"], tasks, n, truth["states"]))
        if work != truth["work_calls"] or tasks != n:
            problems.append("%s: Step.work %d calls, task %d; expected exactly %d and %d"
                            % (agent, work, tasks, truth["work_calls"], n))
        # The platform threads' states: main, the carriers, the JDK's own.
        if truth["states"] > 64:
            problems.append("%s: %d cpu=times states alive after every virtual thread ended"
                            % (agent, truth["states"]))
    ctx.note("; ".join(notes))
    assert not problems, "; ".join(problems)


def test_vthread_many_sites(ctx):
    """Exact heap=sites on many short virtual threads: the objects made by
    `new` and by reflection (the VM's allocation event, then the tracker)
    are each counted once."""
    if ctx.jdk_name == "jdk17":
        pytest.skip("JDK 17 has no virtual threads (JDK 21 and later): many virtual threads not tested")
    path, truth = virtual_many(ctx, "heap=sites,cutoff=0", 20000, "many-sites")
    interval, rows = heap_sites.sites_sections(path)[-1]
    made = sum(r.alloc_objs for r in rows if r.cls == "VirtualMany$Made")
    ctx.note("VirtualMany$Made: %d allocated (truth %d)" % (made, truth["made"]))
    if made != truth["made"]:
        pytest.fail("VirtualMany$Made: %d allocated, expected exactly %d" % (made, truth["made"]))
