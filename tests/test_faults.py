"""Faults (pytest tests, run on each JDK with the ctx fixture of
tests/conftest.py; docs/testing.md "Faults"). Each starts real
JVMs with the agent on tests/java/Faults.java (or another test program) and
checks the one line that tells the user what happened.

    faults_file_size_limit  heap=dump (binary, then text) under a 1 MiB file
                            size limit (RLIMIT_FSIZE, SIGXFSZ ignored as
                            HotSpot does): the application ends normally, the
                            agent says "could not write all of <file> (file=):
                            File too large; the incomplete file was removed.
                            Raise the file size limit (ulimit -f) ..." and no
                            file is left under the output name
    faults_disk_full        a 1 MiB tmpfs (mounted in a private mount
                            namespace: unshare -m as root, else -Urm; SKIP
                            where neither works) as the output directory:
                            binary and text heap dumps that do not fit, and a
                            cpu=samples report on a disk already full: the
                            application ends normally, one line says "could
                            not write all of <file> (file=): No space left on
                            device; the incomplete file was removed. Free some
                            space or choose another file= ...", and the
                            directory (listed inside the namespace) holds no
                            file under the output name
    faults_exit_mid_command the VM exits (System.exit) while `hprof dump
                            <pid> file=` writes a binary heap dump of
                            2,000,000 objects (the program waits for the file
                            to appear): no crash, no hang; the command's file
                            is complete (hprof report reads it) or removed,
                            with the user told which; the report at exit is
                            complete
    faults_sigterm          cpu=samples, SIGTERM mid-run: exit 143 and a
                            complete report (hprof report reads it; the
                            samples are in LongRun.spin)
    faults_sigint           the same with SIGINT (exit 130), format=b
    faults_sigkill_mid_dump heap=all by the walk (binary), heap=dump (text) killed with SIGKILL
                            while the dump at exit is being written: hprof
                            report and hprof convert exit 1 and say the file
                            is truncated
    faults_cut_at_records   binary files of cpu=samples and heap=dump cut at
                            record boundaries (a writer killed between two
                            records): hprof report refuses each as truncated,
                            except right after a thread record (counted)
    faults_oom              the application dies of an OutOfMemoryError with
                            its heap still full (the JVM then usually never
                            posts VMDeath): the agent says so in one line and
                            writes the last dump (or, when VMDeath comes after
                            all, the ordinary exit dump); the SITES show
                            Faults.grow, a binary heap dump is complete
    faults_loaded_twice     -agentpath given twice: the JVM does not start,
                            one line says the agent is loaded twice with both
                            option strings; no crash
    faults_xcheck_jni       every collector under -Xcheck:jni on the test
                            programs that drive it: no JNI warning line that
                            the same program without the agent does not print
"""

import os
import re
import resource
import signal
import subprocess
import struct
import time

import pytest

from hprof_report import HPROF
from run import AGENT, TIMEOUT, read, reap, spawn


def wait_for(p, path, pattern, seconds=60, poll=0.05):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if re.search(pattern, read(path)):
            return True
        if p.poll() is not None:
            return False
        time.sleep(poll)
    return False


def hprof(*args):
    return subprocess.run([HPROF] + list(args), capture_output=True, text=True, timeout=300)


def one_line(stderr, pattern, what):
    lines = [l for l in stderr.splitlines() if re.search(pattern, l)]
    if len(lines) != 1:
        pytest.fail("expected one line matching %r (%s), found %d; stderr: %s"
                    % (pattern, what, len(lines), stderr[-800:]))
    return lines[0]


def test_faults_file_size_limit(ctx):
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    for fmt, opts, name in (("b", "heap=dump,format=b", "limited.hprof"), ("a", "heap=dump", "limited.txt")):
        path = ctx.path(name)
        p, so, se, cmd = spawn(ctx, "Faults", ["heap", "200000"], "%s,file=%s" % (opts, path),
                               tag="fsize-" + fmt, preexec=limit)
        r = reap(ctx, p, so, se, cmd, 0)
        if "Faults: READY 200000" not in r.stderr:
            pytest.fail("format=%s: expected the application to run to its end (Faults: READY 200000), "
                        "stderr: %s" % (fmt, r.stderr[-400:]))
        one_line(r.stderr, r"^hprof: could not write all of %s \(file=\): File too large; the incomplete "
                 r"file was removed\. Raise the file size limit \(ulimit -f\)" % re.escape(path),
                 "format=%s" % fmt)
        left = [f for f in os.listdir(ctx.out) if f.startswith(name)]
        if left:
            pytest.fail("format=%s: files left under the output name: %s" % (fmt, left))
    ctx.note("1 MiB limit: binary and text heap dumps refused in one line, nothing left")


