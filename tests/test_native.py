"""cpu=samples of the whole process (native=y, the default): every thread by
its CPU, native frames on top of Java frames (pytest tests, run on each JDK
with the ctx fixture of tests/conftest.py).

    native_gc       GcChurn (G1 busy copying a churning live set): the
                    program prints every thread's CPU from
                    /proc/self/task/*/schedstat at its end. The samples'
                    share on GC threads is within 8 points of their share of
                    the process's CPU; samples x interval cover 85-115% of the
                    process's CPU; the GC threads are THREAD STARTs of group
                    "(native)" named by their OS names; their stacks are
                    whole (down to start_thread), named in libjvm.so's
                    demangled C++ (G1ParScanThreadState::...); the CPU SUMMARY
                    section's categories and threads agree with the TRACEs
    native_jni      JniBurn: a JNI library (no frame pointers) burns CPU two
                    calls below its entry point: >= 85% of the main thread's
                    samples have main -> JniBurn.burn -> Java_JniBurn_burn ->
                    hprof_test_burn_outer -> hprof_test_burn_spin, in that
                    order, in the collapsed stacks and the TRACEs; the
                    summary files them under "native"
    native_off      native=n: Java threads' Java frames only, as before: no
                    thread of group "(native)", no native function, no
                    CPU SUMMARY
    native_attach   GcChurn running 1.5 s before `build/hprof attach`: the GC
                    threads that existed before the attach are found and
                    sampled with whole stacks
    native_kernel   SysWrite (writes files: CPU in the kernel), sampler=perf:
                    >= 50% of the main thread's samples end in kernel frames
                    (`name_[k]` in collapsed stacks), every kernel frame above
                    (nearer the leaf than) every user frame, the write path
                    under libc's write; skipped where the kernel may not be
                    sampled (perf_event_paranoid)
    java_runs       Inlined (a small hot method C2 inlines into its caller's
                    loop): >= 90% of the samples in hot are `Inlined.hot_[i]`
                    under `Inlined.caller_[j]` in the collapsed stacks and
                    the flame graph's names; with -Xint >= 90% are
                    `Inlined.hot_[0]` (interpreted), and no frame is marked
                    compiled or inlined
    wall_states     WallStates, wall=10: a thread that computes 100 ms then
                    sleeps 100 ms has its sleeping share (under Thread.sleep)
                    within 5 points of the time it slept; threads in
                    Object.wait, LockSupport.park, a socket read and a
                    monitor enter are >= 90% waiting, parked, syscall and
                    blocked; each thread's samples add up to its lifetime
                    within 10%; pprof's samples carry labels thread and state
                    and its wall values are samples x 10 ms; the WALL
                    SUMMARY's states add up to its total
    wall_runnable   WallStates with 4 threads that compute all run long, more
                    than this machine's CPUs: each one's share of samples
                    "running" is within 12 points of its CPU time over its
                    lifetime (the program's own measure), the rest
                    "runnable" (waiting for a CPU), not "running"
    wall_idle       WallStates with 1,000 idle threads: each still adds up to
                    its lifetime (samples weighted by how rarely a thread's
                    turn comes), and the run ends normally
    wall_attach     wall=10 attached to WallStates 1 s in: the threads that
                    were blocked before the attach are found in their states
"""

import os
import re
import subprocess
import time

import pytest

import heap_sites
import pprof_reader
from run import BUILD, final_section, parse_collapsed, parse_profile, reap, spawn

HPROF = os.path.join(BUILD, "hprof")
INTERVAL_MS = 10
GC_PREFIXES = ("GC Thread", "G1 ", "ZWorker", "ZDriver", "Shenandoah")
RE_SUMMARY_BEGIN = re.compile(r"^CPU SUMMARY BEGIN \(total = (\d+)\) .+$")


