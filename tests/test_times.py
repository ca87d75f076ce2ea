"""cpu=times tests (pytest tests, run on each JDK with the ctx fixture of
tests/conftest.py): the rewriter and tracker on a real JVM, against truths
the programs measure themselves.

    times_counts     exact call counts (1,000,000 / 5,100 / 1,000 with 500
                     exceptional exits; a short method that learns to be only
                     counted; a leaf; a leaf with a forward switch, only
                     counted), -Xverify:all; a short recursive method
                     (fib) keeps its time; CPU time of a busy
                     method within 10% of ThreadMXBean's, a 300 ms sleep
                     under 10 ms of CPU, four busy threads sharing two cores
                     counted as CPU time, not wall time
    times_exit       System.exit inside a method and a daemon thread that
                     never returns: their open calls are in the report
    times_churn      5000 short threads: every thread's totals handed over at
                     its end (work() counted exactly 5000 times), its CPU time
                     within 20% of what the program measured around the
                     calls, no perf counter left open
    times_depth      depth=2 and thread=y: traces of at most 2 frames, one
                     trace per thread
    times_filter     include= and exclude= (tests/java/TimesFilter: App calls
                     Lib): the class left out has no row and its CPU time
                     (within 15% of the program's) is its caller's own;
                     include= alone leaves only its class's rows; calls of
                     the others exact; a pattern matching no class said
                     once at the dump; a bad pattern refused, named
    times_jdk_boundary jdk=boundary (tests/java/TimesJdkBoundary): the
                     JDK's methods called by the program counted exactly,
                     also from a counted Comparator; none of the JDK's calls
                     inside the JDK (TimSort, Formatter, parseInt's
                     exceptions) has a row; counts after 1,000 exceptions
                     thrown through unrecorded frames still exact; jdk=none:
                     no row of the JDK's, the program's counts exact
    times_jdk_verify every class of every JDK module instrumented, loaded and
                     linked with -Xverify:all: zero VerifyErrors, nothing
                     left uninstrumented
    times_old        cpu=old: HPROF's old prof format (no header, no THREAD or
                     TRACE records, "count callee caller time", lines ordered
                     by calls) with exact calls per (callee, caller) pair on a
                     known call graph, callee times at least the CPU the
                     callee is known to spin and at most its caller's, traces
                     of 2 frames despite depth=8; format=b refused
    times_javac      a real application, the JDK's javac, instrumented and run
                     with -Xverify:all, compiling the test programs: every
                     class file written, no VerifyError, javac.Main.main and
                     JavaCompiler.compile called exactly once,
                     JavaCompiler.parse a whole number of times per source
"""

import glob
import os
import re

import pytest

from hprof_text import calls_of, ms_of
from run import parse_cpu_time, parse_profile, truths

JAVA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java")


def rec_calls_by_stack(rows, prof):
    """TimesTruth.rec's calls per trace, keyed by the trace's method names
    (top first): ("rec", "rec", "main") -> calls."""
    by_stack = {}
    for row in rows:
        if row.method == "TimesTruth.rec":
            names = tuple(f.qualname.split(".")[-1] for f in prof.traces[row.trace].frames)
            by_stack[names] = by_stack.get(names, 0) + row.count
    return by_stack


RE_OLD_PROF_LINE = re.compile(r"^(\d+) (<unknown callee>|\S+) (<unknown caller>|\S+) (\d+)$")


def old_prof_lines(path):
    """cpu=old's lines [(count, callee, caller, ms)], checked strictly: the
    file is the header line and such lines, ordered by count."""
    lines = open(path, encoding="utf-8").read().split("\n")
    if lines[0] != "count callee caller time":
        pytest.fail("cpu=old: first line %r, expected 'count callee caller time'" % lines[0])
    if lines[-1] != "":
        pytest.fail("cpu=old: the file does not end with a newline")
    out = []
    for line in lines[1:-1]:
        m = RE_OLD_PROF_LINE.match(line)
        if not m:
            pytest.fail("cpu=old: malformed line %r" % line)
        row = (int(m.group(1)), m.group(2), m.group(3), int(m.group(4)))
        if out and row[0] > out[-1][0]:
            pytest.fail("cpu=old: lines not ordered by count: %r after %r" % (line, out[-1]))
        out.append(row)
    return out


