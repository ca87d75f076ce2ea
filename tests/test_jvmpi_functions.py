"""The JVMPI layer's interface functions, its commands and its loader (pytest
tests, run on each JDK with the ctx fixture of tests/conftest.py): agents
written to the JVMPI specification alone (tests/jvmpi/*.c, the jvmpi_agents
fixture) in build/libjvmpi.so on tests/java/JvmpiCalls.java, which keeps
threads in known states; build/hprof's commands on a JVM running a JVMPI
agent; the loader's refusals.

    jvmpi_functions      on threads JvmpiCalls keeps in known states, from a
                         thread the agent made (CreateSystemThread):
                         GetThreadStatus RUNNABLE / CONDVAR_WAIT (sleep) /
                         MONITOR_WAIT (blocked); RAW_MONITOR_CONTENDED_ENTER,
                         _ENTERED and _EXIT once each on a raw monitor the
                         checker holds while a second agent thread enters; a
                         MONITOR_DUMP (u1 records,
                         u4 big-endian) where main owns once the monitor blocked
                         waits to enter, the agent's raw monitor is owned once
                         by the asking thread, blocked's status is MONITOR_WAIT;
                         GetCallTrace of the suspended
                         spinner (spin() at its line), ThreadHasRun 1 for the
                         spinner and 0 for the sleeper, GetThreadObject and
                         GetMethodClass equal to THREAD_START's and CLASS_LOAD's
                         ids, GetCurrentThreadCpuTime, another thread's local
                         storage, RunGC posting GC_START, SIGQUIT posting
                         DATA_DUMP_REQUEST, MONITOR_CONTENDED_ENTER,
                         MONITOR_WAIT (timeout 200) / WAITED (same object, about
                         200 ms waited), then ProfilerExit(42): exit code 42
                         after JVM_SHUT_DOWN, long before the program would end
    jvmpi_functions_jdwp the same with -agentlib:jdwp after the layer: the
                         debugger starts (it listens), every check passes, and
                         one note says SuspendThread does nothing as the
                         debugger holds can_suspend (HotSpot: one agent's)
    jvmpi_commands       build/hprof on a JVM running a JVMPI agent (request_logger.c)
                         through libjvmpi.so: `hprof dump <pid>` (the layer
                         found in the JVM's mappings, no --agent) posts
                         DATA_DUMP_REQUEST, `hprof reset` DATA_RESET_REQUEST,
                         each once, on the announced "Attach Listener"; status
                         says both are enabled; start is refused with the
                         reason (rc 1); --agent libjvmpi.so works as well;
                         SIGQUIT posts DATA_DUMP_REQUEST on "Signal
                         Dispatcher"; exactly 4 dumps and 1 reset in order
    jvmpi_attach_refused `hprof attach --agent libjvmpi.so` into a running JVM
                         without the layer: refused with the reason (it
                         cannot be attached to a running JVM), the JVM
                         unharmed (exit 0)
    jvmpi_onload_exit    ProfilerExit(3) in JVM_OnLoad after a printf on standard
                         output (JCov's `help`): exit code 3, the text there, the
                         program never run
    jvmpi_loader_errors  no agent named, a missing library, a library without
                         JVM_OnLoad, JVM_OnLoad returning JNI_ERR: the JVM
                         stops at start-up, the program never runs, and the
                         message names the library and what is wrong
"""

import os
import re
import signal
import subprocess
import time

import pytest

from jdwp import JDWP_SERVER
from jvmpi_agents import LAYER, agent, lines_of, run_calls, source_line
from run import BUILD

HPROF = os.path.join(BUILD, "hprof")


# ------------------------------------------------------------ interface functions

