"""Attach and run-time control: the agent loaded into a running JVM, and the
commands start, stop, dump, reset and status, through the JDK's own
`jcmd <pid> JVMTI.agent_load <lib> "<command>,<options>"` and through our
`build/hprof` when it has been built.

The program is tests/java/Phases.java: CPU work in phases that the test
switches through a file (phase A runs only Phases.alpha, phase B only
Phases.beta), so a profile of a window of time must name exactly the phase
that ran in it. Its stdout must stay exactly "Phases: done". Pytest tests,
run on each JDK with the ctx fixture of tests/conftest.py.
"""

import os
import re
import subprocess
import sys
import time

import pytest

import run
from run import AGENT, BUILD, CLASSES, TESTS_DIR, agent_load, parse_cpu_time, parse_profile, reap, spawn
from thread_cpu import wait_thread_cpu

HPROF = os.path.join(BUILD, "hprof")


class Program:
    """Phases.java running with or without the agent."""

    def __init__(self, ctx, agent=None, tag="phases", max_s=90, env=None):
        self.ctx = ctx
        self.dir = ctx.path("phase-dir")
        os.makedirs(self.dir, exist_ok=True)
        self.set_phase("A")
        self.p, self.so, self.se, self.cmd = spawn(ctx, "Phases", [self.dir, max_s], agent, tag, env=env)
        self.wait_for("PID ")
        self.wait_for("Phases: entering A")

    def set_phase(self, phase):
        tmp = os.path.join(self.dir, "phase.tmp")
        with open(tmp, "w") as f:
            f.write(phase)
        os.rename(tmp, os.path.join(self.dir, "phase"))

    def stderr(self):
        with open(self.se, errors="replace") as f:
            return f.read()

    def wait_for(self, text, seconds=30):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if text in self.stderr():
                return
            if self.p.poll() is not None:
                pytest.fail("Phases exited (rc %s) before printing %r: %s"
                            % (self.p.returncode, text, self.stderr()[-600:]))
            time.sleep(0.02)
        pytest.fail("Phases did not print %r within %d s" % (text, seconds))

    def phase(self, name):
        self.set_phase(name)
        self.wait_for("Phases: entering " + name)

    def finish(self):
        self.set_phase("end")
        r = reap(self.ctx, self.p, self.so, self.se, self.cmd)
        if r.stdout != "Phases: done\n":
            pytest.fail("the program's stdout changed: %r" % r.stdout[:300])
        return r

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def jcmd(ctx, pid, options, expect_ok=True, library=AGENT):
    return agent_load(ctx, pid, options, expect_ok, library)


def hprof_cli(ctx, command, pid, options=None, expect_rc=0):
    if not os.path.isfile(HPROF):
        return None
    cmd = [HPROF, command, str(pid)] + ([options] if options else [])
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    ctx.note("hprof %s: %.2f s, rc %d" % (" ".join(cmd[1:]), time.time() - t0, r.returncode))
    if expect_rc is not None and r.returncode != expect_rc:
        pytest.fail("%s: rc %d (expected %d): %s %s" % (" ".join(cmd), r.returncode, expect_rc,
                                                      r.stdout, r.stderr))
    return r


def control(ctx, command, pid, options=""):
    """A command through build/hprof when built, else through jcmd."""
    r = hprof_cli(ctx, command, pid, options or None)
    if r is None:
        jcmd(ctx, pid, command + ("," + options if options else ""))


def phase_share(path, what, section=-1):
    """(samples in alpha, samples in beta, samples with Java frames, profile)
    of a CPU SAMPLES section (default: the last)."""
    prof = parse_profile(path)
    if not prof.sections:
        pytest.fail("%s has no CPU SAMPLES section" % what)
    sec = prof.sections[section]

    def on(m):
        return lambda t: any(f.qualname == "Phases." + m for f in t.frames)
    # The program's own samples: those with a Java frame. cpu=samples
    # also samples the JVM's threads (JIT compilers, GC: native frames
    # only), busy after an attach recompiles the program's code.
    java = prof.samples(sec, lambda t: any(not f.cls.startswith("[") for f in t.frames))
    return prof.samples(sec, on("alpha")), prof.samples(sec, on("beta")), java, prof