def check_methods_match_traces(prof, rows, problems):
    for r in rows:
        tr = prof.traces.get(r.trace)
        if tr is None:
            problems.append("row %d: trace %d never written" % (r.rank, r.trace))
        elif tr.top is None or tr.top.qualname != r.method:
            problems.append("row %d: method %s is not the top frame of trace %d" % (r.rank, r.method, r.trace))


def test_times_counts(ctx):
    path = ctx.path("times.txt")
    r = ctx.run("TimesTruth", [], agent="cpu=times,cutoff=0,file=" + path, jvm=["-Xverify:all"])
    t = truths(r.stderr)
    total, rows = parse_cpu_time(path)[-1]
    prof = parse_profile(path)
    problems = []
    check_methods_match_traces(prof, rows, problems)
    for method, want in (("TimesTruth.hot", t["hot"]), ("TimesTruth.rec", t["rec"]),
                         ("TimesTruth.thrower", t["thrower"]), ("TimesTruth.busy", 5),
                         ("TimesTruth.sleeper", 1), ("TimesTruth.workerBusy", 4),
                         ("TimesTruth.main", 1), ("TimesTruth.tiny", t["tiny"]),
                         ("TimesTruth.leafHelper", t["tiny"]), ("TimesTruth.fib", t["fib"]),
                         ("TimesTruth.kind", t["kind"])):
        got = calls_of(rows, method)
        if got != want:
            problems.append("%s: %d calls, expected exactly %d" % (method, got, want))
    if t["caught"] != 500:
        problems.append("the program caught %d exceptions (500 expected): the handler changed behaviour"
                        % t["caught"])
    # busy: main's call (300 ms) and the workers' (under workerBusy).
    main_busy = sum(r.ms for r in rows if r.method == "TimesTruth.busy"
                    and any(f.qualname == "TimesTruth.main" for f in prof.traces[r.trace].frames[1:2]))
    workers = sum(r.ms for r in rows if r.method == "TimesTruth.busy"
                  and any(f.qualname == "TimesTruth.workerBusy" for f in prof.traces[r.trace].frames[1:2]))
    sleep_ms = ms_of(rows, "TimesTruth.sleeper")
    want_main, want_workers = t["busy_cpu_ns"] / 1e6, t["workers_busy_cpu_ns"] / 1e6
    ctx.note("cpu=times: busy %.1f ms (ThreadMXBean %.1f), workers %.1f ms (%.1f), sleeper %.2f ms, total %d ms"
             % (main_busy, want_main, workers, want_workers, sleep_ms, total))
    # The report rounds to 0.01% of the total: allow that on top of 10%.
    slack = total * 0.0001
    if abs(main_busy - want_main) > 0.10 * want_main + slack:
        problems.append("busy: %.1f ms CPU, the program measured %.1f ms" % (main_busy, want_main))
    if abs(workers - want_workers) > 0.10 * want_workers + slack:
        problems.append("4 busy threads: %.1f ms CPU, the program measured %.1f ms" % (workers, want_workers))
    # fib is short but recursive: it must keep its time (if it were only
    # counted, its time would show as main's).
    fib_ms = ms_of(rows, "TimesTruth.fib")
    ctx.note("cpu=times: fib(27) %.1f ms of CPU in its own rows" % fib_ms)
    if fib_ms < 1.0:
        problems.append("fib: %.2f ms; a recursive method must stay timed" % fib_ms)
    # kind() is a leaf whose switch only jumps forward: counted, never timed
    # (timed, it had its own time; and so every caller of such a method).
    kind_ms = ms_of(rows, "TimesTruth.kind")
    if kind_ms != 0:
        problems.append("kind (a leaf with a forward switch): %.2f ms of its own; it must be only counted"
                        % kind_ms)
    if sleep_ms > 10:
        problems.append("sleeper: %.1f ms of CPU for a 300 ms sleep (wall time counted as CPU?)" % sleep_ms)
    # Calls per trace, not only per method: main calls rec(50) 100 times,
    # so at depth 4 [rec main], [rec rec main] and [rec rec rec main] have
    # 100 calls each and [rec rec rec rec] the other 4,800 (a callee's key
    # is derived from its caller's key: a wrong derivation moves calls).
    if t["rec"] == 5100:
        by_stack = rec_calls_by_stack(rows, prof)
        want_stacks = {("rec", "main"): 100, ("rec", "rec", "main"): 100,
                       ("rec", "rec", "rec", "main"): 100, ("rec", "rec", "rec", "rec"): 4800}
        if by_stack != want_stacks:
            problems.append("rec calls per trace %s, expected %s" % (by_stack, want_stacks))
    rec = [prof.traces[r.trace] for r in rows if r.method == "TimesTruth.rec"]
    if not any(len(t.frames) == 4 for t in rec):
        problems.append("no TimesTruth.rec trace has the default depth of 4 frames: %s"
                        % sorted({len(t.frames) for t in rec}))
    lines = [f for r in rows for f in prof.traces[r.trace].frames if f.cls == "TimesTruth"]
    if not any(f.line.isdigit() for f in lines):
        problems.append("no TimesTruth frame with a line number")
    if "uninstrumented" in r.stderr or "cannot retransform" in r.stderr:
        problems.append("classes left uninstrumented: %s" % r.stderr[-400:])
    assert not problems, "; ".join(problems)


