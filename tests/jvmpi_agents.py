"""What the JVMPI tests (tests/test_jvmpi_*.py) share, no tests of its own:
the layer build/libjvmpi.so, the agents written to the JVMPI specification
alone (tests/jvmpi/*.c, compiled against build/include/jvmpi.h with
-Wall -Werror into build/tests/jvmpi/ by the jvmpi_agents fixture of
tests/conftest.py), JvmpiCalls run under one of them, the lines an agent
wrote, a marked line of a test program, and JvmpiCoverage's exact coverage
under coverage_agent.c (the coverage tests and the ASan layer's test run it).

The agents write their findings as lines of their own (`method main a entries
1000 exits 1000`, `heap_dump0 SUCCESS live 500 ...`), each agent's format its
own: the tests compare those lines with the program's truth."""

import os
import re

import pytest

from run import BUILD, TESTS_DIR

LAYER = os.path.join(BUILD, "libjvmpi.so")
ASAN_LAYER = os.path.join(BUILD, "asan", "libjvmpi.so")
AGENTS = os.path.join(BUILD, "tests", "jvmpi")
HEADER_CHECK = os.path.join(BUILD, "tests", "jvmpi_header_check")
JAVA_SRC = os.path.join(TESTS_DIR, "java", "JvmpiCalls.java")
COVERAGE_SRC = os.path.join(TESTS_DIR, "java", "JvmpiCoverage.java")
# What `make jvmpi-test-agents` builds (the layer with it).
MAKE_TARGETS = ["build/libjvmpi.so", "jvmpi-test-agents"]


def agent(name):
    """The path of the test agent tests/jvmpi/<name>.c built."""
    return os.path.join(AGENTS, "lib%s.so" % name)


def run_calls(ctx, agent_spec, mode, expect_rc=0, env=None, agentlib=False, jvm=(), layer=LAYER):
    """JvmpiCalls <mode> with the layer running agent_spec (PATH=OPTIONS, or
    by -agentlib:jvmpi=NAME=OPTIONS with agentlib); ctx.run's Run."""
    if agentlib:
        return ctx.run("JvmpiCalls", [mode], jvm=list(jvm) + ["-agentlib:jvmpi=" + agent_spec], env=env,
                       expect_rc=expect_rc)
    return ctx.run("JvmpiCalls", [mode], agent=agent_spec, agent_path=layer, env=env, expect_rc=expect_rc,
                   jvm=jvm)


def lines_of(path):
    """The lines an agent wrote into its out= file."""
    if not os.path.isfile(path):
        pytest.fail("expected the agent to write %s, found no such file" % path)
    with open(path) as f:
        return f.read().splitlines()


def source_line(marker, source=JAVA_SRC):
    """The number of the first line of source that holds marker."""
    with open(source) as f:
        for n, line in enumerate(f, 1):
            if marker in line:
                return n
    pytest.fail("expected the marker %s in %s, found none" % (marker, source))


def check_done(r, mode):
    """JvmpiCalls <mode> ran to its end: its last line on stderr."""
    if ("JvmpiCalls %s done" % mode) not in r.stderr:
        pytest.fail("expected 'JvmpiCalls %s done' on stderr (the program's end), found: %s" % (mode, r.stderr[-500:]))


def run_agent(ctx, name, mode, options="", **kw):
    """JvmpiCalls <mode> under the agent <name> with out=FILE and options,
    run to its end (ctx.run's keywords through run_calls): (the Run, the
    lines the agent wrote)."""
    out = ctx.path(name + ".txt")
    r = run_calls(ctx, agent(name) + "=out=" + out + ("," + options if options else ""), mode, **kw)
    check_done(r, mode)
    return r, lines_of(out)


def run_coverage(ctx, options, layer=LAYER, env=None):
    """JvmpiCoverage under coverage_agent.c (as JCov: METHOD_ENTRY and
    INSTRUCTION_START, the class files' code from CLASS_LOAD_HOOK), options
    appended to its own (",alloc"); fails unless its report is the
    program's truth. Returns ctx.run's Run."""
    out = ctx.path("coverage%s.txt" % options.replace(",", "_"))
    r = ctx.run("JvmpiCoverage", [], agent=agent("coverage_agent") + "=out=%s,class=JvmpiCoverage%s" % (out, options),
                agent_path=layer, env=env)
    if "JvmpiCoverage done" not in r.stderr:
        pytest.fail("expected 'JvmpiCoverage done' on stderr (the program's end), found: %s" % r.stderr[-500:])
    lines = lines_of(out)

    def line(marker):
        return source_line(marker, COVERAGE_SRC)

    cls = line("public class JvmpiCoverage")
    # methods: calls, and the lines that never ran (every other line of theirs ran)
    want_methods = {"JvmpiCoverage.<init>()V": (0, [cls]), "JvmpiCoverage.sign(I)I": (14, []),
                    "JvmpiCoverage.neverCalled()V": (0, [line("COV_NEVER"), line("COV_NEVER") + 1]),
                    "JvmpiCoverage.table(I)I": (5, []), "JvmpiCoverage.lookup(I)I": (3, [line("COV_CASE_1000")]),
                    "JvmpiCoverage.squares(I)[I": (1, []), "JvmpiCoverage.guarded([II)I": (2, []),
                    "JvmpiCoverage.main([Ljava/lang/String;)V": (1, [line("COV_MAIN_IF") + 1,
                                                                      line("COV_MAIN_IF") + 2]),
                    "JvmpiCoverage$Box.<init>(I)V": (1, []), "JvmpiCoverage$Box.get()I": (2, []),
                    "JvmpiCoverage$Worker.<init>()V": (1, []), "JvmpiCoverage$Worker.run()V": (1, [])}
    got_methods = {}
    for text in lines:
        m = re.match(r"^method (\S+) entries (\d+) run (\S+) missed (\S+)$", text)
        if m:
            missed = [] if m.group(4) == "-" else [int(x) for x in m.group(4).split(",")]
            got_methods[m.group(1)] = (int(m.group(2)), missed)
    assert got_methods == want_methods, "methods (calls, lines missed): expected %s, found %s" % (
        want_methods, got_methods)
    want = ["branch JvmpiCoverage.sign %d 14/8" % line("COV_SIGN_IF"),       # x <= 0 (ifle taken) 8 of 14
            "switch JvmpiCoverage.table %d 0:1,1:1,2:1,default:2" % line("COV_TABLE"),
            "switch JvmpiCoverage.lookup %d 0:1,1:1,2:0,default:1" % line("COV_LOOKUP"),
            "branch JvmpiCoverage.squares %d 5/1" % line("COV_SQUARES_LOOP"),
            "branch JvmpiCoverage.main %d 11/1" % line("COV_MAIN_LOOP"),
            "branch JvmpiCoverage.main %d 6/1" % line("COV_MAIN_LOOP2"),
            "branch JvmpiCoverage.main %d 1/1" % line("COV_MAIN_IF"),
            "branch JvmpiCoverage$Worker.run %d 5/1" % line("COV_WORKER_LOOP"),
            "bad 0"]
    got = [text for text in lines if not text.startswith("method ")]
    assert got == want, "branches and switches: expected %s, found %s" % (want, got)
    return r
