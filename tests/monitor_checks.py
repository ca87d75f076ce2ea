"""What the monitor=y tests share: the final MONITOR sections, the truths
Contention.java and Deadlocks.java print and the checks of our sections
against them (tests/test_monitor.py, tests/test_deadlock.py,
tests/test_coexist.py, tests/test_sanitizers.py, tests/test_vthread.py).
The check_* helpers add what is wrong to a list, so that one failure reports
every truth missed."""

import re

from run import Fail, tail


HOT_LOCK = "Contention$HotLock"
NOISE_LOCK = "Contention$NoiseLock"
NONFAIR = "java.util.concurrent.locks.ReentrantLock$NonfairSync"
FAIR = "java.util.concurrent.locks.ReentrantLock$FairSync"
PARK_FRAMES = ("java.util.concurrent.locks.LockSupport", "jdk.internal.misc.Unsafe", "sun.misc.Unsafe")


def final_monitor(prof, what="profile"):
    """The last MONITOR TIME, MONITOR WAIT TIME, MONITOR DUMP and DEADLOCKS sections."""
    secs = (prof.final_monitor_time, prof.final_monitor_wait, prof.final_monitor_dump, prof.final_deadlocks)
    if any(s is None for s in secs):
        raise Fail("%s lacks monitor sections (MONITOR TIME %d, MONITOR WAIT TIME %d, MONITOR DUMP %d, "
                   "DEADLOCKS %d)" % (what, len(prof.monitor_times), len(prof.monitor_waits),
                                      len(prof.monitor_dumps), len(prof.deadlocks)))
    return secs


def within(ours, truth, tol=0.20):
    return truth > 0 and abs(ours - truth) <= tol * truth


def rel(ours, truth):
    return "%+.1f%%" % (100.0 * (ours - truth) / truth) if truth else "n/a"


def one_serial(prof, name):
    ts = prof.threads_named(name)
    if len(ts) != 1:
        raise Fail("expected one THREAD START named %r, found %d" % (name, len(ts)))
    return ts[0].serial


def is_sync_row(row):
    """A `synchronized` (monitor) row, not a park on a java.util.concurrent synchronizer."""
    return not row.monitor.startswith("java.util.concurrent.")


def contention_truth(stderr):
    t = {}
    m = re.search(r"^HOT threads=4 blocked_ms=(\d+) blocked_count=(\d+) front_ns=(\d+) entries=(\d+)$", stderr, re.M)
    n = re.search(r"^NOISE threads=2 blocked_ms=(\d+) blocked_count=(\d+) entries=(\d+)$", stderr, re.M)
    k = re.search(r"^RL threads=4 lock_ns=(\d+) lock_calls=(\d+) slow_calls=(\d+)$", stderr, re.M)
    if not (m and n and k and "Contention: done" in stderr):
        raise Fail("Contention printed no complete truth (HOT/NOISE/RL lines); stderr: %s" % tail(stderr))
    t["hot_blocked_ms"], t["hot_blocked_count"] = int(m.group(1)), int(m.group(2))
    t["hot_front_ms"], t["hot_entries"] = int(m.group(3)) / 1e6, int(m.group(4))
    t["noise_blocked_ms"], t["noise_blocked_count"] = int(n.group(1)), int(n.group(2))
    t["rl_ms"], t["rl_calls"], t["rl_slow"] = int(k.group(1)) / 1e6, int(k.group(2)), int(k.group(3))
    t["hot_threads"] = {nm: int(b) for nm, b in re.findall(r"^HOT_THREAD name=(\S+) blocked_ms=(\d+)", stderr, re.M)}
    t["rl_threads"] = {nm: int(ns) / 1e6 for nm, ns in re.findall(r"^RL_THREAD name=(\S+) lock_ns=(\d+)$", stderr, re.M)}
    if t["hot_blocked_ms"] < 300 or t["rl_ms"] < 300:
        raise Fail("test program invalid: too little contention (blocked %d ms on HotLock, %.0f ms in lock())"
                   % (t["hot_blocked_ms"], t["rl_ms"]))
    return t