def check_phase(path, what, want, problems, min_samples=100, section=-1, min_share=0.90):
    a, b, total, prof = phase_share(path, what, section)
    hit, miss = (a, b) if want == "alpha" else (b, a)
    if total < min_samples:
        problems.append("%s: only %d samples" % (what, total))
    elif hit < min_share * total or miss > 0.02 * total:
        problems.append("%s: %d samples in %s, %d in the other phase, of %d (want >= %d%% and <= 2%%)"
                        % (what, hit, want, miss, total, round(100 * min_share)))
    return a, b, total, prof

# ------------------------------------------------------------ tests


def test_attach_cpu(ctx):
    """Attach to a running CPU-bound program in phase B after a phase A
    that ran without the agent: the profile covers only the time after
    the attach, every thread (main existed before the agent) sampled."""
    out = ctx.path("attach.txt")
    prog = Program(ctx)
    try:
        time.sleep(0.5)
        prog.phase("B")
        control(ctx, "attach" if os.path.isfile(HPROF) else "start", prog.p.pid,
                "cpu=samples,interval=1,thread=y,file=" + out)
        time.sleep(2.0)
        r = prog.finish()
    finally:
        prog.kill()
    problems = []
    a, b, total, prof = check_phase(out, "after the attach", "beta", problems)
    mains = [t for t in prof.threads.values() if t.name == "main"]
    idle = [t.serial for t in prof.threads.values() if t.name.startswith("idle-")]
    if not mains:
        problems.append("no THREAD START for main (it existed before the agent)")
    if len(idle) != 3:
        problems.append("%d idle threads listed, 3 expected" % len(idle))
    idle_samples = prof.samples(prof.final, lambda t: t.thread in idle)
    if idle_samples:
        problems.append("%d samples in sleeping threads" % idle_samples)
    if "Attached to a running JVM" not in open(out).read():
        problems.append("the header does not say the agent was attached")
    ctx.note("after attach: beta %d, alpha %d of %d samples" % (b, a, total))
    if "hprof: attached" not in r.stderr and not os.path.isfile(HPROF):
        problems.append("the JVM's stderr lacks 'hprof: attached'")
    assert not problems, "; ".join(problems)


def test_attach_phases(ctx):
    """Phase A profiled with attach then stop; phase B with start, reset
    and dump file= (a complete report of its own)."""
    first, second = ctx.path("phase-a.txt"), ctx.path("phase-b.txt")
    prog = Program(ctx)
    try:
        jcmd(ctx, prog.p.pid, "cpu=samples,interval=1,file=" + first)
        time.sleep(1.5)
        jcmd(ctx, prog.p.pid, "stop")
        prog.phase("B")
        time.sleep(0.3)
        jcmd(ctx, prog.p.pid, "start")
        time.sleep(0.3)                   # phase B, then reset: only what follows counts
        jcmd(ctx, prog.p.pid, "reset")
        time.sleep(1.5)
        jcmd(ctx, prog.p.pid, "dump,file=" + second)
        status = hprof_cli(ctx, "status", prog.p.pid)
        prog.finish()
    finally:
        prog.kill()
    problems = []
    # file=: the stop's dump (phase A only), then the exit's (after the
    # reset: phase B only, as in the dump file=).
    check_phase(first, "phase A (attach ... stop)", "alpha", problems, section=0)
    check_phase(first, "the exit dump (reset during B)", "beta", problems)
    check_phase(second, "phase B (start, reset ... dump file=)", "beta", problems)
    if status is not None and "cpu=samples: sampling" not in status.stdout:
        problems.append("status lacks 'cpu=samples: sampling': %r" % status.stdout[:400])
    assert not problems, "; ".join(problems)


def test_attach_twice(ctx):
    """A second start of the same library while running changes nothing
    and says so; a second attach with other options restarts with them."""
    out, out2 = ctx.path("twice.txt"), ctx.path("twice2.txt")
    prog = Program(ctx)
    try:
        prog.phase("B")
        jcmd(ctx, prog.p.pid, "cpu=samples,interval=2,file=" + out)
        jcmd(ctx, prog.p.pid, "start")
        time.sleep(1.0)
        jcmd(ctx, prog.p.pid, "start,cpu=samples,interval=1,file=" + out2)
        time.sleep(1.0)
        r = prog.finish()
    finally:
        prog.kill()
    problems = []
    if "hprof: already running" not in r.stderr:
        problems.append("the second start did not say 'hprof: already running'")
    check_phase(out, "first file", "beta", problems, min_samples=50)
    check_phase(out2, "second file", "beta", problems)
    assert not problems, "; ".join(problems)


