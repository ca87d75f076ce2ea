"""Coexistence (pytest tests, run on each JDK with the ctx fixture of
tests/conftest.py; docs/testing.md "Coexistence"). Each starts a real JVM with
the agent and another user of the same JVM on a test program whose true
profile is known, and checks both still work.

    coexist_jdwp       cpu=samples on CpuSplit beside the debugger agent
                       (-agentlib:jdwp, listening, not suspended): partA's
                       share of samples within 3 points of the program's own
                       CPU split, JDWP listening
    coexist_jfr        cpu=samples on CpuSplit while JFR records
                       (settings=profile): the split right, and the .jfr
                       file complete (`jfr summary` reads it, with
                       jdk.ExecutionSample events)
    coexist_javaagent  cpu=times on TimesTruth beside a -javaagent whose
                       ClassFileTransformer rewrites TimesTruth
                       (tests/java/coexist/RewriteAgent.java, which rebuilds
                       its constant pool): the exact call counts of hot,
                       rec, thrower, and the program prints the rewritten
                       line ("TRUTH javaagent=1 hot=...")
    coexist_sigprof    cpu=samples on CpuSplit in a process where a
                       preloaded library (tests/coexist/sigprof_owner.c)
                       already handles SIGPROF and runs an ITIMER_PROF: the
                       agent says in one line that it leaves SIGPROF alone
                       and uses a real-time signal; the split is right, and
                       the library's handler is still installed and still
                       got its ticks (sampler=timer and sampler=perf)
    coexist_jdwp_monitor  monitor=y on Contention with the agent listed BEFORE
                       -agentlib:jdwp (on the command line, then in
                       _JAVA_OPTIONS): the JVM exits 0, JDWP listens and
                       answers the JDWP handshake, the contention is right
                       (monitor_checks.check_contention), and one note on stderr
                       (and in the report's Limits) says the breakpoints
                       are left to the debugger, which parks go untimed and
                       (JDK 21+) that virtual threads' are timed otherwise
    coexist_sites      heap=sites on AllocTruth with the debugger agent and a
                       JFR recording (settings=profile, which samples
                       allocations too) both on: every site's allocated and
                       live counts exact, the .jfr file complete
"""

import os
import re
import socket
import subprocess
import time

import pytest

import heap_sites
import hprof_text
import run
from jdwp import JDWP_SERVER
from monitor_checks import check_contention, contention_truth
from run import TESTS_DIR, final_section, parse_profile, read, reap, spawn, truth_of


def check_split(ctx, r, path, what, max_diff=0.03):
    a_ns, b_ns, _ = truth_of(r.stderr)
    prof = parse_profile(path)
    sec = final_section(prof)
    a = prof.samples(sec, lambda t: t.has_method("CpuSplit.partA"))
    b = prof.samples(sec, lambda t: t.has_method("CpuSplit.partB"))
    truth = a_ns / float(a_ns + b_ns)
    if a + b < 100:
        pytest.fail("%s: expected at least 100 samples in partA+partB, found %d" % (what, a + b))
    measured = a / float(a + b)
    ctx.note("%s: partA %.1f%% of %d samples, truth %.1f%%" % (what, 100 * measured, a + b, 100 * truth))
    if abs(measured - truth) > max_diff:
        pytest.fail("%s: partA share %.1f%% differs from the truth %.1f%% by more than %d points"
                    % (what, 100 * measured, 100 * truth, round(100 * max_diff)))


def test_coexist_jdwp(ctx):
    path = ctx.path("jdwp.txt")
    r = ctx.run("CpuSplit", ["5000"], agent="cpu=samples,depth=64,file=" + path,
                jvm=[JDWP_SERVER])
    if not re.search(r"Listening for transport dt_socket at address: \d+", r.stdout + r.stderr):
        pytest.fail("expected JDWP to say it listens, found: %s" % (r.stdout + r.stderr)[-400:])
    check_split(ctx, r, path, "with jdwp")