def check_functions(ctx, jvm=()):
    """functions_checker.c on JvmpiCalls functions (with jvm's options):
    every check passes, ProfilerExit(42) ends the JVM. Returns the run."""
    out = ctx.path("functions.txt")
    r = run_calls(ctx, agent("functions_checker") + "=out=" + out, "functions", expect_rc=42, jvm=jvm)
    assert "JvmpiCalls functions done" not in r.stderr, \
        "expected ProfilerExit to end the JVM before the program's end, found the program ran to its end"
    lines = lines_of(out)
    want = ["status spinner RUNNABLE", "status sleeper CONDVAR_WAIT", "status blocked MONITOR_WAIT",
            "raw_contention enter 1 entered 1 exit 1", "monitor_dump java OK raw OK status OK",
            "trace spinner spin:%d" % source_line("SPIN_LINE"), "has_run spinner 1", "has_run sleeper 0",
            "thread_object SAME", "method_class SAME", "cpu_time OK", "tls_other SAME", "run_gc OK",
            "data_dump OK", "contended blocked SEEN", "WAIT", "shutdown"]
    problems = []
    if len(lines) != len(want):
        problems.append("expected %d lines, found %d" % (len(want), len(lines)))
    for got, expected in zip(lines, want):
        if expected == "WAIT":
            m = re.match(r"^wait waiter 200 waited SAME (\d+)$", got)
            if not m or not 190 <= int(m.group(1)) <= 5000:
                problems.append("expected MONITOR_WAIT timeout 200, WAITED on the same object after about "
                                "200 ms, found %r" % got)
        elif got != expected:
            problems.append("expected %r, found %r" % (expected, got))
    if not jvm and "SuspendThread" in r.stderr:
        problems.append("expected SuspendThread to work without a debugger, found it refused: %s" % r.stderr[-400:])
    assert not problems, "; ".join(problems) + " in %s" % lines
    return r


def test_jvmpi_functions(ctx, jvmpi_agents):
    check_functions(ctx)


def test_jvmpi_functions_jdwp(ctx, jvmpi_agents):
    """HotSpot lets one JVMTI agent at a time hold can_suspend, and the
    debugger does not start without it: the layer, listed before it,
    leaves it to the debugger; SuspendThread does nothing then, said once."""
    r = check_functions(ctx, jvm=[JDWP_SERVER])
    problems = []
    if not re.search(r"^Listening for transport dt_socket at address: \d+$", r.stdout, re.M):
        problems.append("expected JDWP to listen, found: %s" % (r.stdout + r.stderr)[-600:])
    note = ("jvmpi: note: SuspendThread, SuspendThreadList and ResumeThread do nothing in this JVM: HotSpot "
            "lets one JVMTI agent at a time suspend threads, and the debugger (-agentlib:jdwp on the command "
            "line) holds that")
    if [line for line in r.stderr.splitlines() if line.startswith("jvmpi:")] != [note]:
        problems.append("expected the one note %r on stderr, found: %s" % (note, r.stderr[-600:]))
    assert not problems, "; ".join(problems)


# ------------------------------------------------------------ hprof dump / reset

def start_idle(ctx, agent_spec=None):
    """JvmpiCalls idle (with the layer running agent_spec, or no agent),
    READY; returns (the JVM, its environment for build/hprof, the file
    whose creation stops the JVM)."""
    # ctx's `built` made build/hprof (make all).
    assert os.path.isfile(HPROF), "expected %s built by make, found none" % HPROF
    stop = ctx.path("stop")
    if os.path.exists(stop):
        os.remove(stop)
    cmd = ctx.java_cmd("JvmpiCalls", ["idle"], agent=agent_spec, agent_path=LAYER if agent_spec else None,
                       jvm=["-Djvmpi.stop=" + stop])
    env = dict(os.environ)
    env.pop("HPROF_AGENT", None)
    with open(ctx.path("idle.stdout"), "wb") as fo, open(ctx.path("idle.stderr"), "wb") as fe:
        jvm = subprocess.Popen(cmd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, cwd=ctx.out)
    deadline = time.time() + 30
    while "READY" not in open(ctx.path("idle.stdout")).read():
        if jvm.poll() is not None or time.time() > deadline:
            jvm.kill()
            jvm.wait()
            pytest.fail("expected JvmpiCalls idle to say READY within 30 s, found exit %s: %s"
                        % (jvm.returncode, open(ctx.path("idle.stderr")).read()[-300:]))
        time.sleep(0.05)
    return jvm, env, stop