def test_attach_commands_at_startup(ctx):
    """Every command on an agent loaded with -agentpath at start-up."""
    out, snap = ctx.path("startup.txt"), ctx.path("startup-dump.txt")
    prog = Program(ctx, agent="cpu=samples,interval=1,file=" + out)
    try:
        time.sleep(1.0)
        r = jcmd(ctx, prog.p.pid, "status")
        jcmd(ctx, prog.p.pid, "stop")
        prog.phase("B")
        jcmd(ctx, prog.p.pid, "reset")
        jcmd(ctx, prog.p.pid, "start")
        time.sleep(1.0)
        jcmd(ctx, prog.p.pid, "dump,file=" + snap)
        jcmd(ctx, prog.p.pid, "bogus=1", expect_ok=False)
        jcmd(ctx, prog.p.pid, "reset,cpu=times", expect_ok=False)
        res = prog.finish()
    finally:
        prog.kill()
    problems = []
    for want in ("hprof: running in JVM %d (loaded at start-up)" % prog.p.pid, "hprof: stopped; profile in",
                 "hprof: counts reset", "hprof: dumped to", "unknown option 'bogus'",
                 "'reset' takes no options"):
        if want not in res.stderr:
            problems.append("stderr lacks %r" % want)
    check_phase(snap, "dump file= after stop, B, reset, start", "beta", problems)
    # file=: the stop's dump (phase A), then the exit's (phase B since the reset).
    prof = parse_profile(out)
    if len(prof.sections) != 2:
        problems.append("%s has %d CPU SAMPLES sections (stop and exit expected)" % (out, len(prof.sections)))
    else:
        # This section also holds the JVM's start-up (class loading,
        # the interpreter: about 100 ms of CPU), a fixed cost that is a
        # larger share when a loaded machine gives phase A less CPU in
        # its fixed wall time (89.9% once at load average 8).
        check_phase(out, "the stop dump", "alpha", problems, section=0, min_share=0.80)
    assert not problems, "; ".join(problems)


def times_rows(path):
    """{method: calls} of the last CPU TIME section."""
    calls = {}
    for row in parse_cpu_time(path)[-1][1]:
        calls[row.method] = calls.get(row.method, 0) + row.count
    return calls


def test_attach_times(ctx):
    """cpu=times attached to a running program counts the calls made
    after it; stop restores every class it rewrote and counting stops."""
    out, later = ctx.path("times.txt"), ctx.path("times-later.txt")
    prog = Program(ctx)
    try:
        prog.phase("B")
        jcmd(ctx, prog.p.pid, "cpu=times,file=" + out)
        time.sleep(2.0)
        jcmd(ctx, prog.p.pid, "stop")
        prog.wait_for("classes restored to their original byte code")
        time.sleep(1.0)
        jcmd(ctx, prog.p.pid, "dump,file=" + later)
        res = prog.finish()
    finally:
        prog.kill()
    problems = []
    rows, rows_later = times_rows(out), times_rows(later)
    beta, alpha = rows.get("Phases.beta", 0), rows.get("Phases.alpha", 0)
    if beta < 100:
        problems.append("only %d calls of Phases.beta counted after the attach" % beta)
    if alpha:
        problems.append("%d calls of Phases.alpha, which ran before the attach" % alpha)
    if rows_later.get("Phases.beta", 0) != beta:
        problems.append("Phases.beta calls went on being counted after stop: %d, then %d"
                        % (beta, rows_later.get("Phases.beta", 0)))
    m = re.search(r"hprof: (\d+) classes restored", res.stderr)
    if not m or int(m.group(1)) < 100:
        problems.append("stop did not restore the classes: %s" % (m.group(0) if m else "no message"))
    ctx.note("Phases.beta calls after attach: %d; %s" % (beta, m.group(0) if m else "-"))
    assert not problems, "; ".join(problems)