def check_contention(ctx, prof, truth, problems):
    """The Contention truths against the final MONITOR sections."""
    mt, mw, dump, dl = final_monitor(prof)
    sync = [r for r in mt.rows if is_sync_row(r)]
    classes = mt.by_class()
    hot_ms, hot_n = classes.get(HOT_LOCK, (0.0, 0))
    noise_ms, noise_n = classes.get(NOISE_LOCK, (0.0, 0))
    rl_ms, rl_n = classes.get(NONFAIR, (0.0, 0))
    b, f = truth["hot_blocked_ms"], truth["hot_front_ms"]
    ctx.note("HotLock: ours %.0f ms in %d episodes; program: JVM blocked time %d ms (ours %s) in %d blocks, "
             "in front of the lock %.0f ms (ours %s), %d entries; ours is closer to %s"
             % (hot_ms, hot_n, b, rel(hot_ms, b), truth["hot_blocked_count"], f, rel(hot_ms, f),
                truth["hot_entries"], "blocked time" if abs(hot_ms - b) <= abs(hot_ms - f) else "in-front time"))
    ctx.note("ReentrantLock: ours %.0f ms in %d parks; program: %.0f ms in %d lock() calls (%d over 20 us): ours %s"
             % (rl_ms, rl_n, truth["rl_ms"], truth["rl_calls"], truth["rl_slow"], rel(rl_ms, truth["rl_ms"])))
    ctx.note("NoiseLock: ours %.0f ms in %d episodes; JVM blocked time %d ms in %d blocks; MONITOR TIME total %d ms, "
             "MONITOR WAIT TIME total %d ms" % (noise_ms, noise_n, truth["noise_blocked_ms"],
                                                truth["noise_blocked_count"], mt.total_ms, mw.total_ms))
    if not sync:
        problems.append("no synchronized rows in MONITOR TIME")
    elif sync[0].monitor != HOT_LOCK:
        problems.append("first synchronized row of MONITOR TIME is %s, not %s" % (sync[0].monitor, HOT_LOCK))
    top_sync = max((c for c in classes if not c.startswith("java.util.concurrent.")), key=lambda c: classes[c][0],
                   default=None)
    if top_sync != HOT_LOCK:
        problems.append("the monitor class with the most contention is %s, not %s" % (top_sync, HOT_LOCK))
    if hot_ms <= noise_ms:
        problems.append("HotLock %.0f ms <= NoiseLock %.0f ms" % (hot_ms, noise_ms))
    if not within(hot_ms, b):
        problems.append("HotLock contention %.0f ms not within 20%% of the JVM's blocked time %d ms" % (hot_ms, b))
    if not within(hot_n, truth["hot_blocked_count"], 0.10):
        problems.append("HotLock count %d not within 10%% of the JVM's blocked count %d"
                        % (hot_n, truth["hot_blocked_count"]))
    if not within(rl_ms, truth["rl_ms"]):
        problems.append("ReentrantLock park time %.0f ms not within 20%% of the program's lock() time %.0f ms"
                        % (rl_ms, truth["rl_ms"]))
    for r in mt.rows:
        tr = prof.traces[r.trace]
        if r.monitor == HOT_LOCK and (tr.top is None or tr.top.qualname != "Contention$Hot.run"):
            problems.append("HotLock row %d: top frame %s, not Contention$Hot.run (where it blocks)"
                            % (r.rank, tr.top.qualname if tr.top else None))
        if r.monitor == NONFAIR:
            if tr.top is None or tr.top.cls in PARK_FRAMES:
                problems.append("park row %d: top frame %s (LockSupport's frames must be skipped)"
                                % (r.rank, tr.top.qualname if tr.top else None))
            elif not tr.has_method("java.util.concurrent.locks.ReentrantLock.lock"):
                problems.append("ReentrantLock row %d: trace %d has no ReentrantLock.lock frame" % (r.rank, r.trace))
    bad_wait = [r.monitor for r in mw.rows if r.monitor in (HOT_LOCK, NOISE_LOCK, NONFAIR)]
    if bad_wait:
        problems.append("MONITOR WAIT TIME has contention rows: %s" % sorted(set(bad_wait)))
    if dl.cycles:
        problems.append("DEADLOCKS reports %d cycles in a program without deadlock" % len(dl.cycles))
    return mt