def thread_cpu_truth(stderr):
    """{tid: (name, cpu ns)} from GcChurn's THREADCPU lines."""
    rows = re.findall(r"^THREADCPU tid=(\d+) ns=(\d+) name=(.*)$", stderr, re.M)
    if not rows:
        pytest.fail("the program printed no THREADCPU line")
    return {int(t): (name, int(ns)) for t, ns, name in rows}


def cpu_summaries(path):
    """Every CPU SUMMARY section: [(total, {category: samples}, [(thread, samples, id)])]."""
    out = []
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    i = 0
    while i < len(lines):
        m = RE_SUMMARY_BEGIN.match(lines[i])
        i += 1
        if not m:
            continue
        cats, threads, part = {}, [], None
        while i < len(lines) and lines[i] != "CPU SUMMARY END":
            line = lines[i]
            i += 1
            if line.startswith("category "):
                part = "cat"
                continue
            if line.startswith("thread "):
                part = "thread"
                continue
            if part == "cat":
                mm = re.match(r"^(.+?)\s+(\d+\.\d\d)%\s+(\d+)\s+(\d+\.\d\d)$", line)
                if not mm:
                    pytest.fail("malformed CPU SUMMARY category row %r" % line)
                cats[mm.group(1)] = int(mm.group(3))
            elif part == "thread":
                mm = re.match(r"^(.+?)\s+(\d+\.\d\d)%\s+(\d+) (\d+)$", line)
                if not mm:
                    pytest.fail("malformed CPU SUMMARY thread row %r" % line)
                threads.append((mm.group(1), int(mm.group(3)), int(mm.group(4))))
            else:
                pytest.fail("CPU SUMMARY line before its column header: %r" % line)
        if i >= len(lines):
            pytest.fail("CPU SUMMARY without END")
        out.append((int(m.group(1)), cats, threads))
    return out


def is_gc(name):
    return name.startswith(GC_PREFIXES)


def check_gc_profile(ctx, prof, prof_path, collapsed_path, truth, problems, attached=False):
    sec = final_section(prof)
    by_serial = {}
    for row in sec.rows:
        th = prof.traces[row.trace].thread
        by_serial[th] = by_serial.get(th, 0) + row.count
    gc_threads = [t for t in prof.threads.values() if is_gc(t.name)]
    if not gc_threads:
        problems.append("no THREAD START for a GC thread (names: %s)"
                        % sorted({t.name for t in prof.threads.values()}))
        return
    bad_group = [t.name for t in gc_threads if t.group != "(native)"]
    if bad_group:
        problems.append("GC threads not in group (native): %s" % bad_group)
    gc_samples = sum(by_serial.get(t.serial, 0) for t in gc_threads)
    total_ns = sum(ns for _n, ns in truth.values())
    gc_ns = sum(ns for name, ns in truth.values() if is_gc(name))
    truth_share = gc_ns / float(total_ns)
    share = gc_samples / float(sec.total or 1)
    coverage = sec.total * INTERVAL_MS * 1e6 / total_ns
    ctx.note("GC threads: %.1f%% of the samples (%d of %d), %.1f%% of the process's CPU (%.2f of %.2f s); "
             "samples x interval = %.0f%% of the CPU"
             % (100 * share, gc_samples, sec.total, 100 * truth_share, gc_ns / 1e9, total_ns / 1e9, 100 * coverage))
    if not attached:
        if abs(share - truth_share) > 0.08:
            problems.append("GC share of the samples %.1f%%, of the CPU %.1f%%: more than 8 points apart"
                            % (100 * share, 100 * truth_share))
        if not 0.85 <= coverage <= 1.15:
            problems.append("samples x interval cover %.0f%% of the process's CPU (85-115%% expected)"
                            % (100 * coverage))
    elif gc_samples < 20:
        problems.append("only %d samples on GC threads after the attach" % gc_samples)
    # Whole native stacks on GC threads, named in demangled C++.
    gc_serials = {t.serial for t in gc_threads}
    gc_rows = [r for r in sec.rows if prof.traces[r.trace].thread in gc_serials]
    g1 = sum(r.count for r in gc_rows
             if any(f.cls == "[libjvm.so]" and "G1" in f.method and "::" in f.method
                    for f in prof.traces[r.trace].frames))
    if g1 < 0.5 * gc_samples:
        problems.append("only %d of %d GC-thread samples have a demangled G1...:: frame of [libjvm.so]"
                        % (g1, gc_samples))
    mangled = sorted({f.method for r in gc_rows for f in prof.traces[r.trace].frames
                      if f.method.startswith("_Z")})
    if mangled:
        problems.append("mangled names left: %s" % mangled[:3])
    # Whole stacks: collapsed lines of GC threads end at the thread's start.
    whole = cut = 0
    for frames, count in parse_collapsed(collapsed_path):
        if not any("G1" in f and "::" in f for f in frames):
            continue
        if frames[0] in ("clone3", "clone", "__clone", "start_thread"):
            whole += count
        else:
            cut += count
    ctx.note("G1 stacks down to the thread's start: %d, cut short: %d" % (whole, cut))
    if whole < 0.9 * (whole + cut):
        problems.append("only %d of %d G1 stacks reach the thread's start" % (whole, whole + cut))
    # The summary agrees with the TRACEs.
    summaries = cpu_summaries(prof_path)
    if not summaries:
        problems.append("no CPU SUMMARY section")
        return
    total, cats, threads = summaries[-1]
    if total != sec.total:
        problems.append("CPU SUMMARY total %d, CPU SAMPLES total %d" % (total, sec.total))
    if cats.get("GC", 0) < gc_samples * 0.95:
        problems.append("CPU SUMMARY has %d GC samples, the GC threads' TRACEs %d" % (cats.get("GC", 0), gc_samples))
    for name, count, serial in threads:
        if serial and by_serial.get(serial, 0) != count:
            problems.append("CPU SUMMARY says %s (%d) has %d samples, its TRACEs %d"
                            % (name, serial, count, by_serial.get(serial, 0)))
            break


