"""`hprof listen` writing the series of an agent with net= and loop= (pytest
tests, run on each JDK with the ctx fixture of tests/conftest.py;
docs/net.md, docs/continuous.md). CpuSplit: a worker whose CPU time splits
between partA and partB, measured by the program itself (its TRUTH line).

    listen_series          net=,loop=1 (and pprof= written by the agent
                           itself): the listener writes one file per period,
                           numbered 1..N (N >= 3) from -o's %n and %t, each
                           read by the strict parser; each period's text
                           total equals the agent's own pprof file of that
                           period (the same periods); the periods' partA +
                           partB add up to the worker's CPU time / 10 ms
                           within 5%; the listener exits 0
    listen_series_keep     --keep 2: of N >= 3 periods only the last 2
                           files stay, and no temporary file
    listen_series_binary   format=b: every period's file is read by the
                           independent binary reader without a problem,
                           each with its CPU SAMPLES record naming partA
    listen_series_killed   the JVM killed (SIGKILL) after period 2: the
                           listener exits 1 saying the agent went away
                           during period N and that its partial report was
                           removed; periods 1..N-1 are there, each whole
    listen_series_refused  loop= with net= at a listener of protocol 1 (an
                           older hprof listen) or at a peer that sends no
                           greeting: the JVM does not start, and the message
                           names net= and says why
    listen_plain_streams   loop-less net= to the new listener: one report,
                           as before; and an agent of protocol 1 (a fake
                           that answers HPROF-STREAM 1) still gets its
                           report written and confirmed
"""

import os
import re
import signal
import socket
import struct
import subprocess
import threading
import time

from run import BUILD, Fail, parse_profile, reap, spawn
from series_files import cpu_split_samples, numbered_files
import hprof_reader
import pprof_reader

HPROF = os.path.join(BUILD, "hprof")
INTERVAL_NS = 10 * 1000 * 1000
RE_TRUTH = re.compile(r"TRUTH partA_ns=(\d+) partB_ns=(\d+)")


