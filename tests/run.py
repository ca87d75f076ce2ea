#!/usr/bin/env python3
"""The tests' registry and helpers, and the old runner's command line.

    tests/run.py                 # everything, on every installed JDK (17, 25)
    tests/run.py cpu_split sigq  # only tests whose name contains one of these
    tests/run.py --jdk 17        # only on JDK 17 (repeatable)
    tests/run.py --list          # list test names

The suite runs on pytest (tests/conftest.py; docs/testing.md): this command
runs `python3 -m pytest` with its filters as `--filter NAME` (substrings of the
test names), `--jdk N` and `--no-build`, with an interpreter that has pytest
(this one or /usr/bin/python3, Debian's python3-pytest). Tests registered in
JVM_TESTS (run on each JDK with a Ctx) and NOJDK_TESTS (run once) below are
collected as test_<name> (tests/test_registered.py). Per-test outputs
(profiles, stdout, stderr, command line) are in build/tests/out/<test>-<jdk>/.
"""

import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS_DIR)
BUILD = os.path.join(ROOT, "build")
AGENT = os.path.join(BUILD, "libhprof.so")
CLASSES = os.path.join(BUILD, "tests", "classes")
OUT = os.path.join(BUILD, "tests", "out")
TIMEOUT = 120

sys.dont_write_bytecode = True
sys.path.insert(0, TESTS_DIR)
import hprof_text as H  # noqa: E402
from jdwp import JDWP_SERVER  # noqa: E402


class Fail(Exception):
    pass


class Skip(Exception):
    pass


# ------------------------------------------------------------ JDK discovery

def find_jdk(pattern, prefer=None):
    cands = []
    for d in sorted(glob.glob(pattern)):
        if os.path.isfile(os.path.join(d, "bin", "java")):
            cands.append(d)
    if prefer:
        cands.sort(key=lambda d: 0 if prefer in os.path.basename(d) else 1)
    return cands[0] if cands else None


def jdks():
    return [("jdk17", find_jdk("/usr/lib/jvm/*17*", prefer="java-17-openjdk")),
            ("jdk25", find_jdk("/usr/lib/jvm/*25*"))]


# ------------------------------------------------------------ JVM running

class Run:
    def __init__(self, rc, stdout, stderr, pid, cmd):
        self.rc, self.stdout, self.stderr, self.pid, self.cmd = rc, stdout, stderr, pid, cmd


def clean_env(extra=None):
    env = dict(os.environ)
    for k in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH"):
        env.pop(k, None)
    if extra:
        env.update(extra)
    return env


class Ctx:
    def __init__(self, name, jdk_name, jdk_home, out):
        self.name = name
        self.jdk_name = jdk_name
        self.jdk = jdk_home
        self.java = os.path.join(jdk_home, "bin", "java") if jdk_home else None
        self.out = out
        self.notes = []
        self.nrun = 0

    def path(self, name):
        return os.path.join(self.out, name)

    def note(self, msg):
        self.notes.append(msg)

    def java_cmd(self, main, args=(), agent=None, jvm=(), agentlib=None, agent_path=None):
        cmd = [self.java, "-XX:ErrorFile=" + self.path("hs_err_pid%p.log")]
        if agent is not None:
            cmd.append("-agentpath:" + (agent_path or AGENT) + ("=" + agent if agent else ""))
        if agentlib is not None:
            cmd.append("-agentlib:hprof" + ("=" + agentlib if agentlib else ""))
        cmd += list(jvm) + ["-cp", CLASSES, main] + [str(a) for a in args]
        return cmd

    def _files(self, tag):
        self.nrun += 1
        tag = tag or "run%d" % self.nrun
        return self.path(tag + ".stdout"), self.path(tag + ".stderr"), self.path(tag + ".cmd")

    def run(self, main, args=(), agent=None, jvm=(), agentlib=None, env=None, tag=None,
            timeout=TIMEOUT, expect_rc=0, agent_path=None):
        """Run a Java program; returns Run.  Raises Fail on timeout, crash
        (hs_err file or death by signal) or, if expect_rc is not None, on an
        exit code different from expect_rc ('nonzero' accepts any non-zero)."""
        cmd = self.java_cmd(main, args, agent, jvm, agentlib, agent_path)
        so, se, sc = self._files(tag)
        with open(sc, "w") as f:
            f.write(" ".join(cmd) + "\n")
            if env:
                f.write("env: %r\n" % env)
        with open(so, "wb") as fo, open(se, "wb") as fe:
            p = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL,
                                 cwd=self.out, env=clean_env(env))
            try:
                rc = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                raise Fail("timeout after %ds: %s" % (timeout, " ".join(cmd)))
        r = Run(rc, read(so), read(se), p.pid, cmd)
        self.check_crash(r)
        if expect_rc == "nonzero":
            if rc == 0:
                raise Fail("expected a non-zero exit code, got 0")
        elif expect_rc is not None and rc != expect_rc:
            raise Fail("exit code %d (expected %d); %s" % (rc, expect_rc, diag(r)))
        return r

    def check_crash(self, r, want_rc=0):
        """A crash: hs_err or core files, or a death by signal the test did
        not ask for (want_rc: the exit code it expects, 143 after SIGTERM)."""
        errs = glob.glob(self.path("hs_err*")) + glob.glob(os.path.join(self.out, "core*"))
        if errs:
            raise Fail("JVM crashed: %s" % ", ".join(errs))
        if r.rc is not None and r.rc != want_rc and (r.rc < 0 or r.rc >= 128):
            raise Fail("JVM died with %s" % (("signal %d" % -r.rc) if r.rc < 0 else "exit code %d" % r.rc))


def read(path):
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        return f.read()


def diag(r, n=3):
    """Tail of a run's stderr (and of stdout when stderr says nothing: the
    JVM prints some start-up errors there)."""
    d = "stderr: " + tail(r.stderr, n)
    if not r.stderr.strip() or "Error occurred during initialization of VM" in r.stdout:
        d += "; stdout: " + tail(r.stdout, n)
    return d


def tail(text, n=3):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return " | ".join(lines[-n:]) if lines else "<empty>"


def read_parsed(path, parse, what="profile"):
    """parse(path) of a file the agent wrote (an hprof_text parser), or Fail
    saying that it is missing or what is malformed in it."""
    if not os.path.isfile(path):
        raise Fail("%s %s was not written" % (what, path))
    try:
        return parse(path)
    except H.ParseError as e:
        raise Fail("%s: parse error: %s" % (os.path.basename(path), e))
    except UnicodeDecodeError as e:
        raise Fail("%s: not UTF-8: %s" % (os.path.basename(path), e))


def parse_profile(path):
    return read_parsed(path, H.parse_file)


def parse_cpu_time(path):
    """[(total_ms, [H.TimeRow])] of the CPU TIME sections of a cpu=times file."""
    return read_parsed(path, H.parse_cpu_time_file)


def parse_collapsed(path, runs=False):
    """[(frames root first, count)] of a collapsed-stacks file (H.parse_collapsed)."""
    return read_parsed(path, lambda p: H.parse_collapsed_file(p, runs), "collapsed file")


def final_section(prof, what="profile"):
    if not prof.sections:
        raise Fail("%s has no CPU SAMPLES section" % what)
    return prof.final


def pct(x):
    return "%.2f%%" % (100.0 * x)


# ================================================================== tests

# ---------------------------------------------------------------- CpuSplit

IDLE_METHODS = ["idleNativeRead", "idleSleep", "idleWait", "idlePark"]
IDLE_THREADS = ["idle-read", "idle-sleep", "idle-wait", "idle-park"]


def truth_of(stderr):
    m = re.search(r"TRUTH partA_ns=(\d+) partB_ns=(\d+) worker_cpu_ns=(\d+)", stderr)
    if not m:
        raise Fail("CpuSplit printed no TRUTH line; stderr: %s" % tail(stderr))
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def truths(stderr):
    """Every "TRUTH key=n ..." line of a program as one {key: n} (TimesTruth,
    OldProf print two); Fail if there is none."""
    t = {}
    for m in re.finditer(r"^TRUTH (.*)$", stderr, re.M):
        for kv in m.group(1).split():
            k, v = kv.split("=")
            t[k] = int(v)
    if not t:
        raise Fail("the program printed no TRUTH line: %s" % tail(stderr))
    return t


def truth_fields(stderr):
    """A program's last "TRUTH key=n key=n ..." line as {key: n}; {} if none
    (Finalizers, VirtualMany)."""
    t = {}
    for line in stderr.splitlines():
        if line.startswith("TRUTH "):
            t = dict((k, int(v)) for k, v in (kv.split("=") for kv in line.split()[1:]))
    return t