def test_native_gc(ctx):
    prof_path = ctx.path("gc.hprof.txt")
    collapsed = ctx.path("gc.collapsed")
    r = ctx.run("GcChurn", ["4"], agent="cpu=samples,thread=y,depth=64,collapsed=%s,file=%s"
                % (collapsed, prof_path), jvm=["-XX:+UseG1GC", "-Xmx512m", "-XX:ParallelGCThreads=2"])
    truth = thread_cpu_truth(r.stderr)
    prof = parse_profile(prof_path)
    problems = []
    check_gc_profile(ctx, prof, prof_path, collapsed, truth, problems)
    # The front end opens its report with the summary, and names native
    # functions in its collapsed stacks as the agent does.
    rep = subprocess.run([HPROF, "report", prof_path], capture_output=True, text=True, timeout=120)
    first = [l for l in rep.stdout.splitlines()[1:] if l.strip()][:3]
    if rep.returncode != 0 or not first or not first[0].strip().startswith("Where the CPU went") \
            or not any(re.match(r"^\s+GC\s+\d", l) for l in rep.stdout.splitlines()[:12]):
        problems.append("hprof report does not open with the CPU summary: rc %d, %s" % (rep.returncode, first))
    conv = ctx.path("gc.converted.collapsed")
    cv = subprocess.run([HPROF, "convert", prof_path, "--to", "collapsed", "-o", conv],
                        capture_output=True, text=True, timeout=120)
    if cv.returncode != 0:
        problems.append("hprof convert --to collapsed: rc %d: %s" % (cv.returncode, cv.stderr[-200:]))
    else:
        frames = {f for fr, _ in parse_collapsed(conv) for f in fr}
        named = [f for f in frames if f.startswith("[libjvm.so]")]
        if named or not any("::" in f for f in frames):
            problems.append("hprof convert names native functions %s" % (named[:2] or "nowhere"))
    assert not problems, "; ".join(problems)


