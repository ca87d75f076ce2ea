"""net= and the front end's `hprof listen` / `hprof run` (pytest tests, run on
each JDK with the ctx fixture of tests/conftest.py), with real JVMs running CpuSplit (a worker whose CPU time
splits between partA and partB in a ratio it measures itself, its TRUTH line
on stderr):

    net_text             hprof listen (its stdout on a pseudo-terminal) + net=:
                         the file it wrote parses as HPROF text with the
                         program's split, as a file= run of the same program;
                         the screen showed the top methods and samples/s
    net_binary           format=b over net=: the independent binary reader
                         finds no problem and the CPU samples name partA
    net_absent           nobody listens: the JVM does not start, and the
                         message names net=, the address and `hprof listen`
    net_listener_dies    the listener is killed mid-run: the program ends
                         normally, stderr names the local file, which holds
                         the whole run's samples
    net_slow_listener    a listener that takes 2 KiB a second while four heap
                         dumps or more (over 8 MiB) are sent: the listener
                         gets data, the send queue stays within its bound,
                         the program ends (exit 0), the agent gives up on
                         the listener and writes the profile locally, with
                         the whole run's samples (no timing is judged: how
                         much the slow listener holds the program's work up
                         is bench/net --slow-listener's figure)
    net_raw              a plain socket that sends no greeting gets the bytes
                         of the text report and nothing else
    hprof_run            `hprof run OPTIONS -- java ...` and `hprof run OPTIONS
                         java ...` run the program with the agent; java's exit
                         status comes back
"""

import os
import pty
import re
import select
import socket
import subprocess
import threading
import time

import pytest

import hprof_reader
from run import BUILD, CLASSES, parse_profile, reap, spawn, truths
from slow_listener import SlowListener, drive_dumps

HPROF = os.path.join(BUILD, "hprof")
QUEUE_BOUND = 8 << 20          # net_sink_default_config().queue_bytes



class Listener:
    """build/hprof listen --port 0 -o FILE; stdout to a file, or to a
    pseudo-terminal (the live screen) with tty=True."""

    def __init__(self, ctx, tag, tty=False):
        self.ctx, self.out_file = ctx, ctx.path(tag + ".hprof.txt")
        self.log_path = ctx.path(tag + ".listen.stdout")
        self.screen = b""
        cmd = [HPROF, "listen", "--port", "0", "-o", self.out_file]
        self.err = open(ctx.path(tag + ".listen.stderr"), "wb")
        if tty:
            master, slave = pty.openpty()
            self.p = subprocess.Popen(cmd, stdout=slave, stderr=self.err, stdin=subprocess.DEVNULL)
            os.close(slave)
            self.reader = threading.Thread(target=self._read_pty, args=(master,), daemon=True)
            self.reader.start()
        else:
            with open(self.log_path, "wb") as f:
                self.p = subprocess.Popen(cmd, stdout=f, stderr=self.err, stdin=subprocess.DEVNULL)
            self.reader = None
        deadline = time.time() + 10
        while True:
            m = re.search(r"waiting on 127\.0\.0\.1:(\d+)", self.stdout())
            if m:
                self.port = int(m.group(1))
                break
            if self.p.poll() is not None or time.time() > deadline:
                self.kill()
                pytest.fail("hprof listen did not start (expected its \"waiting on\" line): %s"
                            % self.stdout()[-300:], pytrace=False)
            time.sleep(0.02)

    def _read_pty(self, fd):
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            self.screen += data
        os.close(fd)

    def stdout(self):
        if self.reader is not None:
            return self.screen.decode("utf-8", "replace")
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def wait(self, timeout=60):
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail("hprof listen did not exit within %d s after the JVM" % timeout, pytrace=False)
        if self.reader is not None:
            self.reader.join(5)
        return rc

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def truth(stderr):
    """CpuSplit's own partA, partB and worker CPU times (ns)."""
    t = truths(stderr)
    return t["partA_ns"], t["partB_ns"], t["worker_cpu_ns"]