class Listener:
    """build/hprof listen --port 0 ARGS, its stdout in a file."""

    def __init__(self, ctx, tag, args):
        self.log = ctx.path(tag + ".listen.stdout")
        self.errlog = ctx.path(tag + ".listen.stderr")
        with open(self.log, "wb") as out, open(self.errlog, "wb") as err:
            self.p = subprocess.Popen([HPROF, "listen", "--port", "0"] + args, stdout=out, stderr=err,
                                      stdin=subprocess.DEVNULL)
        deadline = time.time() + 10
        while True:
            m = re.search(r"waiting on 127\.0\.0\.1:(\d+)", self.stdout())
            if m:
                self.port = int(m.group(1))
                return
            if self.p.poll() is not None or time.time() > deadline:
                self.kill()
                raise Fail("hprof listen did not start: %s %s" % (self.stdout()[-300:], self.stderr()[-300:]))
            time.sleep(0.02)

    def stdout(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def stderr(self):
        with open(self.errlog, errors="replace") as f:
            return f.read()

    def wait(self, timeout=60):
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Fail("hprof listen did not exit within %d s" % timeout)

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def run_series(ctx, tag, listen_args, agent, cpu_ms):
    """A directory `tag`, hprof listen with listen_args (-o given relative
    to the directory), CpuSplit cpu_ms with agent + net= to the listener:
    (directory, listener, the JVM's run, the listener's exit status)."""
    d = ctx.path(tag)
    os.makedirs(d)
    args = [os.path.join(d, a[2:]) if a.startswith("./") else a for a in listen_args]
    lis = Listener(ctx, tag, args)
    try:
        r = ctx.run("CpuSplit", [cpu_ms], agent="%s,net=127.0.0.1:%d" % (agent, lis.port))
        rc = lis.wait()
    finally:
        lis.kill()
    return d, lis, r, rc


def no_leftovers(d, problems):
    left = [f for f in os.listdir(d) if ".part" in f or ".tmp" in f]
    if left:
        problems.append("temporary files left: %s" % left)


def test_listen_series(ctx):
    pprof = ctx.path("series") + "/agent-%n.pb.gz"
    d, lis, r, rc = run_series(ctx, "series", ["-o", "./prof-%n-%t.txt"],
                               "cpu=samples,cutoff=0,loop=1,pprof=" + pprof, 2500)
    m = RE_TRUTH.search(r.stderr)
    if not m:
        raise Fail("CpuSplit printed no TRUTH line: " + r.stderr[-300:])
    a_ns, b_ns = int(m.group(1)), int(m.group(2))
    texts = numbered_files(d + "/prof-*.txt", r"^prof-(\d+)-\d{8}T\d{6}Z\.txt$")
    pprofs = numbered_files(d + "/agent-*.pb.gz", r"^agent-(\d+)\.pb\.gz$")
    n = len(texts)
    problems = []
    if rc != 0 or "the series from" not in lis.stdout():
        problems.append("hprof listen exited %d: %s" % (rc, (lis.stdout() + lis.stderr())[-300:]))
    if n < 3 or sorted(texts) != list(range(1, n + 1)):
        raise Fail("expected at least 3 periods numbered 1..N from the listener, found %s; listener: %s"
                   % (sorted(texts), lis.stdout()[-300:]))
    if sorted(pprofs) != sorted(texts):
        problems.append("the listener has periods %s, the agent's own pprof= %s" % (sorted(texts), sorted(pprofs)))
    sum_ab = 0
    shown = []
    for k in sorted(texts):
        total, a, b = cpu_split_samples(parse_profile(texts[k]))
        sum_ab += a + b
        shown.append("%d:%d" % (k, total))
        if k in pprofs:
            pp = pprof_reader.read_pprof(pprofs[k]).total("samples")
            if pp != total:
                problems.append("period %d: the listener's text has %d samples, the agent's pprof %d"
                                % (k, total, pp))
    expected = (a_ns + b_ns) / float(INTERVAL_NS)
    ctx.note("%d periods (%s); partA+partB %d samples, truth %.0f (%.1f%% off)"
             % (n, " ".join(shown), sum_ab, expected, 100.0 * (sum_ab - expected) / expected))
    if abs(sum_ab - expected) > 0.05 * expected:
        problems.append("the periods' partA+partB samples, %d, are not within 5%% of the worker's CPU time "
                        "/ 10 ms, %.0f" % (sum_ab, expected))
    no_leftovers(d, problems)
    if problems:
        raise Fail("; ".join(problems))


def test_listen_series_keep(ctx):
    d, lis, _, rc = run_series(ctx, "keep", ["--keep", "2", "-o", "./cpu.txt"], "cpu=samples,loop=1", 2000)
    done = re.findall(r"period (\d+) complete", lis.stdout())
    texts = numbered_files(d + "/cpu.*.txt", r"^cpu\.\d{8}T\d{6}Z\.(\d+)\.txt$")
    left = sorted(os.listdir(d))
    ctx.note("periods completed %s; kept %s" % (done, left))
    problems = []
    if rc != 0:
        problems.append("hprof listen exited %d: %s" % (rc, lis.stdout()[-300:]))
    last = max(texts) if texts else 0
    if last < 3 or sorted(texts) != [last - 1, last] or len(left) != 2:
        problems.append("--keep 2: expected the files of periods N-1 and N (N >= 3) alone, found %s" % left)
    for k in texts:
        cpu_split_samples(parse_profile(texts[k]))
    if problems:
        raise Fail("; ".join(problems))


def test_listen_series_binary(ctx):
    d, lis, _, rc = run_series(ctx, "binary", ["-o", "./b-%n.hprof"], "cpu=samples,format=b,loop=1", 1500)
    files = numbered_files(d + "/b-*.hprof", r"^b-(\d+)\.hprof$")
    problems = []
    if rc != 0 or len(files) < 2 or sorted(files) != list(range(1, len(files) + 1)):
        raise Fail("expected exit 0 and periods 1..N (N >= 2), got %d and %s: %s"
                   % (rc, sorted(files), lis.stdout()[-300:]))
    shown = []
    sum_a = 0
    for k in sorted(files):
        try:
            data = hprof_reader.read(files[k])
        except hprof_reader.ParseError as e:
            raise Fail("period %d's binary file does not parse: %s" % (k, e))
        if data.problems or not data.cpu_samples:
            problems.append("period %d: %s" % (k, "; ".join(data.problems[:3]) or "no CPU SAMPLES record"))
            continue
        total, rows = data.cpu_samples[-1]
        part_a = 0
        for count, serial in rows:
            t = data.traces.get(serial)
            f = data.frames.get(t[1][0]) if t and t[1] else None
            if f is not None and f.method == "partA":
                part_a += count
        sum_a += part_a
        shown.append("%d: %d (partA %d)" % (k, total, part_a))
    ctx.note("binary periods %s" % ", ".join(shown))
    if sum_a < 20:
        problems.append("fewer than 20 partA samples over the periods: %s" % shown)
    if problems:
        raise Fail("; ".join(problems))


def test_listen_series_killed(ctx):
    d = ctx.path("killed")
    os.makedirs(d)
    lis = Listener(ctx, "killed", ["-o", d + "/p-%n.txt"])
    p, so, se, cmd = spawn(ctx, "CpuSplit", ["60000"], "cpu=samples,loop=1,net=127.0.0.1:%d" % lis.port, "killed")
    try:
        deadline = time.time() + 60
        while "period 2 complete" not in lis.stdout() and time.time() < deadline and p.poll() is None:
            time.sleep(0.1)
        time.sleep(0.5)                  # into period 3 (or later)
        p.send_signal(signal.SIGKILL)
        reap(ctx, p, so, se, cmd, want_rc=-signal.SIGKILL)
        rc = lis.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
        lis.kill()
    out = lis.stdout()
    files = numbered_files(d + "/p-*.txt", r"^p-(\d+)\.txt$")
    m = re.search(r"went away during period (\d+) .*partial report was removed; periods 1 to (\d+) are complete",
                  out)
    ctx.note("listener: %s" % out.strip().splitlines()[-1] if out.strip() else "listener said nothing")
    problems = []
    if rc != 1 or not m:
        problems.append("expected exit 1 and 'went away during period N ... removed; periods 1 to N-1 are "
                        "complete', got %d: %s" % (rc, out[-400:]))
    elif int(m.group(2)) != int(m.group(1)) - 1 or sorted(files) != list(range(1, int(m.group(1)))):
        problems.append("cut in period %s, said complete up to %s, files %s" % (m.group(1), m.group(2), sorted(files)))
    if len(files) < 2:
        problems.append("expected at least periods 1 and 2, found %s" % sorted(files))
    for k in files:
        cpu_split_samples(parse_profile(files[k]))
    no_leftovers(d, problems)
    if problems:
        raise Fail("; ".join(problems))


class FakeListener:
    """A server that greets with `greeting` (None: says nothing) and reads
    until the peer closes."""

    def __init__(self, greeting):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.got = b""
        self.thread = threading.Thread(target=self._serve, args=(greeting,), daemon=True)
        self.thread.start()

    def _serve(self, greeting):
        self.sock.settimeout(30)
        try:
            c, _ = self.sock.accept()
            c.settimeout(30)
            if greeting:
                c.sendall(greeting)
            while True:
                b = c.recv(65536)
                if not b:
                    break
                self.got += b
            c.close()
        except OSError:
            pass

    def close(self):
        self.thread.join(30)
        self.sock.close()


def test_listen_series_refused(ctx):
    problems = []
    for greeting, words in ((b"HPROF-LISTEN 1\n", ["net=", "too old", "loop="]),
                            (None, ["net=", "not `hprof listen`", "loop="])):
        fake = FakeListener(greeting)
        try:
            r = ctx.run("Busy", ["200"], agent="cpu=samples,loop=1,net=127.0.0.1:%d" % fake.port,
                        expect_rc="nonzero")
        finally:
            fake.close()
        missing = [w for w in words if w not in r.stderr]
        if missing or "Busy: done" in r.stdout:
            problems.append("greeting %r: expected the JVM to refuse to start naming %s; stderr: %s"
                            % (greeting, missing, r.stderr.strip()[-300:]))
        if fake.got:
            problems.append("greeting %r: the agent sent %r" % (greeting, fake.got[:60]))
    if problems:
        raise Fail("; ".join(problems))


def frame(kind, payload):
    return kind + struct.pack(">I", len(payload)) + payload


def test_listen_plain_streams(ctx):
    problems = []
    # A real agent without loop=: one report at -o, as before.
    d, lis, _, rc = run_series(ctx, "plain", ["--keep", "3", "-o", "./plain.txt"], "cpu=samples", 1000)
    out = os.path.join(d, "plain.txt")
    if rc != 0 or "the profile is in" not in lis.stdout():
        problems.append("loop-less net=: hprof listen exited %d: %s" % (rc, lis.stdout()[-300:]))
    total, a, b = cpu_split_samples(parse_profile(out))
    if a + b < 20:
        problems.append("loop-less net=: only %d partA+partB samples in %s" % (a + b, out))
    # An agent of protocol 1 (before series): greeted with version 2, it
    # answers as it always did, and its report is written and confirmed.
    out1 = ctx.path("v1.txt")
    lis = Listener(ctx, "v1", ["-o", out1])
    try:
        s = socket.create_connection(("127.0.0.1", lis.port), timeout=10)
        greeting = b""
        while not greeting.endswith(b"\n"):
            greeting += s.recv(1)
        report = b"JAVA PROFILE 1.0.1, created Sat Nov 28 03:00:00 2026\n"
        s.sendall(b"HPROF-STREAM 1\n" + frame(b"D", report) + frame(b"E", b""))
        answer = s.recv(64)
        s.close()
        rc = lis.wait()
    finally:
        lis.kill()
    with open(out1, "rb") as f:
        written = f.read()
    ctx.note("greeting %r, answer %r" % (greeting, answer))
    if not greeting.startswith(b"HPROF-LISTEN ") or answer != b"HPROF-SAVED\n" or written != report or rc != 0:
        problems.append("protocol 1 agent: greeting %r, answer %r, file %r, exit %d" % (greeting, answer, written, rc))
    if problems:
        raise Fail("; ".join(problems))