def test_times_exit(ctx):
    path = ctx.path("times-exit.txt")
    ctx.run("TimesTruth", ["exit"], agent="cpu=times,cutoff=0,file=" + path)
    total, rows = parse_cpu_time(path)[-1]
    problems = []
    for method in ("TimesTruth.exitInside", "TimesTruth.forever"):
        if calls_of(rows, method) != 1:
            problems.append("%s: %d calls (the open call must be reported once)" % (method, calls_of(rows, method)))
    assert not problems, "; ".join(problems)


def test_times_depth(ctx):
    path = ctx.path("times-d2.txt")
    ctx.run("TimesTruth", [], agent="cpu=times,cutoff=0,depth=2,thread=y,file=" + path)
    total, rows = parse_cpu_time(path)[-1]
    prof = parse_profile(path)
    problems = []
    deep = [t for t in prof.traces.values() if len(t.frames) > 2]
    if deep:
        problems.append("%d traces deeper than depth=2" % len(deep))
    # rec() runs 50 deep: its traces must be full (the tracker's own
    # frames, skipped, must not eat into depth=).
    # Per trace at depth=2: [rec main] 100 calls, [rec rec] 5,000.
    by_stack = rec_calls_by_stack(rows, prof)
    if by_stack != {("rec", "main"): 100, ("rec", "rec"): 5000}:
        problems.append("rec calls per trace %s, expected [rec main] 100, [rec rec] 5000" % by_stack)
    rec = [prof.traces[r.trace] for r in rows if r.method == "TimesTruth.rec"]
    if not rec or min(len(t.frames) for t in rec) != 2:
        problems.append("TimesTruth.rec traces have %s frames, expected 2"
                        % sorted({len(t.frames) for t in rec}))
    busy_threads = {prof.traces[r.trace].thread for r in rows if r.method == "TimesTruth.workerBusy"}
    if len(busy_threads) != 4:
        problems.append("thread=y: workerBusy in %d threads' traces, expected 4" % len(busy_threads))
    if calls_of(rows, "TimesTruth.hot") != 1000000:
        problems.append("hot: %d calls with depth=2" % calls_of(rows, "TimesTruth.hot"))
    assert not problems, "; ".join(problems)


