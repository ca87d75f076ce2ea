"""build/hprof, the attach tool (pytest tests, run on each JDK with the ctx fixture of tests/conftest.py), against real JVMs.

The protocol is tested with a stand-in agent, build/tests/echo_agent.so
(tests/attach/echo_agent.c), which appends "echo: <its options>" to the reply
file, or fails with code 7 when the options contain "fail", so these tests
do not depend on the real agent's attach side (written elsewhere).

    attach_cli_round_trip      status with options: exit 0, the agent's text on
                               stdout, the reply file gone, no trigger file left;
                               again on the open socket (start, several option
                               arguments, --agent after the command); reset via
                               HPROF_AGENT; attach sends "start". Attach times
                               noted (the first one includes the SIGQUIT trigger)
    attach_cli_stale_socket    a socket left under the JVM's name by a dead
                               process: removed, the listener started; one of
                               another user (root only): refused, untouched
    attach_cli_agent_error     Agent_OnAttach returns 7: exit 1, its text on
                               stderr; a library HotSpot cannot load and one
                               without Agent_OnAttach (JDK 17 answers status -1,
                               JDK 25 status 0: same message); a missing library
                               stops before anything is sent; SIGINT while
                               waiting for the answer removes the reply file,
                               and so does the JVM dying in Agent_OnAttach
    attach_cli_no_process      a reaped pid: "no process"; usage errors exit 2
    attach_cli_not_a_jvm       `sleep 30`: refused, and still alive (no SIGQUIT)
    attach_cli_attach_disabled -XX:+DisableAttachMechanism: refused, no thread
                               dump on the JVM's stdout (one appears when the
                               test itself sends SIGQUIT: the check can fail)
    attach_cli_other_user      (root only) the tool as nobody on root's JVM:
                               refused, both users named; root on nobody's JVM:
                               works (effective user switched)
    attach_cli_dynamic_loading_off  (JDK 21+) -XX:-EnableDynamicAgentLoading:
                               HotSpot's refusal reported, exit 1
    attach_cli_real_agent      build/hprof attach with the default library
                               (build/libhprof.so): whatever the agent answers,
                               the tool returns and the JVM lives on
"""

import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

from run import BUILD, CLASSES, ROOT

HPROF = os.path.join(BUILD, "hprof")
ECHO_AGENT = os.path.join(BUILD, "tests", "echo_agent.so")
NOBODY = 65534
TOOL_TIMEOUT = 30

RE_REPLY = r"/tmp/hprof-reply\.[A-Za-z0-9]{6}"

built = []


