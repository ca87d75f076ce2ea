"""monitor=y's deadlock detection on Deadlocks.java (two cycles: one through
monitors, one through ReentrantLocks) and on Contention.java (none).

    deadlocks           DEADLOCKS has both cycles exactly, the same threads as
                        the JVM's findDeadlockedThreads, MONITOR DUMP every
                        thread's status and every monitor's owner and
                        waiters; stderr says so
    deadlocks_jcmd      a SIGQUIT dump's cycles equal to jcmd Thread.print's
    deadlock_periodic   deadlock=200: the cycles dumped while the JVM runs,
                        within 1.5 s of forming, once
    deadlock_no_false_positive
                        deadlock=20 on threads handing locks over all the
                        time: no cycle, no dump before exit
"""

import os
import re
import signal
import subprocess
import time

import pytest

from monitor_checks import (check_deadlocks, check_monitor_dump, contention_truth, cycles_by_name, deadlocks_ready,
                            final_monitor)
from run import Run, clean_env, diag, parse_profile, read, reap, spawn, tail

RE_DL_SECTION = re.compile(r"^DEADLOCKS BEGIN \(cycles = (\d+)\) .*\n(?:.*\n)*?DEADLOCKS END$", re.M)


def jcmd_deadlocks(text):
    """'Found one Java-level deadlock' blocks of jcmd Thread.print: a list of
    {thread: (parked, lock class, held by)}."""
    out = []
    for block in re.split(r"^Found one Java-level deadlock:\n=+\n", text, flags=re.M)[1:]:
        block = block.split("Java stack information for the threads listed above:")[0]
        cyc = {}
        for m in re.finditer(r'^"(?P<name>[^"\n]*)":\n\s+(?P<how>waiting to lock monitor|waiting for ownable '
                             r'synchronizer)[^\n]*[(,] ?a (?P<cls>[^)\s]+)\),\n\s+which is held by "(?P<held>[^"\n]*)"',
                             block, re.M):
            cyc[m.group("name")] = (m.group("how").startswith("waiting for ownable"), m.group("cls"), m.group("held"))
        out.append(cyc)
    return out