def unshare_prefix():
    """A command prefix that runs in a private mount namespace, or None."""
    for prefix in (["unshare", "-m"], ["unshare", "-Urm"]):
        try:
            r = subprocess.run(prefix + ["sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt && echo ok"],
                               capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode == 0 and r.stdout.strip() == "ok":
            return prefix
    return None


def test_faults_disk_full(ctx):
    prefix = unshare_prefix()
    if prefix is None:
        pytest.skip("cannot mount a small tmpfs in a private mount namespace here (unshare -m / -Urm): "
                   "disk full not tested (the file size limit test covers the same path with EFBIG)")
    cases = (("heap=dump,format=b", ["heap", "200000"], "full.hprof", ""),
             ("heap=dump", ["heap", "200000"], "full.txt", ""),
             # the disk full before the agent writes anything
             ("cpu=samples", ["spin", "1500"], "samples.txt", "dd if=/dev/zero of=$D/filler bs=4k 2>/dev/null; "))
    notes = []
    for opts, args, name, prefill in cases:
        d = ctx.path("fulldisk-" + name.replace(".", "-"))
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, name)
        java = ctx.java_cmd("Faults", args, agent="%s,file=%s" % (opts, path))
        script = ('D=%s; mount -t tmpfs -o size=1m tmpfs "$D" || exit 99; %s"$@"; rc=$?; '
                  'echo "LISTING:"; ls -A "$D"; exit $rc' % (d, prefill))
        r = subprocess.run(prefix + ["sh", "-c", script, "sh"] + java, capture_output=True, text=True,
                           timeout=TIMEOUT, cwd=ctx.out)
        with open(os.path.join(d + ".stderr"), "w") as f:
            f.write(r.stderr)
        if r.returncode == 99:
            pytest.fail("%s: the tmpfs could not be mounted: %s" % (opts, r.stderr[-300:]))
        if r.returncode != 0:
            pytest.fail("%s: expected exit 0 (the program's own), got %d: %s" % (opts, r.returncode, r.stderr[-600:]))
        if "Faults: done" not in r.stderr and "Faults: READY" not in r.stderr:
            pytest.fail("%s: the application did not run to its end: %s" % (opts, r.stderr[-400:]))
        one_line(r.stderr, r"^hprof: could not write all of %s \(file=\): No space left on device; "
                 r"the incomplete file was removed\. Free some space or choose another file=" % re.escape(path),
                 opts)
        about = [l for l in r.stderr.splitlines() if path in l]
        if len(about) != 1:
            pytest.fail("%s: expected one line naming the file, found %d: %s" % (opts, len(about), " | ".join(about)))
        listing = r.stdout.split("LISTING:\n", 1)[-1].split()
        left = [f for f in listing if f.startswith(name)]
        if left:
            pytest.fail("%s: files left under the output name on the full disk: %s" % (opts, left))
        notes.append("%s: removed, %d file(s) left in the directory %s" % (opts, len(listing), listing))
    ctx.note("1 MiB tmpfs (%s): %s" % (" ".join(prefix), "; ".join(notes)))