def test_jvmpi_commands(ctx, jvmpi_agents):
    out = ctx.path("requests.txt")
    jvm, env, stop = start_idle(ctx, agent("request_logger") + "=out=" + out)
    tools = []

    def tool(*args):
        r = subprocess.run([HPROF] + list(args) + [str(jvm.pid)], capture_output=True, text=True, env=env,
                           timeout=60, stdin=subprocess.DEVNULL)
        tools.append("$ hprof %s\nrc %d\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
        return r

    problems = []
    try:
        for args, rc, text in ((["dump"], 0, "DATA_DUMP_REQUEST posted to the JVMPI agent"),
                               (["reset"], 0, "DATA_RESET_REQUEST posted to the JVMPI agent"),
                               (["dump"], 0, "DATA_DUMP_REQUEST posted"),
                               (["status"], 0, "dump posts DATA_DUMP_REQUEST (enabled), reset DATA_RESET_REQUEST "
                                               "(enabled)"),
                               (["start"], 1, "the JVMPI layer takes dump, reset and status"),
                               (["dump", "--agent", LAYER], 0, "DATA_DUMP_REQUEST posted")):
            r = tool(*args)
            if r.returncode != rc or text not in r.stdout + r.stderr:
                problems.append("hprof %s: expected rc %d and %r, found rc %d, %r"
                                % (" ".join(args), rc, text, r.returncode, (r.stdout + r.stderr).strip()[-300:]))
        jvm.send_signal(signal.SIGQUIT)                 # the JVM's own way: posted by the layer too
        deadline = time.time() + 10
        while "dump 4" not in (open(out).read() if os.path.exists(out) else ""):
            if time.time() > deadline:
                break
            time.sleep(0.05)
        open(stop, "w").close()
        jvm.wait(timeout=60)
    finally:
        if jvm.poll() is None:
            jvm.kill()
            jvm.wait()
        with open(ctx.path("tools.txt"), "w") as f:
            f.write("\n".join(tools))
    assert not problems, "; ".join(problems)
    # Commands and SIGQUIT alike come through the orchestrator's agent
    # thread, which the layer announces as any thread (THREAD_START).
    want = ["dump 1 thread JVMPI layer", "reset 1 thread JVMPI layer", "dump 2 thread JVMPI layer",
            "dump 3 thread JVMPI layer", "dump 4 thread JVMPI layer", "requests dump 4 reset 1"]
    lines = lines_of(out)
    assert lines == want, "expected %s, found %s" % (want, lines)


def test_jvmpi_attach_refused(ctx, jvmpi_agents):
    """libjvmpi.so into a running JVM without it: refused with the reason, the JVM unharmed."""
    jvm, env, stop = start_idle(ctx)
    try:
        r = subprocess.run([HPROF, "attach", "--agent", LAYER, str(jvm.pid)], capture_output=True, text=True,
                           env=env, timeout=60, stdin=subprocess.DEVNULL)
        with open(ctx.path("attach.txt"), "w") as f:
            f.write("rc %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
        said = (r.stdout + r.stderr).strip()
        assert r.returncode != 0 and "it cannot be attached to a running JVM" in said, \
            "hprof attach --agent libjvmpi.so: expected a non-zero rc and 'it cannot be attached to a running " \
            "JVM', found rc %d, %r" % (r.returncode, said[-300:])
        open(stop, "w").close()
        rc = jvm.wait(timeout=60)
        assert rc == 0, "expected the JVM to exit 0 after the refused attach, found %d" % rc
    finally:
        if jvm.poll() is None:
            jvm.kill()
            jvm.wait()


# ------------------------------------------------------------ loader

def test_jvmpi_loader_errors(ctx, jvmpi_agents):
    cases = [
        ("", "no JVMPI agent library given"),
        ("/nonexistent/libnothere.so", "cannot load the JVMPI agent library '/nonexistent/libnothere.so'"),
        (agent("no_onload"), "'%s' has no JVM_OnLoad" % agent("no_onload")),
        (agent("class_thread_counter") + "=fail",
         "JVM_OnLoad of the JVMPI agent '%s' returned -1" % agent("class_thread_counter")),
    ]
    problems = []
    for spec, message in cases:
        r = run_calls(ctx, spec, "toggle", expect_rc="nonzero")
        if message not in r.stderr:
            problems.append("%r: expected %r on stderr, found: %s" % (spec, message, r.stderr.strip()[-300:]))
        if "JvmpiCalls toggle done" in r.stderr:
            problems.append("%r: expected the JVM to stop at start-up, found the program ran" % spec)
    assert not problems, "; ".join(problems)


def test_jvmpi_onload_exit(ctx, jvmpi_agents):
    """ProfilerExit in JVM_OnLoad (an agent's usage message, as JCov's `help`): the JVM ends with
    the agent's code and what it printed on standard output."""
    r = run_calls(ctx, agent("class_thread_counter") + "=usage", "toggle", expect_rc=3)
    assert "class_thread_counter usage: out=FILE" in r.stdout, \
        "expected the agent's usage on stdout, found: %r" % r.stdout[-300:]
    assert "JvmpiCalls toggle done" not in r.stderr, "expected the program never to run, found it ran"