def test_native_jni(ctx):
    lib_dir = os.path.dirname(heap_sites.natives("libjni_burn.so"))
    prof_path = ctx.path("jni.hprof.txt")
    collapsed = ctx.path("jni.collapsed")
    r = ctx.run("JniBurn", ["2000"], agent="cpu=samples,thread=y,depth=8,collapsed=%s,file=%s"
                % (collapsed, prof_path), jvm=["-Djava.library.path=" + lib_dir])
    m = re.search(r"TRUTH native_ns=(\d+)", r.stderr)
    if not m:
        pytest.fail("JniBurn printed no TRUTH line")
    want = ["JniBurn.main", "JniBurn.burn", "Java_JniBurn_burn", "hprof_test_burn_outer",
            "hprof_test_burn_spin"]
    main_samples = mixed = 0
    for frames, count in parse_collapsed(collapsed):
        if "JniBurn.main" not in frames:
            continue
        main_samples += count
        at = frames.index("JniBurn.main")
        if frames[at:at + len(want)] == want:
            mixed += count
    expected = int(m.group(1)) / (INTERVAL_MS * 1e6)
    ctx.note("main thread: %d samples (%.0f expected from its CPU), %d of them with the whole mixed stack %s"
             % (main_samples, expected, mixed, " -> ".join(want)))
    problems = []
    if main_samples < 0.7 * expected:
        problems.append("%d samples on main, %.0f expected" % (main_samples, expected))
    if mixed < 0.85 * main_samples:
        problems.append("only %d of %d samples of main have the mixed stack %s" % (mixed, main_samples, want))
    prof = parse_profile(prof_path)
    sec = final_section(prof)
    top = sum(r.count for r in sec.rows if prof.traces[r.trace].top is not None
              and prof.traces[r.trace].top.qualname == "[libjni_burn.so].hprof_test_burn_spin"
              and prof.traces[r.trace].top.is_native)
    if top < 0.85 * main_samples:
        problems.append("TRACEs: only %d samples with [libjni_burn.so].hprof_test_burn_spin(... Native method) "
                        "on top" % top)
    summaries = cpu_summaries(prof_path)
    native = summaries[-1][1].get("native", 0) if summaries else 0
    if native < 0.85 * main_samples:
        problems.append("CPU SUMMARY: %d samples under native, main burnt %d in C" % (native, mixed))
    assert not problems, "; ".join(problems)


def test_native_off(ctx):
    prof_path = ctx.path("off.hprof.txt")
    ctx.run("GcChurn", ["2"], agent="cpu=samples,native=n,thread=y,depth=16,file=%s" % prof_path,
            jvm=["-XX:+UseG1GC", "-Xmx512m"])
    prof = parse_profile(prof_path)
    sec = final_section(prof)
    problems = []
    native_threads = [t.name for t in prof.threads.values() if t.group == "(native)"]
    if native_threads:
        problems.append("native=n, yet threads of group (native): %s" % native_threads[:5])
    natives = sorted({f.qualname for r in sec.rows for f in prof.traces[r.trace].frames
                      if f.cls.startswith("[lib")})
    if natives:
        problems.append("native=n, yet native functions: %s" % natives[:3])
    if cpu_summaries(prof_path):
        problems.append("native=n, yet a CPU SUMMARY section")
    if sec.total == 0:
        problems.append("no samples")
    assert not problems, "; ".join(problems)
    ctx.note("%d samples, Java threads and frames only" % sec.total)