def split_problems(what, path, stderr, ms, problems):
    """The profile's partA share against CpuSplit's own; the worker's
    samples against its CPU time (interval 10 ms): the whole run is there."""
    a_ns, b_ns, worker_ns = truth(stderr)
    prof = parse_profile(path)
    sec = prof.final
    a = prof.samples(sec, lambda t: t.has_method("CpuSplit.partA"))
    b = prof.samples(sec, lambda t: t.has_method("CpuSplit.partB"))
    worker = prof.samples(sec, lambda t: t.has_method("CpuSplit.workerLoop"))
    expected = worker_ns / 10e6
    share, true_share = a / float(a + b or 1), a_ns / float(a_ns + b_ns)
    if a + b < 50:
        problems.append("%s: only %d samples in partA+partB" % (what, a + b))
    elif abs(share - true_share) > 0.08:
        problems.append("%s: partA share %.1f%%, CpuSplit measured %.1f%%" % (what, 100 * share, 100 * true_share))
    if not 0.5 <= worker / expected <= 1.3:
        problems.append("%s: %d worker samples for %.0f expected from its CPU time" % (what, worker, expected))
    return prof, sec, share


def test_net_text(ctx):
    ms = 2500
    with_file = ctx.path("file.hprof.txt")
    r = ctx.run("CpuSplit", [ms], agent="cpu=samples,depth=8,file=" + with_file, tag="file")
    problems = []
    fprof, fsec, fshare = split_problems("file=", with_file, r.stderr, ms, problems)
    lis = Listener(ctx, "net", tty=True)
    try:
        r = ctx.run("CpuSplit", [ms], agent="cpu=samples,depth=8,net=127.0.0.1:%d" % lis.port, tag="net")
        rc = lis.wait()
    finally:
        lis.kill()
    screen = lis.stdout()
    assert rc == 0, "hprof listen: expected exit 0, found %d: %s" % (rc, screen[-300:])
    nprof, nsec, nshare = split_problems("net=", lis.out_file, r.stderr, ms, problems)
    if nprof.threads_named("main") == [] or not nprof.threads_named("cpu-worker"):
        problems.append("net= profile lacks THREAD START of main or cpu-worker")
    if len(nprof.sections) != len(fprof.sections):
        problems.append("net= profile has %d CPU SAMPLES sections, file= %d"
                        % (len(nprof.sections), len(fprof.sections)))
    top = lambda p, s: s.rows[0].method if s.rows else None   # noqa: E731
    if top(nprof, nsec) != top(fprof, fsec):
        problems.append("top method differs: net= %s, file= %s" % (top(nprof, nsec), top(fprof, fsec)))
    m = re.search(r"(\d+) live summaries, the last at (\d+) samples", screen)
    if not m or int(m.group(1)) < 1:
        problems.append("no live summary reached the listener: %r" % screen[-300:])
    elif int(m.group(2)) > nsec.total:
        problems.append("a live summary said %s samples, more than the final %d" % (m.group(2), nsec.total))
    if "CpuSplit.partA" not in screen or "samples/s" not in screen:
        problems.append("the terminal screen showed no top methods or samples/s")
    ctx.note("partA share: file= %.1f%%, net= %.1f%%; %s live summaries; totals %d / %d"
             % (100 * fshare, 100 * nshare, m.group(1) if m else "?", fsec.total, nsec.total))
    assert not problems, "; ".join(problems)


