"""INSTRUCTION_START (JVMTI SingleStep) where HotSpot hides steps, and on two
threads at once (issue 34, JCov), with tests/jvmpi/coverage_agent.c, which
counts lines, branches and switches from the class file as JCov does.

    jvmpi_step_clinit    tests/java/JvmpiClinitCoverage.java: class
                 initializers run inside HotSpot's resolution of an
                 invokestatic (ByCall) and a getstatic (ByField), where it
                 posts no SingleStep, and what they call (seed, pick), are
                 counted exactly: ByCall.<clinit>'s loop condition 6/1, seed's
                 `x > 5` 1/0, pick's switch key 2 once, every line of the
                 three <clinit>s run. Before the layer set breakpoints for
                 such code, the two <clinit>s, seed and pick had no line run.
    jvmpi_step_threads   tests/java/JvmpiStepThreads.java: two threads
                 stepped at once (their loops overlap in time), one through
                 odd(), one through tens(): odd 3,000 calls, its if 3,000/1,500;
                 tens 3,000 calls, each switch key 300 times, the default
                 never. Each thread's branch held for its next instruction
                 is its own.
"""

import os
import re

from jvmpi_agents import LAYER, TESTS_DIR, agent, lines_of, source_line

CLINIT_SRC = os.path.join(TESTS_DIR, "java", "JvmpiClinitCoverage.java")
THREADS_SRC = os.path.join(TESTS_DIR, "java", "JvmpiStepThreads.java")


def coverage(ctx, program, want_stdout):
    """The program under coverage_agent (its classes only): the report's
    lines, after checking the program's answer and that no offset was bad."""
    out = ctx.path("%s.txt" % program)
    r = ctx.run(program, [], agent=agent("coverage_agent") + "=out=%s,class=%s" % (out, program), agent_path=LAYER)
    assert want_stdout in r.stdout, "expected %r on stdout (the program's answer), found: %r %s" % (
        want_stdout, r.stdout[-300:], r.stderr[-500:])
    lines = lines_of(out)
    assert "bad 0" in lines, "instructions at offsets of no instruction:\n%s" % "\n".join(lines)
    return lines


def method_line(lines, name):
    """`entries N run L,.. missed L,..` of method CLASS.NAME+DESC, as (entries, run, missed)."""
    for line in lines:
        m = re.match(r"method %s entries (\d+) run (\S+) missed (\S+)$" % re.escape(name), line)
        if m:
            return int(m.group(1)), m.group(2), m.group(3)
    return None


def test_jvmpi_step_clinit(ctx, jvmpi_agents):
    lines = coverage(ctx, "JvmpiClinitCoverage", "clinit 102")
    cls = "JvmpiClinitCoverage"
    loop = source_line("// loop", CLINIT_SRC)
    seed = source_line("// seed", CLINIT_SRC)
    pick = source_line("// pick", CLINIT_SRC)
    made = source_line("// made", CLINIT_SRC)
    want = ["branch %s$ByCall.<clinit> %d 6/1" % (cls, loop),
            "branch %s$ByCall.seed %d 1/0" % (cls, seed),
            "switch %s$ByField.pick %d 0:0,1:1,default:0" % (cls, pick)]
    missing = [w for w in want if w not in lines]
    assert not missing, "expected %s in the report, missing %s:\n%s" % (want, missing, "\n".join(lines))
    for name, entries in (("$ByCall.<clinit>()V", 1), ("$ByField.<clinit>()V", 1), ("$ByNew.<clinit>()V", 1),
                          ("$ByCall.seed(I)I", 1)):
        got = method_line(lines, cls + name)
        assert got is not None and got[0] == entries and got[2] == "-", \
            "%s%s: expected %d entry and no line missed, found %s:\n%s" % (cls, name, entries, got, "\n".join(lines))
    got = method_line(lines, cls + "$ByField.pick(I)I")
    assert got is not None and got[1] == "%d,%d" % (pick, pick + 2), \
        "pick: expected lines %d (switch) and %d (case 2) run, found %s" % (pick, pick + 2, got)
    got = method_line(lines, cls + "$ByNew.<clinit>()V")
    assert got[1] == str(made), "ByNew.<clinit>: expected line %d run, found %s" % (made, got)


def test_jvmpi_step_threads(ctx, jvmpi_agents):
    lines = coverage(ctx, "JvmpiStepThreads", "threads 1500 3000 overlap Y")
    odd = source_line("// odd", THREADS_SRC)
    tens = source_line("// tens", THREADS_SRC)
    want = ["branch JvmpiStepThreads.odd %d 3000/1500" % odd,
            "switch JvmpiStepThreads.tens %d %s,default:0" % (tens, ",".join("%d:300" % k for k in range(10)))]
    missing = [w for w in want if w not in lines]
    assert not missing, "expected %s, missing %s:\n%s" % (want, missing, "\n".join(lines))
    for name in ("JvmpiStepThreads.odd(I)I", "JvmpiStepThreads.tens(I)I"):
        got = method_line(lines, name)
        assert got is not None and got[0] == 3000, "%s: expected 3000 entries, found %s" % (name, got)