def cpu_split_common(ctx, thread_y, sampler="auto"):
    interval = 10
    prof_path = ctx.path("cpu_split.hprof.txt")
    opts = "cpu=samples,depth=64,sampler=%s,file=%s%s" % (sampler, prof_path, ",thread=y" if thread_y else "")
    r = ctx.run("CpuSplit", ["5000"], agent=opts)
    a_ns, b_ns, worker_ns = truth_of(r.stderr)
    idle_cpu = re.search(r"^IDLE .*$", r.stderr, re.M)
    idle_cpu = idle_cpu.group(0) if idle_cpu else "IDLE ?"
    prof = parse_profile(prof_path)
    sec = final_section(prof)
    truth = a_ns / float(a_ns + b_ns)
    a = prof.samples(sec, lambda t: t.has_method("CpuSplit.partA"))
    b = prof.samples(sec, lambda t: t.has_method("CpuSplit.partB"))
    worker = prof.samples(sec, lambda t: t.has_method("CpuSplit.workerLoop"))
    unwalk = prof.samples(sec, lambda t: t.top is not None and t.top.cls == "[unwalkable]")
    idle = {m: prof.samples(sec, lambda t, m=m: t.has_method("CpuSplit." + m)) for m in IDLE_METHODS}
    expected = worker_ns / (interval * 1e6)
    measured = a / float(a + b) if a + b else float("nan")
    ctx.note("split: partA %s of partA+partB samples (%d/%d), truth %s, diff %+.2f points"
             % (pct(measured), a, a + b, pct(truth), 100 * (measured - truth)))
    ctx.note("samples: total %d, worker %d (expected ~%.0f from %.2f s CPU at %d ms: %.0f%%), unwalkable %d"
             % (sec.total, worker, expected, worker_ns / 1e9, interval, 100.0 * worker / expected, unwalk))
    ctx.note("idle-method samples: %s; %s" % (" ".join("%s=%d" % kv for kv in idle.items()), idle_cpu))
    problems = []
    if a + b < 100:
        problems.append("only %d samples in partA+partB" % (a + b))
    elif abs(measured - truth) > 0.03:
        problems.append("partA share %s differs from truth %s by more than 3 points" % (pct(measured), pct(truth)))
    # An idle thread is not quite idle: starting up and entering its blocking
    # call costs it ~0.1-0.4 ms of real CPU, the program measures how much.
    # The sampler may charge it at most what that CPU allows: floor(cpu /
    # interval) + 1 samples (the first expiry of a thread is random within an
    # interval, so a thread with c < interval of CPU gets one sample with
    # probability c / interval). A sampler counting RUNNABLE threads (old
    # HPROF) gives each of them hundreds.
    idle_cpu_ns = {name: int(ns) for name, ns in re.findall(r"(idle-\w+)=\w+/(\d+)", idle_cpu)}
    allowed = {n: int(idle_cpu_ns.get(n, 0) // (interval * 1e6)) + 1 for n in IDLE_THREADS}
    for method, name in zip(IDLE_METHODS, IDLE_THREADS):
        if name not in idle_cpu_ns:
            problems.append("CpuSplit did not report the CPU time of %s" % name)
        elif idle[method] > allowed[name]:
            problems.append("%d samples in %s, more than its %.2f ms of CPU allows (%d)"
                            % (idle[method], method, idle_cpu_ns[name] / 1e6, allowed[name]))
    idle_total = sum(idle.values())
    if idle_total > 0.01 * sec.total:
        problems.append("%d of %d samples (over 1%%) in idle methods" % (idle_total, sec.total))
    if not 0.5 <= worker / expected <= 1.3:
        problems.append("worker samples %d not within 50%%-130%% of CPU/interval = %.0f" % (worker, expected))
    if thread_y:
        serials = {}
        for name in IDLE_THREADS + ["cpu-worker"]:
            ts = prof.threads_named(name)
            if len(ts) != 1:
                problems.append("expected one THREAD START for %r, found %d" % (name, len(ts)))
            else:
                serials[name] = ts[0].serial
        untagged = [r for r in sec.rows if prof.traces[r.trace].thread is None]
        if untagged:
            problems.append("thread=y but %d sampled traces have no thread=" % len(untagged))
        by_thread = {}
        for row in sec.rows:
            th = prof.traces[row.trace].thread
            by_thread[th] = by_thread.get(th, 0) + row.count
        idle_th = {n: by_thread.get(s, 0) for n, s in serials.items() if n != "cpu-worker"}
        ctx.note("samples by idle thread serial: %s" % " ".join("%s=%d" % kv for kv in idle_th.items()))
        over = {n: v for n, v in idle_th.items() if v > allowed.get(n, 0)}
        if over:
            problems.append("samples on idle threads beyond their CPU: %s (allowed %s)" % (over, allowed))
        if "cpu-worker" in serials:
            w = by_thread.get(serials["cpu-worker"], 0)
            ctx.note("cpu-worker thread %d: %d samples (%.0f%% of expected), %s of all samples"
                     % (serials["cpu-worker"], w, 100.0 * w / expected, pct(w / float(sec.total or 1))))
            if not 0.5 <= w / expected <= 1.3:
                problems.append("cpu-worker thread has %d samples, not within 50%%-130%% of %.0f" % (w, expected))
    if problems:
        raise Fail("; ".join(problems))


def t_cpu_split(ctx):
    cpu_split_common(ctx, thread_y=False)


def t_cpu_split_threads(ctx):
    """thread=y, with the perf engine (auto picks the timer at interval 10)."""
    cpu_split_common(ctx, thread_y=True, sampler="perf")


def t_cpu_split_timer(ctx):
    """The same truths with the POSIX-timer engine (the fallback where perf
    events are not allowed)."""
    cpu_split_common(ctx, thread_y=True, sampler="timer")


# ---------------------------------------------------------------- Inlined

def inlined_hot_share(ctx, cls, caller, agent, min_samples, min_share):
    """Run `cls` (a small hot() inlined by C2 into caller's loop) under
    cpu=samples with PrintCompilation/PrintInlining, and check that at least
    min_share of the samples with frames of `cls` are in hot (the top frame,
    or the frame just above caller). Returns (hot, total, run)."""
    prof_path = ctx.path(cls.lower() + ".hprof.txt")
    r = ctx.run(cls, ["4000"], agent=agent + ",file=" + prof_path,
                jvm=["-XX:+UnlockDiagnosticVMOptions", "-XX:+PrintCompilation", "-XX:+PrintInlining"])
    prof = parse_profile(prof_path)
    sec = final_section(prof)
    hot_name, caller_name = cls + ".hot", cls + "." + caller

    def has_cls(t):
        return any(f.cls == cls for f in t.frames)

    def on_hot(t):
        if t.frames and t.frames[0].qualname == hot_name:
            return True
        return any(t.frames[i].qualname == hot_name and t.frames[i + 1].qualname == caller_name
                   for i in range(len(t.frames) - 1))

    total = prof.samples(sec, has_cls)
    hot = prof.samples(sec, lambda t: has_cls(t) and on_hot(t))
    others = {}
    for row in sec.rows:
        t = prof.traces[row.trace]
        if has_cls(t) and not on_hot(t):
            k = " <- ".join("%s:%s" % (f.qualname, f.line) for f in t.frames[:2])
            others[k] = others.get(k, 0) + row.count
    worst = sorted(others.items(), key=lambda kv: -kv[1])[:3]
    ctx.note("%s: hot %d of %d samples with %s frames = %s (all samples %d); others: %s"
             % (cls, hot, total, cls, pct(hot / float(total or 1)), sec.total, worst))
    # Was hot really inlined into the caller by C2?
    re_inline = re.compile(r"^\s+@ \d+\s+%s::hot \(\d+ bytes\)\s+inline \(hot\)" % cls, re.M)
    re_c2 = re.compile(r"^\s*\d+\s+\d+\s+[%%sbn! ]*\s4\s+%s::%s" % (cls, caller), re.M)
    if "%s::%s" % (cls, caller) not in r.stdout or "@ " not in r.stdout:
        ctx.note("inlining check SKIPPED: PrintCompilation/PrintInlining output format not recognised")
        inl_ok = True
    else:
        inl_ok = bool(re_inline.search(r.stdout)) and bool(re_c2.search(r.stdout))
        ctx.note("inlining check: C2 compiled %s::%s and reported '%s::hot ... inline (hot)': %s"
                 % (cls, caller, cls, "yes" if inl_ok else "NO"))
    problems = []
    if total < min_samples:
        problems.append("only %d samples with %s frames" % (total, cls))
    elif hot < min_share * total:
        problems.append("hot share %s < %d%% (others: %s)" % (pct(hot / float(total)), round(min_share * 100), worst))
    if not inl_ok:
        problems.append("PrintInlining does not show %s::hot inlined (hot) into a C2 %s::%s "
                        "(test program invalid on this JVM)" % (cls, cls, caller))
    if problems:
        raise Fail("; ".join(problems))
    return hot, total, r


def t_inlined(ctx):
    inlined_hot_share(ctx, "Inlined", "caller", "cpu=samples,depth=16", 100, 0.95)


# ---------------------------------------------------------------- HotCold

def t_hot_cold(ctx):
    """The hot/cold case of Mytkowicz et al. (PLDI 2010): hot, inlined by C2
    into cold's loop, has nearly all the CPU.  Samples must be charged to the
    instruction that ended at the interrupted PC: AsyncGetCallTrace's own
    lookup (the PcDesc strictly after PC) gave the samples at cold's `i++`,
    just after hot's array store, to cold (89-93% on hot; now 99%+)."""
    _hot, _total, r = inlined_hot_share(ctx, "HotCold", "cold", "cpu=samples,interval=1,depth=16", 1000, 0.97)
    m = re.search(r"HotCold: cold called (\d+) times, hot called (\d+) times", r.stderr)
    if not m:
        raise Fail("HotCold did not finish: %s" % diag(r))
    ctx.note("HotCold: hot called %s times" % m.group(2))


# ---------------------------------------------------------------- ThreadChurn

def thread_churn_common(ctx, sampler):
    prof_path = ctx.path("churn.hprof.txt")
    r = ctx.run("ThreadChurn", ["5000", "50", "500000"],
                agent="cpu=samples,interval=1,thread=y,sampler=%s,file=%s" % (sampler, prof_path))
    m = re.search(r"CHURN started=5000 joined=5000 thread_cpu_ns=(\d+)", r.stderr)
    if not m:
        raise Fail("ThreadChurn did not finish its threads: %s" % diag(r))
    churn_cpu_ms = int(m.group(1)) / 1e6
    res = re.search(r"RESOURCES fds_before=(-?\d+) fds_after=(-?\d+) timers_before=(-?\d+) timers_after=(-?\d+) "
                    r"threads_before=(-?\d+) threads_after=(-?\d+)", r.stderr)
    if not res:
        raise Fail("ThreadChurn printed no RESOURCES line: %s" % diag(r))
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
    problems = []
    if len(churn) < 5000 or len(names) < 5000:
        problems.append("only %d THREAD START records (%d names) for the 5000 churn threads"
                        % (len(churn), len(names)))
    if not_ended:
        problems.append("%d churn threads have no THREAD END (e.g. %s)"
                        % (len(not_ended), ", ".join(t.name for t in not_ended[:3])))
    if sec.total <= 0:
        problems.append("no samples")
    # Every thread's timer or perf event must go with it (slack: the JVM's own files).
    if fds_after > fds_before + max(0, threads_after - threads_before) + 20:
        problems.append("open file descriptors grew from %d to %d over 5000 threads, threads from %d to %d "
                        "(perf events leaked?)" % (fds_before, fds_after, threads_before, threads_after))
    # One timer per thread: threads the JVM started meanwhile (a GC worker,
    # a compiler thread) have one of their own with native=y.
    if timers_after > timers_before + max(0, threads_after - threads_before) + 5:
        problems.append("POSIX timers grew from %d to %d over 5000 threads, threads from %d to %d (timers leaked?)"
                        % (timers_before, timers_after, threads_before, threads_after))
    # Threads of ~1 ms must be sampled in proportion to their CPU (the first
    # expiry is random over an interval), not only past a whole interval.
    # Only the perf engine can: POSIX CPU timers are checked at kernel ticks
    # (4 ms here), so threads shorter than a tick are rarely seen by them
    # (a documented limit of the fallback engine).
    engine = re.search(r"^CPU samples: .* driven by (.*)$", read(prof_path), re.M)
    engine = engine.group(1) if engine else "?"
    ctx.note("engine: %s" % engine)
    if engine.startswith("perf") and not 0.7 <= ratio <= 1.3:
        problems.append("churn threads got %d samples for %.0f ms of CPU at interval=1 (%.0f%%, expected 70%%-130%%)"
                        % (on_churn, churn_cpu_ms, 100.0 * ratio))
    if problems:
        raise Fail("; ".join(problems))


def t_thread_churn(ctx):
    thread_churn_common(ctx, "auto")


def t_thread_churn_timer(ctx):
    thread_churn_common(ctx, "timer")


def t_thread_churn_bounded(ctx):
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
            r = subprocess.run([os.path.join(BUILD, "hprof"), "status", str(p.pid)],
                               capture_output=True, text=True, timeout=60)
            m = re.search(r"^threads: (\d+) seen, (\d+) ended ones forgotten", r.stdout, re.M)
            if m and int(m.group(2)) > 0:
                status = m.group(0)
                break
    finally:
        r = reap(ctx, p, so, se, cmd)
    if not re.search(r"CHURN started=30000 joined=30000", r.stderr):
        raise Fail("ThreadChurn did not finish its threads: %s" % tail(r.stderr))
    prof = parse_profile(prof_path)
    churn = {t.name: t for t in prof.threads.values() if t.name.startswith("churn-")}
    numbers = sorted(int(n.split("-")[1]) for n in churn)
    ended = [t for t in churn.values() if t.ended]
    others_ended = sum(1 for t in prof.threads.values() if t.ended and not t.name.startswith("churn-"))
    ctx.note("%d churn threads named (churn-%d .. churn-%d), %d of them ended; other ended threads %d; "
             "status mid-run: %s" % (len(churn), numbers[0] if numbers else -1, numbers[-1] if numbers else -1,
                                     len(ended), others_ended, status or "(none seen)"))
    problems = []
    if len(ended) != len(churn):
        problems.append("%d churn threads without THREAD END" % (len(churn) - len(ended)))
    if not 16384 - 64 <= len(churn) <= 16384:
        problems.append("%d churn threads in the report (expected the last 16384 ended threads, "
                        "less the few other threads that ended)" % len(churn))
    if numbers and (numbers[-1] != 29999 or numbers[0] < 30000 - 16384 - 200):
        problems.append("the threads named are not the last ones: churn-%d .. churn-%d" % (numbers[0], numbers[-1]))
    if not status:
        problems.append("`hprof status` never said that ended threads were forgotten")
    # Each dump starts with the agent's memory; the exit dump's counts the forgotten too.
    mem = prof.agent_memory[-1] if prof.agent_memory else None
    if not mem or mem["seen"] < 30000 or mem["forgotten"] < 30000 - 16384 - 64 or mem["bytes"] <= 0:
        problems.append("the report's last AGENT MEMORY line does not say it: %r" % mem)
    rep = subprocess.run([os.path.join(BUILD, "hprof"), "report", prof_path], capture_output=True, text=True,
                         timeout=120)
    if not re.search(r"agent memory\s+\d+ bytes in its tables at the last of \d+ dumps", rep.stdout):
        problems.append("hprof report shows no agent memory: %s" % rep.stdout[:400])
    if problems:
        raise Fail("; ".join(problems))


def t_thread_churn_binary_bounded(ctx):
    """format=b, thread=n, 12,000 short threads and a dump every 0.3 s: each
    dump names the threads it has not named yet, and their names must not
    go into the agent's string table, which never forgets (thread=n forgets
    ended threads). The `interning` bytes of `hprof status` must stay flat
    from 2,000 threads seen on (with the names interned they grew by about
    40 bytes a thread: 1.0 MB over 25,000), and the file must name every
    churn thread, each resolved by its own UTF8 record."""
    import hprof_reader
    prof_path = ctx.path("churn.hprof")
    p, so, se, cmd = spawn(ctx, "ThreadChurn", ["12000", "100", "2000"],
                           "cpu=samples,thread=n,format=b,file=" + prof_path, "churn")
    readings = []                   # (threads seen, interning bytes)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and p.poll() is None:
            time.sleep(0.3)
            subprocess.run([os.path.join(BUILD, "hprof"), "dump", str(p.pid)], capture_output=True, text=True,
                           timeout=60)
            r = subprocess.run([os.path.join(BUILD, "hprof"), "status", str(p.pid)],
                               capture_output=True, text=True, timeout=60)
            mem = re.search(r"^memory: \d+ bytes in the agent's tables \(interning (\d+),", r.stdout, re.M)
            thr = re.search(r"^threads: (\d+) seen", r.stdout, re.M)
            if mem and thr:
                readings.append((int(thr.group(1)), int(mem.group(1))))
    finally:
        r = reap(ctx, p, so, se, cmd)
    if not re.search(r"CHURN started=12000 joined=12000", r.stderr):
        raise Fail("ThreadChurn did not finish its threads: %s" % tail(r.stderr))
    after = [(n, b) for n, b in readings if n >= 2000]
    with hprof_reader.read(prof_path) as dump:
        names = [dump.strings.get(t.name, "") for t in dump.threads.values()]
        file_problems = list(dump.problems)
    churn = sum(1 for n in names if n.startswith("churn-"))
    ctx.note("%d status readings, %d from 2,000 threads on: interning %s; %d churn threads named in the file"
             % (len(readings), len(after), "%d -> %d bytes (threads %d -> %d)" % (
                 after[0][1], after[-1][1], after[0][0], after[-1][0]) if len(after) >= 2 else "-", churn))
    problems = []
    if len(after) < 2 or after[-1][0] - after[0][0] < 6000:
        problems.append("too few status readings while the threads churned (test invalid): %s" % readings[-5:])
    elif after[-1][1] - after[0][1] > 128 * 1024:
        problems.append("the string table grew by %d bytes over %d threads: thread names are kept"
                        % (after[-1][1] - after[0][1], after[-1][0] - after[0][0]))
    if file_problems:
        problems.append("the binary file does not hold together: %s" % "; ".join(file_problems[:3]))
    if churn != 12000:
        problems.append("%d churn threads named in the binary file, not 12000" % churn)
    if problems:
        raise Fail("; ".join(problems))


# ---------------------------------------------------------------- SIGQUIT

def t_binary_second_file(ctx):
    """format=b: a SIGQUIT dump into file=, then `hprof dump file=` into a
    second file mid-run. Each file must stand alone (every trace, frame and
    name it uses defined in it) and name the threads (START THREAD; END
    THREAD for those that ended), as checked by tests/hprof_reader.py."""
    import hprof_reader
    first, second = ctx.path("first.hprof"), ctx.path("second.hprof")
    p, so, se, cmd = spawn(ctx, "CpuSplit", ["5000"], "cpu=samples,format=b,file=" + first, "split")
    try:
        time.sleep(2.0)
        os.kill(p.pid, signal.SIGQUIT)
        time.sleep(0.5)
        r = subprocess.run([os.path.join(BUILD, "hprof"), "dump", str(p.pid), "file=" + second],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise Fail("hprof dump file=: rc %d: %s" % (r.returncode, r.stderr[-300:]))
    finally:
        reap(ctx, p, so, se, cmd)
    names = {}
    for path in (first, second):
        d = hprof_reader.read(path)
        if d.problems:
            raise Fail("%s does not stand alone: %s" % (os.path.basename(path), "; ".join(d.problems[:3])))
        names[path] = {d.strings.get(t.name): t.ended for t in d.threads.values()}
        if "cpu-worker" not in names[path]:
            raise Fail("%s names no thread cpu-worker (START THREAD): %s" % (os.path.basename(path),
                                                                             sorted(names[path])[:10]))
    if names[first].get("main") is not True:
        raise Fail("the exit dump does not say that main ended (END THREAD): %r" % names[first].get("main"))
    ctx.note("both files complete; threads %d (file=) and %d (dump file=)" % (len(names[first]), len(names[second])))


def t_sigquit(ctx):
    prof_path = ctx.path("longrun.hprof.txt")
    cmd = ctx.java_cmd("LongRun", ["6000"], agent="cpu=samples,file=" + prof_path)
    so, se, sc = ctx._files("longrun")
    with open(sc, "w") as f:
        f.write(" ".join(cmd) + "\n")
    mid = None
    with open(so, "wb") as fo, open(se, "wb") as fe:
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, cwd=ctx.out, env=clean_env())
        try:
            time.sleep(2.5)
            if p.poll() is not None:
                raise Fail("LongRun exited early (rc %s): %s"
                           % (p.returncode, diag(Run(p.returncode, read(so), read(se), p.pid, cmd))))
            os.kill(p.pid, signal.SIGQUIT)
            deadline = time.time() + 3.0
            while time.time() < deadline:
                alive = p.poll() is None
                text = read(prof_path) if os.path.isfile(prof_path) else ""
                if re.search(r"^CPU SAMPLES BEGIN .*\n(?:.*\n)*?CPU SAMPLES END$", text, re.M):
                    if alive:
                        mid = text
                    break
                if not alive:
                    break
                time.sleep(0.05)
            rc = p.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise Fail("LongRun did not exit within %ds" % TIMEOUT)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    r = Run(rc, read(so), read(se), p.pid, cmd)
    ctx.check_crash(r)
    if rc != 0:
        raise Fail("exit code %d after SIGQUIT; stderr: %s" % (rc, tail(r.stderr)))
    with open(ctx.path("midrun-snapshot.txt"), "w") as f:
        f.write(mid or "")
    prof = parse_profile(prof_path)
    totals = [s.total for s in prof.sections]
    ctx.note("sigquit: %d CPU SAMPLES sections, totals %s; section present mid-run: %s"
             % (len(totals), totals, "yes" if mid else "NO"))
    problems = []
    if mid is None:
        problems.append("no complete CPU SAMPLES section in the file within 3 s of SIGQUIT while the JVM ran")
    if len(totals) < 2:
        problems.append("%d CPU SAMPLES sections (expected >= 2)" % len(totals))
    else:
        if totals[0] <= 0:
            problems.append("first dump has total %d" % totals[0])
        if totals[-1] < totals[0]:
            problems.append("last total %d < first total %d (counts not cumulative)" % (totals[-1], totals[0]))
    if problems:
        raise Fail("; ".join(problems))


# ---------------------------------------------------------------- interval

def t_interval_1(ctx):
    """interval=1: about one sample per ms of CPU of a CPU-bound thread."""
    prof_path = ctx.path("longrun.hprof.txt")
    r = ctx.run("LongRun", ["2000"], agent="cpu=samples,interval=1,file=" + prof_path)
    m = re.search(r"LongRun: done cpu_ns=(\d+)", r.stderr)
    if not m:
        raise Fail("LongRun printed no cpu_ns; stderr: %s" % tail(r.stderr))
    cpu_ns = int(m.group(1))
    prof = parse_profile(prof_path)
    sec = final_section(prof)
    main = prof.samples(sec, lambda t: any(f.cls == "LongRun" for f in t.frames))
    expected = cpu_ns / 1e6
    ctx.note("interval=1: %d samples on LongRun for %.2f s of CPU (expected ~%.0f: %.0f%%), total %d"
             % (main, cpu_ns / 1e9, expected, 100.0 * main / expected, sec.total))
    if not 0.5 <= main / expected <= 1.3:
        raise Fail("%d samples on the main thread, not within 50%%-130%% of CPU/interval = %.0f"
                   % (main, expected))


# ---------------------------------------------------------------- monitor=y

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


def t_monitor_contention(ctx):
    prof_path = ctx.path("contention.hprof.txt")
    r = ctx.run("Contention", ["1500", "1500"], agent="monitor=y,file=" + prof_path)
    truth = contention_truth(r.stderr)
    prof = parse_profile(prof_path)
    problems = []
    check_contention(ctx, prof, truth, problems)
    if "deadlock" in r.stderr:
        problems.append("stderr mentions a deadlock: %s" % tail(r.stderr))
    if problems:
        raise Fail("; ".join(problems))


def marked_line(java_file, marker):
    """The line of tests/java/<java_file> that carries `// <marker>`."""
    with open(os.path.join(TESTS_DIR, "java", java_file)) as f:
        lines = [i + 1 for i, text in enumerate(f) if text.rstrip().endswith("// " + marker)]
    if len(lines) != 1:
        raise Fail("%s has %d lines marked %s" % (java_file, len(lines), marker))
    return lines[0]


def t_monitor_enter_line(ctx):
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
    if "EnterLine: holding" not in r.stderr or "EnterLine: done" not in r.stderr:
        raise Fail("EnterLine did not get its threads blocked; %s" % diag(r))
    prof = parse_profile(prof_path)
    mt = prof.final_monitor_time
    problems = []

    def tops(cls, p=prof, sec=mt):
        return [(p.traces[row.trace].top, row.count) for row in sec.rows if row.monitor == cls]

    want = {"EnterLine$Gate": ("EnterLine.blockOnStatement", stmt, 2), "java.lang.Class": ("EnterLine.lambda$main$1", call, 1)}
    for cls, (method, line, count) in want.items():
        got = tops(cls)
        ctx.note("%s: %s" % (cls, [("%s:%s" % (t.qualname, t.line) if t else None, n) for t, n in got]))
        if sum(n for _, n in got) != count:
            problems.append("%d contended enters of %s (expected %d)" % (sum(n for _, n in got), cls, count))
        for t, _n in got:
            if t is None or t.qualname != method or str(t.line) != str(line):
                problems.append("%s entered at %s, not %s line %d" % (cls, "%s:%s" % (t.qualname, t.line) if t else None,
                                                                     method, line))
    prof_path = ctx.path("contention.hprof.txt")
    ctx.run("Contention", ["600", "100"], agent="monitor=y,file=" + prof_path)
    cprof = parse_profile(prof_path)
    got = tops(HOT_LOCK, cprof, cprof.final_monitor_time)
    ctx.note("%s: %s" % (HOT_LOCK, [("%s:%s" % (t.qualname, t.line) if t else None, n) for t, n in got]))
    wrong = [("%s:%s" % (t.qualname, t.line) if t else None, n) for t, n in got
             if t is None or (t.qualname, str(t.line)) != ("Contention$Hot.run", str(hot))]
    if not got or wrong:
        problems.append("HotLock entered at %s, not Contention$Hot.run line %d" % (wrong or "no row", hot))
    if problems:
        raise Fail("; ".join(problems))


def t_monitor_threads(ctx):
    """thread=y: the HotLock rows belong to the hot-* threads, each with about
    its own blocked time; parks to rl-*, noise to noise-*."""
    prof_path = ctx.path("contention.hprof.txt")
    r = ctx.run("Contention", ["1500", "1500"], agent="monitor=y,thread=y,file=" + prof_path)
    truth = contention_truth(r.stderr)
    prof = parse_profile(prof_path)
    problems = []
    mt = check_contention(ctx, prof, truth, problems)
    mw = prof.final_monitor_wait
    groups = {HOT_LOCK: "hot-", NOISE_LOCK: "noise-", NONFAIR: "rl-"}
    by_thread = {}
    for sec in (mt, mw):
        for row in sec.rows:
            th = prof.traces[row.trace].thread
            if th is None:
                problems.append("thread=y but trace %d (%s row) has no thread" % (row.trace, row.monitor))
                continue
            name = prof.thread_name(th) or "?"
            if row.monitor in groups and not name.startswith(groups[row.monitor]):
                problems.append("%s row %d is on thread %s, not a %s* thread" % (row.monitor, row.rank, name,
                                                                                 groups[row.monitor]))
            if sec is mt:
                key = (row.monitor, name)
                ms, n = by_thread.get(key, (0.0, 0))
                by_thread[key] = (ms + mt.ms(row), n + row.count)
    per = []
    for name, blocked in sorted(truth["hot_threads"].items()):
        ours = by_thread.get((HOT_LOCK, name), (0.0, 0))[0]
        per.append("%s %.0f/%d" % (name, ours, blocked))
        if blocked >= 100 and not within(ours, blocked):
            problems.append("%s: HotLock %.0f ms not within 20%% of its JVM blocked time %d ms" % (name, ours, blocked))
        if blocked >= 20 and (HOT_LOCK, name) not in by_thread:
            problems.append("%s was blocked %d ms but has no HotLock row" % (name, blocked))
    for name, lock_ms in sorted(truth["rl_threads"].items()):
        ours = by_thread.get((NONFAIR, name), (0.0, 0))[0]
        per.append("%s %.0f/%.0f" % (name, ours, lock_ms))
        if lock_ms >= 100 and not within(ours, lock_ms):
            problems.append("%s: ReentrantLock %.0f ms not within 20%% of its lock() time %.0f ms"
                            % (name, ours, lock_ms))
    ctx.note("per thread, ours/program ms: %s" % ", ".join(per))
    if problems:
        raise Fail("; ".join(problems))


def t_monitor_cpu(ctx):
    """cpu=samples and monitor=y in one run: a CPU SAMPLES section then the
    monitor sections, both right."""
    prof_path = ctx.path("contention.hprof.txt")
    r = ctx.run("Contention", ["1000", "1000"], agent="cpu=samples,monitor=y,file=" + prof_path)
    truth = contention_truth(r.stderr)
    prof = parse_profile(prof_path)
    problems = []
    sec = final_section(prof)
    check_contention(ctx, prof, truth, problems)
    order = [k for k, _ in prof.section_order]
    want = ["cpu", "monitor_time", "monitor_wait", "monitor_dump", "deadlocks"]
    if ctx.jdk_name != "jdk17":                 # JDKs with virtual threads: MONITOR PINNED TIME
        want.insert(3, "monitor_pinned")
    spin = prof.samples(sec, lambda t: t.has_method("Contention.spin"))
    ctx.note("sections: %s; CPU samples %d, %d in Contention.spin" % (" ".join(order), sec.total, spin))
    if order != want:
        problems.append("sections %s, expected one dump: %s" % (order, want))
    if spin < 0.5 * sec.total:
        problems.append("only %d of %d samples in Contention.spin (the threads spin most of the time)"
                        % (spin, sec.total))
    if problems:
        raise Fail("; ".join(problems))


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


def t_deadlocks(ctx):
    prof_path = ctx.path("deadlocks.hprof.txt")
    r = ctx.run("Deadlocks", ["1000"], agent="monitor=y,file=" + prof_path)
    jvm_dl = deadlocks_ready(r.stdout)
    if jvm_dl is None:
        raise Fail("Deadlocks did not get its threads in place; %s" % diag(r))
    prof = parse_profile(prof_path)
    mt, mw, dump, dl = final_monitor(prof)
    problems = []
    check_deadlocks(prof, dl, problems)
    ours = {m.name for m in dl.members}
    ctx.note("DEADLOCKS: %s; JVM's findDeadlockedThreads: %s" % (cycles_by_name(prof, dl), sorted(jvm_dl)))
    if ours != jvm_dl:
        problems.append("deadlocked threads %s != the JVM's findDeadlockedThreads %s" % (sorted(ours), sorted(jvm_dl)))
    check_monitor_dump(prof, dump, problems)
    want = "hprof: 2 deadlocks found: see DEADLOCKS in %s" % prof_path
    if want not in r.stderr:
        problems.append("stderr lacks %r: %s" % (want, tail(r.stderr)))
    if problems:
        raise Fail("; ".join(problems))


def t_monitor_dump_waiters(ctx):
    """A thread in Object.wait() is waiting to be notified on its monitor,
    not waiting to enter it (MONITOR DUMP of Deadlocks' obj-waiter)."""
    prof_path = ctx.path("deadlocks.hprof.txt")
    r = ctx.run("Deadlocks", ["500"], agent="monitor=y,file=" + prof_path)
    if deadlocks_ready(r.stdout) is None:
        raise Fail("Deadlocks did not get its threads in place; %s" % diag(r))
    prof = parse_profile(prof_path)
    dump = final_monitor(prof)[2]
    waiter = one_serial(prof, "obj-waiter")
    problems = []
    ms = dump.monitors_of("Deadlocks$WaitLock")
    entering = [m.java_name for m in dump.monitors if waiter in m.waiting_to_enter]
    ctx.note("WaitLock monitors: %s; obj-waiter (%d) waiting to enter: %s"
             % ([(m.owner, m.waiting_to_enter, m.waiting_to_be_notified) for m in ms], waiter, entering))
    if len(ms) != 1:
        problems.append("MONITOR DUMP lists %d Deadlocks$WaitLock monitors (expected 1: obj-waiter is in "
                        "WaitLock.wait())" % len(ms))
    elif ms[0].owner is not None or ms[0].waiting_to_be_notified != [waiter]:
        problems.append("WaitLock: owner %s, waiting to be notified %s (expected unowned, [%d])"
                        % (ms[0].owner, ms[0].waiting_to_be_notified, waiter))
    if entering:
        problems.append("obj-waiter, in Object.wait(), is listed as waiting to enter %s" % entering)
    if problems:
        raise Fail("; ".join(problems))


def t_monitor_dump_names(ctx):
    """MONITOR DUMP names lock classes in Java form (Deadlocks$MonA, as HPROF
    wrote an owned monitor's class, not LDeadlocks$MonA;) and each thread by
    its name after its serial (THREAD 200011 "dl-mon-a", owner: thread N
    "name", waiting to enter: thread N "name"), the names those of the
    threads' THREAD START records (Deadlocks, while its threads are blocked)."""
    prof_path = ctx.path("deadlocks.hprof.txt")
    r = ctx.run("Deadlocks", ["500"], agent="monitor=y,file=" + prof_path)
    if deadlocks_ready(r.stdout) is None:
        raise Fail("Deadlocks did not get its threads in place; %s" % diag(r))
    prof = parse_profile(prof_path)      # checks each name against THREAD START
    dump = final_monitor(prof)[2]
    problems = []
    sigs = [m.signature for m in dump.monitors if not m.named]
    if sigs:
        problems.append("MONITOR lines with JVM signatures, not Java names: %s" % sigs[:5])
    if not dump.named:
        problems.append("MONITOR DUMP gives threads by serial only, without their names")
    check_monitor_dump(prof, dump, problems, name_of=dump.names.get)
    for name in DEADLOCK_STATUS:
        s = one_serial(prof, name)
        if dump.names.get(s) != name:
            problems.append("THREAD %d (%s) is named %r in MONITOR DUMP" % (s, name, dump.names.get(s)))
    if problems:
        raise Fail("; ".join(problems))


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


def agent_load(ctx, pid, options, expect_ok=True, library=AGENT):
    """JVMTI.agent_load through the JDK's jcmd. Its parser splits
    name=value arguments, so the options are quoted inside the string."""
    exe = os.path.join(ctx.jdk, "bin", "jcmd")
    if not os.path.isfile(exe):
        raise Skip("no jcmd in %s" % ctx.jdk)
    arg = '"%s"' % options if "=" in options else options
    t0 = time.time()
    r = subprocess.run([exe, str(pid), "JVMTI.agent_load", library, arg], capture_output=True,
                       text=True, timeout=300)
    ctx.note("jcmd %s: %.2f s, %s" % (options, time.time() - t0, r.stdout.strip().splitlines()[-1:]))
    ok = r.returncode == 0 and "return code: 0" in r.stdout
    if expect_ok is not None and ok != expect_ok:
        raise Fail("jcmd JVMTI.agent_load %s: %s (rc %d): %s %s"
                   % (options, "failed" if expect_ok else "succeeded", r.returncode, r.stdout, r.stderr))
    return r


def spawn(ctx, main, args, agent, tag, env=None, jvm=(), preexec=None):
    cmd = ctx.java_cmd(main, args, agent=agent, jvm=jvm)
    so, se, sc = ctx._files(tag)
    with open(sc, "w") as f:
        f.write(" ".join(cmd) + "\n")
    fo, fe = open(so, "wb"), open(se, "wb")
    p = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, cwd=ctx.out, env=clean_env(env),
                         preexec_fn=preexec)
    fo.close()
    fe.close()
    return p, so, se, cmd


def reap(ctx, p, so, se, cmd, want_rc=0):
    """Waits for a spawned JVM (killing it on timeout); crash and exit-code
    checks (want_rc: the exit code expected, None: any but a crash)."""
    try:
        rc = p.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise Fail("%s did not exit within %ds" % (cmd[-1], TIMEOUT))
    r = Run(rc, read(so), read(se), p.pid, cmd)
    ctx.check_crash(r, want_rc)
    if want_rc is not None and rc != want_rc:
        raise Fail("exit code %d%s; %s" % (rc, " (expected %d)" % want_rc if want_rc else "", diag(r)))
    return r


RE_DL_SECTION = re.compile(r"^DEADLOCKS BEGIN \(cycles = (\d+)\) .*\n(?:.*\n)*?DEADLOCKS END$", re.M)


def wait_ready(p, so, se, cmd, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if deadlocks_ready(read(so)) is not None:
            return
        if p.poll() is not None:
            raise Fail("Deadlocks exited (rc %s) before READY: %s"
                       % (p.returncode, diag(Run(p.returncode, read(so), read(se), p.pid, cmd))))
        time.sleep(0.05)
    raise Fail("Deadlocks not READY within %d s" % seconds)


def t_deadlocks_jcmd(ctx):
    """The JDK's own deadlock detection (jcmd Thread.print) and our DEADLOCKS
    from a SIGQUIT dump of the same process report the same cycles."""
    jcmd = os.path.join(ctx.jdk, "bin", "jcmd")
    if not os.path.isfile(jcmd):
        raise Skip("no jcmd in %s: comparison with the JDK's deadlock detection not done" % ctx.jdk)
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
        if jc.returncode != 0:
            raise Fail("jcmd %d Thread.print failed (rc %d): %s" % (p.pid, jc.returncode, tail(jtext)))
        before = len(RE_DL_SECTION.findall(read(prof_path))) if os.path.isfile(prof_path) else 0
        os.kill(p.pid, signal.SIGQUIT)
        deadline = time.time() + 5.0
        while time.time() < deadline and p.poll() is None:
            text = read(prof_path) if os.path.isfile(prof_path) else ""
            if len(RE_DL_SECTION.findall(text)) > before:
                mid = text
                break
            time.sleep(0.05)
        if mid is None:
            raise Fail("no DEADLOCKS section written within 5 s of SIGQUIT while the JVM ran")
    except BaseException:
        if p.poll() is None:
            p.kill()
            p.wait()
        raise
    r = reap(ctx, p, so, se, cmd)
    prof = parse_profile(prof_path)
    if len(prof.deadlocks) < 2:
        raise Fail("%d DEADLOCKS sections (expected the SIGQUIT dump and the exit dump)" % len(prof.deadlocks))
    sq = prof.deadlocks[before]
    theirs = jcmd_deadlocks(jtext)
    ours = cycles_by_name(prof, sq)
    found = re.search(r"^Found (\d+) deadlocks?\.$", jtext, re.M)
    ctx.note("jcmd Thread.print: %s cycles %s; ours (SIGQUIT dump): %s"
             % (found.group(1) if found else "?", theirs, ours))
    problems = []
    check_deadlocks(prof, sq, problems, "DEADLOCKS of the SIGQUIT dump")
    if len(theirs) != 2 or not found or found.group(1) != "2":
        problems.append("jcmd reports %s deadlocks, %d parsed blocks (test program or parser problem; see %s)"
                        % (found.group(1) if found else "no 'Found N deadlocks'", len(theirs), jout))
    key = lambda cyc: sorted(cyc.items())  # noqa: E731
    if sorted(map(key, ours)) != sorted(map(key, theirs)):
        problems.append("our cycles %s != jcmd's %s" % (ours, theirs))
    if "2 deadlocks found" not in r.stderr:
        problems.append("stderr lacks 'hprof: 2 deadlocks found'")
    if problems:
        raise Fail("; ".join(problems))


def t_deadlock_periodic(ctx):
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
            if time.time() - t0 > 60:
                raise Fail("Deadlocks still running after 60 s")
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
        if p.poll() is None:
            p.kill()
            p.wait()
        raise
    r = reap(ctx, p, so, se, cmd)
    with open(ctx.path("midrun-snapshot.txt"), "w") as f:
        f.write(seen_text or "")
    prof = parse_profile(prof_path)
    counts = [len(s.cycles) for s in prof.deadlocks]
    fmt = lambda t: "%.2f s" % t if t is not None else "never"  # noqa: E731
    ctx.note("READY at %s, DEADLOCKS (cycles = 2) in the file at %s, stderr message at %s, exit at ~%.2f s; "
             "DEADLOCKS sections' cycles: %s" % (fmt(ready_at), fmt(seen_at), fmt(msg_at), alive_until, counts))
    problems = []
    if ready_at is None:
        problems.append("Deadlocks never printed READY")
    if seen_at is None:
        problems.append("no DEADLOCKS section with 2 cycles in the file while the JVM ran")
    elif ready_at is not None and seen_at - ready_at > 1.5:
        problems.append("deadlocks dumped %.2f s after they were in place (deadlock=200)" % (seen_at - ready_at))
    if msg_at is None:
        problems.append("stderr had no 'hprof: 2 deadlocks found' before exit")
    if len(counts) < 2:
        problems.append("%d DEADLOCKS sections (expected the deadlock dump(s) and the exit dump)" % len(counts))
    else:
        # Dumped when more cycles are found than last reported: once (or twice
        # if the two cycles are seen by different checks), never with none.
        periodic = counts[:-1]
        if len(periodic) > 2 or min(periodic) < 1 or periodic[-1] != 2:
            problems.append("dumps before exit had cycles %s (expected [2] or [1, 2])" % periodic)
    if prof.deadlocks:
        check_deadlocks(prof, prof.deadlocks[-1], problems, "exit DEADLOCKS")
    if problems:
        raise Fail("; ".join(problems))


def t_deadlock_no_false_positive(ctx):
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
    problems = []
    if reported:
        problems.append("%d DEADLOCKS sections report cycles in a program without deadlock, e.g. at line %d: %s"
                        % (len(reported), reported[0][0], reported[0][1]))
    if len(prof.deadlocks) != 1:
        problems.append("%d dumps (expected only the exit dump: deadlock=20 dumped without a deadlock)"
                        % len(prof.deadlocks))
    msgs = [l for l in r.stderr.splitlines() if "deadlock" in l.lower()]
    if msgs:
        problems.append("stderr: %s" % " | ".join(msgs[:3]))
    if problems:
        raise Fail("; ".join(problems))


def waits_truth(stderr):
    t = {}
    for kind, name, ns, calls in re.findall(r"^WAIT kind=(\S+) thread=(\S+) ns=(\d+) calls=(\d+)$", stderr, re.M):
        t[kind] = (name, int(ns) / 1e6, int(calls))
    if "Waits: done" not in stderr or len(t) != 6:
        raise Fail("Waits printed no complete truth; stderr: %s" % tail(stderr))
    return t


# Waits.java: kind -> (section, lock class) where its blocking must show.
WAIT_KINDS = {
    "object": ("wait", "Waits$WaitObj"),
    "cond": ("wait", "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject"),
    "nanos": ("wait", "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject"),
    "future": ("wait", "java.util.concurrent.FutureTask"),
    "latch": ("time", "java.util.concurrent.CountDownLatch$Sync"),
}


def t_monitor_waits(ctx):
    """MONITOR WAIT TIME: Object.wait, Condition.await, Condition.awaitNanos
    and FutureTask.get each timed on their own thread; a CountDownLatch
    (ownable synchronizer) as contention; Thread.sleep nowhere."""
    prof_path = ctx.path("waits.hprof.txt")
    r = ctx.run("Waits", ["300", "3"], agent="monitor=y,thread=y,file=" + prof_path)
    truth = waits_truth(r.stderr)
    prof = parse_profile(prof_path)
    mt, mw, dump, dl = final_monitor(prof)
    problems = []
    notes = []
    for kind, (name, ms, calls) in sorted(truth.items()):
        serial = one_serial(prof, name)
        rows = {"time": [(rw, mt) for rw in mt.rows if prof.traces[rw.trace].thread == serial],
                "wait": [(rw, mw) for rw in mw.rows if prof.traces[rw.trace].thread == serial]}
        if kind == "sleep":
            if rows["time"] or rows["wait"]:
                problems.append("Thread.sleep thread has monitor rows: %s" % [rw.monitor for rw, _ in
                                                                             rows["time"] + rows["wait"]])
            notes.append("sleep %.0f ms: %d rows" % (ms, len(rows["time"]) + len(rows["wait"])))
            continue
        where, cls = WAIT_KINDS[kind]
        other = "time" if where == "wait" else "wait"
        ours = sum(sec.ms(rw) for rw, sec in rows[where] if rw.monitor == cls)
        n = sum(rw.count for rw, sec in rows[where] if rw.monitor == cls)
        notes.append("%s %s: ours %.0f ms/%d, program %.0f ms/%d calls" % (kind, cls.split(".")[-1], ours, n, ms, calls))
        if not within(ours, ms):
            problems.append("%s (%s): %.0f ms in MONITOR %s on %s, program measured %.0f ms"
                            % (name, kind, ours, "WAIT TIME" if where == "wait" else "TIME", cls, ms))
        if n < calls:
            problems.append("%s: %d episodes for %d blocking calls" % (name, n, calls))
        wrong = [rw.monitor for rw, _ in rows[other] if rw.monitor == cls]
        if wrong:
            problems.append("%s: %s also in MONITOR %s" % (name, cls, "TIME" if other == "time" else "WAIT TIME"))
    ctx.note("; ".join(notes))
    if problems:
        raise Fail("; ".join(problems))


# ---------------------------------------------------------------- options

def expect_startup_error(ctx, opts, words, extra_check=None):
    r = ctx.run("Busy", ["200"], agent=opts, expect_rc="nonzero")
    problems = []
    if "hprof:" not in r.stderr:
        problems.append("stderr lacks 'hprof:'")
    for w in words:
        if w.lower() not in r.stderr.lower():
            problems.append("stderr does not mention %r" % w)
    if "Busy: done" in r.stdout:
        problems.append("the program ran (JVM did not stop at start-up)")
    if extra_check:
        extra_check(r, problems)
    ctx.note("rc %d, %s" % (r.rc, diag(r, 4)))
    if problems:
        raise Fail("; ".join(problems))


BAD_OPTIONS = [
    # (option string, words stderr must contain: the option's name and, where
    # the accepted values can be told apart from the name, a word of them)
    ("foo=bar", ["foo", "interval", "depth"]),   # unknown: the valid option names
    ("interval=abc", ["interval"]),
    ("interval=0", ["interval"]),
    ("depth=-1", ["depth", "256"]),
    ("depth=257", ["depth", "256"]),
    ("cpu=bogus", ["cpu", "samples"]),
    ("thread=maybe", ["thread"]),
    ("cutoff=2", ["cutoff"]),
    ("sampler=fast", ["sampler", "perf", "timer"]),
    ("file=", ["file"]),
    ("monitor=maybe", ["monitor"]),
    ("deadlock=100", ["deadlock", "monitor=y"]),      # deadlock= needs monitor=y
]

NOT_IMPLEMENTED = []   # options parsed but refused as not built (cpu=old is built now)


def make_bad_option_test(opt, words):
    def t(ctx):
        expect_startup_error(ctx, "cpu=samples," + opt if not opt.startswith("cpu=") else opt, words)
    return t


def make_not_implemented_test(opt):
    # With cpu=samples given too, so the message must be about `opt` itself
    # (not about HPROF's heap=all default).
    def t(ctx):
        expect_startup_error(ctx, opt if opt.startswith("cpu=") else "cpu=samples," + opt, [opt, "implemented"])
    return t


HELP_OPTIONS = ["cpu", "interval", "depth", "thread", "lineno", "cutoff", "file", "force", "doe",
                "verbose", "collapsed", "help", "heap", "monitor", "format", "net"]


def t_help(ctx):
    r = ctx.run("Busy", ["100"], agent="help", expect_rc=0)
    missing = [o for o in HELP_OPTIONS if not re.search(r"(?<![\w-])%s(?![\w-])" % o, r.stdout)]
    if missing:
        raise Fail("help output on stdout lacks option names: %s" % ", ".join(missing))


def t_file_unwritable(ctx):
    expect_startup_error(ctx, "cpu=samples,file=/proc/hprof-no/x.txt", ["file"])


def t_force_n(ctx):
    path = ctx.path("keep.txt")
    old = "OLD CONTENT, must survive force=n\n"
    with open(path, "w") as f:
        f.write(old)
    r = ctx.run("Busy", ["500"], agent="cpu=samples,force=n,file=" + path)
    if read(path) != old:
        raise Fail("force=n overwrote the existing file")
    m = re.search(r"^PID (\d+)$", r.stderr, re.M)
    pids = {str(r.pid)} | ({m.group(1)} if m else set())
    new = [f for f in os.listdir(ctx.out)
           if f != "keep.txt" and any(pid in f for pid in pids) and not f.startswith("run")
           and not f.startswith("hs_err")]
    ctx.note("force=n: pid %s, new files: %s" % ("/".join(sorted(pids)), new))
    if not new:
        raise Fail("no new file with the pid (%s) in its name in %s: %s"
                   % ("/".join(sorted(pids)), ctx.out, sorted(os.listdir(ctx.out))))
    for f in new:
        final_section(parse_profile(ctx.path(f)), f)


def t_agentlib(ctx):
    r = ctx.run("Busy", ["500"], agentlib="cpu=samples", env={"LD_LIBRARY_PATH": BUILD})
    prof = parse_profile(ctx.path("java.hprof.txt"))
    sec = final_section(prof)
    if sec.total <= 0:
        raise Fail("no samples")
    if "Busy: done" not in r.stdout:
        raise Fail("program did not run to the end")


def busy_traces(prof):
    return [t for t in prof.traces.values() if any(f.cls == "Busy" for f in t.frames)]


def t_basic(ctx):
    """Default options (only cpu=samples): java.hprof.txt in the working
    directory, depth 4, line numbers, source file names."""
    ctx.run("Busy", ["800"], agent="cpu=samples")
    prof = parse_profile(ctx.path("java.hprof.txt"))
    sec = final_section(prof)
    problems = []
    spin = prof.samples(sec, lambda t: t.top is not None and t.top.qualname == "Busy.spin")
    ctx.note("basic: total %d, top-frame Busy.spin %d, %d traces" % (sec.total, spin, len(prof.traces)))
    if spin <= 0:
        problems.append("no sample with top frame Busy.spin")
    lens = [len(t.frames) for t in prof.traces.values()]
    if max(lens) > 4:
        problems.append("a trace has %d frames (default depth is 4)" % max(lens))
    if 4 not in lens:
        problems.append("no trace reaches the default depth 4")
    frames = [f for t in busy_traces(prof) for f in t.frames if f.cls == "Busy"]
    if not any(f.source == "Busy.java" and f.line.isdigit() for f in frames):
        problems.append("no Busy frame with source Busy.java and a line number")
    if not prof.threads_named("main"):
        problems.append("no THREAD START for main")
    if problems:
        raise Fail("; ".join(problems))


def t_collapsed(ctx):
    prof_path = ctx.path("busy.hprof.txt")
    col = ctx.path("busy.collapsed")
    ctx.run("Busy", ["800"], agent="cpu=samples,depth=16,file=%s,collapsed=%s" % (prof_path, col))
    sec = final_section(parse_profile(prof_path))
    if not os.path.isfile(col):
        raise Fail("collapsed file not written")
    try:
        stacks = H.parse_collapsed_file(col)
    except H.ParseError as e:
        raise Fail(str(e))
    total = sum(c for _, c in stacks)
    ctx.note("collapsed: %d lines, counts sum %d, samples total %d" % (len(stacks), total, sec.total))
    problems = []
    if total != sec.total:
        problems.append("collapsed counts sum to %d, samples total is %d" % (total, sec.total))
    # Java frames are pkg.Class.method (no signature); native functions
    # (native=y) are C or C++ names, which have no dot.
    bad = [f for fr, _ in stacks for f in fr if "." in f and "(" in f]
    if bad:
        problems.append("frames not in pkg.Class.method form: %s" % bad[:3])
    rootfirst = [fr for fr, _ in stacks if "Busy.main" in fr and "Busy.spin" in fr]
    if not rootfirst:
        problems.append("no stack with both Busy.main and Busy.spin")
    elif any(fr.index("Busy.main") > fr.index("Busy.spin") for fr in rootfirst):
        problems.append("stacks not root first (Busy.spin before Busy.main)")
    if problems:
        raise Fail("; ".join(problems))


def t_lineno_n(ctx):
    prof_path = ctx.path("busy.hprof.txt")
    ctx.run("Busy", ["800"], agent="cpu=samples,lineno=n,file=" + prof_path)
    prof = parse_profile(prof_path)
    final_section(prof)
    frames = [f for t in prof.traces.values() for f in t.frames]
    bad = [f for f in frames if f.line not in ("Unknown line", "Native method")]
    native = [f for f in frames if f.line == "Native method"]
    ctx.note("lineno=n: %d frames, %d native" % (len(frames), len(native)))
    if not busy_traces(prof):
        raise Fail("no trace with Busy frames")
    if bad:
        raise Fail("frames with a line number despite lineno=n: %s" % bad[:3])


def t_depth_2(ctx):
    prof_path = ctx.path("busy.hprof.txt")
    ctx.run("Busy", ["800"], agent="cpu=samples,depth=2,file=" + prof_path)
    prof = parse_profile(prof_path)
    final_section(prof)
    lens = [len(t.frames) for t in prof.traces.values()]
    if max(lens) > 2:
        raise Fail("trace with %d frames despite depth=2" % max(lens))
    if 2 not in lens:
        raise Fail("no trace with 2 frames (Busy's stack is 5 deep)")


def t_stdout_clean(ctx):
    plain = ctx.run("Busy", ["300"], tag="noagent")
    prof_path = ctx.path("busy.hprof.txt")
    with_agent = ctx.run("Busy", ["300"], agent="cpu=samples,file=" + prof_path, tag="agent")
    if plain.stdout != "Busy: done\n":
        raise Fail("program's own stdout unexpected: %r" % plain.stdout[:200])
    if with_agent.stdout != plain.stdout:
        raise Fail("stdout differs with the agent: %r" % with_agent.stdout[:300])
    final_section(parse_profile(prof_path))
    # monitor=y re-binds Unsafe.park: HotSpot would warn about that on stdout
    # unless it is done from boot-loader code (see monitor_agent.c).
    mon_path = ctx.path("busy-monitor.hprof.txt")
    with_monitor = ctx.run("Busy", ["300"], agent="cpu=samples,monitor=y,file=" + mon_path, tag="monitor")
    if with_monitor.stdout != plain.stdout:
        raise Fail("stdout differs with monitor=y: %r" % with_monitor.stdout[:300])
    if "parks timed in a wrapper of Unsafe.park" not in with_monitor.stderr:
        raise Fail("monitor=y did not wrap Unsafe.park (fell back to breakpoints?); stderr: %s"
                   % tail(with_monitor.stderr))
    ctx.note("monitor=y: stdout unchanged, %s" % re.search(r"monitor=y: (.*)", with_monitor.stderr).group(1))


def t_cutoff(ctx):
    prof_path = ctx.path("busy.hprof.txt")
    ctx.run("Busy", ["800"], agent="cpu=samples,cutoff=0.2,file=" + prof_path)
    prof = parse_profile(prof_path)
    sec = final_section(prof)
    if not sec.rows:
        raise Fail("no rows at all with cutoff=0.2 (Busy.spin alone has well over 20%)")
    low = [r for r in sec.rows if r.count < 0.2 * sec.total]
    ctx.note("cutoff=0.2: %d rows, %d of %d samples listed" % (len(sec.rows), sec.counted, sec.total))
    if low:
        raise Fail("rows under the 20%% cutoff: %s" % [(r.rank, r.self_pct) for r in low])


def t_doe_n(ctx):
    prof_path = ctx.path("busy.hprof.txt")
    ctx.run("Busy", ["300"], agent="cpu=samples,doe=n,file=" + prof_path)
    if os.path.exists(prof_path):
        prof = parse_profile(prof_path)
        if prof.sections:
            raise Fail("doe=n but the file has %d CPU SAMPLES section(s)" % len(prof.sections))


def asan_runtime():
    try:
        p = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True, timeout=30)
        path = p.stdout.strip()
        return path if os.path.isabs(path) and os.path.exists(path) else None
    except (OSError, subprocess.TimeoutExpired):
        return None


ASAN_AGENT = os.path.join(BUILD, "asan", "libhprof.so")


def asan_env():
    """What a JVM needs to run the ASan-built agent (None without libasan).
    HotSpot uses SIGSEGV for its own purposes (implicit null checks, safepoint
    polls): ASan must leave those signals to it. Leak checking is off because
    the JVM itself never frees much at exit."""
    libasan = asan_runtime()
    if libasan is None:
        return None
    return {"LD_PRELOAD": libasan,
            "ASAN_OPTIONS": "detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:"
                            "handle_sigill=0:allow_user_segv_handler=1:use_sigaltstack=0:abort_on_error=0",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}


def build_asan_agent(ctx):
    log = ctx.path("make-asan.log")
    if sh(["make", "-C", ROOT, "asan"], log) != 0:
        raise Fail("make asan failed, see %s: %s" % (log, tail(read(log), 2)))


def t_asan_agent(ctx):
    """The agent built with ASan+UBSan, inside a real JVM: the split and idle
    threads, then 1000 threads starting and ending while sampling at 1 ms,
    then the monitor features (monitor=y with thread=y and the periodic
    deadlock check) on Deadlocks, then cpu=times (the rewriter on every
    class the JVM loads) on TimesTruth, then heap=all and heap=sites on
    AllocTruth; pprof=, flamegraph= and collapsed= beside them (whole stacks,
    the writers); on JDK 21+ monitor=y on virtual threads beside a debugger
    (their parks timed by the mount events); then net= to a raw listener."""
    # Here, not at the top: heap_sites imports run.
    from heap_sites import sites_sections, text_heap_dump
    env = asan_env()
    if env is None:
        raise Skip("gcc's libasan.so not found")
    build_asan_agent(ctx)
    def samples(main, prof):
        sec = final_section(prof)
        if sec.total <= 0:
            raise Fail("%s: no samples under ASan" % main)
        return "%d samples" % sec.total

    def times_rows(main, prof):
        total, rows = parse_cpu_time(ctx.path("times.hprof.txt"))[-1]
        hot = H.calls_of(rows, "TimesTruth.hot")
        if hot != 1000000:
            raise Fail("%s under ASan: TimesTruth.hot has %d calls" % (main, hot))
        return "%d CPU TIME rows, %d ms" % (len(rows), total)

    def heap_all(main, prof):
        path = ctx.path("heap.hprof.txt")
        rows = sites_sections(path)[-1][1]
        small = [r for r in rows if r.cls == "AllocTruth$Small"]
        if sum(r.alloc_objs for r in small) != 100000 or sum(r.live_objs for r in small) != 25000:
            raise Fail("%s under ASan: Small sites %s" % (main, [(r.alloc_objs, r.live_objs) for r in small]))
        n, _b, records, _refs = text_heap_dump(path)
        dumped = sum(1 for k, a in records.values() if k == "OBJ" and a["class"].startswith("AllocTruth$Small@"))
        if dumped != 25000:
            raise Fail("%s under ASan: %d Small in the heap dump, 25000 alive" % (main, dumped))
        return "Small 100000/25000 in SITES, %d objects in the heap dump" % n

    def heap_sites(main, prof):
        path = ctx.path("sites.hprof.txt")
        rows = sites_sections(path)[-1][1]
        got = {}
        for cls in ("AllocTruth$Small", "AllocTruth$Refl"):
            mine = [r for r in rows if r.cls == cls]
            got[cls] = (sum(r.alloc_objs for r in mine), sum(r.live_objs for r in mine))
        if got != {"AllocTruth$Small": (100000, 25000), "AllocTruth$Refl": (1000, 10)}:
            raise Fail("%s under ASan: exact sites %s" % (main, got))
        return "exact sites: Small 100000/25000, Refl 1000/10"

    def deadlocks(main, prof):
        dl = final_monitor(prof)[3]
        problems = []
        check_deadlocks(prof, dl, problems)
        if len(prof.deadlocks) < 2:
            problems.append("no DEADLOCKS dump from deadlock=100 before the exit dump")
        if problems:
            raise Fail("%s under ASan: %s" % (main, "; ".join(problems)))
        return "%d DEADLOCKS sections, %d cycles in the last" % (len(prof.deadlocks), len(dl.cycles))

    def vthread_parks(main, prof):
        mt = prof.final_monitor_time
        parks = sum(r.count for r in mt.rows if r.monitor == "java.util.concurrent.locks.ReentrantLock$NonfairSync") \
            if mt else 0
        if parks == 0:
            raise Fail("%s under ASan, beside a debugger: no park on the ReentrantLock timed" % main)
        return "%d ReentrantLock parks of virtual threads timed by their unmounts" % parks

    runs = [("CpuSplit", ["2000"], "cpu=samples,interval=1,depth=64,thread=y,collapsed=%s,pprof=%s,flamegraph=%s,file=%s"
             % (ctx.path("split.collapsed"), ctx.path("split.pb.gz"), ctx.path("split.html"),
                ctx.path("split.hprof.txt")), samples),
            ("ThreadChurn", ["1000", "50", "300000"], "cpu=samples,interval=1,file=%s" % ctx.path("churn.hprof.txt"),
             samples),
            # native=y's walks of every thread (GC workers' deep C++ stacks) at 1 ms.
            ("GcChurn", ["2"], "cpu=samples,interval=1,thread=y,collapsed=%s,file=%s"
             % (ctx.path("gc.collapsed"), ctx.path("gc.hprof.txt")), samples),
            # wall=: the ticker, its real-time signal on blocked threads, the states.
            ("WallStates", ["1500", "200"], "wall=5,cpu=samples,thread=y,pprof=%s,file=%s"
             % (ctx.path("wall.pb.gz"), ctx.path("wall.hprof.txt")), samples),
            ("Deadlocks", ["1500"], "monitor=y,thread=y,deadlock=100,pprof=%s,file=%s"
             % (ctx.path("deadlocks.pb.gz"), ctx.path("deadlocks.hprof.txt")), deadlocks),
            # cpu=times: every class rewritten by the ASan-built rewriter as it loads.
            ("TimesTruth", ["exit"], "cpu=times,cutoff=0,file=%s" % ctx.path("times.hprof.txt"), times_rows),
            # heap=all: allocation hooks, the object store, the census, the dump's tags from
            # the store, the heap walk and the text dump.
            ("AllocTruth", [], "heap=all,depth=16,cutoff=0,file=%s" % ctx.path("heap.hprof.txt"), heap_all),
            # heap=sites alone: the stack walk from the native, trace caches, the
            # object store's sweeps, per-thread traces (thread=y).
            ("AllocTruth", [], "heap=sites,thread=y,cutoff=0,pprof=%s,flamegraph=%s,file=%s"
             % (ctx.path("sites.pb.gz"), ctx.path("sites.html"), ctx.path("sites.hprof.txt")), heap_sites)]
    if ctx.jdk_name != "jdk17":
        # monitor=y's handlers of the mount events (breakpoints left to jdwp).
        runs.append(("VirtualContention", ["virtual", "200", "1"], "monitor=y,file=%s" % ctx.path("vc.hprof.txt"),
                     vthread_parks, ["-Djdk.virtualThreadScheduler.parallelism=2", JDWP_SERVER]))
    for run in runs:
        main, args, opts, check = run[:4]
        r = ctx.run(main, args, agent=opts, agent_path=ASAN_AGENT, env=env, jvm=run[4] if len(run) > 4 else (),
                    tag="asan-" + main + ("-sites" if "heap=sites" in opts else ""), timeout=300)
        bad = [l for l in r.stderr.splitlines() if "AddressSanitizer" in l or "runtime error:" in l
               or "LeakSanitizer" in l]
        if bad:
            raise Fail("%s: sanitizer report: %s (see %s)" % (main, bad[0], ctx.out))
        prof = parse_profile(opts.split("file=")[1])
        ctx.note("asan %s: exit 0, no sanitizer report, %s" % (main, check(main, prof)))
    for out in ("split.pb.gz", "split.html", "deadlocks.lock.pb.gz", "deadlocks.wait.pb.gz", "sites.pb.gz",
                "sites.html"):
        if not os.path.isfile(ctx.path(out)) or os.path.getsize(ctx.path(out)) == 0:
            raise Fail("under ASan, %s was not written" % out)
    asan_net_run(ctx, env)


def asan_net_run(ctx, env):
    """net= under ASan: the spool, the send queue and the sender thread, with
    a listener that sends no greeting (raw mode: the bytes of the report)."""
    import socket
    import threading
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(120)
    got = bytearray()

    def receive():
        try:
            conn, _ = server.accept()
            with conn:
                conn.settimeout(120)
                while True:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    got.extend(chunk)
        except OSError:
            pass

    reader = threading.Thread(target=receive, daemon=True)
    reader.start()
    try:
        r = ctx.run("CpuSplit", ["1500"], agent="cpu=samples,interval=1,net=127.0.0.1:%d,file=%s"
                    % (server.getsockname()[1], ctx.path("net-fallback.hprof.txt")),
                    agent_path=ASAN_AGENT, env=env, tag="asan-net", timeout=300)
        reader.join(60)
    finally:
        server.close()
    bad = [l for l in r.stderr.splitlines() if "AddressSanitizer" in l or "runtime error:" in l]
    if bad:
        raise Fail("net=: sanitizer report: %s (see %s)" % (bad[0], ctx.out))
    path = ctx.path("net-received.hprof.txt")
    with open(path, "wb") as f:
        f.write(bytes(got))
    sec = final_section(parse_profile(path), "the report received over net=")
    if sec.total <= 0:
        raise Fail("net= under ASan: no samples in the %d bytes received" % len(got))
    ctx.note("asan net=: exit 0, no sanitizer report, %d bytes received, %d samples" % (len(got), sec.total))


def t_parser_selftest(ctx):
    import parser_selftest
    try:
        parser_selftest.main()
    except AssertionError as e:
        raise Fail(str(e))


def t_docs_check(ctx):
    """scripts/check-docs: README at most 400 lines with its Quick start in the
    first 80, every link and anchor of README.md and docs/*.md resolving
    inside the repository, no timestamps or commit hashes in prose."""
    r = subprocess.run([os.path.join(ROOT, "scripts", "check-docs")], capture_output=True, text=True,
                       timeout=60, cwd=ROOT)
    if r.returncode != 0:
        raise Fail("scripts/check-docs: " + "; ".join((r.stdout + r.stderr).strip().splitlines()[:10]))


JVM_TESTS = [
    ("cpu_split", t_cpu_split),
    ("cpu_split_threads", t_cpu_split_threads),
    ("inlined", t_inlined),
    ("hot_cold", t_hot_cold),
    ("cpu_split_timer", t_cpu_split_timer),
    ("thread_churn", t_thread_churn),
    ("thread_churn_bounded", t_thread_churn_bounded),
    ("thread_churn_binary_bounded", t_thread_churn_binary_bounded),
    ("thread_churn_timer", t_thread_churn_timer),
    ("asan_agent", t_asan_agent),
    ("sigquit", t_sigquit),
    ("binary_second_file", t_binary_second_file),
    ("interval_1", t_interval_1),
    ("monitor_contention", t_monitor_contention),
    ("monitor_threads", t_monitor_threads),
    ("monitor_cpu", t_monitor_cpu),
    ("monitor_waits", t_monitor_waits),
    ("deadlocks", t_deadlocks),
    ("deadlocks_jcmd", t_deadlocks_jcmd),
    ("deadlock_periodic", t_deadlock_periodic),
    ("deadlock_no_false_positive", t_deadlock_no_false_positive),
    ("monitor_dump_waiters", t_monitor_dump_waiters),
    ("monitor_dump_names", t_monitor_dump_names),
    ("monitor_enter_line", t_monitor_enter_line),
    ("basic", t_basic),
    ("stdout_clean", t_stdout_clean),
    ("collapsed", t_collapsed),
    ("lineno_n", t_lineno_n),
    ("depth_2", t_depth_2),
    ("doe_n", t_doe_n),
    ("cutoff", t_cutoff),
    ("force_n", t_force_n),
    ("agentlib", t_agentlib),
    ("help", t_help),
    ("file_unwritable", t_file_unwritable),
] + [("bad_option[%s]" % o, make_bad_option_test(o, w)) for o, w in BAD_OPTIONS] \
  + [("not_implemented[%s]" % o, make_not_implemented_test(o)) for o in NOT_IMPLEMENTED]


# The class-file rewriter, end to end through build/hprof-bci (tests/bci/).
sys.path.insert(0, os.path.join(TESTS_DIR, "bci"))
import bcitests  # noqa: E402
bcitests.init(Fail, Skip, jdks)
JVM_TESTS += bcitests.TESTS

def t_hprof_reader_selftest(ctx):
    """The binary reader's own checks on synthetic files (both id sizes, every
    error class, every truncation point): a reader that can't fail proves nothing."""
    r = subprocess.run([sys.executable, os.path.join(TESTS_DIR, "hprof_reader.py"), "--selftest"],
                       capture_output=True, text=True, timeout=300)
    last = (r.stdout.strip().splitlines() or [""])[-1]
    if r.returncode != 0 or not last.endswith(" 0 failures"):
        raise Fail("hprof_reader.py --selftest: rc %d, %s" % (r.returncode, (r.stdout + r.stderr)[-500:]))
    if ctx is not None:
        ctx.note(last)


NOJDK_TESTS = [("parser_selftest", t_parser_selftest), ("hprof_reader_selftest", t_hprof_reader_selftest),
               ("docs_check", t_docs_check)] \
    + bcitests.NOJDK_TESTS


# ================================================================== helpers of the runs

def sh(cmd, log, timeout=600):
    with open(log, "wb") as f:
        try:
            p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout, cwd=ROOT,
                               stdin=subprocess.DEVNULL)
            return p.returncode
        except subprocess.TimeoutExpired:
            f.write(b"\n*** timeout ***\n")
            return -1