def test_net_binary(ctx):
    lis = Listener(ctx, "bin")
    try:
        ctx.run("CpuSplit", [1500], agent="cpu=samples,format=b,net=127.0.0.1:%d" % lis.port)
        rc = lis.wait()
    finally:
        lis.kill()
    assert rc == 0, "hprof listen: expected exit 0, found %d: %s" % (rc, lis.stdout()[-300:])
    mode = os.stat(lis.out_file).st_mode & 0o777
    assert mode == 0o600, "hprof listen's -o file is %o; it may hold a heap dump: want 600" % mode
    try:
        d = hprof_reader.read(lis.out_file)
    except hprof_reader.ParseError as e:
        pytest.fail("the binary file from net= does not parse: %s" % e, pytrace=False)
    assert not d.problems, "binary reader problems: %s" % "; ".join(d.problems[:3])
    assert d.cpu_samples, "no CPU SAMPLES record in the binary file"
    total, rows = d.cpu_samples[-1]
    names = {}
    for count, serial in rows:
        t = d.traces.get(serial)
        f = d.frames.get(t[1][0]) if t and t[1] else None
        if f is not None:
            names[f.method] = names.get(f.method, 0) + count
    ctx.note("binary over net=: %d bytes, %d samples, partA %d" % (d.file_size, total, names.get("partA", 0)))
    assert names.get("partA", 0) >= 20, "partA: expected at least 20 samples in the binary CPU SAMPLES, found %d " \
        "(total %d)" % (names.get("partA", 0), total)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_net_absent(ctx):
    port = free_port()
    t0 = time.time()
    r = ctx.run("CpuSplit", [500], agent="cpu=samples,net=127.0.0.1:%d" % port, expect_rc="nonzero")
    secs = time.time() - t0
    want = ["net=127.0.0.1:%d" % port, "hprof listen --port %d" % port, "refused"]
    missing = [w for w in want if w not in r.stderr]
    assert not missing and "TRUTH" not in r.stderr, \
        "stderr lacks %s (or the program ran): %s" % (missing, r.stderr[-400:])
    ctx.note("refused in %.2f s: %s" % (secs, r.stderr.strip().splitlines()[0][:160]))


def test_net_listener_dies(ctx):
    lis = Listener(ctx, "dies")
    p, so, se, cmd = spawn(ctx, "CpuSplit", [4000], "cpu=samples,depth=8,net=127.0.0.1:%d" % lis.port, "jvm")
    time.sleep(1.5)
    lis.kill()
    r = reap(ctx, p, so, se, cmd)
    m = re.search(r"listener at 127\.0\.0\.1:%d went away \(([^)]*)\); writing the profile to (\S+) instead"
                  % lis.port, r.stderr)
    assert m, "stderr does not say the listener went away and where the profile goes: %s" % r.stderr[-400:]
    local = os.path.join(ctx.out, m.group(2))
    problems = []
    split_problems("local file", local, r.stderr, 4000, problems)
    ctx.note("%s (%s); %d bytes had reached the listener" % (m.group(2), m.group(1),
                                                             os.path.getsize(lis.out_file)))
    assert not problems, "; ".join(problems)