def jdwp_port(p, so, se, seconds=60):
    """The port JDWP says it listens on (stdout), while the JVM runs."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        m = re.search(r"^Listening for transport dt_socket at address: (\d+)$", read(so), re.M)
        if m:
            return int(m.group(1))
        if p.poll() is not None:
            pytest.fail("the JVM exited (rc %s) before JDWP listened: %s"
                        % (p.returncode, (read(so) + read(se))[-600:]))
        time.sleep(0.02)
    pytest.fail("JDWP did not say it listens within %d s: %s" % (seconds, (read(so) + read(se))[-600:]))


def jdwp_handshake(port):
    """A debugger's first step: it sends "JDWP-Handshake", the VM sends it back."""
    hello = b"JDWP-Handshake"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.settimeout(30)
        s.sendall(hello)
        got = b""
        while len(got) < len(hello):
            chunk = s.recv(len(hello) - len(got))
            if not chunk:
                break
            got += chunk
    if got != hello:
        pytest.fail("JDWP handshake on port %d: expected %r back, got %r" % (port, hello, got))


def test_coexist_jdwp_monitor(ctx):
    """Breakpoints are a capability HotSpot gives one agent only, at start-up:
    an agent listed before the debugger must leave them to it."""
    vthreads = ctx.jdk_name != "jdk17"   # JDK 21 and later
    for where, jvm, env in (("on the command line", [JDWP_SERVER], None),
                            ("in _JAVA_OPTIONS", [], {"_JAVA_OPTIONS": JDWP_SERVER})):
        tag = "jdwp-monitor-" + ("cmdline" if env is None else "env")
        path = ctx.path(tag + ".txt")
        p, so, se, cmd = spawn(ctx, "Contention", ["1500", "1500"], "monitor=y,file=" + path, tag,
                               env=env, jvm=jvm)
        try:
            port = jdwp_port(p, so, se)
            jdwp_handshake(port)
        except BaseException:
            p.kill()
            p.wait()
            raise
        r = reap(ctx, p, so, se, cmd)
        problems = []
        note = "monitor=y: a debugger loads in this JVM (-agentlib:jdwp %s) and breakpoints are left to it" \
               % where
        said = [l for l in r.stderr.splitlines() if l.startswith("hprof: note: " + note)]
        if len(said) != 1:
            problems.append("expected one note on stderr starting %r, got %d: %s"
                            % (note, len(said), r.stderr[-800:]))
        elif ("parks of virtual threads are timed from their unmounts" in said[0]) != vthreads or \
                "not timed" not in said[0]:
            problems.append("the note does not say how parks are timed on this JDK: %s" % said[0])
        if note not in read(path):
            problems.append("the report's Limits do not have the note")
        if "breakpoints and byte codes are not offered" in r.stderr:
            problems.append("a second warning about the breakpoints: %s" % r.stderr[-600:])
        check_contention(ctx, parse_profile(path), contention_truth(r.stderr), problems)
        if problems:
            pytest.fail("jdwp %s: %s" % (where, "; ".join(problems)))
        ctx.note("jdwp %s: listened on port %d and answered the handshake" % (where, port))


def test_coexist_jfr(ctx):
    path, jfr = ctx.path("jfr.txt"), ctx.path("rec.jfr")
    r = ctx.run("CpuSplit", ["5000"], agent="cpu=samples,depth=64,file=" + path,
                jvm=["-XX:StartFlightRecording=filename=%s,settings=profile" % jfr])
    check_split(ctx, r, path, "with JFR")
    check_jfr(ctx, jfr, r, "jdk.ExecutionSample")


def check_jfr(ctx, jfr, r, event):
    if not os.path.isfile(jfr):
        pytest.fail("JFR wrote no recording at %s: %s" % (jfr, r.stderr[-400:]))
    s = subprocess.run([os.path.join(ctx.jdk, "bin", "jfr"), "summary", jfr],
                       capture_output=True, text=True, timeout=120)
    m = re.search(r"^\s*%s\s+(\d+)" % re.escape(event), s.stdout, re.M)
    if s.returncode != 0 or not m or int(m.group(1)) == 0:
        pytest.fail("jfr summary: expected exit 0 and some %s events; exit %d, %s events: %s"
                    % (event, s.returncode, m.group(1) if m else "no", (s.stdout + s.stderr)[-400:]))
    ctx.note("JFR: %s %s events" % (m.group(1), event))