def wait_ready(p, so, se, cmd, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if deadlocks_ready(read(so)) is not None:
            return
        assert p.poll() is None, "Deadlocks exited (rc %s) before READY: %s" \
            % (p.returncode, diag(Run(p.returncode, read(so), read(se), p.pid, cmd)))
        time.sleep(0.05)
    pytest.fail("Deadlocks not READY within %d s" % seconds)


def killed_on_error(p):
    """Kills a spawned JVM if the test stops before reaping it."""
    if p.poll() is None:
        p.kill()
        p.wait()


def test_deadlocks(ctx):
    prof_path = ctx.path("deadlocks.hprof.txt")
    r = ctx.run("Deadlocks", ["1000"], agent="monitor=y,file=" + prof_path)
    jvm_dl = deadlocks_ready(r.stdout)
    assert jvm_dl is not None, "Deadlocks did not get its threads in place; %s" % diag(r)
    prof = parse_profile(prof_path)
    _mt, _mw, dump, dl = final_monitor(prof)
    ours = {m.name for m in dl.members}
    ctx.note("DEADLOCKS: %s; JVM's findDeadlockedThreads: %s" % (cycles_by_name(prof, dl), sorted(jvm_dl)))
    problems = []
    check_deadlocks(prof, dl, problems)
    check_monitor_dump(prof, dump, problems)
    assert not problems, "; ".join(problems)
    assert ours == jvm_dl, "deadlocked threads %s != the JVM's findDeadlockedThreads %s" % (sorted(ours), sorted(jvm_dl))
    want = "hprof: 2 deadlocks found: see DEADLOCKS in %s" % prof_path
    assert want in r.stderr, "stderr lacks %r: %s" % (want, tail(r.stderr))


def test_deadlocks_jcmd(ctx):
    """The JDK's own deadlock detection (jcmd Thread.print) and our DEADLOCKS
    from a SIGQUIT dump of the same process report the same cycles."""
    jcmd = os.path.join(ctx.jdk, "bin", "jcmd")
    if not os.path.isfile(jcmd):
        pytest.skip("no jcmd in %s: comparison with the JDK's deadlock detection not done" % ctx.jdk)
    prof_path = ctx.path("deadlocks.hprof.txt")
    p, so, se, cmd = spawn(ctx, "Deadlocks", ["6000"], "monitor=y,file=" + prof_path, "deadlocks")
    mid = None
    try:
        wait_ready(p, so, se, cmd)
        jout = ctx.path("jcmd.txt")
        with open(jout, "wb") as f:
            jc = subprocess.run([jcmd, str(p.pid), "Thread.print"], stdout=f, stderr=subprocess.STDOUT,
                                timeout=60, stdin=subprocess.DEVNULL, env=clean_env())
        jtext = read(jout)
        assert jc.returncode == 0, "jcmd %d Thread.print failed (rc %d): %s" % (p.pid, jc.returncode, tail(jtext))
        before = len(RE_DL_SECTION.findall(read(prof_path))) if os.path.isfile(prof_path) else 0
        os.kill(p.pid, signal.SIGQUIT)
        deadline = time.time() + 5.0
        while time.time() < deadline and p.poll() is None:
            text = read(prof_path) if os.path.isfile(prof_path) else ""
            if len(RE_DL_SECTION.findall(text)) > before:
                mid = text
                break
            time.sleep(0.05)
        assert mid is not None, "no DEADLOCKS section written within 5 s of SIGQUIT while the JVM ran"
    except BaseException:
        killed_on_error(p)
        raise
    r = reap(ctx, p, so, se, cmd)
    prof = parse_profile(prof_path)
    assert len(prof.deadlocks) >= 2, \
        "%d DEADLOCKS sections (expected the SIGQUIT dump and the exit dump)" % len(prof.deadlocks)
    sq = prof.deadlocks[before]
    theirs = jcmd_deadlocks(jtext)
    ours = cycles_by_name(prof, sq)
    found = re.search(r"^Found (\d+) deadlocks?\.$", jtext, re.M)
    ctx.note("jcmd Thread.print: %s cycles %s; ours (SIGQUIT dump): %s"
             % (found.group(1) if found else "?", theirs, ours))
    problems = []
    check_deadlocks(prof, sq, problems, "DEADLOCKS of the SIGQUIT dump")
    assert not problems, "; ".join(problems)
    assert len(theirs) == 2 and found and found.group(1) == "2", \
        "jcmd reports %s deadlocks, %d parsed blocks (test program or parser problem; see %s)" \
        % (found.group(1) if found else "no 'Found N deadlocks'", len(theirs), jout)
    key = lambda cyc: sorted(cyc.items())  # noqa: E731
    assert sorted(map(key, ours)) == sorted(map(key, theirs)), "our cycles %s != jcmd's %s" % (ours, theirs)
    assert "2 deadlocks found" in r.stderr, "stderr lacks 'hprof: 2 deadlocks found'"


def test_deadlock_periodic(ctx):
    """deadlock=200: the deadlocks (formed after ~1 s) are dumped while the
    JVM still runs, once; stderr says so before exit."""
    prof_path = ctx.path("deadlocks.hprof.txt")
    p, so, se, cmd = spawn(ctx, "Deadlocks", ["3000", "1000"], "monitor=y,deadlock=200,file=" + prof_path,
                           "deadlocks")
    t0 = time.time()
    ready_at = seen_at = msg_at = None
    seen_text = None
    try:
        while p.poll() is None:
            assert time.time() - t0 <= 60, "Deadlocks still running after 60 s"
            now = time.time() - t0
            if ready_at is None and deadlocks_ready(read(so)) is not None:
                ready_at = now
            text = read(prof_path) if os.path.isfile(prof_path) else ""
            if seen_at is None and any(int(c) == 2 for c in RE_DL_SECTION.findall(text)):
                seen_at, seen_text = now, text
            if msg_at is None and "2 deadlocks found" in read(se):
                msg_at = now
            time.sleep(0.05)
        alive_until = time.time() - t0
    except BaseException:
        killed_on_error(p)
        raise
    reap(ctx, p, so, se, cmd)
    with open(ctx.path("midrun-snapshot.txt"), "w") as f:
        f.write(seen_text or "")
    prof = parse_profile(prof_path)
    counts = [len(s.cycles) for s in prof.deadlocks]
    fmt = lambda t: "%.2f s" % t if t is not None else "never"  # noqa: E731
    ctx.note("READY at %s, DEADLOCKS (cycles = 2) in the file at %s, stderr message at %s, exit at ~%.2f s; "
             "DEADLOCKS sections' cycles: %s" % (fmt(ready_at), fmt(seen_at), fmt(msg_at), alive_until, counts))
    assert ready_at is not None, "Deadlocks never printed READY"
    assert seen_at is not None, "no DEADLOCKS section with 2 cycles in the file while the JVM ran"
    assert seen_at - ready_at <= 1.5, "deadlocks dumped %.2f s after they were in place (deadlock=200)" \
        % (seen_at - ready_at)
    assert msg_at is not None, "stderr had no 'hprof: 2 deadlocks found' before exit"
    assert len(counts) >= 2, "%d DEADLOCKS sections (expected the deadlock dump(s) and the exit dump)" % len(counts)
    # Dumped when more cycles are found than last reported: once (or twice
    # if the two cycles are seen by different checks), never with none.
    periodic = counts[:-1]
    assert len(periodic) <= 2 and min(periodic) >= 1 and periodic[-1] == 2, \
        "dumps before exit had cycles %s (expected [2] or [1, 2])" % periodic
    problems = []
    check_deadlocks(prof, prof.deadlocks[-1], problems, "exit DEADLOCKS")
    assert not problems, "; ".join(problems)


def test_deadlock_no_false_positive(ctx):
    """deadlock=20 on Contention (threads handing locks over all the time,
    never deadlocked): no deadlock reported, no dump before exit.  The threads
    move while a check looks at them one after the other, so a check must not
    take 'A waits for the lock B owns' and, a moment later, 'B waits for the
    lock A now owns' for a cycle."""
    prof_path = ctx.path("contention.hprof.txt")
    r = ctx.run("Contention", ["1500", "1500"], agent="monitor=y,deadlock=20,file=" + prof_path)
    contention_truth(r.stderr)
    prof = parse_profile(prof_path)
    final_monitor(prof)
    reported = [(s.lineno, cycles_by_name(prof, s)) for s in prof.deadlocks if s.cycles]
    ctx.note("DEADLOCKS sections: %d, with cycles: %s" % (len(prof.deadlocks), reported[:3]))
    assert not reported, "%d DEADLOCKS sections report cycles in a program without deadlock, e.g. at line %d: %s" \
        % (len(reported), reported[0][0], reported[0][1])
    assert len(prof.deadlocks) == 1, \
        "%d dumps (expected only the exit dump: deadlock=20 dumped without a deadlock)" % len(prof.deadlocks)
    msgs = [line for line in r.stderr.splitlines() if "deadlock" in line.lower()]
    assert not msgs, "stderr: %s" % " | ".join(msgs[:3])