# Deadlocks.java: the expected cycles, as {thread: (parked, lock class, held by)}.
DEADLOCK_CYCLES = [
    {"dl-mon-a": (False, "Deadlocks$MonB", "dl-mon-b"), "dl-mon-b": (False, "Deadlocks$MonA", "dl-mon-a")},
    {"dl-lock-a": (True, NONFAIR, "dl-lock-b"), "dl-lock-b": (True, FAIR, "dl-lock-a")},
]
DEADLOCK_STATUS = {"dl-mon-a": "MW", "dl-mon-b": "MW", "dl-lock-a": "P", "dl-lock-b": "P", "sleeper": "SL",
                   "blocked-on-sleeper": "MW", "blocked-on-dl": "MW", "parked-on-dl": "P", "cond-waiter": "P",
                   "obj-waiter": "CW"}
# monitor -> (owner, threads waiting to enter)
DEADLOCK_MONITORS = {"Deadlocks$MonA": ("dl-mon-a", {"dl-mon-b", "blocked-on-dl"}),
                     "Deadlocks$MonB": ("dl-mon-b", {"dl-mon-a"}),
                     "Deadlocks$SleepLock": ("sleeper", {"blocked-on-sleeper"})}


def deadlocks_ready(stdout):
    """Deadlocks' stdout: READY, and the JVM's own deadlocked threads."""
    m = re.search(r"^JVM_DEADLOCKED (.*)$", stdout, re.M)
    if "READY" not in stdout or not m:
        return None
    return set(m.group(1).split(",")) if m.group(1) else set()


def cycles_by_name(prof, sec):
    """DEADLOCKS cycles as {thread name: (parked, lock, held-by name)}."""
    return [{m.name: (m.parked, m.lock, prof.thread_name(m.held_by)) for m in c} for c in sec.cycles]


def check_deadlocks(prof, sec, problems, what="DEADLOCKS"):
    got = cycles_by_name(prof, sec)
    if len(sec.cycles) != 2:
        problems.append("%s: %d cycles (expected 2): %s" % (what, len(sec.cycles), got))
        return
    for want in DEADLOCK_CYCLES:
        if want not in got:
            problems.append("%s: cycle %s not found; cycles: %s" % (what, want, got))


def check_monitor_dump(prof, dump, problems, name_of=None):
    """name_of: serial -> thread name (default: the THREAD START records')."""
    name_of = name_of or prof.thread_name
    status = {}
    for name, want in DEADLOCK_STATUS.items():
        s = one_serial(prof, name)
        dt = dump.threads.get(s)
        status[name] = dt.status if dt else None
        if dt is None:
            problems.append("MONITOR DUMP has no THREAD line for %s (%d)" % (name, s))
        elif dt.status != want:
            problems.append("MONITOR DUMP: %s has status %s, expected %s" % (name, dt.status, want))
    for cls, (owner, enter) in DEADLOCK_MONITORS.items():
        ms = dump.monitors_of(cls)
        if len(ms) != 1:
            problems.append("MONITOR DUMP lists %d %s monitors (expected 1)" % (len(ms), cls))
            continue
        m = ms[0]
        got_owner = name_of(m.owner) if m.owner else None
        got_enter = {name_of(t) for t in m.waiting_to_enter}
        if got_owner != owner or m.entry_count != 1:
            problems.append("MONITOR %s: owner %s entry count %d (expected %s, 1)"
                            % (cls, got_owner, m.entry_count, owner))
        if got_enter != enter:
            problems.append("MONITOR %s: waiting to enter %s (expected %s)" % (cls, sorted(got_enter), sorted(enter)))
    return status