def test_coexist_sites(ctx):
    path, jfr = ctx.path("sites.txt"), ctx.path("sites.jfr")
    r = ctx.run("AllocTruth", [], agent="heap=sites,depth=16,cutoff=0,file=" + path,
                jvm=[JDWP_SERVER,
                     "-XX:StartFlightRecording=filename=%s,settings=profile" % jfr])
    want = heap_sites.site_truths(r.stderr)
    _, rows = heap_sites.sites_sections(path)[-1]
    prof = parse_profile(path)
    problems = []
    for cls, frame, alloc, live in want:
        got = heap_sites.site_totals(prof, rows, cls, frame)
        if got[0] != alloc or got[1] != live:
            problems.append("%s at %s: %d allocated, %d live; expected exactly %d and %d"
                            % (cls, frame, got[0], got[1], alloc, live))
    assert not problems, "; ".join(problems)
    ctx.note("every site exact (%d truths) beside jdwp and JFR" % len(want))
    check_jfr(ctx, jfr, r, "jdk.ObjectAllocationSample")


def tool(cmd, what):
    c = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if c.returncode != 0:
        pytest.fail("%s: expected exit 0, got %d: %s" % (what, c.returncode, (c.stdout + c.stderr)[-400:]))


def build_agent_jar(ctx):
    classes = ctx.path("rewrite-agent")
    os.makedirs(classes, exist_ok=True)
    src = os.path.join(TESTS_DIR, "java", "coexist", "RewriteAgent.java")
    tool([os.path.join(ctx.jdk, "bin", "javac"), "--release", "17", "-d", classes, src], "javac RewriteAgent")
    manifest = ctx.path("rewrite-agent.mf")
    with open(manifest, "w") as f:
        f.write("Premain-Class: RewriteAgent\n")
    jar = ctx.path("rewrite-agent.jar")
    tool([os.path.join(ctx.jdk, "bin", "jar"), "cfm", jar, manifest, "-C", classes, "."], "jar RewriteAgent")
    return jar


def test_coexist_javaagent(ctx):
    jar = build_agent_jar(ctx)
    path = ctx.path("javaagent.txt")
    r = ctx.run("TimesTruth", [], agent="cpu=times,cutoff=0,file=" + path,
                jvm=["-javaagent:%s=TimesTruth" % jar])
    problems = []
    if not re.search(r"^RewriteAgent: rewrote [1-9]\d* constants", r.stderr, re.M):
        problems.append("the javaagent did not rewrite TimesTruth: %s" % r.stderr[-400:])
    t = run.truths(r.stderr)
    if t.get("javaagent") != 1:
        problems.append("the program's output does not show the javaagent's rewrite: %s" % r.stderr[-400:])
    total, rows = run.parse_cpu_time(path)[-1]
    for method in ("hot", "rec", "thrower"):
        got = hprof_text.calls_of(rows, "TimesTruth." + method)
        if got != t.get(method):
            problems.append("TimesTruth.%s: %d calls, the program made %s" % (method, got, t.get(method)))
    assert not problems, "; ".join(problems)
    ctx.note("hot %d, rec %d, thrower %d calls with the javaagent's rewrite in effect"
             % (t["hot"], t["rec"], t["thrower"]))


def build_sigprof_owner(ctx):
    lib = ctx.path("libsigprof_owner.so")
    tool(["cc", "-std=c11", "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", lib,
          os.path.join(TESTS_DIR, "coexist", "sigprof_owner.c")], "cc sigprof_owner.c")
    return lib