def test_faults_exit_mid_command(ctx):
    main, side = ctx.path("main.hprof"), ctx.path("side.hprof")
    p, so, se, cmd = spawn(ctx, "Faults", ["exitwhen", "2000000", side],
                           "heap=dump,format=b,file=" + main, jvm=["-Xmx1g"], tag="exitwhen")
    if not wait_for(p, se, r"Faults: READY", seconds=120):
        p.kill()
        p.wait()
        pytest.fail("Faults did not start: %s" % read(se)[-400:])
    t0 = time.time()
    dump = subprocess.run([HPROF, "dump", str(p.pid), "file=" + side], capture_output=True, text=True,
                          timeout=300)
    r = reap(ctx, p, so, se, cmd, 0)
    if "Faults: exiting, the file exists" not in r.stderr:
        pytest.fail("the VM did not exit while the dump was being written: %s" % r.stderr[-400:])
    said = (dump.stdout + dump.stderr).strip().replace("\n", " | ")
    problems = []
    if os.path.exists(side):
        rep = hprof("report", side)
        if rep.returncode != 0:
            problems.append("the command's file %s is left and unreadable (hprof report rc %d: %s)"
                            % (side, rep.returncode, rep.stderr.strip()[-200:]))
        outcome = "the command's file is complete (%d bytes)" % os.path.getsize(side)
    else:
        outcome = "the command's file was removed"
        if not re.search(r"removed|incomplete|exit", said + " " + r.stderr, re.I):
            problems.append("the command's file is gone and nobody said why: hprof said %r" % said[-300:])
    rep = hprof("report", main)
    if rep.returncode != 0:
        problems.append("the report at exit is not readable: %s" % rep.stderr.strip()[-200:])
    ctx.note("hprof dump: rc %d after %.1f s (%s); %s; the report at exit is %s"
             % (dump.returncode, time.time() - t0, said[-160:], outcome,
                "readable" if rep.returncode == 0 else "NOT readable"))
    assert not problems, "; ".join(problems)


def signal_run(ctx, sig, want_rc, fmt):
    """cpu=samples (format=fmt) killed by sig mid-run: exit want_rc and a complete report."""
    path = ctx.path("sig.hprof" + (".txt" if fmt == "a" else ""))
    opts = "cpu=samples,file=%s%s" % (path, ",format=b" if fmt == "b" else "")
    # The signal's default action in the JVM: a test runner started in
    # the background (`cmd &`) has SIGINT ignored, the JVM would keep
    # that, and the signal would do nothing.
    p, so, se, cmd = spawn(ctx, "Faults", ["spin", "60000"], opts, tag="signal",
                           preexec=lambda: signal.signal(sig, signal.SIG_DFL))
    if not wait_for(p, se, r"Faults: READY"):
        pytest.fail("Faults did not start: %s" % read(se)[-400:])
    time.sleep(2)                           # some samples first
    p.send_signal(sig)
    r = reap(ctx, p, so, se, cmd, want_rc)
    if "Faults: done" in r.stderr:
        pytest.fail("the program ran to its end: the signal came too late")
    if not re.search(r"Dumping the profile \(exit\) \.\.\..* done\.", r.stderr, re.S):
        pytest.fail("no complete dump at exit said on stderr: %s" % r.stderr[-400:])
    rep = hprof("report", path)
    if rep.returncode != 0:
        pytest.fail("hprof report on the file after %s: expected exit 0, got %d: %s"
                    % (sig.name, rep.returncode, rep.stderr))
    m = re.search(r"CPU samples: ([\d,]+) samples", rep.stdout)
    if not m or int(m.group(1).replace(",", "")) == 0 or "LongRun.spin" not in rep.stdout:
        pytest.fail("the report after %s: expected samples in LongRun.spin, found: %s" % (sig.name, rep.stdout[:600]))
    ctx.note("%s: exit %d, report complete, %s samples" % (sig.name, want_rc, m.group(1)))


def test_faults_sigterm(ctx):
    signal_run(ctx, signal.SIGTERM, 143, "a")


def test_faults_sigint(ctx):
    signal_run(ctx, signal.SIGINT, 130, "b")