def ensure_built():
    """build/hprof comes with `make` (the built fixture runs it); the echo agent
    is only for these tests."""
    if built:
        return
    r = subprocess.run(["make", "-C", ROOT, "build/hprof", "build/tests/echo_agent.so"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        pytest.fail("make build/hprof build/tests/echo_agent.so failed: %s" % r.stderr[-400:])
    built.append(True)


class Target:
    """A JVM running AttachTarget (prints READY, then sleeps)."""

    def __init__(self, ctx, tag, jvm=(), user=None, ms=20000):
        self.ctx, self.tag = ctx, tag
        cmd = [ctx.java] + list(jvm) + ["-cp", CLASSES, "AttachTarget", str(ms)]
        cwd = ctx.out
        if user is not None:
            # Another user cannot write our output directory: its JVM runs in /tmp.
            cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
            cwd = "/tmp"
        self.cwd = cwd
        self.stdout_path = ctx.path(tag + ".stdout")
        self.stderr_path = ctx.path(tag + ".stderr")
        with open(ctx.path(tag + ".cmd"), "w") as f:
            f.write(" ".join(cmd) + "\n")
        with open(self.stdout_path, "wb") as fo, open(self.stderr_path, "wb") as fe:
            self.p = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, cwd=cwd)
        self.pid = self.p.pid
        deadline = time.time() + 20
        while "READY" not in self.stdout():
            if self.p.poll() is not None:
                pytest.fail("%s exited (rc %s) before READY: %s" % (tag, self.p.returncode, self.stderr()[-300:]))
            if time.time() > deadline:
                self.kill()
                pytest.fail("%s not READY within 20 s" % tag)
            time.sleep(0.02)

    def stdout(self):
        with open(self.stdout_path, errors="replace") as f:
            return f.read()

    def stderr(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    def socket(self):
        return "/proc/%d/root/tmp/.java_pid%d" % (self.pid, self.pid)

    def alive(self):
        return self.p.poll() is None

    def kill(self):
        """SIGTERM first: a JVM that exits normally removes its attach
        socket; SIGKILL would leave it in /tmp for a later JVM of the same
        pid to trip on."""
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
        self.p.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        return False


class Tool:
    def __init__(self, rc, out, err, seconds):
        self.rc, self.out, self.err, self.seconds = rc, out, err, seconds

    def __str__(self):
        return "rc %s, stdout %r, stderr %r" % (self.rc, self.out[-300:], self.err[-300:])


def run_tool(ctx, args, tag, user=None, env=None, timeout=TOOL_TIMEOUT):
    cmd = [HPROF] + [str(a) for a in args]
    if user is not None:
        cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
    full_env = dict(os.environ)
    full_env.pop("HPROF_AGENT", None)
    if env:
        full_env.update(env)
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env,
                           stdin=subprocess.DEVNULL, cwd="/tmp" if user is not None else ctx.out)
    except subprocess.TimeoutExpired:
        pytest.fail("%s: no answer within %d s (the tool hangs)" % (" ".join(cmd), timeout))
    seconds = time.time() - t0
    with open(ctx.path(tag + ".tool"), "w") as f:
        f.write("$ %s\nrc %d, %.3f s\n--- stdout\n%s--- stderr\n%s" % (" ".join(cmd), r.returncode, seconds,
                                                                       r.stdout, r.stderr))
    return Tool(r.returncode, r.stdout, r.stderr, seconds)


def expect(tool, rc, what):
    if tool.rc != rc:
        pytest.fail("%s: expected exit %d, got %s" % (what, rc, tool))


def no_leftovers(ctx, target, problems):
    """No trigger file in the JVM's directory or /tmp after the tool ran."""
    left = glob.glob(os.path.join(target.cwd, ".attach_pid*")) + glob.glob("/tmp/.attach_pid%d" % target.pid)
    if left:
        problems.append("trigger files left behind: %s" % ", ".join(left))


def echoed(tool, command, options):
    """The reply path from 'echo: <command>,reply=<path>[,<options>]', checked."""
    want = r"^echo: %s,reply=(%s)%s\n\Z" % (re.escape(command), RE_REPLY,
                                             ("," + re.escape(options)) if options else "")
    m = re.match(want, tool.out)
    if not m:
        pytest.fail("stdout %r does not match %r (stderr %r)" % (tool.out, want, tool.err))
    if os.path.exists(m.group(1)):
        pytest.fail("reply file %s still exists after the tool ended" % m.group(1))
    return m.group(1)

# ------------------------------------------------------------ tests


def test_attach_cli_round_trip(ctx):
    ensure_built()
    problems = []
    with Target(ctx, "target") as jvm:
        if os.path.exists(jvm.socket()):
            # Left by a killed process that had this pid before (nothing
            # listens on it): out of the way, or the trigger goes untested.
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(jvm.socket())
                pytest.fail("%s accepts connections before the first attach" % jvm.socket())
            except ConnectionRefusedError:
                os.unlink(jvm.socket())
                ctx.note("removed a stale %s left by an earlier process" % jvm.socket())
            finally:
                probe.close()
        first = run_tool(ctx, ["--agent", ECHO_AGENT, "status", jvm.pid, "cpu=samples"], "first")
        expect(first, 0, "first attach")
        echoed(first, "status", "cpu=samples")
        if first.err:
            problems.append("stderr not empty on success: %r" % first.err)
        if not os.path.exists(jvm.socket()):
            problems.append("no attach socket after the first attach")
        no_leftovers(ctx, jvm, problems)

        # The listener runs now: straight to the socket.
        second = run_tool(ctx, ["start", "--agent", ECHO_AGENT, jvm.pid, "cpu=samples", "interval=1"], "second")
        expect(second, 0, "second attach")
        echoed(second, "start", "cpu=samples,interval=1")

        third = run_tool(ctx, ["reset", jvm.pid], "third", env={"HPROF_AGENT": ECHO_AGENT})
        expect(third, 0, "reset with HPROF_AGENT")
        echoed(third, "reset", "")
        fourth = run_tool(ctx, ["attach", jvm.pid], "fourth", env={"HPROF_AGENT": ECHO_AGENT})
        expect(fourth, 0, "attach with HPROF_AGENT")
        echoed(fourth, "start", "")
        time.sleep(0.1)
        if not jvm.alive():
            problems.append("the JVM died (rc %s): %s" % (jvm.p.returncode, jvm.stderr()[-300:]))
        if "Full thread dump" in jvm.stdout():
            problems.append("the JVM printed a thread dump: SIGQUIT without the trigger file")
    ctx.note("attach latency (tool start to exit, %s): first %.0f ms (SIGQUIT trigger), then %.0f, %.0f, %.0f ms"
             % (ctx.jdk_name, first.seconds * 1000, second.seconds * 1000, third.seconds * 1000,
                fourth.seconds * 1000))
    if problems:
        pytest.fail("; ".join(problems))


def test_attach_cli_stale_socket(ctx):
    ensure_built()
    problems = []
    with Target(ctx, "target") as jvm:
        path = "/tmp/.java_pid%d" % jvm.pid

        def plant(uid):
            """A socket file nobody listens on, as a killed process leaves."""
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)
            s.close()
            os.chown(path, uid, uid)
        if os.geteuid() == 0:
            # Another user's socket under the JVM's name: not the JVM's,
            # never connected to, and no trigger (it is there).
            plant(NOBODY)
            t = run_tool(ctx, ["--agent", ECHO_AGENT, "status", jvm.pid], "foreign")
            expect(t, 1, "a socket of another user")
            if not re.search(r"belongs to (nobody \()?uid 65534.*not to the JVM's user root \(uid 0\); not connecting",
                             t.err):
                problems.append("foreign socket: stderr %r" % t.err)
            os.unlink(path)
        plant(os.geteuid())
        t = run_tool(ctx, ["--agent", ECHO_AGENT, "status", jvm.pid], "stale")
        expect(t, 0, "a stale socket of the JVM's user")
        echoed(t, "status", "")
        time.sleep(0.3)
        if "Full thread dump" in jvm.stdout():
            problems.append("the JVM printed a thread dump")
    if problems:
        pytest.fail("; ".join(problems))