def test_times_filter(ctx):
    """include= and exclude= on TimesFilter (App calls Lib): the default
    run has Lib's rows (the test is valid); excluded, Lib has no row and
    its time is App.run's own; included alone, App's methods are the only
    rows. Bad values are refused at start-up with the option named."""
    runs, typo_said = {}, {}
    # com.exmple.* matches nothing: the dump says so (a typo?), once.
    for name, opt in (("all", ""), ("exclude", ",exclude=TimesFilter$Lib:com.exmple.*"),
                      ("include", ",include=TimesFilter$App")):
        path = ctx.path("times-filter-%s.txt" % name)
        r = ctx.run("TimesFilter", [], agent="cpu=times,cutoff=0,file=" + path + opt)
        typo_said[name] = r.stderr.count("no class loaded so far matches")
        if name == "exclude" and "matches exclude=com.exmple.* (a typo?)" not in r.stderr:
            typo_said[name] = -1
        m = re.search(r"^TF lib_cpu_ns=(\d+) own_cpu_ns=(\d+) tiny=(\d+)$", r.stderr, re.M)
        if not m:
            pytest.fail("%s: no TF line from TimesFilter: %s" % (name, r.stderr.strip()[-300:]))
        total, rows = parse_cpu_time(path)[-1]
        runs[name] = (int(m.group(1)) / 1e6, int(m.group(2)) / 1e6, rows)
    problems, notes = [], []
    lib_ms, own_ms, rows = runs["all"]
    notes.append("all: Lib.spin %.0f ms in %d calls (program %.0f ms), Lib.tiny %d calls"
                 % (ms_of(rows, "TimesFilter$Lib.spin"), calls_of(rows, "TimesFilter$Lib.spin"), lib_ms,
                    calls_of(rows, "TimesFilter$Lib.tiny")))
    if calls_of(rows, "TimesFilter$Lib.spin") != 3 or calls_of(rows, "TimesFilter$Lib.tiny") != 100000:
        problems.append("without a filter Lib.spin/tiny have %d/%d calls, expected 3/100000 (test invalid)"
                        % (calls_of(rows, "TimesFilter$Lib.spin"), calls_of(rows, "TimesFilter$Lib.tiny")))
    for name in ("exclude", "include"):
        lib_ms, own_ms, rows = runs[name]
        run_ms, own_ours = ms_of(rows, "TimesFilter$App.run"), ms_of(rows, "TimesFilter$App.own")
        notes.append("%s: App.run self %.0f ms (Lib's %.0f ms), App.own %.0f ms (program %.0f ms), %d rows"
                     % (name, run_ms, lib_ms, own_ours, own_ms, len(rows)))
        lib_rows = [r.method for r in rows if r.method.startswith("TimesFilter$Lib.")]
        if lib_rows:
            problems.append("%s: rows of the class left out: %s" % (name, sorted(set(lib_rows))))
        if calls_of(rows, "TimesFilter$App.run") != 1 or calls_of(rows, "TimesFilter$App.own") != 1:
            problems.append("%s: App.run/own have %d/%d calls, expected 1/1" % (
                name, calls_of(rows, "TimesFilter$App.run"), calls_of(rows, "TimesFilter$App.own")))
        # Lib's time is now App.run's own (plus 100,000 uncounted tiny calls).
        if not (0.85 * lib_ms <= run_ms <= 1.15 * lib_ms + 20):
            problems.append("%s: App.run's self time %.0f ms is not Lib's %.0f ms" % (name, run_ms, lib_ms))
        if not (0.85 * own_ms <= own_ours <= 1.15 * own_ms + 5):
            problems.append("%s: App.own %.0f ms against the program's %.0f ms" % (name, own_ours, own_ms))
    others = sorted({r.method for r in runs["include"][2] if not r.method.startswith("TimesFilter$App.")})
    if others:
        problems.append("include=TimesFilter$App: rows of other classes: %s" % others[:5])
    if calls_of(runs["exclude"][2], "TimesFilter.main") != 1:
        problems.append("exclude=: TimesFilter.main (not excluded) has %d calls"
                        % calls_of(runs["exclude"][2], "TimesFilter.main"))
    if typo_said != {"all": 0, "exclude": 1, "include": 0}:
        problems.append("the note on patterns that match no class: %s times per run, expected once for "
                        "exclude=com.exmple.* and never otherwise" % typo_said)
    r = ctx.run("TimesFilter", [], agent="cpu=times,exclude=TimesFilter.*.Lib,file=" + ctx.path("bad.txt"),
                expect_rc=None)
    if r.rc == 0 or "exclude=" not in r.stderr or "only at the end" not in r.stderr:
        problems.append("a bad exclude= was not refused with its name (exit code %d): %s"
                        % (r.rc, r.stderr.strip()[-200:]))
    ctx.note("; ".join(notes))
    assert not problems, "; ".join(problems)


