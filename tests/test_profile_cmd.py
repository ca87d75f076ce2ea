"""`build/hprof profile` and `build/hprof list` on running JVMs, and
`hprof run` without options (pytest tests, run on each JDK with the ctx
fixture of tests/conftest.py; pprof files read by tests/pprof_reader.py).

    profile_cmd       CpuSplit's work running (CpuSplitUntil, its worker ~70%
                      in partA, ~30% in partB): `hprof list` shows its pid and
                      main class; `hprof profile -d 3 -o F CpuSplitUntil` (by
                      main class) for F = .html, .collapsed, .txt, and for
                      .pb.gz without -d, stopped by SIGINT once the worker
                      has had 2 s of CPU (as many samples on a loaded
                      machine), each exits 0 and prints F's absolute path;
                      the pprof file's partA share of partA+partB is within
                      12 points of 70% (and go tool pprof, where installed,
                      reads the same total); the collapsed and text files
                      name partA; the page is a flame graph; no other file
                      appears in the JVM's directory and no report is left
                      in /tmp; the JVM goes on running and ends normally
                      (exit 0 when the test creates its stop file)
    profile_cmd_lock  Contention running: `hprof profile -e lock -o lock.pb.gz`
                      (and -o lock.collapsed) writes two profiles, as
                      monitor=y's pprof= does: lock.lock.pb.gz (contention,
                      naming Contention$HotLock) and lock.wait.pb.gz (waits),
                      prints both paths, and writes no lock.pb.gz
    profile_cmd_errors  -o with an unknown extension, -e with an unknown
                      event, and a name no JVM runs: exit 2, 2 and 1, with
                      messages naming the extensions, the events and
                      `hprof list`
    run_defaults      `hprof run -- java ...` with no option writes the CPU
                      flame graph hprof-<pid>.html in the working directory
    restart_outputs   attach cpu=samples (no whole-stack output), stop, start again
                      with flamegraph=: the page is written and names partA (it
                      said "has no profile" and left 0 bytes); then `hprof
                      profile -e wall` on the same JVM writes its stacks too
    text_header       the HPROF text header explains the sections the file
                      holds and only those: heap=sites explains SITES, not
                      CPU SAMPLES; monitor=y explains MONITOR TIME; and the
                      file still parses
    dump_progress     `hprof dump` of a heap that takes seconds to dump (BigHeap,
                      8 million objects, heap=all by the walk): its progress lines reach the
                      command's standard error while it waits, not the JVM's,
                      and the answer on standard output follows
    relative_paths    `hprof attach P cpu=samples,file=rel.txt,flamegraph=rel.html`
                      run from another directory than the JVM's: the files
                      are written in the command's directory, where the user
                      looks, and none in the JVM's
    front_formats     `hprof report` of a pprof file and of an HTML page says
                      what the file is and what reads it (not "it holds NUL
                      bytes"); `hprof convert T.txt -o X.collapsed` (no --to)
                      writes collapsed stacks, -o X.pb.gz a pprof file, and an
                      unknown extension is a usage error (exit 2)
"""

import glob
import os
import re
import signal
import subprocess
import threading
import time

import pytest

import hprof_text
import pprof_reader
from hprof_report import HPROF
from run import Fail, parse_profile, reap, spawn
from thread_cpu import wait_thread_cpu


def hprof(args, cwd, timeout=60):
    return subprocess.run([HPROF] + args, capture_output=True, text=True, timeout=timeout, cwd=cwd)