def test_faults_sigkill_mid_dump(ctx):
    # Binary: heap=all by the agent's walk, whose dump the agent streams
    # into the file itself (the JVM's dumper, heap=dump's and heap=all's
    # by default, writes to a staging file first: docs/heap.md).
    for fmt, opts, name in (("b", "heap=all,format=b,heap_dumper=walk", "killed.hprof"), ("a", "heap=dump", "killed.txt")):
        path = ctx.path(name)
        p, so, se, cmd = spawn(ctx, "Faults", ["heap", "3000000"], "%s,file=%s" % (opts, path),
                               jvm=["-Xmx1g"], tag="kill-" + fmt)
        # "Dumping the profile (exit) ..." comes before any section is
        # written. The binary file then grows record by record: kill it
        # once 8 MB more is there (or the progress line, every 2 s, says
        # the heap dump is under way), not at a time guessed from the
        # machine's speed (a quiet machine wrote 124 MB in under 2 s). The
        # text format writes its heap dump to a staging file first: the
        # file under the output name is then still empty.
        if not wait_for(p, se, r"Dumping the profile \(exit\) \.\.\.", seconds=120, poll=0.002):
            p.kill()
            p.wait()
            pytest.fail("format=%s: the exit dump never started: %s" % (fmt, read(se)[-400:]))
        if fmt == "b":
            base = os.path.getsize(path)
            while (p.poll() is None and os.path.getsize(path) < base + (8 << 20)
                   and not re.search(r"hprof: heap dump: \d+ objects", read(se))):
                time.sleep(0.002)
        p.send_signal(signal.SIGKILL)
        p.wait()
        if "Dumping the profile (exit) ... done." in read(se):
            pytest.fail("format=%s: the dump ended before SIGKILL came: nothing was tested" % fmt)
        size = os.path.getsize(path)
        for args in (["report", path], ["convert", path, "--to", "collapsed", "-o", ctx.path("k.collapsed")]):
            res = hprof(*args)
            if res.returncode != 1 or "truncated" not in res.stderr:
                pytest.fail("format=%s: hprof %s on the %d bytes left by SIGKILL: rc %d (expected 1 and "
                            "'truncated'): %s" % (fmt, args[0], size, res.returncode, res.stderr[-400:]))
        ctx.note("format=%s: killed at %d bytes; report and convert: %s" % (fmt, size, res.stderr.strip()))


def record_ends(data):
    """(end offset, tag) of each record of a binary HPROF file."""
    at, ends = data.index(b"\0") + 1 + 12, []
    while at + 9 <= len(data):
        tag, _, length = struct.unpack(">BII", data[at:at + 9])
        at += 9 + length
        ends.append((at, tag))
    return ends


def test_faults_cut_at_records(ctx):
    # Binary HPROF has no end mark: a writer killed between two records
    # leaves records that are each whole. The reader must still not
    # take such a file for a whole one, except where nothing can tell
    # (cut right after a thread record: a known limit, counted).
    files = []
    for name, main, args, opts in (("cpu.hprof", "CpuSplit", ["300"], "cpu=samples,format=b"),
                                   ("dump.hprof", "HeapShape", [], "heap=dump,format=b")):
        path = ctx.path(name)
        ctx.run(main, args, agent="%s,file=%s" % (opts, path), tag=name)
        files.append(path)
    cut = ctx.path("cut.hprof")
    whole, refused, undetectable = [], 0, 0
    for path in files:
        data = open(path, "rb").read()
        ends = record_ends(data)
        if not ends or ends[-1][0] != len(data):
            pytest.fail("%s is not whole to begin with" % path)
        # Every boundary of the small file; in the heap dump every 25th and
        # every one between its segments.
        for i, (end, tag) in enumerate(ends[:-1]):
            if len(ends) > 400 and i % 25 and tag != 0x1c:
                continue
            with open(cut, "wb") as f:
                f.write(data[:end])
            r = hprof("report", cut)
            if r.returncode != 0 and "truncated" in r.stderr:
                refused += 1
            elif tag in (0x0a, 0x0b):
                undetectable += 1
            else:
                whole.append("%s cut at %d after tag 0x%02x: rc %d %s"
                             % (os.path.basename(path), end, tag, r.returncode, r.stderr.strip()[:200]))
    if whole:
        pytest.fail("expected every cut refused as truncated; %d read as whole (or refused without 'truncated'): %s"
                    % (len(whole), "; ".join(whole[:4])))
    ctx.note("%d cuts at record boundaries refused as truncated; %d right after a thread record "
             "cannot be told from a whole file" % (refused, undetectable))