def test_attach_quiet(ctx):
    """heap=sites attached to a program that loaded huge.Overflow (a
    method too big once instrumented, tests/bci/gen_huge.py) says that
    one class was left uninstrumented in one summary line of the
    program's stderr, and names the class only with verbose=all; a
    cpu=samples run prints the sampler's counters at exit only with
    verbose=all."""
    huge_src, huge = ctx.path("huge-src"), ctx.path("huge-classes")
    subprocess.run([sys.executable, os.path.join(TESTS_DIR, "bci", "gen_huge.py"), huge_src], check=True,
                   capture_output=True)
    subprocess.run([os.path.join(ctx.jdk, "bin", "javac"), "--release", "17", "-d", huge,
                    os.path.join(huge_src, "huge", "Overflow.java")], check=True, capture_output=True)
    problems = []
    each = re.compile(r"^hprof: class huge/Overflow is left uninstrumented", re.M)
    summary = re.compile(r"^hprof: \d+ classes instrumented, (\d+) left as they were.*", re.M)
    for verbose in ("", ",verbose=all"):
        tag = "sites" + verbose.replace(",verbose=", "-")
        se = ctx.path(tag + ".stderr")
        cmd = [ctx.java, "-cp", CLASSES + os.pathsep + huge, "LoadThenWait", "huge.Overflow", "4000"]
        with open(se, "w") as err:
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
                                 cwd=ctx.out)
        try:
            deadline = time.time() + 30
            while "LOADED" not in open(se).read() and time.time() < deadline and p.poll() is None:
                time.sleep(0.05)
            jcmd(ctx, p.pid, "heap=sites,file=%s%s" % (ctx.path(tag + ".txt"), verbose))
            p.wait(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        stderr = open(se).read()
        said = summary.search(stderr)
        named = bool(each.search(stderr))
        ctx.note("heap=sites%s attached: huge/Overflow named: %s; summary: %s"
                 % (verbose, named, said.group(0) if said else None))
        if not said or int(said.group(1)) < 1:
            problems.append("heap=sites%s attached: no summary line of the classes left as they were"
                            % verbose)
        if named != bool(verbose):
            problems.append("heap=sites%s attached: huge/Overflow %s" % (
                verbose, "not named" if verbose else "named in the program's stderr"))
    counters = "walked from the caller of a stub"
    for verbose in ("", ",verbose=all"):
        r = ctx.run("Busy", ["300"], agent="cpu=samples,file=%s%s" % (ctx.path("samples%s.txt" % verbose.replace(",verbose=", "-")), verbose))
        if (counters in r.stderr) != bool(verbose):
            problems.append("cpu=samples%s: the sampler's counters %s stderr" % (
                verbose, "missing from" if verbose else "in"))
    assert not problems, "; ".join(problems)


def test_attach_cycles(ctx):
    """heap=sites from start-up, then 10 stop/start cycles: each stop
    restores exactly the classes the start before instrumented, not every
    class the JVM could retransform. Retransforming a class the hook
    leaves alone made HotSpot merge its constant pool into itself at each
    cycle (it grew without end: `stop` took 0.2, 0.5, 1.5, 4.5, 15 s at
    cycles 4 to 8 of bench/soak, then hung with gigabytes of native
    memory); the program must end normally with a valid report."""
    out = ctx.path("cycles.txt")
    prog = Program(ctx, agent="heap=sites,file=" + out, tag="cycles")
    restored, instrumented = [], []
    try:
        for cycle in range(10):
            for command, found, pattern in (("stop", restored, r"hprof: (\d+) classes restored"),
                                            ("start", instrumented, r"hprof: (\d+) classes instrumented again")):
                r = hprof_cli(ctx, command, prog.p.pid)
                found += [int(n) for n in re.findall(pattern, r.stdout + r.stderr)]
        res = prog.finish()
    finally:
        prog.kill()
    ctx.note("restored at each stop: %s; instrumented again at each start: %s" % (restored, instrumented))
    problems = []
    if len(restored) != 10 or len(instrumented) != 10:
        problems.append("expected 10 'restored' and 10 'instrumented again' lines, got %d and %d"
                        % (len(restored), len(instrumented)))
    for k in range(1, min(len(restored), len(instrumented) + 1)):
        # Classes loaded meanwhile are instrumented at load: a few more, never fewer.
        if restored[k] > instrumented[k - 1] + 20:
            problems.append("stop %d restored %d classes where start %d had instrumented %d: classes "
                            "the hook leaves alone were retransformed" % (k + 1, restored[k], k, instrumented[k - 1]))
            break
    parse_profile(out)                  # the report is valid
    if "Phases: done" not in res.stdout:
        problems.append("the program did not finish")
    assert not problems, "; ".join(problems)


def test_attach_bad_options(ctx):
    """A bad option in an attach is refused with a message naming it; the
    JVM goes on unharmed, and a good attach afterwards works."""
    out = ctx.path("bad.txt")
    prog = Program(ctx)
    try:
        jcmd(ctx, prog.p.pid, "cpu=sample", expect_ok=False)
        jcmd(ctx, prog.p.pid, "stop", expect_ok=False)
        jcmd(ctx, prog.p.pid, "cpu=samples,file=/nonexistent-dir/x.txt", expect_ok=False)
        prog.phase("B")
        jcmd(ctx, prog.p.pid, "cpu=samples,interval=1,file=" + out)
        # 1 s of the main thread's CPU, about 1000 samples at interval=1
        # (check_phase wants 100), however loaded the machine
        wait_thread_cpu(prog.p, "java", 1.0)
        r = prog.finish()
    finally:
        prog.kill()
    problems = []
    for want in ("bad value 'sample' for option 'cpu'", "hprof is not running in this JVM",
                 "/nonexistent-dir/x.txt"):
        if want not in r.stderr:
            problems.append("stderr lacks %r" % want)
    check_phase(out, "attach after refused ones", "beta", problems)
    assert not problems, "; ".join(problems)


def check_hot_after_attach(ctx, snap, program, hot_method, its_caller):
    """Of the samples with frames of class `program` in the file's last
    CPU SAMPLES, >= 95% (and >= 500 samples in all) are on hot_method:
    its top frame, or a frame of it just above its_caller (inlined)."""
    prof = parse_profile(snap)
    sec = prof.final

    def in_program(t):
        return any(f.cls == program for f in t.frames)

    def on_hot(t):
        return bool(t.frames) and (t.frames[0].qualname == hot_method or any(
            t.frames[i].qualname == hot_method and t.frames[i + 1].qualname == its_caller
            for i in range(len(t.frames) - 1)))
    total = prof.samples(sec, in_program)
    hot = prof.samples(sec, lambda t: in_program(t) and on_hot(t))
    ctx.note("after the attach: hot %d of %d samples with %s frames" % (hot, total, program))
    if total < 500 or hot < 0.95 * total:
        pytest.fail("hot has %d of %d samples with %s frames after the attach (want >= 500 samples, "
                    ">= 95%% of them on hot)" % (hot, total, program))


def test_attach_inlined(ctx):
    """Attach after C2 compiled Inlined.caller with hot inlined into it:
    that code has debug information at safepoints only, so its samples
    would go to caller; the agent makes the JIT compile it again with
    full debug information, and hot gets its samples (>= 95%).
    With collapsed= (whole stacks) the code map's list of compiled
    methods is the one the recompilation uses: the same share there."""
    snap = ctx.path("inlined.txt")
    collapsed = ctx.path("inlined.collapsed")
    main = "Inlined"
    # 10 s: the program must outlive two attaches, and a jcmd (a JVM of
    # its own) can take seconds to start on a loaded machine.
    p, so, se, cmd = spawn(ctx, main, ["10000"], None, "inlined")
    try:
        time.sleep(2.0)                       # C2 has compiled caller (the test inlined checks it)
        jcmd(ctx, p.pid, "cpu=samples,interval=1,depth=16,collapsed=%s,file=%s"
             % (collapsed, ctx.path("inlined-all.txt")))
        time.sleep(2.0)
        control(ctx, "dump", p.pid, "file=" + snap)
        reap(ctx, p, so, se, cmd)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    check_hot_after_attach(ctx, snap, "Inlined", "Inlined.hot", "Inlined.caller")
    total = hot = 0
    with open(collapsed) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if "Inlined." in stack:
                total += int(count)
                hot += int(count) if re.search(r"Inlined\.hot(_\[[0ij]\])?(;|$)", stack) else 0
    ctx.note("collapsed stacks: hot %d of %d samples with Inlined frames" % (hot, total))
    if total < 500 or hot < 0.95 * total:
        pytest.fail("collapsed stacks: hot has %d of %d samples with Inlined frames (want >= 95%%)" % (hot, total))


def records_dependencies_from_start(ctx):
    """Whether this JVM has the JIT record, from start-up, the dependencies
    a redefinition needs (JDK 25: AlwaysRecordEvolDependencies, an
    experimental flag, on by default). Then a redefinition throws away
    only the code that depends on the redefined classes; otherwise the
    first one throws away all compiled code."""
    r = subprocess.run([ctx.java, "-XX:+UnlockExperimentalVMOptions", "-XX:+PrintFlagsFinal", "-version"],
                       capture_output=True, text=True, timeout=120)
    return bool(re.search(r"\bAlwaysRecordEvolDependencies\s*=\s*true\b", r.stdout))


def test_attach_hot_cold_loop(ctx):
    """Attach while HotColdLoop's thread runs cold's loop, with hot inlined
    into it, in the code C2 compiled on stack replacement before the
    attach, and never leaves it. Retransforming HotCold (as the agent
    did for every class with compiled code) deoptimized that frame into a
    method made old, which HotSpot never compiles again: the loop stayed
    interpreted for good (several times slower) and 10-19% of its samples
    were on hot. Classes with a method on a stack now wait for a second
    round, and the JVM's first redefinition (the first round) throws away
    all compiled code: the JIT compiles the loop again, with full debug
    information, and hot gets its samples (>= 95%).
    A JVM that records redefinition's dependencies from start-up (JDK 25)
    throws away only the code that depends on the retransformed classes:
    it is run without (-XX:-AlwaysRecordEvolDependencies); with them, no
    way is open to an agent that came late to have that loop compiled
    again but to leave it interpreted."""
    snap = ctx.path("hot-cold-loop.txt")
    main = "HotColdLoop"
    jvm = []
    if records_dependencies_from_start(ctx):
        jvm = ["-XX:+UnlockExperimentalVMOptions", "-XX:-AlwaysRecordEvolDependencies"]
        ctx.note("run with %s (this JVM records dependencies from start-up)" % " ".join(jvm))
    # The loop runs until the stop file exists (90 s at most): it must
    # outlive the attach and the dump, and a jcmd (a JVM of its own) can
    # take seconds to start on a loaded machine. The waits are on the
    # loop's own CPU time, as on an idle machine, not on the clock.
    stop = ctx.path("hot-cold-loop.stop")
    p, so, se, cmd = spawn(ctx, main, ["90000", stop], None, "hot-cold-loop", jvm=jvm)
    try:
        wait_thread_cpu(p, "hot-cold-loop", 1.5)   # C2 has compiled the loop, OSR (1.5 s as in the report)
        jcmd(ctx, p.pid, "cpu=samples,interval=1,depth=16,file=" + ctx.path("hot-cold-loop-all.txt"))
        used = wait_thread_cpu(p, "hot-cold-loop", 2.0)     # about 2000 samples at interval=1 (500 wanted)
        control(ctx, "dump", p.pid, "file=" + snap)
        ctx.note("the loop used %.2f s of CPU between the attach and the dump" % used)
        open(stop, "w").close()
        r = reap(ctx, p, so, se, cmd)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if "HotColdLoop: done after" not in r.stderr:
        pytest.fail("HotColdLoop did not finish: %s" % r.stderr[-600:])
    check_hot_after_attach(ctx, snap, "HotCold", "HotCold.hot", "HotCold.cold")     # HotColdLoop runs HotCold's


def test_attach_heap(ctx):
    """heap=sites sampled, then heap=dump, in a JVM attached to: SITES
    (estimated) and a HEAP DUMP of the running program's objects."""
    sites, heap = ctx.path("sites.txt"), ctx.path("heap.txt")
    prog = Program(ctx)
    try:
        jcmd(ctx, prog.p.pid, "heap=sites,heap_sample=16k,file=" + sites)
        time.sleep(1.0)
        jcmd(ctx, prog.p.pid, "stop")
        jcmd(ctx, prog.p.pid, "start,heap=dump,file=" + heap)
        jcmd(ctx, prog.p.pid, "dump")
        r = prog.finish()
    finally:
        prog.kill()
    problems = []
    with open(sites) as f:
        text = f.read()
    if "SITES BEGIN (ordered by live bytes, estimated from allocation samples every 16384 bytes)" not in text:
        problems.append("no estimated SITES section after attaching heap=sites,heap_sample=16k")
    with open(heap) as f:
        text = f.read()
    m = re.search(r"^HEAP DUMP BEGIN \((\d+) objects", text, re.M)
    if not m or int(m.group(1)) < 1000:
        problems.append("HEAP DUMP after attach: %s" % (m.group(0) if m else "none"))
    if not re.search(r"^CLS [0-9a-f]+ \(name=Phases", text, re.M):
        problems.append("the heap dump has no CLS record of Phases")
    assert not problems, "; ".join(problems)
    ctx.note("heap dump after attach: %s objects; %s" % (m.group(1), r.stderr.count("hprof: note:")))


def test_attach_heap_dump_once(ctx):
    """heap=dump,format=b attached, one `dump`, then the program ends:
    the file holds that one heap dump and is valid (the exit added a
    second full one to the same file); after a stop (which dumps) and a
    new start, the exit dumps again (doe=y)."""
    import hprof_reader
    problems = []
    for restart in (0, 1):
        path = ctx.path("heap%d.hprof" % restart)
        prog = Program(ctx, tag="heap%d" % restart)
        try:
            jcmd(ctx, prog.p.pid, "heap=dump,format=b,file=" + path)
            control(ctx, "dump", prog.p.pid)
            if restart:
                control(ctx, "stop", prog.p.pid)
                control(ctx, "start", prog.p.pid, "heap=dump,format=b,file=" + path)
            prog.finish()
        finally:
            prog.kill()
        try:
            d = hprof_reader.read(path)
        except Exception as e:          # noqa: BLE001 (any parse error is the failure)
            problems.append("%s is not a valid HPROF file: %s" % (os.path.basename(path), e))
            continue
        want = 3 if restart else 1       # restart: the dump, stop's, and the exit's
        ctx.note("%s: %d heap dumps, %d bytes" % (os.path.basename(path), len(d.heap_dumps),
                                                   os.path.getsize(path)))
        if len(d.heap_dumps) != want:
            problems.append("%s: %d heap dumps (want %d: the one asked for%s)" % (
                os.path.basename(path), len(d.heap_dumps), want, ", stop's and the exit's after a new "
                "start" if restart else ""))
    assert not problems, "; ".join(problems)


def test_attach_asan(ctx):
    """The ASan+UBSan-built agent attached to a running JVM and driven
    through every command and collector that works after an attach:
    cpu=samples (threads older than the agent), stop, start with
    cpu=times (retransform in, then back), reset, dump file=, heap=sites
    and monitor=y. No sanitizer report; each profile parses."""
    env = run.asan_env()
    if env is None:
        pytest.skip("gcc's libasan.so not found")
    library = run.ASAN_AGENT
    run.build_asan_agent(ctx)
    files = {k: ctx.path(k + ".txt") for k in ("samples", "times", "snap", "heap")}
    prog = Program(ctx, env=env, tag="asan")
    try:
        prog.phase("B")
        jcmd(ctx, prog.p.pid, "cpu=samples,interval=1,thread=y,file=" + files["samples"], library=library)
        time.sleep(1.0)
        jcmd(ctx, prog.p.pid, "status", library=library)
        jcmd(ctx, prog.p.pid, "stop", library=library)
        jcmd(ctx, prog.p.pid, "start,cpu=times,file=" + files["times"], library=library)
        time.sleep(1.0)
        jcmd(ctx, prog.p.pid, "reset", library=library)
        time.sleep(0.5)
        jcmd(ctx, prog.p.pid, "dump,file=" + files["snap"], library=library)
        jcmd(ctx, prog.p.pid, "stop", library=library)
        prog.wait_for("classes restored to their original byte code")
        jcmd(ctx, prog.p.pid, "start,heap=sites,monitor=y,file=" + files["heap"], library=library)
        time.sleep(1.0)
        jcmd(ctx, prog.p.pid, "status", library=library)
        r = prog.finish()
    finally:
        prog.kill()
    bad = [l for l in r.stderr.splitlines() if "AddressSanitizer" in l or "runtime error:" in l]
    if bad:
        pytest.fail("sanitizer report: %s (see %s)" % (bad[0], ctx.out))
    problems = []
    check_phase(files["samples"], "cpu=samples under ASan", "beta", problems, section=0)
    if times_rows(files["snap"]).get("Phases.beta", 0) <= 0:
        problems.append("no Phases.beta calls in the dump file= under ASan")
    with open(files["heap"]) as f:
        text = f.read()
    if "SITES BEGIN" not in text or "MONITOR TIME BEGIN" not in text:
        problems.append("heap=sites,monitor=y after an attach wrote no SITES or MONITOR TIME")
    assert not problems, "; ".join(problems)
    ctx.note("asan: every command, no sanitizer report")
