"""monitor=y's deadlocks in a jfr= recording (issue 37; pytest tests, run on
each JDK with the ctx fixture of tests/conftest.py).

    jfr_deadlock   tests/java/Deadlocks.java (two known cycles: dl-mon-a and
                   dl-mon-b through the monitors MonA and MonB; dl-lock-a and
                   dl-lock-b through a fair and a non-fair ReentrantLock)
                   with monitor=y,jfr=,file=: the JDK's own `jfr print --json
                   --events hprof.Deadlock` reads one hprof.Deadlock per
                   thread of the two cycles, which group them (`cycle`,
                   `cycleThreads`): each names its thread, the class of the
                   lock it waits for, that lock's owner (the next thread of
                   the cycle) and whether it is parked, exactly as
                   tests/monitor_checks.py's DEADLOCK_CYCLES and the text report's
                   DEADLOCKS say; each thread's stack trace reaches its
                   Deadlocks frame; `jfr summary` counts 4 hprof.Deadlock,
                   `jfr print` (text) shows each thread once; `hprof
                   report` still reads the recording.
"""

import json
import os
import re
import subprocess

import pytest

from monitor_checks import DEADLOCK_CYCLES, cycles_by_name, deadlocks_ready, final_monitor
from run import BUILD, parse_profile


def jdk_tool(ctx, tool, args):
    r = subprocess.run([os.path.join(ctx.jdk, "bin", tool)] + args, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        pytest.fail("%s %s: exit %d: %s" % (tool, " ".join(args), r.returncode, (r.stderr + r.stdout)[-600:]))
    return r.stdout


def java_name(cls):
    """A class as `jfr print --json` gives it ({"name": "java/lang/Object", ...}), in Java form."""
    return (cls or {}).get("name", "").replace("/", ".")


def thread_name(thread):
    return (thread or {}).get("javaName") or (thread or {}).get("osName")


def cycles_of(events):
    """hprof.Deadlock events (one per thread of a cycle) as monitor_checks.cycles_by_name's:
    {thread: (parked, lock class, owner)}, and {thread: the class names of its
    stack's frames}."""
    by_cycle, stacks = {}, {}
    for e in events:
        v = e["values"]
        name = thread_name(v["eventThread"])
        by_cycle.setdefault(v["cycle"], []).append(v)
        by_cycle[v["cycle"]][-1]["name"] = name
        frames = ((v.get("stackTrace") or {}).get("frames")) or []
        stacks[name] = [java_name(f["method"]["type"]) for f in frames]
    cycles = []
    for number, threads in sorted(by_cycle.items()):
        if any(t["cycleThreads"] != len(threads) for t in threads):
            pytest.fail("hprof.Deadlock: cycle %d has %d events but says cycleThreads %s"
                        % (number, len(threads), [t["cycleThreads"] for t in threads]))
        cycles.append({t["name"]: (bool(t["parked"]), java_name(t["lockClass"]), thread_name(t["lockOwner"]))
                       for t in threads})
    return cycles, stacks


def test_jfr_deadlock(ctx):
    rec, txt = ctx.path("deadlocks.jfr"), ctx.path("deadlocks.hprof.txt")
    r = ctx.run("Deadlocks", ["500"], agent="monitor=y,jfr=%s,file=%s" % (rec, txt))
    if deadlocks_ready(r.stdout) is None:
        pytest.fail("Deadlocks did not get its threads in place: %s" % r.stderr[-600:])
    events = json.loads(jdk_tool(ctx, "jfr", ["print", "--json", "--stack-depth", "64", "--events", "hprof.Deadlock", rec]))
    cycles, stacks = cycles_of(events["recording"]["events"])
    ctx.note("hprof.Deadlock: %s" % cycles)
    problems = []
    if sorted(map(sorted, cycles)) != sorted(map(sorted, DEADLOCK_CYCLES)) or \
            any(want not in cycles for want in DEADLOCK_CYCLES):
        problems.append("hprof.Deadlock events %s, expected %s" % (cycles, DEADLOCK_CYCLES))
    prof = parse_profile(txt)
    text_cycles = cycles_by_name(prof, final_monitor(prof)[3])
    if sorted(map(sorted, text_cycles)) != sorted(map(sorted, cycles)) or any(c not in cycles for c in text_cycles):
        problems.append("hprof.Deadlock events %s differ from DEADLOCKS %s" % (cycles, text_cycles))
    for name, frames in sorted(stacks.items()):
        if not any(f == "Deadlocks" or f.startswith("Deadlocks$") for f in frames):
            problems.append("%s's stack trace has no frame of Deadlocks: %s" % (name, frames))
    summary = jdk_tool(ctx, "jfr", ["summary", rec])
    m = re.search(r"^\s*hprof\.Deadlock\s+(\d+)\s", summary, re.M)
    if not m or int(m.group(1)) != 4:
        problems.append("jfr summary: %s hprof.Deadlock events, expected 4" % (m.group(1) if m else "no"))
    text = jdk_tool(ctx, "jfr", ["print", "--events", "hprof.Deadlock", rec])
    for name in ("dl-mon-a", "dl-mon-b", "dl-lock-a", "dl-lock-b"):
        if text.count('eventThread = "%s"' % name) != 1:
            problems.append("jfr print: %d events of %s, expected 1" % (text.count('eventThread = "%s"' % name), name))
    report = subprocess.run([os.path.join(BUILD, "hprof"), "report", rec], capture_output=True, text=True, timeout=120)
    if report.returncode != 0:
        problems.append("hprof report of the recording: exit %d: %s" % (report.returncode, report.stderr[-400:]))
    assert not problems, "; ".join(problems)