def compile_java(jdk_list):
    javac = None
    for _, home in jdk_list:
        if home and os.path.isfile(os.path.join(home, "bin", "javac")):
            javac = os.path.join(home, "bin", "javac")
            break
    if javac is None:
        return "no javac found"
    if os.path.isdir(CLASSES):
        shutil.rmtree(CLASSES)
    os.makedirs(CLASSES)
    srcs = sorted(glob.glob(os.path.join(TESTS_DIR, "java", "*.java")))
    log = os.path.join(BUILD, "tests", "javac.log")
    rc = sh([javac, "--release", "17", "-d", CLASSES] + srcs, log, timeout=TIMEOUT)
    return None if rc == 0 else "javac failed, see %s: %s" % (log, tail(read(log)))


def pytest_python():
    """An interpreter that has pytest: this one, or Debian's /usr/bin/python3
    (python3-pytest; `make test` installs it where it is missing)."""
    for py in (sys.executable, "/usr/bin/python3"):
        if py and os.path.isfile(py) and subprocess.run(
                [py, "-c", "import pytest"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            return py
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("filters", nargs="*", help="run only tests whose name contains one of these")
    ap.add_argument("--jdk", action="append", choices=["17", "25"], help="only this JDK (repeatable)")
    ap.add_argument("--no-build", action="store_true", help="skip `make` (use the existing build/)")
    ap.add_argument("--list", action="store_true", help="list test names and exit")
    args = ap.parse_args()
    py = pytest_python()
    if py is None:
        print("tests/run.py: no python3 here has pytest; install Debian's python3-pytest "
              "(apt-get install python3-pytest, or scripts/ensure-pytest) and run again", file=sys.stderr)
        return 2
    argv = [py, "-m", "pytest", "-c", os.path.join(ROOT, "pytest.ini"), "--rootdir", ROOT, TESTS_DIR]
    for f in args.filters:
        argv += ["--filter", f]
    for j in args.jdk or ():
        argv += ["--jdk", j]
    if args.no_build:
        argv.append("--no-build")
    if args.list:
        argv += ["--collect-only", "-qq"]
    elif not args.filters:
        argv.append("--ensure-tools")
    sys.stdout.flush()
    os.execv(py, argv)


if __name__ == "__main__":
    sys.exit(main())