def test_native_attach(ctx):
    prof_path = ctx.path("attach.hprof.txt")
    collapsed = ctx.path("attach.collapsed")
    p, so, se, cmd = spawn(ctx, "GcChurn", ["6"], None, "target",
                           jvm=["-XX:+UseG1GC", "-Xmx512m", "-XX:ParallelGCThreads=2"])
    time.sleep(1.5)
    a = subprocess.run([HPROF, "attach", str(p.pid), "cpu=samples,thread=y,depth=64,collapsed=%s,file=%s"
                        % (collapsed, prof_path)], capture_output=True, text=True, timeout=60)
    if a.returncode != 0:
        p.kill()
        reap(ctx, p, so, se, cmd, want_rc=None)
        pytest.fail("build/hprof attach: rc %d: %s" % (a.returncode, (a.stdout + a.stderr)[-300:]))
    r = reap(ctx, p, so, se, cmd)
    truth = thread_cpu_truth(r.stderr)
    prof = parse_profile(prof_path)
    problems = []
    check_gc_profile(ctx, prof, prof_path, collapsed, truth, problems, attached=True)
    assert not problems, "; ".join(problems)


def test_native_kernel(ctx):
    prof_path = ctx.path("kernel.hprof.txt")
    col = ctx.path("kernel.collapsed")
    r = ctx.run("SysWrite", ["2000"], agent="cpu=samples,sampler=perf,interval=1,thread=y,depth=64,"
                "collapsed=%s,file=%s" % (col, prof_path))
    if "samples have no kernel frames" in r.stderr:
        pytest.skip("the kernel may not be sampled here (perf_event_paranoid): %s" % r.stderr.strip()[-200:])
    main = with_kernel = misordered = 0
    for frames, count in parse_collapsed(col):
        if "SysWrite.main" not in frames:
            continue
        main += count
        kernel = [i for i, f in enumerate(frames) if f.endswith("_[k]")]
        if kernel:
            with_kernel += count
            if min(kernel) < max(i for i, f in enumerate(frames) if not f.endswith("_[k]")):
                misordered += count
    ctx.note("main thread: %d samples, %d with kernel frames on top, %d with a kernel frame below a user frame"
             % (main, with_kernel, misordered))
    problems = []
    if main < 50:
        problems.append("only %d samples on main" % main)
    elif with_kernel < 0.5 * main:
        problems.append("only %d of %d samples of main have kernel frames" % (with_kernel, main))
    if misordered:
        problems.append("%d samples have a kernel frame below a user frame" % misordered)
    write_path = sum(c for fr, c in parse_collapsed(col)
                     if "java.io.FileOutputStream.writeBytes" in fr and any(f.endswith("_[k]") for f in fr))
    if write_path == 0:
        problems.append("no sample of FileOutputStream.writeBytes with kernel frames")
    summaries = cpu_summaries(prof_path)
    if not summaries or summaries[-1][1].get("kernel", 0) == 0:
        problems.append("CPU SUMMARY has no kernel category")
    assert not problems, "; ".join(problems)


def wall_by_thread(prof, path):
    """{thread name: {state: samples}} from the WALL SAMPLES rows and
    their TRACEs (thread=y, the bottom frame [state].<name>)."""
    rows = wall_rows(path)
    out = {}
    for count, trace in rows:
        t = prof.traces.get(trace)
        if t is None:
            pytest.fail("WALL SAMPLES names trace %d, which the file does not have" % trace)
        name = prof.thread_name(t.thread) if t.thread else "<none>"
        bottom = t.frames[-1] if t.frames else None
        state = bottom.method if bottom is not None and bottom.cls == "[state]" else "<cut>"
        d = out.setdefault(name, {})
        d[state] = d.get(state, 0) + count
    return out