def test_times_jdk_boundary(ctx):
    """jdk=boundary on TimesJdkBoundary: the JDK's methods called from the
    program counted exactly (also from a counted method of its own: the
    Comparator's Integer.compare), the JDK's calls inside the JDK not
    recorded (TimSort, Formatter, the exceptions of parseInt); after
    1,000 exceptions thrown through unrecorded JDK frames the counts that
    follow are still exact. jdk=all, the control, has those rows.
    jdk=none: no row of a JDK class at all (they are not instrumented),
    the program's own calls (the Comparator called back by TimSort
    among them) counted exactly."""
    counts, nrows = {}, {}
    for mode in ("all", "boundary", "none"):
        path = ctx.path("times-jdk-%s.txt" % mode)
        r = ctx.run("TimesJdkBoundary", [], agent="cpu=times,cutoff=0,depth=3,jdk=%s,file=%s" % (mode, path))
        m = re.search(r"^TJ parses=(\d+) sorts=(\d+) compares=(\d+) formats=(\d+)$", r.stderr, re.M)
        if not m:
            pytest.fail("%s: no TJ line: %s" % (mode, r.stderr.strip()[-300:]))
        parses, sorts, compares, formats = (int(g) for g in m.groups())
        total, rows = parse_cpu_time(path)[-1]
        counts[mode] = rows
        nrows[mode] = len(rows)
    inner = ("java.util.TimSort.", "java.util.Formatter.", "java.lang.NumberFormatException.",
             "java.util.Arrays.sort", "java.util.ArrayList.sort")
    problems = []
    rows = counts["all"]
    if calls_of(rows, "java.util.TimSort.sort") != sorts or calls_of(rows, "java.lang.NumberFormatException."
                                                                      "forInputString") != parses:
        problems.append("jdk=all: TimSort.sort %d calls, NumberFormatException.forInputString %d (test invalid)"
                        % (calls_of(rows, "java.util.TimSort.sort"),
                           calls_of(rows, "java.lang.NumberFormatException.forInputString")))
    rows = counts["boundary"]
    want = {"java.util.Collections.sort": sorts, "java.lang.String.format": formats,
            "java.lang.Integer.parseInt": parses,          # the outer one only: parseInt(s, 10) is the JDK's call
            "TimesJdkBoundary$ByValue.compare": 2 * compares,   # the bridge and the real one
            "java.lang.Integer.compare": compares, "TimesJdkBoundary.sortAll": 1,
            "TimesJdkBoundary.formatAll": 1, "TimesJdkBoundary.main": 1}
    got = {k: calls_of(rows, k) for k in want}
    if got != want:
        problems.append("jdk=boundary calls %s, expected %s" % (
            {k: v for k, v in got.items() if v != want[k]}, {k: v for k, v in want.items() if got[k] != v}))
    leaked = sorted({r.method for r in rows if r.method.startswith(inner)})
    if leaked:
        problems.append("jdk=boundary: rows of the JDK's calls inside the JDK: %s" % leaked[:6])
    rows = counts["none"]
    want_none = {k: v for k, v in want.items() if k.startswith("TimesJdkBoundary")}
    got_none = {k: calls_of(rows, k) for k in want_none}
    if got_none != want_none:
        problems.append("jdk=none calls %s, expected %s" % (
            {k: v for k, v in got_none.items() if v != want_none[k]},
            {k: v for k, v in want_none.items() if got_none[k] != v}))
    jdk_rows = sorted({r.method for r in rows if r.method.startswith(("java.", "javax.", "jdk.", "sun.",
                                                                      "com.sun."))})
    if jdk_rows:
        problems.append("jdk=none: %d rows of the JDK's classes: %s" % (len(jdk_rows), jdk_rows[:6]))
    ctx.note("rows: jdk=all %d, jdk=boundary %d, jdk=none %d; boundary: Collections.sort %d calls, "
             "Integer.compare %d (program: %d compares), String.format %d, Integer.parseInt %d"
             % (nrows["all"], nrows["boundary"], nrows["none"], got["java.util.Collections.sort"],
                got["java.lang.Integer.compare"], compares, got["java.lang.String.format"],
                got["java.lang.Integer.parseInt"]))
    r = ctx.run("TimesJdkBoundary", [], agent="cpu=times,jdk=some,file=" + ctx.path("bad.txt"), expect_rc=None)
    if r.rc == 0 or "'jdk'" not in r.stderr or "boundary" not in r.stderr or "none" not in r.stderr:
        problems.append("jdk=some was not refused with the option named (exit code %d)" % r.rc)
    assert not problems, "; ".join(problems)