def test_attach_cli_agent_error(ctx):
    ensure_built()
    problems = []
    with Target(ctx, "target") as jvm:
        # A missing library is found before anything is sent: no socket appears.
        missing = run_tool(ctx, ["--agent", "/nonexistent/echo.so", "status", jvm.pid], "missing")
        expect(missing, 1, "missing library")
        if "hprof: agent library /nonexistent/echo.so (--agent): No such file or directory" not in missing.err:
            problems.append("missing library: stderr %r" % missing.err)
        if os.path.exists(jvm.socket()):
            problems.append("the attach listener was started for a missing library")

        failing = run_tool(ctx, ["--agent", ECHO_AGENT, "start", jvm.pid, "fail"], "fail")
        expect(failing, 1, "agent returning 7")
        m = re.match(r"^echo: error: asked to fail \(start,reply=(%s),fail\)\n\Z" % RE_REPLY, failing.err)
        if not m or failing.out:
            problems.append("agent error: stdout %r, stderr %r" % (failing.out, failing.err))
        elif os.path.exists(m.group(1)):
            problems.append("reply file %s left after an agent error" % m.group(1))

        # HotSpot cannot dlopen an executable: JDK 17 says so with status
        # -1, JDK 21+ with status 0; the tool reports both the same way.
        not_loaded = run_tool(ctx, ["--agent", HPROF, "status", jvm.pid], "not_loaded")
        expect(not_loaded, 1, "an executable as the agent")
        want = "hprof: the JVM %d did not run the agent %s: %s was not loaded." % (jvm.pid, HPROF, HPROF)
        if not not_loaded.err.startswith(want):
            problems.append("unloadable library: stderr %r (expected it to start with %r)" % (not_loaded.err, want))
        libz = next((p for p in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1",
                                 "/lib64/libz.so.1") if os.path.exists(p)), None)
        if libz:
            real = os.path.realpath(libz)
            no_entry = run_tool(ctx, ["--agent", libz, "status", jvm.pid], "no_entry")
            expect(no_entry, 1, "a library without Agent_OnAttach")
            if "Agent_OnAttach is not available in %s" % real not in no_entry.err:
                problems.append("no Agent_OnAttach: stderr %r" % no_entry.err)

        # Interrupted while the agent works (it sleeps 2 s on "sleep"):
        # the reply file goes with the tool.
        env = dict(os.environ)
        env.pop("HPROF_AGENT", None)
        tool = subprocess.Popen([HPROF, "--agent", ECHO_AGENT, "status", str(jvm.pid), "sleep"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                env=env)
        reply = None
        deadline = time.time() + 10
        while reply is None and time.time() < deadline and tool.poll() is None:
            for fd in glob.glob("/proc/%d/fd/*" % tool.pid):
                try:
                    link = os.readlink(fd)
                except OSError:
                    continue
                if re.match(RE_REPLY + r"$", link):
                    reply = link
            time.sleep(0.01)
        if reply is None:
            tool.kill()
            tool.communicate()
            problems.append("no reply file seen open in the tool while the agent slept")
        else:
            time.sleep(0.2)  # well inside the agent's 2 s
            tool.send_signal(signal.SIGINT)
            tool.communicate(timeout=10)
            if tool.returncode != -signal.SIGINT:
                problems.append("after SIGINT the tool ended with %s, not by the signal" % tool.returncode)
            if os.path.exists(reply):
                problems.append("reply file %s left after SIGINT" % reply)
        no_leftovers(ctx, jvm, problems)
        time.sleep(2.2)  # the agent wakes, finds no reply file, returns
        if not jvm.alive():
            problems.append("the JVM died: %s" % jvm.stderr()[-300:])

    # The JVM dies in Agent_OnAttach: an error, and the reply file is
    # removed although /proc/<pid>/root went with the JVM.
    with Target(ctx, "dying") as jvm:
        died = run_tool(ctx, ["--agent", ECHO_AGENT, "status", jvm.pid, "die"], "die")
        expect(died, 1, "the JVM dying during the attach")
        want = "hprof: no answer from the JVM %d: the JVM closed the connection without an answer\n" % jvm.pid
        if died.err != want:
            problems.append("JVM died: stderr %r, expected %r" % (died.err, want))
        jvm.p.wait(timeout=10)
        m = re.search(r"echo: dying, reply file (%s)$" % RE_REPLY, jvm.stderr(), re.M)
        if not m:
            problems.append("the dying agent did not name its reply file: %r" % jvm.stderr()[-300:])
        elif os.path.exists(m.group(1)):
            problems.append("reply file %s left after the JVM died" % m.group(1))
        # A JVM that dies at once leaves its socket behind: not ours to
        # leave for a later process of this pid.
        if os.path.exists("/tmp/.java_pid%d" % jvm.pid):
            os.unlink("/tmp/.java_pid%d" % jvm.pid)
    if problems:
        pytest.fail("; ".join(problems))


def test_attach_cli_no_process(ctx):
    ensure_built()
    problems = []
    p = subprocess.Popen(["true"])
    p.wait()
    if os.path.exists("/proc/%d" % p.pid):
        pytest.skip("pid %d was reused at once" % p.pid)
    dead = run_tool(ctx, ["--agent", ECHO_AGENT, "status", p.pid], "dead")
    expect(dead, 1, "a reaped pid")
    if dead.err != "hprof: no process %d\n" % p.pid:
        problems.append("dead pid: stderr %r" % dead.err)
    for args, what in ((["status", "0"], "pid 0"), (["status", "abc"], "pid abc"), (["status", "-5"], "pid -5"),
                       (["status"], "no pid"), ([], "no command"), (["frobnicate", "1"], "unknown command"),
                       (["--agent"], "--agent without a path"), (["start", "1", "reply=/tmp/x"], "reply=")):
        t = run_tool(ctx, args, "usage")
        if t.rc != 2 or "usage: hprof" not in t.err:
            problems.append("%s: expected a usage error (exit 2), got %s" % (what, t))
    helped = run_tool(ctx, ["help"], "help")
    if helped.rc != 0 or "hprof status <pid>" not in helped.out:
        problems.append("help: %s" % helped)
    if problems:
        pytest.fail("; ".join(problems))


def test_attach_cli_not_a_jvm(ctx):
    ensure_built()
    sleeper = subprocess.Popen(["sleep", "30"], cwd=ctx.out)
    try:
        time.sleep(0.05)
        t = run_tool(ctx, ["--agent", ECHO_AGENT, "status", sleeper.pid], "sleep")
        expect(t, 1, "sleep 30")
        want = "hprof: process %d is not a Java VM (sleep has no libjvm.so in /proc/%d/maps)\n" % (sleeper.pid,
                                                                                                    sleeper.pid)
        problems = []
        if t.err != want:
            problems.append("stderr %r, expected %r" % (t.err, want))
        time.sleep(0.3)
        if sleeper.poll() is not None:
            problems.append("the sleep process died (rc %s): it was sent a signal" % sleeper.returncode)
        if glob.glob(os.path.join(ctx.out, ".attach_pid*")):
            problems.append("a trigger file was created for a process that is not a JVM")
    finally:
        sleeper.kill()
        sleeper.wait()
    if problems:
        pytest.fail("; ".join(problems))


def test_attach_cli_attach_disabled(ctx):
    ensure_built()
    problems = []
    with Target(ctx, "target", jvm=["-XX:+DisableAttachMechanism"]) as jvm:
        t = run_tool(ctx, ["--agent", ECHO_AGENT, "status", jvm.pid], "disabled")
        expect(t, 1, "attach disabled")
        want = ("hprof: the JVM %d was started with -XX:+DisableAttachMechanism; it cannot be attached\n"
                % jvm.pid)
        if t.err != want:
            problems.append("stderr %r, expected %r" % (t.err, want))
        time.sleep(0.5)
        if "Full thread dump" in jvm.stdout():
            problems.append("the JVM printed a thread dump on its stdout: it was sent SIGQUIT")
        if not jvm.alive():
            problems.append("the JVM died")
        no_leftovers(ctx, jvm, problems)
        # The check above can fail: SIGQUIT does print a dump in this JVM.
        os.kill(jvm.pid, signal.SIGQUIT)
        deadline = time.time() + 5
        while "Full thread dump" not in jvm.stdout() and time.time() < deadline:
            time.sleep(0.05)
        if "Full thread dump" not in jvm.stdout():
            problems.append("control: our own SIGQUIT printed no thread dump, so its absence proves nothing")
    if problems:
        pytest.fail("; ".join(problems))


def test_attach_cli_other_user(ctx):
    if os.geteuid() != 0:
        pytest.skip("needs root (runs a JVM and the tool as nobody)")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv not installed (util-linux)")
    ensure_built()
    problems = []
    with Target(ctx, "root_jvm") as jvm:
        t = run_tool(ctx, ["--agent", ECHO_AGENT, "status", jvm.pid], "as_nobody", user=NOBODY)
        expect(t, 1, "nobody attaching to root's JVM")
        if not re.search(r"belongs to user root \(uid 0\) and you are (nobody \()?uid 65534", t.err):
            problems.append("nobody on root's JVM: stderr %r does not name both users" % t.err)
        if os.path.exists(jvm.socket()):
            problems.append("the attach listener was started by a refused user")
    with Target(ctx, "nobody_jvm", user=NOBODY) as jvm:
        t = run_tool(ctx, ["--agent", ECHO_AGENT, "status", jvm.pid, "cpu=samples"], "as_root")
        expect(t, 0, "root attaching to nobody's JVM")
        echoed(t, "status", "cpu=samples")
        st = os.stat(jvm.socket())
        if st.st_uid != NOBODY:
            problems.append("the socket belongs to uid %d, not nobody" % st.st_uid)
        t2 = run_tool(ctx, ["--agent", ECHO_AGENT, "status", jvm.pid], "as_root_again")
        expect(t2, 0, "root attaching again")
        no_leftovers(ctx, jvm, problems)
        if not jvm.alive():
            problems.append("nobody's JVM died")
    if problems:
        pytest.fail("; ".join(problems))


def test_attach_cli_dynamic_loading_off(ctx):
    if ctx.jdk_name == "jdk17":
        pytest.skip("-XX:-EnableDynamicAgentLoading exists from JDK 21")
    ensure_built()
    with Target(ctx, "target", jvm=["-XX:-EnableDynamicAgentLoading"]) as jvm:
        t = run_tool(ctx, ["--agent", ECHO_AGENT, "status", jvm.pid], "refused")
        expect(t, 1, "dynamic loading disabled")
        want = "hprof: the JVM %d did not run the agent %s: Dynamic agent loading is not enabled." % (jvm.pid,
                                                                                                   ECHO_AGENT)
        if not t.err.startswith(want):
            pytest.fail("stderr %r, expected it to start with %r" % (t.err, want))


def test_attach_cli_real_agent(ctx):
    ensure_built()
    with Target(ctx, "target") as jvm:
        t = run_tool(ctx, ["attach", jvm.pid], "real", timeout=60)
        if t.rc not in (0, 1):
            pytest.fail("unexpected exit: %s" % t)
        reply = [m for m in re.findall(RE_REPLY, t.out + t.err) if os.path.exists(m)]
        if reply:
            pytest.fail("reply file left: %s" % reply)
        time.sleep(0.3)
        if not jvm.alive():
            pytest.fail("the JVM died after the real agent was attached: %s" % jvm.stderr()[-300:])
        said = (t.out + t.err).strip().splitlines()
        ctx.note("real agent today: exit %d, %s" % (t.rc, said[0] if said else "(nothing said)"))