def check_states(ctx, prof, path, truth, problems, lifetimes=True, split=True):
    by = wall_by_thread(prof, path)
    want = {"w-wait": "waiting", "w-park": "parked", "w-socket": "syscall", "w-blocked": "blocked"}
    for name, state in want.items():
        d = by.get(name, {})
        total = sum(d.values())
        share = d.get(state, 0) / float(total or 1)
        ctx.note("%s: %d samples, %.0f%% %s (%s)" % (name, total, 100 * share, state,
                                                    ", ".join("%s %d" % kv for kv in sorted(d.items()))))
        if share < 0.9:
            problems.append("%s: %.0f%% of its samples %s, >= 90%% expected (%s)" % (name, 100 * share, state, d))
    d = by.get("w-compute-sleep", {})
    total = sum(d.values())
    m = re.search(r"TRUTH compute_ns=(\d+) sleep_ns=(\d+)", truth)
    if not split:
        pass                    # the truth covers the whole run, the profile part of it
    elif m and total:
        want_share = int(m.group(2)) / float(int(m.group(1)) + int(m.group(2)))
        share = d.get("sleeping", 0) / float(total)
        ctx.note("w-compute-sleep: %.1f%% sleeping, slept %.1f%% of its loop (%s)"
                 % (100 * share, 100 * want_share, ", ".join("%s %d" % kv for kv in sorted(d.items()))))
        if abs(share - want_share) > 0.05:
            problems.append("w-compute-sleep sleeping %.1f%%, truth %.1f%%" % (100 * share, 100 * want_share))
    else:
        problems.append("no samples of w-compute-sleep or no TRUTH line")
    if lifetimes:
        for name, life in re.findall(r"^TRUTH name=(\S+) life_ns=(\d+)", truth, re.M):
            got = sum(by.get(name, {}).values()) * INTERVAL_MS * 1e6
            ratio = got / float(life)
            if not 0.9 <= ratio <= 1.1:
                problems.append("%s: samples x 10 ms = %.2f s, lifetime %.2f s" % (name, got / 1e9, int(life) / 1e9))
    return by


def test_wall_states(ctx):
    path = ctx.path("wall.hprof.txt")
    pb = ctx.path("wall.pb.gz")
    r = ctx.run("WallStates", ["3000"], agent="wall=10,thread=y,depth=64,pprof=%s,file=%s" % (pb, path))
    prof = parse_profile(path)
    problems = []
    check_states(ctx, prof, path, r.stderr, problems)
    pp = pprof_reader.read_pprof(pb)
    if pp.sample_types != [("samples", "count"), ("wall", "nanoseconds")]:
        problems.append("pprof sample types %s" % pp.sample_types)
    else:
        if pp.total("wall") != pp.total("samples") * INTERVAL_MS * 1000000:
            problems.append("pprof wall values are not samples x 10 ms")
        sleep = sum(v[1] for (fr, v, th), lab in zip(pp.samples, pp.labels)
                    if th == "w-compute-sleep" and lab.get("state") == "sleeping")
        # Samples the handler had to drop (no queue slot) belong to no thread.
        unlabelled = sum(1 for (fr, _v, _t), lab in zip(pp.samples, pp.labels)
                         if "state" not in lab or ("thread" not in lab and fr[0][0] != "[unwalkable].buffer_full"))
        ctx.note("pprof: %d samples, %.2f s of wall time, w-compute-sleep sleeping %.2f s (labels)"
                 % (len(pp.samples), pp.total("wall") / 1e9, sleep / 1e9))
        if unlabelled:
            problems.append("%d pprof samples without both labels thread and state" % unlabelled)
        if sleep < 1e9:
            problems.append("pprof: w-compute-sleep has %.2f s labelled sleeping" % (sleep / 1e9))
    summaries = wall_summaries(path)
    if not summaries:
        problems.append("no WALL SUMMARY")
    elif sum(summaries[-1][1].values()) != summaries[-1][0]:
        problems.append("WALL SUMMARY states add up to %d, total %d" % (sum(summaries[-1][1].values()),
                                                                      summaries[-1][0]))
    assert not problems, "; ".join(problems)