def profile_until_cpu(target, args, cwd, worker_cpu_s, limit_s=90):
    """`hprof profile ARGS` without -d, stopped with SIGINT (Ctrl-C) once
    the target's cpu-worker thread has used worker_cpu_s of CPU since the
    command said it profiles: as many samples on a loaded machine as on an
    idle one. A CompletedProcess-like result."""
    p = subprocess.Popen([HPROF] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    hang_guard = threading.Timer(2 * limit_s, p.kill)     # readline below has no timeout of its own
    hang_guard.start()
    err = ""
    try:
        # it says "profiling JVM N (...) until Ctrl-C" once the agent runs
        err = p.stderr.readline()
        if "until Ctrl-C" in err:
            wait_thread_cpu(target, "cpu-worker", worker_cpu_s, limit_s)
            p.send_signal(signal.SIGINT)
        out, rest = p.communicate(timeout=limit_s)
    finally:
        hang_guard.cancel()
        if p.poll() is None:
            p.kill()
            p.wait()
    return subprocess.CompletedProcess(p.args, p.returncode, out, err + rest)


def test_profile_cmd(ctx):
    stop = ctx.path("target.stop")
    # CpuSplitUntil: CpuSplit's work, ended by the stop file (120 s of the
    # worker's CPU at most: the test takes about 20); a main class no other
    # test runs, for `hprof profile CpuSplitUntil`
    p, so, se, cmd = spawn(ctx, "CpuSplitUntil", [stop, "120000"], None, "target")
    problems = []
    try:
        wait_thread_cpu(p, "cpu-worker", 1.0)
        listed = hprof(["list"], ctx.out)
        if not re.search(r"^%d CpuSplitUntil$" % p.pid, listed.stdout, re.M):
            problems.append("hprof list does not show '%d CpuSplitUntil': %r" % (p.pid, listed.stdout[-300:]))
        here = os.path.join(ctx.out, "elsewhere")
        os.makedirs(here, exist_ok=True)
        before = set(os.listdir(ctx.out))
        for name in ("cpu.html", "cpu.pb.gz", "cpu.collapsed", "cpu.txt"):
            if name == "cpu.pb.gz":
                # the file whose shares are judged: 2 s of the worker's CPU, 200 samples
                r = profile_until_cpu(p, ["profile", "-o", name, "CpuSplitUntil"], here, 2.0)
            else:
                r = hprof(["profile", "-d", "3", "-o", name, "CpuSplitUntil"], here)
            want = os.path.join(here, name)
            ctx.note("profile -o %s: rc %d, stdout %r, stderr %r" % (name, r.returncode, r.stdout.strip(),
                                                                     r.stderr.strip()[-200:]))
            if r.returncode != 0 or r.stdout.strip() != want:
                problems.append("profile -o %s: rc %d, printed %r (want %s); %s"
                                % (name, r.returncode, r.stdout.strip(), want, r.stderr.strip()[-300:]))
            elif os.path.getsize(want) == 0:
                problems.append("%s is empty" % want)
        extra = set(os.listdir(ctx.out)) - before      # before go tool pprof writes its own
        if extra:
            problems.append("files left in the JVM's directory: %s" % sorted(extra))
        assert not problems, "; ".join(problems)
        pp = pprof_reader.read_pprof(os.path.join(here, "cpu.pb.gz"))
        k = pp.index("samples")
        a = sum(v[k] for fr, v, _ in pp.samples if any(f[0].endswith("CpuSplit.partA") for f in fr))
        b = sum(v[k] for fr, v, _ in pp.samples if any(f[0].endswith("CpuSplit.partB") for f in fr))
        share = a / float(a + b) if a + b else 0
        ctx.note("pprof: partA %d, partB %d samples: %.1f%% (truth ~70%%)" % (a, b, 100 * share))
        if a + b < 100 or abs(share - 0.7) > 0.12:
            problems.append("pprof: expected at least 100 samples in partA+partB and partA 58-82%%, found "
                            "partA %d, partB %d samples (%.0f%%)" % (a, b, 100 * share))
        # The file as go tool pprof reads it (where go is installed).
        got = pprof_reader.go_pprof_total(ctx, os.path.join(here, "cpu.pb.gz"), "samples")
        if got is not None:
            rc, total, out = got
            ctx.note("go tool pprof: rc %d, %s samples in total" % (rc, total))
            if rc != 0 or total != pp.total("samples") or "CpuSplit.partA" not in out:
                problems.append("go tool pprof -top: rc %d, total %s (file %d), partA %s"
                                % (rc, total, pp.total("samples"), "CpuSplit.partA" in out))
        # The collapsed stacks and the text report, read by the strict parsers.
        try:
            stacks = hprof_text.parse_collapsed_file(os.path.join(here, "cpu.collapsed"))
        except hprof_text.ParseError as e:
            stacks = []
            problems.append("cpu.collapsed: expected collapsed stacks: %s" % e)
        if not any("CpuSplit.partA" in frames for frames, _ in stacks):
            problems.append("cpu.collapsed: expected a stack through CpuSplit.partA, found none of %d" % len(stacks))
        prof = parse_profile(os.path.join(here, "cpu.txt"))
        in_a = prof.samples(prof.final, lambda t: t.has_method("CpuSplit.partA")) if prof.final else 0
        if in_a == 0:
            problems.append("cpu.txt: expected CPU SAMPLES in CpuSplit.partA, found %d sections, none in partA"
                            % len(prof.sections))
        page = open(os.path.join(here, "cpu.html"), encoding="utf-8").read()
        if "<canvas" not in page or "CpuSplit.partA" not in page:
            problems.append("the .html file is not a flame graph naming CpuSplit.partA")
        left = glob.glob("/tmp/hprof-profile-%d-*" % p.pid)
        if left:
            problems.append("reports left in /tmp: %s" % left)
    finally:
        open(stop, "w").close()
        r = reap(ctx, p, so, se, cmd)
    assert not problems, "; ".join(problems)


def test_profile_cmd_lock(ctx):
    p, so, se, cmd = spawn(ctx, "Contention", ["8000", "4000"], None, "target")
    problems = []
    try:
        time.sleep(1.5)
        for name, kinds in (("lock.pb.gz", ("lock.lock.pb.gz", "lock.wait.pb.gz")),
                            ("lock.collapsed", ("lock.lock.collapsed", "lock.wait.collapsed"))):
            r = hprof(["profile", "-d", "2", "-e", "lock", "-o", name, str(p.pid)], ctx.out)
            want = [os.path.join(ctx.out, k) for k in kinds]
            ctx.note("profile -e lock -o %s: rc %d, stdout %r, stderr %r" % (
                name, r.returncode, r.stdout.strip(), r.stderr.strip()[-200:]))
            if r.returncode != 0 or r.stdout.split() != want:
                problems.append("profile -e lock -o %s: rc %d, printed %r (want %s); %s"
                                % (name, r.returncode, r.stdout.strip(), want, r.stderr.strip()[-300:]))
            if os.path.exists(os.path.join(ctx.out, name)):
                problems.append("%s written beside the two profiles" % name)
        assert not problems, "; ".join(problems)
        lock = pprof_reader.read_pprof(os.path.join(ctx.out, "lock.lock.pb.gz"))
        wait = pprof_reader.read_pprof(os.path.join(ctx.out, "lock.wait.pb.gz"))
        ctx.note("lock profile %s, %d contentions; wait profile %s" % (
            lock.sample_types, lock.total("contentions"), wait.sample_types))
        if "Contention$HotLock" not in lock.by_leaf("contentions"):
            problems.append("the lock profile has no Contention$HotLock: %s" % dict(lock.by_leaf("contentions")))
        if [t for t, _ in wait.sample_types] != ["waits", "delay"]:
            problems.append("the wait profile's values are %s, not waits and delay" % wait.sample_types)
        col = open(os.path.join(ctx.out, "lock.lock.collapsed"), encoding="utf-8").read()
        if "Contention$HotLock" not in col:
            problems.append("lock.lock.collapsed does not name Contention$HotLock")
    finally:
        reap(ctx, p, so, se, cmd)
    assert not problems, "; ".join(problems)


def test_profile_cmd_errors(ctx):
    problems = []
    cases = [(["profile", "-o", "x.xyz", "1"], 2, ".pb.gz"),
             (["profile", "-e", "heat", "1"], 2, "cpu, wall, alloc, lock or times"),
             (["profile", "-d", "1", "NoSuchMainClassAnywhere"], 1, "hprof list")]
    for args, rc, says in cases:
        r = hprof(args, ctx.out)
        ctx.note("%s: rc %d: %s" % (" ".join(args), r.returncode, r.stderr.strip().splitlines()[0] if r.stderr else ""))
        if r.returncode != rc or says not in r.stderr:
            problems.append("%s: rc %d (want %d), stderr %r does not say %r"
                            % (" ".join(args), r.returncode, rc, r.stderr[:300], says))
    assert not problems, "; ".join(problems)


def test_run_defaults(ctx):
    java_cmd = ctx.java_cmd("CpuSplit", ["800"], agent=None)
    r = subprocess.run([HPROF, "run", "--"] + java_cmd, capture_output=True, text=True, timeout=120,
                       cwd=ctx.out)
    pages = glob.glob(os.path.join(ctx.out, "hprof-*.html"))
    ctx.note("hprof run -- java ...: rc %d, pages %s" % (r.returncode, [os.path.basename(x) for x in pages]))
    if r.returncode != 0:
        pytest.fail("hprof run: expected exit 0, got %d: %s" % (r.returncode, r.stderr[-300:]))
    if len(pages) != 1 or "CpuSplit.partA" not in open(pages[0], encoding="utf-8").read():
        pytest.fail("hprof run without options wrote no flame graph hprof-<pid>.html naming CpuSplit.partA: %s"
                    % pages)


def test_front_formats(ctx):
    txt, pb, page = ctx.path("t.txt"), ctx.path("t.pb.gz"), ctx.path("t.html")
    ctx.run("CpuSplit", ["600"], agent="cpu=samples,file=%s,pprof=%s,flamegraph=%s" % (txt, pb, page))
    problems = []
    for path, says in ((pb, "gzip-compressed"), (page, "HTML page")):
        r = hprof(["report", path], ctx.out)
        ctx.note("report %s: rc %d: %s" % (os.path.basename(path), r.returncode, r.stderr.strip()[:200]))
        if r.returncode != 1 or says not in r.stderr or "NUL bytes" in r.stderr:
            problems.append("report %s: expected exit 1 and a message saying %r (no 'NUL bytes'), got exit %d, %r"
                            % (os.path.basename(path), says, r.returncode, r.stderr[:300]))
    col = ctx.path("by-ext.collapsed")
    r = hprof(["convert", txt, "-o", col], ctx.out)
    if r.returncode != 0 or not os.path.isfile(col) or "CpuSplit.partA" not in open(col).read():
        problems.append("convert -o .collapsed without --to: expected exit 0 and stacks naming CpuSplit.partA, "
                        "got exit %d, %r" % (r.returncode, r.stderr[:300]))
    out_pb = ctx.path("by-ext.pb.gz")
    r = hprof(["convert", txt, "-o", out_pb], ctx.out)
    if r.returncode != 0:
        problems.append("convert -o .pb.gz without --to: expected exit 0, got %d, %r" % (r.returncode, r.stderr[:300]))
    else:
        pprof_reader.read_pprof(out_pb)
    r = hprof(["convert", txt, "-o", ctx.path("x.xyz")], ctx.out)
    if r.returncode != 2 or "--to" not in r.stderr:
        problems.append("convert -o x.xyz: rc %d (want 2), %r" % (r.returncode, r.stderr[:300]))
    assert not problems, "; ".join(problems)


def test_restart_outputs(ctx):
    p, so, se, cmd = spawn(ctx, "CpuSplit", ["9000"], None, "target")
    problems = []
    try:
        time.sleep(1.5)
        page, wall = ctx.path("att.html"), ctx.path("w.collapsed")
        steps = [["attach", str(p.pid), "cpu=samples,file=%s" % ctx.path("att.txt")], None,
                 ["stop", str(p.pid)],
                 ["start", str(p.pid), "cpu=samples,file=%s,flamegraph=%s" % (ctx.path("att2.txt"), page)],
                 None, ["stop", str(p.pid)],
                 ["profile", "-d", "2", "-e", "wall", "-o", wall, str(p.pid)]]
        for step in steps:
            if step is None:
                time.sleep(1.5)
                continue
            r = hprof(step, ctx.out)
            ctx.note("%s: rc %d %s" % (" ".join(step[:1]), r.returncode, (r.stdout + r.stderr).strip()[-200:]))
            if r.returncode != 0 or "has no profile" in r.stdout + r.stderr:
                problems.append("%s: expected exit 0 and no 'has no profile', got exit %d: %s"
                                % (" ".join(step), r.returncode, (r.stdout + r.stderr)[-300:]))
        for path, name in ((page, "CpuSplit.partA"), (wall, "CpuSplit")):
            text = open(path, encoding="utf-8").read() if os.path.isfile(path) else ""
            if name not in text:
                problems.append("%s (%d bytes) does not name %s" % (path, len(text), name))
    finally:
        r = reap(ctx, p, so, se, cmd)
    if "has no profile" in open(se, encoding="utf-8", errors="replace").read():
        problems.append("the JVM's stderr says a collector has no profile")
    assert not problems, "; ".join(problems)


def test_text_header(ctx):
    problems = []
    for agent, want, never in (("heap=sites", "SITES           allocation sites", "CPU SAMPLES     "),
                               ("monitor=y", "MONITOR TIME    time threads waited", "CPU SAMPLES     "),
                               ("cpu=samples", "CPU SAMPLES     a profile", "SITES           ")):
        path = ctx.path(agent.split("=")[0] + ".txt")
        ctx.run("CpuSplit", ["300"], agent="%s,file=%s" % (agent, path))
        text = open(path, encoding="utf-8", errors="replace").read()
        header = text.split("\n--------\n", 1)[0]
        if want not in header or never in header:
            problems.append("%s: the header %s %r and %s %r" % (agent, "lacks" if want not in header else "has",
                                                               want, "has" if never in header else "lacks", never))
        parse_profile(path)
    assert not problems, "; ".join(problems)


def test_dump_progress(ctx):
    stop, dump = ctx.path("stop"), ctx.path("big.hprof")
    p, so, se, cmd = spawn(ctx, "BigHeap", ["8", "90000", stop], None, "target", jvm=["-Xmx2g"])
    problems = []
    try:
        deadline = time.time() + 60
        while time.time() < deadline and "READY" not in open(so, errors="replace").read():
            time.sleep(0.2)
        # heap=all by the agent's own walk, which takes seconds here (the
        # JVM's own dumper, which heap=dump and heap=all use by default, is
        # done in under 2 s).
        r = hprof(["attach", str(p.pid), "heap=all,format=b,heap_dumper=walk,file=%s" % dump], ctx.out)
        if r.returncode != 0:
            pytest.fail("attach: expected exit 0, got %d: %s" % (r.returncode, r.stderr[-300:]))
        r = hprof(["dump", str(p.pid)], ctx.out, timeout=300)
        progress = [l for l in r.stderr.splitlines() if "heap dump:" in l and "so far" in l]
        ctx.note("dump: rc %d; %d progress lines on its stderr; stdout %r" % (r.returncode, len(progress),
                                                                            r.stdout.strip()[-200:]))
        if r.returncode != 0:
            problems.append("dump: expected exit 0, got %d: %s" % (r.returncode, r.stderr[-300:]))
        if not progress:
            problems.append("hprof dump showed no progress while the heap dump ran: stderr %r" % r.stderr[-300:])
        if "so far" in r.stdout:
            problems.append("progress lines repeated in the answer on stdout")
    finally:
        open(stop, "w").close()
        reap(ctx, p, so, se, cmd)
        os.unlink(dump) if os.path.exists(dump) else None     # hundreds of MB
    if "so far" in open(se, errors="replace").read():
        problems.append("the progress went to the JVM's standard error too")
    assert not problems, "; ".join(problems)


def test_relative_paths(ctx):
    here = os.path.join(ctx.out, "user-dir")
    os.makedirs(here, exist_ok=True)
    p, so, se, cmd = spawn(ctx, "CpuSplit", ["4000"], None, "target")
    problems = []
    try:
        time.sleep(1.5)
        for step in (["attach", str(p.pid), "cpu=samples,file=rel.txt,flamegraph=rel.html"], ["stop", str(p.pid)]):
            r = hprof(step, here)
            if r.returncode != 0:
                problems.append("%s: expected exit 0, got %d: %s"
                                % (step[0], r.returncode, (r.stdout + r.stderr)[-300:]))
            elif step[0] == "attach" and os.path.join(here, "rel.txt") not in r.stdout:
                problems.append("attach does not name the absolute path: %r" % r.stdout[-300:])
    finally:
        reap(ctx, p, so, se, cmd)
    for name in ("rel.txt", "rel.html"):
        if not os.path.isfile(os.path.join(here, name)):
            problems.append("%s not in the command's directory" % name)
        if os.path.exists(os.path.join(ctx.out, name)):
            problems.append("%s written in the JVM's directory" % name)
    assert not problems, "; ".join(problems)