def test_times_jdk_verify(ctx):
    path = ctx.path("jdk.txt")
    r = ctx.run("LoadAllClasses", [], agent="cpu=times,verbose=all,file=" + path,
                jvm=["-Xverify:all", "--add-modules", "ALL-SYSTEM"], timeout=600)
    m = re.search(r"LOADED (\d+) VERIFY_ERRORS (\d+) OTHER_ERRORS (\d+) OF (\d+)", r.stderr)
    if not m:
        pytest.fail("LoadAllClasses printed no summary: %s" % r.stderr[-500:])
    loaded, verr, other, of = map(int, m.groups())
    ctx.note("jdk classes: %d loaded and linked with -Xverify:all, %d VerifyErrors, %d other errors, of %d"
             % (loaded, verr, other, of))
    problems = []
    if verr:
        problems.append("%d VerifyErrors: %s" % (verr, "; ".join(re.findall(r"VERIFY_ERROR .*", r.stderr)[:3])))
    if of < 10000 or loaded < of * 0.99:
        problems.append("only %d of %d classes loaded" % (loaded, of))
    bad = re.findall(r"hprof: cpu=times: .*(?:uninstrumented|cannot retransform).*", r.stderr)
    if bad:
        problems.append("%d classes left uninstrumented: %s" % (len(bad), bad[:3]))
    assert not problems, "; ".join(problems)


def test_times_churn(ctx):
    path = ctx.path("churn.txt")
    r = ctx.run("ThreadChurn", ["5000", "50", "300000"], agent="cpu=times,cutoff=0,file=" + path)
    m = re.search(r"CHURN started=5000 joined=5000 thread_cpu_ns=(\d+) work_cpu_ns=(\d+)", r.stderr)
    res = re.search(r"RESOURCES fds_before=(-?\d+) fds_after=(-?\d+)", r.stderr)
    if not m or not res:
        pytest.fail("ThreadChurn did not finish: %s" % r.stderr[-400:])
    # work()'s own CPU, as the program measured it around each call: the
    # threads' whole CPU also holds their start and end, which the agent
    # (its per-thread clock and state) makes longer, by 0.3 to 0.65 ms a
    # thread from run to run on 2 busy cores.
    churn_ms, work_truth_ms = int(m.group(1)) / 1e6, int(m.group(2)) / 1e6
    fds_before, fds_after = int(res.group(1)), int(res.group(2))
    total, rows = parse_cpu_time(path)[-1]
    work_calls, work_ms = calls_of(rows, "ThreadChurn.work"), ms_of(rows, "ThreadChurn.work")
    ctx.note("cpu=times churn: work() %d calls, %.0f ms CPU (the program measured %.0f ms; the threads "
             "used %.0f ms); fds %d -> %d" % (work_calls, work_ms, work_truth_ms, churn_ms, fds_before, fds_after))
    problems = []
    if work_calls != 5000:
        problems.append("ThreadChurn.work: %d calls from 5000 ended threads, expected 5000" % work_calls)
    if not 0.8 * work_truth_ms <= work_ms <= 1.2 * work_truth_ms + total * 0.0001:
        problems.append("work() %.0f ms of CPU; the program measured %.0f ms in it (the threads used %.0f ms "
                        "in all)" % (work_ms, work_truth_ms, churn_ms))
    if fds_after > fds_before + 20:
        problems.append("file descriptors grew from %d to %d over 5000 threads (perf counters leaked?)"
                        % (fds_before, fds_after))
    assert not problems, "; ".join(problems)