def test_wall_runnable(ctx):
    path = ctx.path("runnable.hprof.txt")
    r = ctx.run("WallStates", ["3000", "0", "4"], agent="wall=10,thread=y,depth=8,file=%s" % path)
    by = wall_by_thread(parse_profile(path), path)
    truth = {name: (int(life), int(cpu)) for name, life, cpu
             in re.findall(r"^TRUTH name=(\S+) life_ns=(\d+) cpu_ns=(\d+)", r.stderr, re.M)}
    problems = []
    for i in range(4):
        name = "w-spin-%d" % i
        d = by.get(name, {})
        total = sum(d.values())
        if name not in truth or total < 50:
            problems.append("%s: %d samples, truth %s" % (name, total, truth.get(name)))
            continue
        life, cpu = truth[name]
        on_cpu = cpu / float(life)
        running = d.get("running", 0) / float(total)
        runnable = d.get("runnable", 0) / float(total)
        ctx.note("%s: on a CPU %.0f%% of its life; samples running %.0f%%, runnable %.0f%% (%s)"
                 % (name, 100 * on_cpu, 100 * running, 100 * runnable, ", ".join("%s %d" % kv for kv in sorted(d.items()))))
        if abs(running - on_cpu) > 0.12:
            problems.append("%s: %.0f%% running, on a CPU %.0f%% of its life" % (name, 100 * running, 100 * on_cpu))
        if running + runnable < 0.9:
            problems.append("%s: only %.0f%% running or runnable" % (name, 100 * (running + runnable)))
    assert not problems, "; ".join(problems)


def test_wall_idle(ctx):
    path = ctx.path("idle.hprof.txt")
    r = ctx.run("WallStates", ["3000", "1000"], agent="wall=10,thread=y,depth=64,file=%s" % path)
    prof = parse_profile(path)
    problems = []
    # Each thread's turn comes every 63 ticks here: a handful of samples
    # each, too few for the states' shares; their sums still hold.
    by = wall_by_thread(prof, path)
    for name, life in re.findall(r"^TRUTH name=(\S+) life_ns=(\d+)", r.stderr, re.M):
        got = sum(by.get(name, {}).values()) * INTERVAL_MS * 1e6
        if not 0.75 <= got / float(life) <= 1.25:
            problems.append("%s: samples x 10 ms = %.2f s, lifetime %.2f s" % (name, got / 1e9, int(life) / 1e9))
    idle = [sum(d.values()) for name, d in by.items() if name.startswith("w-idle-")]
    if len(idle) < 990:
        problems.append("only %d of the 1000 idle threads sampled" % len(idle))
    elif idle:
        mean = sum(idle) / float(len(idle)) * INTERVAL_MS / 1000.0
        ctx.note("1000 idle threads: %d sampled, %.2f s of wall time each on average" % (len(idle), mean))
        if not 2.4 <= mean <= 3.6:
            problems.append("idle threads: %.2f s each on average, they lived about 3 s" % mean)
    assert not problems, "; ".join(problems)


def test_wall_attach(ctx):
    path = ctx.path("wall-attach.hprof.txt")
    p, so, se, cmd = spawn(ctx, "WallStates", ["4000"], None, "target")
    time.sleep(1.0)
    a = subprocess.run([HPROF, "attach", str(p.pid), "wall=10,thread=y,depth=64,file=%s" % path],
                       capture_output=True, text=True, timeout=60)
    if a.returncode != 0:
        p.kill()
        reap(ctx, p, so, se, cmd, want_rc=None)
        pytest.fail("build/hprof attach: rc %d: %s" % (a.returncode, (a.stdout + a.stderr)[-300:]))
    r = reap(ctx, p, so, se, cmd)
    prof = parse_profile(path)
    problems = []
    check_states(ctx, prof, path, r.stderr, problems, lifetimes=False, split=False)
    assert not problems, "; ".join(problems)


