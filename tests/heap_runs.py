"""Driving a test program that stops at READY lines and waits for go files
(HeapShape, HeapRetain, HeapLeak, HeapGrow, ClassChurn take their go files as
their arguments): at its n-th READY line the test acts (a SIGQUIT dump, `jcmd
GC.heap_dump`, `hprof dump`), then go file n lets it go on. Shared by
tests/test_heap.py, test_heap_analyze.py and test_heap_text.py (no tests here),
with `build/hprof heap` and the sizes HeapRetain's heap is known to have.

    def at_ready(n, prog):
        prog.sigquit_dump(n)          # SIGQUIT, then the agent's n-th "done."
    run_with_go_files(ctx, "HeapGrow", [go1, go2], "heap=all,file=...", at_ready, "grow")
"""

import os
import signal
import subprocess
import time

from run import BUILD, Fail, Run, read, tail

HPROF = os.path.join(BUILD, "hprof")


class GoRun:
    """A program started by run_with_go_files: its pid and the paths of its
    standard output and error."""

    def __init__(self, main, p, stdout, stderr):
        self.main, self.p, self.pid = main, p, p.pid
        self.stdout, self.stderr = stdout, stderr

    def sigquit_dump(self, nth, seconds=120):
        """SIGQUIT, then wait for the agent's nth "done." on standard error
        (other messages may come between "Dumping ..." and it)."""
        os.kill(self.pid, signal.SIGQUIT)
        deadline = time.time() + seconds
        while read(self.stderr).count("done.") < nth:
            if time.time() > deadline:
                raise Fail("%s: the agent's SIGQUIT dump %d did not finish within %d s" % (self.main, nth, seconds))
            if self.p.poll() is not None:
                raise Fail("%s exited (rc %d) during the SIGQUIT dump %d: %s"
                           % (self.main, self.p.returncode, nth, tail(read(self.stderr))))
            time.sleep(0.1)


def _release(gos):
    for g in gos:
        open(g, "w").close()


def run_with_go_files(ctx, main, gos, agent, at_ready, tag, cwd=None, ready_seconds=60):
    """main run with gos as its arguments and the agent's options (None:
    without the agent), in cwd (default the test's directory), its output in
    <cwd>/<tag>.stdout and .stderr. At its n-th READY line at_ready(n, GoRun),
    then go file n. Fails if it is not READY in time, crashes, does not exit
    within 120 s of its go files, or exits with a code other than 0. The GoRun."""
    cwd = cwd or ctx.out
    for g in gos:
        if os.path.exists(g):
            os.remove(g)
    cmd = ctx.java_cmd(main, gos, agent=agent)
    so, se = os.path.join(cwd, tag + ".stdout"), os.path.join(cwd, tag + ".stderr")
    with open(os.path.join(cwd, tag + ".cmd"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    with open(so, "wb") as fo, open(se, "wb") as fe:
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, cwd=cwd)
    prog = GoRun(main, p, so, se)
    try:
        for n, go in enumerate(gos, 1):
            deadline = time.time() + ready_seconds
            while read(so).count("READY") < n:
                if p.poll() is not None:
                    raise Fail("%s exited (rc %d) before READY %d: %s" % (main, p.returncode, n, tail(read(se))))
                if time.time() > deadline:
                    raise Fail("%s not READY %d within %d s: %s" % (main, n, ready_seconds, tail(read(se))))
                time.sleep(0.05)
            at_ready(n, prog)
            open(go, "w").close()
    except BaseException:
        # The test's failure is the one to report; the program only has to go.
        _release(gos)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        raise
    _release(gos)
    try:
        rc = p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise Fail("%s did not exit within 120 s after its go files appeared" % main)
    ctx.check_crash(Run(rc, read(so), read(se), p.pid, cmd))
    if rc != 0:
        raise Fail("%s exit code %d (expected 0): %s" % (main, rc, tail(read(se), 5)))
    return prog


def hprof_heap(path, *args, expect_rc=0):
    """`build/hprof heap PATH ARGS...`, its exit code expect_rc; the
    CompletedProcess (text)."""
    r = subprocess.run([HPROF, "heap", path] + list(args), capture_output=True, text=True, timeout=300)
    if r.returncode != expect_rc:
        raise Fail("hprof heap %s %s: expected exit %d, found %d: %s" % (
            os.path.basename(path), " ".join(args), expect_rc, r.returncode, r.stderr[-600:]))
    return r


# What tests/java/HeapRetain.java builds (compressed oops: 12-byte headers,
# 4-byte references): the answer `hprof heap` must find in its dumps.
BYTES = 1000000
ENTRIES, RING, GRID_ROWS, GRID_COLS = 100, 50, 20, 500
BYTE_ARRAY = 16 + BYTES                     # header 12, length 4
C_RETAINED = 16 + BYTE_ARRAY
D_RETAINED = 16 + C_RETAINED
ENTRY_RETAINED = 16 + (16 + 8 * 1000)       # Entry and its long[1000]
RING_RETAINED = RING * (24 + (16 + 4 * 100))
GRID_RETAINED = (16 + 4 * GRID_ROWS + 7) // 8 * 8 + GRID_ROWS * (16 + 4 * GRID_COLS)