def test_times_old(ctx):
    path = ctx.path("old.txt")
    r = ctx.run("OldProf", [], agent="cpu=old,depth=8,file=" + path)
    t = truths(r.stderr)
    rows = old_prof_lines(path)
    problems = []
    b, a, c, main = "OldProf.b(I)V", "OldProf.a(I)V", "OldProf.c(I)V", "OldProf.main([Ljava/lang/String;)V"
    rec = "OldProf.rec(I)I"

    def lines_of(callee, caller):
        return [row for row in rows if row[1] == callee and row[2] == caller]

    def one(callee, caller, count):
        found = lines_of(callee, caller)
        if len(found) != 1 or found[0][0] != count:
            problems.append("%s from %s: lines %s, expected one with count %d" % (callee, caller, found, count))
            return None
        return found[0][3]

    b_a = one(b, a, t["b_from_a"])
    b_c = one(b, c, t["b_from_c"])
    a_main = one(a, main, 1)
    c_main = one(c, main, 1)
    # depth=8 is not used for cpu=old (HPROF timed with 2 frames): rec's
    # 190 calls from rec are one line, not one per deeper stack.
    one(rec, main, t["rec_from_main"])
    one(rec, rec, t["rec_from_rec"])
    ctx.note("cpu=old: b from a %s ms (a measured %.0f ms), b from c %s ms (c measured %.0f ms), a %s ms, "
             "%d lines" % (b_a, t["a_cpu_ns"] / 1e6, b_c, t["c_cpu_ns"] / 1e6, a_main, len(rows)))
    for what, got, calls, outer_ns, caller_ms in (("b from a", b_a, t["b_from_a"], t["a_cpu_ns"], a_main),
                                                  ("b from c", b_c, t["b_from_c"], t["c_cpu_ns"], c_main)):
        if got is None:
            continue
        floor = calls * t["b_min_ns"] / 1e6
        # Each call spins until 1 ms of its thread's CPU went by: the
        # sum is a lower bound (the report rounds to 1 ms, the tracker's
        # clock may read a little differently: 3%).
        if got < 0.97 * floor - 1:
            problems.append("%s: %d ms, but the calls spun at least %.0f ms of CPU" % (what, got, floor))
        if got > 1.10 * outer_ns / 1e6 + 5:
            problems.append("%s: %d ms, more than the %.0f ms of CPU the caller measured around all of them"
                            % (what, got, outer_ns / 1e6))
        if caller_ms is not None and caller_ms + 1 < got:
            problems.append("%s: %d ms, more than its caller's %d ms with callees included"
                            % (what, got, caller_ms))
    text = open(path, encoding="utf-8").read()
    for record in ("JAVA PROFILE", "THREAD START", "THREAD END", "TRACE ", "CPU TIME"):
        if record in text:
            problems.append("cpu=old alone: %r in the file (HPROF wrote only the prof lines)" % record)
    # With heap=sites, HPROF wrote the SITES section and its TRACE
    # records after the prof lines, still without header or THREAD records.
    with_sites = ctx.path("old-sites.txt")
    ctx.run("OldProf", [], agent="cpu=old,heap=sites,file=" + with_sites, tag="with-sites")
    text = open(with_sites, encoding="utf-8").read()
    if not text.startswith("count callee caller time\n"):
        problems.append("cpu=old,heap=sites: the file starts with %r" % text[:60])
    if not re.search(r"^300 OldProf\.b\(I\)V OldProf\.a\(I\)V \d+$", text, re.M):
        problems.append("cpu=old,heap=sites: no line for b's 300 calls from a")
    sites = re.search(r"^SITES BEGIN .*\n(?:.*\n){2}((?:.*\n)*?)SITES END$", text, re.M)
    if not sites:
        problems.append("cpu=old,heap=sites: no SITES section")
    else:
        named = set(re.findall(r"^ *\d+ +\S+% +\S+% +\d+ +\d+ +\d+ +\d+ +(\d+) ", sites.group(1), re.M))
        written = set(re.findall(r"^TRACE (\d+):", text, re.M))
        if not named or named - written:
            problems.append("cpu=old,heap=sites: SITES names traces %s never written"
                            % sorted(named - written)[:5])
    if "THREAD START" in text or "JAVA PROFILE" in text:
        problems.append("cpu=old,heap=sites: a header or THREAD records in the file")
    refused = ctx.run("OldProf", [], agent="cpu=old,format=b,file=" + ctx.path("old.hprof"),
                      expect_rc="nonzero", tag="format-b")
    if "'format=b' cannot be used with 'cpu=old'" not in refused.stderr:
        problems.append("cpu=old,format=b not refused with a message: %s" % refused.stderr[-300:])
    assert not problems, "; ".join(problems)


