"""Threads that start and end while the agent samples them.

    thread_churn        5,000 short threads at interval=1 with thread=y: each
                        with its THREAD START and END, no file descriptor or
                        POSIX timer leaked, and (perf engine) samples in
                        proportion to their CPU (70-130%)
    thread_churn_timer  the same with the POSIX-timer engine
    thread_churn_bounded
                        thread=n and 30,000 threads: only the last 16,384
                        ended threads kept, `hprof status` and AGENT MEMORY
                        count the forgotten
    thread_churn_binary_bounded
                        format=b, 12,000 threads and a dump every 0.3 s: the
                        string table stays flat, the file names every thread
"""

import os
import re
import subprocess
import time

import hprof_reader
from run import BUILD, diag, final_section, parse_profile, read, reap, spawn, tail

HPROF = os.path.join(BUILD, "hprof")


def check_thread_churn(ctx, sampler):
    prof_path = ctx.path("churn.hprof.txt")
    r = ctx.run("ThreadChurn", ["5000", "50", "500000"],
                agent="cpu=samples,interval=1,thread=y,sampler=%s,file=%s" % (sampler, prof_path))
    m = re.search(r"CHURN started=5000 joined=5000 thread_cpu_ns=(\d+)", r.stderr)
    assert m, "ThreadChurn did not finish its threads: %s" % diag(r)
    churn_cpu_ms = int(m.group(1)) / 1e6
    res = re.search(r"RESOURCES fds_before=(-?\d+) fds_after=(-?\d+) timers_before=(-?\d+) timers_after=(-?\d+) "
                    r"threads_before=(-?\d+) threads_after=(-?\d+)", r.stderr)
    assert res, "ThreadChurn printed no RESOURCES line: %s" % diag(r)
    fds_before, fds_after, timers_before, timers_after, threads_before, threads_after = map(int, res.groups())
    prof = parse_profile(prof_path)
    sec = final_section(prof)
    churn = [t for t in prof.threads.values() if t.name.startswith("churn-")]
    names = {t.name for t in churn}
    not_ended = [t for t in churn if not t.ended]
    churn_serials = {t.serial for t in churn}
    on_churn = sum(row.count for row in sec.rows if prof.traces[row.trace].thread in churn_serials)
    ratio = on_churn / max(churn_cpu_ms, 1.0)
    ctx.note("churn[%s]: %d THREAD START records for churn-* (%d distinct names), %d without END; "
             "%d threads in all; samples total %d, %d on churn threads for %.0f ms of their CPU "
             "(%.0f%% of CPU/interval); fds %d -> %d, POSIX timers %d -> %d"
             % (sampler, len(churn), len(names), len(not_ended), len(prof.threads), sec.total, on_churn,
                churn_cpu_ms, 100.0 * ratio, fds_before, fds_after, timers_before, timers_after))
    # Threads of ~1 ms must be sampled in proportion to their CPU (the first
    # expiry is random over an interval), not only past a whole interval.
    # Only the perf engine can: POSIX CPU timers are checked at kernel ticks
    # (4 ms here), so threads shorter than a tick are rarely seen by them
    # (a documented limit of the fallback engine).
    engine = re.search(r"^CPU samples: .* driven by (.*)$", read(prof_path), re.M)
    engine = engine.group(1) if engine else "?"
    ctx.note("engine: %s" % engine)
    assert len(churn) >= 5000 and len(names) >= 5000, \
        "only %d THREAD START records (%d names) for the 5000 churn threads" % (len(churn), len(names))
    assert not not_ended, "%d churn threads have no THREAD END (e.g. %s)" \
        % (len(not_ended), ", ".join(t.name for t in not_ended[:3]))
    assert sec.total > 0, "no samples"
    # Every thread's timer or perf event must go with it (slack: the JVM's own files).
    assert fds_after <= fds_before + max(0, threads_after - threads_before) + 20, \
        "open file descriptors grew from %d to %d over 5000 threads, threads from %d to %d (perf events leaked?)" \
        % (fds_before, fds_after, threads_before, threads_after)
    # One timer per thread: threads the JVM started meanwhile (a GC worker,
    # a compiler thread) have one of their own with native=y.
    assert timers_after <= timers_before + max(0, threads_after - threads_before) + 5, \
        "POSIX timers grew from %d to %d over 5000 threads, threads from %d to %d (timers leaked?)" \
        % (timers_before, timers_after, threads_before, threads_after)
    if engine.startswith("perf"):
        assert 0.7 <= ratio <= 1.3, \
            "churn threads got %d samples for %.0f ms of CPU at interval=1 (%.0f%%, expected 70%%-130%%)" \
            % (on_churn, churn_cpu_ms, 100.0 * ratio)


def test_thread_churn(ctx):
    check_thread_churn(ctx, "auto")


def test_thread_churn_timer(ctx):
    check_thread_churn(ctx, "timer")