def test_coexist_sigprof(ctx):
    lib = build_sigprof_owner(ctx)
    for sampler, interval in (("timer", 10), ("perf", 1)):
        path = ctx.path("sigprof-%s.txt" % sampler)
        r = ctx.run("CpuSplit", ["5000"], env={"LD_PRELOAD": lib}, tag="sigprof-" + sampler,
                    agent="cpu=samples,depth=64,interval=%d,sampler=%s,file=%s" % (interval, sampler, path))
        said = [l for l in r.stderr.splitlines() if l.startswith("hprof: SIGPROF already has a handler")]
        if len(said) != 1 or not re.search(r"uses signal \d+ \(SIGRTMIN\+\d+\) instead", said[0]):
            pytest.fail("sampler=%s: expected one line saying SIGPROF is left alone, got %d: %s"
                        % (sampler, len(said), r.stderr[-600:]))
        m = re.search(r"^SIGPROF_OWNER: ticks=(\d+) handler=(\w+)", r.stderr, re.M)
        if not m:
            pytest.fail("sampler=%s: the preloaded SIGPROF user did not report: %s" % (sampler, r.stderr[-400:]))
        if m.group(2) != "intact" or int(m.group(1)) == 0:
            pytest.fail("sampler=%s: expected the other SIGPROF user's handler intact with ticks, found it %s "
                        "after %s ticks" % (sampler, m.group(2), m.group(1)))
        check_split(ctx, r, path, "sampler=%s beside another SIGPROF user (%s ticks)" % (sampler, m.group(1)))


def test_coexist_sigprof_late(ctx):
    """The other SIGPROF user installs its handler 1.5 s into the run, after
    the agent took SIGPROF: the agent says so in one line, leaves SIGPROF to
    it and samples on a real-time signal from then on; the other handler
    stays installed and gets its ticks; the split is right and the samples
    cover the whole run (not only the 1.5 s before)."""
    lib = build_sigprof_owner(ctx)
    for sampler, interval in (("timer", 10), ("perf", 1)):
        path = ctx.path("sigprof-late-%s.txt" % sampler)
        r = ctx.run("CpuSplit", ["5000"], env={"LD_PRELOAD": lib, "SIGPROF_OWNER_DELAY_MS": "1500"},
                    tag="sigprof-late-" + sampler,
                    agent="cpu=samples,depth=64,interval=%d,sampler=%s,file=%s" % (interval, sampler, path))
        if "SIGPROF_OWNER: installed" not in r.stderr:
            pytest.fail("sampler=%s: the late SIGPROF user never installed its handler: %s"
                        % (sampler, r.stderr[-400:]))
        said = [l for l in r.stderr.splitlines() if l.startswith("hprof: cpu=samples: the handler of signal")]
        if len(said) != 1 or not re.search(r"\(SIGPROF\) was replaced after sampling began \(by \S*"
                                           r"libsigprof_owner\.so\); the signal is left to it and sampling "
                                           r"moves to signal \d+ \(SIGRTMIN\+\d+\)", said[0]):
            pytest.fail("sampler=%s: expected one line saying SIGPROF was taken over and sampling moved, "
                        "got %d: %s" % (sampler, len(said), r.stderr[-600:]))
        m = re.search(r"^SIGPROF_OWNER: ticks=(\d+) handler=(\w+)", r.stderr, re.M)
        if not m or m.group(2) != "intact" or int(m.group(1)) == 0:
            pytest.fail("sampler=%s: expected the other SIGPROF user's handler intact with ticks, found: %s"
                        % (sampler, m.group(0) if m else r.stderr[-400:]))
        a_ns, b_ns, _ = truth_of(r.stderr)
        prof = parse_profile(path)
        sec = final_section(prof)
        expected = (a_ns + b_ns) / (interval * 1e6)
        got = prof.samples(sec, lambda t: t.has_method("CpuSplit.partA") or t.has_method("CpuSplit.partB"))
        if got < 0.6 * expected:
            pytest.fail("sampler=%s: %d samples in partA+partB for %.0f expected from their CPU time: "
                        "sampling did not go on after the move" % (sampler, got, expected))
        check_split(ctx, r, path, "sampler=%s, SIGPROF taken 1.5 s in (%s ticks; %d of %.0f samples)"
                    % (sampler, m.group(1), got, expected))