def test_times_javac(ctx):
    path = ctx.path("javac.txt")
    out = ctx.path("javac-out")
    os.makedirs(out, exist_ok=True)
    srcs = sorted(glob.glob(os.path.join(JAVA_DIR, "*.java")))
    r = ctx.run("com.sun.tools.javac.Main", ["-d", out, "-nowarn"] + srcs,
                agent="cpu=times,cutoff=0,file=" + path, jvm=["-Xverify:all"], timeout=600)
    problems = []
    if "VerifyError" in r.stderr or "VerifyError" in r.stdout:
        problems.append("VerifyError: %s" % re.findall(r".*VerifyError.*", r.stderr + r.stdout)[:2])
    missing = [os.path.basename(s) for s in srcs
               if not os.path.exists(os.path.join(out, os.path.basename(s)[:-5] + ".class"))]
    if missing:
        problems.append("no class file for %s" % ", ".join(missing))
    total, rows = parse_cpu_time(path)[-1]
    main = calls_of(rows, "com.sun.tools.javac.Main.main")
    compile_ = calls_of(rows, "com.sun.tools.javac.main.JavaCompiler.compile")
    parse = calls_of(rows, "com.sun.tools.javac.main.JavaCompiler.parse")
    javac_methods = len(set(r.method for r in rows if r.method.startswith("com.sun.tools.javac.")))
    ctx.note("javac under cpu=times, -Xverify:all: %d sources compiled; Main.main %d, JavaCompiler.compile %d,"
             " JavaCompiler.parse %d calls; %d javac methods in the profile, %d ms CPU"
             % (len(srcs), main, compile_, parse, javac_methods, total))
    if main != 1 or compile_ != 1:
        problems.append("javac.Main.main %d calls, JavaCompiler.compile %d: expected 1 and 1" % (main, compile_))
    if parse == 0 or parse % len(srcs):
        problems.append("JavaCompiler.parse %d calls for %d sources: not a whole number per source"
                        % (parse, len(srcs)))
    if javac_methods < 1000:
        problems.append("only %d javac methods in CPU TIME: was javac instrumented?" % javac_methods)
    assert not problems, "; ".join(problems)
