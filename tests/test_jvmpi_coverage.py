"""A coverage tool on the JVMPI layer (pytest tests, run on each JDK with the
ctx fixture of tests/conftest.py): tests/jvmpi/coverage_agent.c, written to
the JVMPI specification alone and using it as JCov does (the class file from
CLASS_LOAD_HOOK, METHOD_ENTRY, INSTRUCTION_START), on
tests/java/JvmpiCoverage.java, whose calls, lines, branches and switches are
known exactly (the checks: jvmpi_agents.run_coverage), and on a program made
here whose branch the layer's rewriter must widen.

    jvmpi_coverage       coverage_agent.c, a coverage tool that uses JVMPI as JCov
                         does (CLASS_LOAD_HOOK's class file, METHOD_ENTRY,
                         INSTRUCTION_START, tables locked from GC_START to
                         GC_FINISH), on JvmpiCoverage: exact calls per method
                         (sign 14 on two threads, neverCalled 0, NeverLoaded never
                         loaded), the lines that never ran (neverCalled's, case
                         1000, the body of an if never taken), each if's
                         evaluations and takes (sign's 14/8, loops n+1/1), each
                         switch's ways (keys 0,1,2 once, default twice;
                         pairs 1,1,0, default once), every offset an
                         instruction of the class file's code although the layer
                         rewrote every method for METHOD_ENTRY, and pairs_total
                         the lookupswitch's own count
    jvmpi_coverage_alloc the same with OBJECT_ALLOC enabled too (the layer's call
                         after squares' new int[n] shifts the code after it)
    jvmpi_coverage_far   a conditional branch the rewriter widens (around a
                         goto_w: METHOD_ENTRY's exit calls put its target out of
                         16-bit reach) posts one event per run at its class-file
                         offset with its original way (2 taken of 5); its 2,900
                         inner branches 3/3
"""

import os
import subprocess

from jvmpi_agents import LAYER, agent, lines_of, run_coverage
from run import CLASSES


def test_jvmpi_coverage(ctx, jvmpi_agents):
    """With METHOD_ENTRY's calls in every method, offsets are the class file's, the calls
    post nothing, branch ways and lookupswitch's pairs_total are right."""
    run_coverage(ctx, "")


def test_jvmpi_coverage_alloc(ctx, jvmpi_agents):
    """The same with OBJECT_ALLOC's calls after array allocations too (squares' new int[n])."""
    run_coverage(ctx, ",alloc")


def test_jvmpi_coverage_far(ctx, jvmpi_agents):
    """A conditional branch the layer's rewriter turns around a goto_w: JvmpiFar.far's
    `if (x > 0)` skips 2,900 `if (x == K) return K;` (31,771 bytes, in reach); the exit
    calls before their returns put its target out of 16-bit reach. far(-1) twice, far(5)
    three times: its event comes once per call, at its class-file offset, with its
    original way (taken, x <= 0, 2 of 5)."""
    n = 2900
    src = ["public class JvmpiFar {", "    static int far(int x) {", "        int s = 0;",
           "        if (x > 0) {"]
    src += ["            if (x == %d) return %d;" % (1000 + i, i) for i in range(n)]
    src += ["            s = 1;", "        }", "        return s;", "    }",
            "    public static void main(String[] args) {", "        int t = 0;",
            "        for (int i = 0; i < 5; i++) t += far(i < 2 ? -1 : 5);",
            "        System.err.println(\"JvmpiFar done \" + t);", "    }", "}"]
    java_file = ctx.path("JvmpiFar.java")
    with open(java_file, "w") as f:
        f.write("\n".join(src) + "\n")
    p = subprocess.run([os.path.join(ctx.jdk, "bin", "javac"), "--release", "17", "-d", CLASSES, java_file],
                       capture_output=True, text=True)
    assert p.returncode == 0, "javac JvmpiFar: expected exit 0, found %d: %s" % (p.returncode, p.stderr[-500:])
    out = ctx.path("far.txt")
    r = ctx.run("JvmpiFar", [], agent=agent("coverage_agent") + "=out=%s,class=JvmpiFar" % out, agent_path=LAYER)
    assert "JvmpiFar done 3" in r.stderr, \
        "expected 'JvmpiFar done 3' on stderr (the program's end), found: %s" % r.stderr[-500:]
    lines = lines_of(out)
    want = ["branch JvmpiFar.far 4 5/2", "bad 0"]
    got = [line for line in lines if line.startswith("branch JvmpiFar.far 4 ") or line.startswith("bad ")]
    inner = [line for line in lines
             if line.startswith("branch JvmpiFar.far ") and not line.startswith("branch JvmpiFar.far 4 ")]
    assert got == want and len(inner) == n and all(line.endswith(" 3/3") for line in inner), \
        "expected %s and %d inner branches 3/3, found %s and %d, not 3/3: %s" % (
            want, n, got, len(inner), [line for line in inner if not line.endswith(" 3/3")][:3])
