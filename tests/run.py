#!/usr/bin/env python3
"""The tests' shared helpers (the JDKs, a test's Ctx and its JVM runs, the
parsed outputs, the programs' truths, the build's paths) and the command line.

    tests/run.py                 # everything, on every installed JDK (17, 25)
    tests/run.py cpu_split sigq  # only tests whose name contains one of these
    tests/run.py --jdk 17        # only on JDK 17 (repeatable)
    tests/run.py --list          # list test names

The tests are plain pytest tests in tests/test_*.py (tests/conftest.py;
docs/testing.md): this command runs `python3 -m pytest` with its filters as
`--filter NAME` (substrings of the test names), `--jdk N` and `--no-build`,
with an interpreter that has pytest (this one or /usr/bin/python3, Debian's
python3-pytest). Per-test outputs (profiles, stdout, stderr, command line)
are in build/tests/out/<test>-<jdk>/.
"""

import argparse
import glob
import os
import re
import shutil
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


# ---------------------------------------------------------------- programs' truths

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


def marked_line(java_file, marker):
    """The line of tests/java/<java_file> that carries `// <marker>`."""
    with open(os.path.join(TESTS_DIR, "java", java_file)) as f:
        lines = [i + 1 for i, text in enumerate(f) if text.rstrip().endswith("// " + marker)]
    if len(lines) != 1:
        raise Fail("%s has %d lines marked %s" % (java_file, len(lines), marker))
    return lines[0]


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