def test_faults_oom(ctx):
    path = ctx.path("oom.txt")
    p, so, se, cmd = spawn(ctx, "Faults", ["oom"], "cpu=samples,heap=sites,depth=4,file=" + path,
                           tag="oom", jvm=["-Xmx64m"])
    r = reap(ctx, p, so, se, cmd, 1)
    if "OutOfMemoryError" not in r.stderr:
        pytest.fail("expected the application to die of an OutOfMemoryError, stderr: %s" % r.stderr[-400:])
    # Usually the JVM, its heap still full, never posts VMDeath and the
    # agent writes the last dump from its exit hook, saying so. With one
    # CPU (taskset -c 0; the JVM then picks the serial collector) the
    # shutdown found room and VMDeath came, on JDK 17 and 25: the
    # ordinary exit dump, which is as good for the user.
    no_death = r"^hprof: the process is exiting without the JVM's end \(an OutOfMemoryError\?\); " \
               r"writing the last dump now$"
    if re.search(no_death, r.stderr, re.M):
        one_line(r.stderr, no_death, "the exit without VMDeath")
        how = "without VMDeath (the exit hook's dump)"
    else:
        one_line(r.stderr, r"^Dumping the profile \(exit\) \.\.\. done\.$", "the exit dump after VMDeath")
        how = "VMDeath came (the ordinary exit dump)"
    rep = hprof("report", path)
    if rep.returncode != 0 or "Faults.grow" not in rep.stdout:
        pytest.fail("hprof report after the OutOfMemoryError: expected exit 0 and Faults.grow; "
                    "exit %d, Faults.grow %s: %s"
                    % (rep.returncode, "found" if "Faults.grow" in rep.stdout else "missing", rep.stderr))
    dump = ctx.path("oom.hprof")
    p, so, se, cmd = spawn(ctx, "Faults", ["oom"], "heap=dump,format=b,file=" + dump, jvm=["-Xmx64m"],
                           tag="dump")
    reap(ctx, p, so, se, cmd, 1)
    rep = hprof("report", dump)
    if rep.returncode != 0:
        pytest.fail("expected hprof report to read the heap dump after the OutOfMemoryError whole: %s" % rep.stderr)
    ctx.note("%s; SITES show Faults.grow; a %d-byte heap dump reads whole" % (how, os.path.getsize(dump)))


def test_faults_loaded_twice(ctx):
    a, b = ctx.path("first.txt"), ctx.path("second.txt")
    p, so, se, cmd = spawn(ctx, "Busy", ["200"], "cpu=samples,file=" + a, tag="twice",
                           jvm=["-agentpath:%s=heap=sites,file=%s" % (AGENT, b)])
    r = reap(ctx, p, so, se, cmd, None)
    if r.rc == 0 or "Busy: done" in r.stdout:
        pytest.fail("expected the JVM to refuse to start with the agent loaded twice; it started (rc %d)" % r.rc)
    one_line(r.stderr, r"^hprof: the agent is loaded twice \(-agentpath/-agentlib given twice: "
             r"'cpu=samples,file=%s' and 'heap=sites,file=%s'\); give all the options to one of them$"
             % (re.escape(a), re.escape(b)), "loaded twice")
    if os.path.exists(b):
        pytest.fail("expected no file of the second load, found %s" % b)


# Programs that drive each collector, with the options for it.
XCHECK = [("CpuSplit", ["400"], "cpu=samples,depth=8"), ("Busy", ["200"], "cpu=times"),
          ("AllocTruth", [], "heap=sites,depth=8"), ("HeapShape", [], "heap=dump,format=b"),
          ("Contention", ["300", "300"], "monitor=y"), ("Deadlocks", ["300"], "monitor=y,deadlock=50"),
          ("ThreadChurn", ["1000", "20", "100000"], "cpu=samples,heap=sites,monitor=y,pprof=x.pb.gz")]
JNI_WARNING = re.compile(r"WARNING.*(JNI|native method)|JNI local refs|FATAL ERROR in native method")


def test_faults_xcheck_jni(ctx):
    problems, runs = [], 0
    for i, (main, args, opts) in enumerate(XCHECK):
        base = ctx.run(main, args, jvm=["-Xcheck:jni"], tag="base%d" % i, timeout=TIMEOUT, expect_rc=None)
        known = set(l for l in (base.stdout + base.stderr).splitlines() if JNI_WARNING.search(l))
        r = ctx.run(main, args, agent="%s,file=%s" % (opts, ctx.path("x%d.out" % i)), jvm=["-Xcheck:jni"],
                    tag="agent%d" % i, timeout=TIMEOUT, expect_rc=base.rc)
        new = [l for l in (r.stdout + r.stderr).splitlines() if JNI_WARNING.search(l) and l not in known]
        if new:
            problems.append("%s %s: %s" % (main, opts, new[:3]))
        runs += 1
    if problems:
        pytest.fail("expected no JNI warning the program without the agent does not print; under -Xcheck:jni: "
                    + "; ".join(problems))
    ctx.note("%d programs and collectors under -Xcheck:jni: no JNI warning" % runs)

