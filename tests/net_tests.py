"""net= and the front end's `hprof listen` / `hprof run` (imported by
tests/run.py), with real JVMs running CpuSplit (a worker whose CPU time
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
                         dumps (over 8 MiB) are sent: the program's own work is
                         not held up, the send queue stays within its bound,
                         and at exit the agent gives up within its deadline
                         and writes the profile locally
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
import signal
import socket
import subprocess
import sys
import threading
import time

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS_DIR)
HPROF = os.path.join(ROOT, "build", "hprof")
CLASSES = os.path.join(ROOT, "build", "tests", "classes")
QUEUE_BOUND = 8 << 20          # net_sink_default_config().queue_bytes
FINISH_S = 10                  # NET_FINISH_MS: what a listener gets at exit

sys.path.insert(0, TESTS_DIR)
import hprof_reader  # noqa: E402


def make_tests(Fail, parse_profile, spawn, reap):

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
                    raise Fail("hprof listen did not start: %s" % self.stdout()[-300:])
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
                raise Fail("hprof listen did not exit within %d s after the JVM" % timeout)
            if self.reader is not None:
                self.reader.join(5)
            return rc

        def kill(self):
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait()

    def truth(stderr):
        m = re.search(r"TRUTH partA_ns=(\d+) partB_ns=(\d+) worker_cpu_ns=(\d+)", stderr)
        if not m:
            raise Fail("CpuSplit printed no TRUTH line; stderr: %s" % stderr[-300:])
        return [int(x) for x in m.groups()]

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

    def t_net_text(ctx):
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
        if rc != 0:
            raise Fail("hprof listen exited %d: %s" % (rc, screen[-300:]))
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
        if problems:
            raise Fail("; ".join(problems))

    def t_net_binary(ctx):
        lis = Listener(ctx, "bin")
        try:
            ctx.run("CpuSplit", [1500], agent="cpu=samples,format=b,net=127.0.0.1:%d" % lis.port)
            rc = lis.wait()
        finally:
            lis.kill()
        if rc != 0:
            raise Fail("hprof listen exited %d: %s" % (rc, lis.stdout()[-300:]))
        mode = os.stat(lis.out_file).st_mode & 0o777
        if mode != 0o600:
            raise Fail("hprof listen's -o file is %o; it may hold a heap dump: want 600" % mode)
        try:
            d = hprof_reader.read(lis.out_file)
        except hprof_reader.ParseError as e:
            raise Fail("the binary file from net= does not parse: %s" % e)
        if d.problems:
            raise Fail("binary reader problems: %s" % "; ".join(d.problems[:3]))
        if not d.cpu_samples:
            raise Fail("no CPU SAMPLES record in the binary file")
        total, rows = d.cpu_samples[-1]
        names = {}
        for count, serial in rows:
            t = d.traces.get(serial)
            f = d.frames.get(t[1][0]) if t and t[1] else None
            if f is not None:
                names[f.method] = names.get(f.method, 0) + count
        ctx.note("binary over net=: %d bytes, %d samples, partA %d" % (d.file_size, total, names.get("partA", 0)))
        if names.get("partA", 0) < 20:
            raise Fail("partA has %d samples in the binary CPU SAMPLES (total %d)" % (names.get("partA", 0), total))

    def free_port():
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        return port

    def t_net_absent(ctx):
        port = free_port()
        t0 = time.time()
        r = ctx.run("CpuSplit", [500], agent="cpu=samples,net=127.0.0.1:%d" % port, expect_rc="nonzero")
        secs = time.time() - t0
        want = ["net=127.0.0.1:%d" % port, "hprof listen --port %d" % port, "refused"]
        missing = [w for w in want if w not in r.stderr]
        if missing or "TRUTH" in r.stderr:
            raise Fail("stderr lacks %s (or the program ran): %s" % (missing, r.stderr[-400:]))
        ctx.note("refused in %.2f s: %s" % (secs, r.stderr.strip().splitlines()[0][:160]))

    def t_net_listener_dies(ctx):
        lis = Listener(ctx, "dies")
        p, so, se, cmd = spawn(ctx, "CpuSplit", [4000], "cpu=samples,depth=8,net=127.0.0.1:%d" % lis.port, "jvm")
        time.sleep(1.5)
        lis.kill()
        r = reap(ctx, p, so, se, cmd)
        m = re.search(r"listener at 127\.0\.0\.1:%d went away \(([^)]*)\); writing the profile to (\S+) instead"
                      % lis.port, r.stderr)
        if not m:
            raise Fail("stderr does not say the listener went away and where the profile goes: %s" % r.stderr[-400:])
        local = os.path.join(ctx.out, m.group(2))
        problems = []
        split_problems("local file", local, r.stderr, 4000, problems)
        ctx.note("%s (%s); %d bytes had reached the listener" % (m.group(2), m.group(1),
                                                                 os.path.getsize(lis.out_file)))
        if problems:
            raise Fail("; ".join(problems))

    class SlowListener:
        """Greets the agent, then takes 2 KiB a second (small receive buffer)."""

        def __init__(self):
            self.sock = socket.socket()
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            self.sock.bind(("127.0.0.1", 0))
            self.sock.listen(1)
            self.port = self.sock.getsockname()[1]
            self.received, self.stop = 0, False
            self.thread = threading.Thread(target=self.run, daemon=True)
            self.thread.start()

        def run(self):
            conn, _ = self.sock.accept()
            conn.sendall(b"HPROF-LISTEN 1\n")
            while not self.stop:
                data = conn.recv(2048)
                if not data:
                    break
                self.received += len(data)
                time.sleep(1)
            conn.close()

        def close(self):
            self.stop = True
            self.sock.close()

    def run_with_dumps(ctx, agent, tag, ms, dumps, grow=None):
        """CpuSplit with `dumps` SIGQUITs a second apart: (run, seconds until
        its TRUTH line, i.e. its own work, and until the JVM's exit, the
        SIGQUITs sent). grow=(path, size): more SIGQUITs (up to 10 in all)
        until the file at path is that large, each once the last dump is
        done: how large each dump is depends on the machine's speed."""
        p, so, se, cmd = spawn(ctx, "CpuSplit", [ms], agent, tag)
        t0 = time.time()
        sent = 0
        while p.poll() is None and (sent < dumps or (grow and sent < 10 and os.path.exists(grow[0]) and
                                                     os.path.getsize(grow[0]) < grow[1])):
            time.sleep(1.0)
            p.send_signal(signal.SIGQUIT)
            sent += 1
            if grow:
                deadline = time.time() + 30
                while p.poll() is None and time.time() < deadline and \
                        open(se, errors="replace").read().count("(SIGQUIT) ... done.") < sent:
                    time.sleep(0.05)
        truth_at = None
        while p.poll() is None and time.time() - t0 < 120:
            if truth_at is None and "TRUTH" in open(se, errors="replace").read():
                truth_at = time.time() - t0
            time.sleep(0.05)
        r = reap(ctx, p, so, se, cmd)
        return r, truth_at if truth_at is not None else time.time() - t0, time.time() - t0, sent

    def t_net_slow_listener(ctx):
        ms, dumps = 6000, 4
        # The same work and dumps into a file: what the program's time is
        # with these heap dumps, network aside.
        # As many dumps as make the report larger than the send queue's bound.
        _r, file_work, _e, dumps = run_with_dumps(ctx, "cpu=samples,heap=dump,file=base.hprof.txt", "file", ms,
                                                  dumps, grow=(ctx.path("base.hprof.txt"), QUEUE_BOUND + (2 << 20)))
        slow = SlowListener()
        try:
            r, work, exited, _s = run_with_dumps(ctx, "cpu=samples,heap=dump,net=127.0.0.1:%d" % slow.port,
                                                 "net", ms, dumps)
        finally:
            slow.close()
        problems = []
        if work > file_work * 1.3 + 2:
            problems.append("CpuSplit's own work took %.1f s with the slow listener, %.1f s with file="
                            % (work, file_work))
        if exited - work > FINISH_S + 10:
            problems.append("the JVM took %.1f s to exit after the program's work" % (exited - work))
        m = re.search(r"send queue held at most (\d+) bytes \(bound (\d+)\)", r.stderr)
        if not m or int(m.group(1)) > int(m.group(2)) or int(m.group(2)) != QUEUE_BOUND:
            problems.append("no send-queue note within the bound: %s" % (m.group(0) if m else r.stderr[-300:]))
        g = re.search(r"went away \((it took no data for \d+ s|it was too slow[^)]*)\); writing the profile to "
                      r"(\S+) instead", r.stderr)
        if not g:
            problems.append("stderr does not say the slow listener was given up: %s" % r.stderr[-300:])
        else:
            local = os.path.join(ctx.out, g.group(2))
            size = os.path.getsize(local)
            parse_profile(local)
            # The file= run's report is what net= had to send (before the exit dump).
            report = os.path.getsize(ctx.path("base.hprof.txt"))
            if report < QUEUE_BOUND + (1 << 20):
                problems.append("the report (%d bytes with file=) is not larger than the queue: the bound was not "
                                "tested" % report)
            ctx.note("%d SIGQUIT dumps, report %d bytes with file=; program work %.1f s (%.1f s with file=), JVM "
                     "exit at %.1f s; the listener took %d bytes; queue peak %s; %s; local file %d bytes"
                     % (dumps, report, work, file_work, exited, slow.received,
                        m.group(1) if m else "?", g.group(1), size))
        if problems:
            raise Fail("; ".join(problems))

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

    def t_net_raw(ctx):
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
        if problems:
            raise Fail("; ".join(problems))

    def t_hprof_run(ctx):
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
        if problems:
            raise Fail("; ".join(problems))

    return [
        ("net_text", t_net_text),
        ("net_binary", t_net_binary),
        ("net_absent", t_net_absent),
        ("net_listener_dies", t_net_listener_dies),
        ("net_slow_listener", t_net_slow_listener),
        ("net_raw", t_net_raw),
        ("hprof_run", t_hprof_run),
    ]