def test_java_runs(ctx):
    def hot_leaves(path):
        runs = {}
        for frames, count in parse_collapsed(path, runs=True):
            if frames and frames[-1].startswith("Inlined.hot"):
                key = ";".join(frames[-2:])
                runs[key] = runs.get(key, 0) + count
        return runs
    problems = []
    collapsed, flame = ctx.path("jit.collapsed"), ctx.path("jit.html")
    # 2.5 s and 1.5 s of the main thread's CPU, as many samples however loaded the machine
    ctx.run("Inlined", ["2500", "cpu"], agent="cpu=samples,collapsed=%s,flamegraph=%s,file=%s"
            % (collapsed, flame, ctx.path("jit.hprof.txt")))
    runs = hot_leaves(collapsed)
    total = sum(runs.values())
    inlined = runs.get("Inlined.caller_[j];Inlined.hot_[i]", 0)
    ctx.note("JIT: %d samples in hot, %d as Inlined.caller_[j];Inlined.hot_[i] (%s)"
             % (total, inlined, sorted(runs.items(), key=lambda kv: -kv[1])[:4]))
    if total < 50 or inlined < 0.9 * total:
        problems.append("JIT: %d of %d samples in hot marked inlined into compiled caller" % (inlined, total))
    page = open(flame, encoding="utf-8", errors="replace").read()
    if "Inlined.hot_[i]" not in page or "Inlined.caller_[j]" not in page:
        problems.append("the flame graph's names do not carry the runs _[i] and _[j]")
    collapsed = ctx.path("int.collapsed")
    ctx.run("Inlined", ["1500", "cpu"], agent="cpu=samples,collapsed=%s,file=%s" % (collapsed, ctx.path("int.hprof.txt")),
            jvm=["-Xint"])
    runs = hot_leaves(collapsed)
    total = sum(runs.values())
    interpreted = sum(c for k, c in runs.items() if k.endswith("Inlined.hot_[0]"))
    ctx.note("-Xint: %d samples in hot, %d as Inlined.hot_[0]" % (total, interpreted))
    if total < 30 or interpreted < 0.9 * total:
        problems.append("-Xint: %d of %d samples in hot marked interpreted" % (interpreted, total))
    jit_marks = [f for frames, _ in parse_collapsed(collapsed, runs=True) for f in frames
                 if f.endswith("_[j]") or f.endswith("_[i]")]
    if jit_marks:
        problems.append("-Xint, yet frames marked compiled or inlined: %s" % sorted(set(jit_marks))[:3])
    assert not problems, "; ".join(problems)


RE_WALL_BEGIN = re.compile(r"^WALL SAMPLES BEGIN \(total = (\d+)\) .+$")
RE_WALL_ROW = re.compile(r"^ *\d+ +\d+\.\d\d% +\d+\.\d\d% +(\d+) +(\d+) \S+$")


def wall_rows(path):
    """The last WALL SAMPLES section's rows: [(count, trace)]; their counts
    must add up to its total (cutoff=0 is not needed: rows below cutoff are
    left out of the listing, not of the total, so this checks <=)."""
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    sections = []
    i = 0
    while i < len(lines):
        m = RE_WALL_BEGIN.match(lines[i])
        i += 1
        if not m:
            continue
        rows = []
        i += 1                      # the column header
        while i < len(lines) and lines[i] != "WALL SAMPLES END":
            mm = RE_WALL_ROW.match(lines[i])
            if not mm:
                pytest.fail("malformed WALL SAMPLES row %r" % lines[i])
            rows.append((int(mm.group(1)), int(mm.group(2))))
            i += 1
        if sum(c for c, _ in rows) > int(m.group(1)):
            pytest.fail("WALL SAMPLES rows add up to more than its total")
        sections.append(rows)
    if not sections:
        pytest.fail("no WALL SAMPLES section in %s" % path)
    return sections[-1]


def wall_summaries(path):
    """[(total, {state: samples})] of every WALL SUMMARY."""
    out = []
    text = open(path, encoding="utf-8", errors="replace").read()
    for m in re.finditer(r"^WALL SUMMARY BEGIN \(total = (\d+)\) .+\n((?:.*\n)*?)WALL SUMMARY END$", text, re.M):
        states = {}
        for line in m.group(2).splitlines():
            mm = re.match(r"^(\w+)\s+\d+\.\d\d%\s+(\d+)\s+\d+\.\d\d$", line)
            if mm:
                states[mm.group(1)] = int(mm.group(2))
        out.append((int(m.group(1)), states))
    return out