def test_thread_churn_bounded(ctx):
    """thread=n and 30,000 short threads: no trace names a thread, so the
    agent holds only the last 16,384 ended threads (src/agent/agent.c,
    ENDED_THREADS_KEPT) and forgets older ones, so that a program that starts
    threads all the time does not make it grow. The report must name exactly
    the churn threads that ended last (each START with its END), none of the
    first ones; and `status` in the middle counts the forgotten."""
    prof_path = ctx.path("churn.hprof.txt")
    p, so, se, cmd = spawn(ctx, "ThreadChurn", ["30000", "100", "2000"],
                           "cpu=samples,thread=n,file=" + prof_path, "churn")
    status = ""
    try:
        deadline = time.time() + 120
        while time.time() < deadline and p.poll() is None:
            time.sleep(0.3)
            r = subprocess.run([HPROF, "status", str(p.pid)], capture_output=True, text=True, timeout=60)
            m = re.search(r"^threads: (\d+) seen, (\d+) ended ones forgotten", r.stdout, re.M)
            if m and int(m.group(2)) > 0:
                status = m.group(0)
                break
    finally:
        r = reap(ctx, p, so, se, cmd)
    assert re.search(r"CHURN started=30000 joined=30000", r.stderr), \
        "ThreadChurn did not finish its threads: %s" % tail(r.stderr)
    prof = parse_profile(prof_path)
    churn = {t.name: t for t in prof.threads.values() if t.name.startswith("churn-")}
    numbers = sorted(int(n.split("-")[1]) for n in churn)
    ended = [t for t in churn.values() if t.ended]
    others_ended = sum(1 for t in prof.threads.values() if t.ended and not t.name.startswith("churn-"))
    ctx.note("%d churn threads named (churn-%d .. churn-%d), %d of them ended; other ended threads %d; "
             "status mid-run: %s" % (len(churn), numbers[0] if numbers else -1, numbers[-1] if numbers else -1,
                                     len(ended), others_ended, status or "(none seen)"))
    assert len(ended) == len(churn), "%d churn threads without THREAD END" % (len(churn) - len(ended))
    assert 16384 - 64 <= len(churn) <= 16384, "%d churn threads in the report (expected the last 16384 " \
        "ended threads, less the few other threads that ended)" % len(churn)
    assert numbers[-1] == 29999 and numbers[0] >= 30000 - 16384 - 200, \
        "the threads named are not the last ones: churn-%d .. churn-%d" % (numbers[0], numbers[-1])
    assert status, "`hprof status` never said that ended threads were forgotten"
    # Each dump starts with the agent's memory; the exit dump's counts the forgotten too.
    mem = prof.agent_memory[-1] if prof.agent_memory else None
    assert mem and mem["seen"] >= 30000 and mem["forgotten"] >= 30000 - 16384 - 64 and mem["bytes"] > 0, \
        "the report's last AGENT MEMORY line does not say it: %r" % mem
    rep = subprocess.run([HPROF, "report", prof_path], capture_output=True, text=True, timeout=120)
    assert re.search(r"agent memory\s+\d+ bytes in its tables at the last of \d+ dumps", rep.stdout), \
        "hprof report shows no agent memory: %s" % rep.stdout[:400]


def test_thread_churn_binary_bounded(ctx):
    """format=b, thread=n, 12,000 short threads and a dump every 0.3 s: each
    dump names the threads it has not named yet, and their names must not
    go into the agent's string table, which never forgets (thread=n forgets
    ended threads). The `interning` bytes of `hprof status` must stay flat
    from 2,000 threads seen on (with the names interned they grew by about
    40 bytes a thread: 1.0 MB over 25,000), and the file must name every
    churn thread, each resolved by its own UTF8 record."""
    prof_path = ctx.path("churn.hprof")
    p, so, se, cmd = spawn(ctx, "ThreadChurn", ["12000", "100", "2000"],
                           "cpu=samples,thread=n,format=b,file=" + prof_path, "churn")
    readings = []                   # (threads seen, interning bytes)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and p.poll() is None:
            time.sleep(0.3)
            subprocess.run([HPROF, "dump", str(p.pid)], capture_output=True, text=True, timeout=60)
            r = subprocess.run([HPROF, "status", str(p.pid)], capture_output=True, text=True, timeout=60)
            mem = re.search(r"^memory: \d+ bytes in the agent's tables \(interning (\d+),", r.stdout, re.M)
            thr = re.search(r"^threads: (\d+) seen", r.stdout, re.M)
            if mem and thr:
                readings.append((int(thr.group(1)), int(mem.group(1))))
    finally:
        r = reap(ctx, p, so, se, cmd)
    assert re.search(r"CHURN started=12000 joined=12000", r.stderr), \
        "ThreadChurn did not finish its threads: %s" % tail(r.stderr)
    after = [(n, b) for n, b in readings if n >= 2000]
    with hprof_reader.read(prof_path) as dump:
        names = [dump.strings.get(t.name, "") for t in dump.threads.values()]
        file_problems = list(dump.problems)
    churn = sum(1 for n in names if n.startswith("churn-"))
    ctx.note("%d status readings, %d from 2,000 threads on: interning %s; %d churn threads named in the file"
             % (len(readings), len(after), "%d -> %d bytes (threads %d -> %d)" % (
                 after[0][1], after[-1][1], after[0][0], after[-1][0]) if len(after) >= 2 else "-", churn))
    assert len(after) >= 2 and after[-1][0] - after[0][0] >= 6000, \
        "too few status readings while the threads churned (test invalid): %s" % readings[-5:]
    assert after[-1][1] - after[0][1] <= 128 * 1024, "the string table grew by %d bytes over %d threads: " \
        "thread names are kept" % (after[-1][1] - after[0][1], after[-1][0] - after[0][0])
    assert not file_problems, "the binary file does not hold together: %s" % "; ".join(file_problems[:3])
    assert churn == 12000, "%d churn threads named in the binary file, not 12000" % churn