def test_net_slow_listener(ctx):
    """No timing asserted here: how much the slow listener holds the
    program's work up is bench/net --slow-listener's figure."""
    ms, dumps = 6000, 4
    # The same work and dumps into a file: as many dumps as make the report
    # larger than the send queue's bound, and what net= had to send.
    base = ctx.path("base.hprof.txt")
    p, so, se, cmd = spawn(ctx, "CpuSplit", [ms], "cpu=samples,heap=dump,file=" + base, "file")
    try:
        dumps, _, _ = drive_dumps(p, se, dumps, grow=(base, QUEUE_BOUND + (2 << 20)))
    finally:
        reap(ctx, p, so, se, cmd)
    slow = SlowListener()
    try:
        p, so, se, cmd = spawn(ctx, "CpuSplit", [ms], "cpu=samples,heap=dump,net=127.0.0.1:%d" % slow.port, "net")
        try:
            _, work, exited = drive_dumps(p, se, dumps)
        finally:
            # the program ends: reap fails on a JVM still running at its timeout or a non-zero exit
            r = reap(ctx, p, so, se, cmd)
    finally:
        slow.close()
    problems = []
    if slow.received <= 0:
        problems.append("the slow listener received nothing")
    m = re.search(r"send queue held at most (\d+) bytes \(bound (\d+)\)", r.stderr)
    if not m or int(m.group(1)) > int(m.group(2)) or int(m.group(2)) != QUEUE_BOUND:
        problems.append("expected a send-queue note within the bound %d, found %s"
                        % (QUEUE_BOUND, m.group(0) if m else r.stderr[-300:]))
    report = os.path.getsize(base)
    if report < QUEUE_BOUND + (1 << 20):
        problems.append("the report (%d bytes with file=) is not larger than the queue: the bound was not "
                        "tested" % report)
    g = re.search(r"went away \((it took no data for \d+ s|it was too slow[^)]*)\); writing the profile to "
                  r"(\S+) instead", r.stderr)
    if not g:
        problems.append("stderr does not say the slow listener was given up: %s" % r.stderr[-300:])
    else:
        # nothing lost: the local file holds the whole run's samples, split as CpuSplit measured
        local = os.path.join(ctx.out, g.group(2))
        split_problems("local file", local, r.stderr, ms, problems)
        ctx.note("%d SIGQUIT dumps, report %d bytes with file=; program work %s s, JVM exit at %s s (noted, not "
                 "judged); the listener took %d bytes; queue peak %s; %s; local file %d bytes"
                 % (dumps, report, "%.1f" % work if work else "?", "%.1f" % exited if exited else "?",
                    slow.received, m.group(1) if m else "?", g.group(1), os.path.getsize(local)))
    assert not problems, "; ".join(problems)


class RawListener:
    """A plain socket: no greeting, keeps every byte until EOF."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.data = b""
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        conn, _ = self.sock.accept()
        while True:
            ready, _, _ = select.select([conn], [], [], 60)
            chunk = conn.recv(65536) if ready else b""
            if not chunk:
                break
            self.data += chunk
        conn.close()
        self.sock.close()


def test_net_raw(ctx):
    raw = RawListener()
    r = ctx.run("CpuSplit", [1500], agent="cpu=samples,net=127.0.0.1:%d" % raw.port)
    raw.thread.join(10)
    path = ctx.path("raw.hprof.txt")
    with open(path, "wb") as f:
        f.write(raw.data)
    problems = []
    if not raw.data.startswith(b"JAVA PROFILE 1.0.1"):
        problems.append("the bytes do not begin as the text report does: %r" % raw.data[:40])
    if b"HPROF-STREAM" in raw.data or b"\nsamples " in raw.data:
        problems.append("protocol or live-summary bytes in raw mode")
    split_problems("raw", path, r.stderr, 1500, problems)
    ctx.note("raw mode: %d bytes" % len(raw.data))
    assert not problems, "; ".join(problems)


def test_hprof_run(ctx):
    problems = []
    java = ctx.java
    for tag, sep in (("dashes", ["--"]), ("plain", [])):
        out = ctx.path(tag + ".hprof.txt")
        cmd = [HPROF, "run", "cpu=samples", "file=" + out] + sep + [java, "-cp", CLASSES, "CpuSplit", "1500"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ctx.out)
        if p.returncode != 0:
            problems.append("%s: rc %d: %s" % (" ".join(cmd[2:5]), p.returncode, p.stderr[-300:]))
            continue
        split_problems(tag, out, p.stderr, 1500, problems)
    # The exit status is java's own (1 for a class it cannot find).
    p = subprocess.run([HPROF, "run", "cpu=samples", "--", java, "-cp", CLASSES, "NoSuchClass"],
                       capture_output=True, text=True, timeout=60, cwd=ctx.out)
    q = subprocess.run([java, "-cp", CLASSES, "NoSuchClass"], capture_output=True, text=True, timeout=60)
    if p.returncode != q.returncode or p.returncode == 0:
        problems.append("hprof run returned %d where java returns %d" % (p.returncode, q.returncode))
    assert not problems, "; ".join(problems)
